"""Maps API keys to kafka-python 3's message classes.

kafka-python generates these classes from Apache Kafka's own JSON schemas, so this
module is the only place that knows where they live; nothing here hand-writes a struct.
"""

from __future__ import annotations

import warnings
from typing import Any

# kafka-python 3.0 reads each class's JSON schema with importlib.resources.read_text, which
# Python 3.11 and 3.12 deprecate: a DeprecationWarning per message class. Ignored around
# the loading here, for the bundled schemas too (broker/kafka_warnings.py does the same
# for kafka's modules whoever imports them first).
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", r".* is deprecated\. Use files\(\) instead", DeprecationWarning)
    import kafka.protocol.admin  # noqa: F401  (imported for the classes it registers)
    import kafka.protocol.consumer  # noqa: F401
    import kafka.protocol.metadata  # noqa: F401
    import kafka.protocol.producer  # noqa: F401
    import kafka.protocol.sasl  # noqa: F401
    from kafka.protocol.api_message import ApiMessage

    import messages.bundled_schemas  # noqa: F401  (the APIs kafka-python lacks, from Kafka's JSON)


def _all_message_classes() -> list[Any]:
    found: list[Any] = []
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None) is not None:
            found.append(cls)
    return found


_REQUESTS: dict[int, Any] = {}
_RESPONSES: dict[int, Any] = {}
for _cls in _all_message_classes():
    (_REQUESTS if _cls.is_request() else _RESPONSES)[_cls.API_KEY] = _cls


def request_class(api_key: int) -> Any:
    """The request class for `api_key`; KeyError when kafka-python has no schema for it."""
    return _REQUESTS[api_key]


def response_class(api_key: int) -> Any:
    return _RESPONSES[api_key]


def api_name(api_key: int) -> str:
    """Kafka's name for an API, as in its metrics: "Produce", "DescribeClientQuotas"."""
    return str(request_class(api_key).__name__).removesuffix("Request")


def schema_versions(api_key: int) -> tuple[int, int]:
    """(min, max) versions of the upstream schema (Apache Kafka 4.x's supported range)."""
    low, high = request_class(api_key)._valid_versions
    return int(low), int(high)
