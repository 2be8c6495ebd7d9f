"""Maps API keys to message classes: kafka-python 3's, or for an API whose Kafka 4.4
schema is bundled (messages/schemas/, `messages.bundled_schemas`), the bundled class.

Both are generated from Apache Kafka's own JSON schemas, so this module is the only
place that knows where they live; nothing here hand-writes a struct.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
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

    from messages import bundled_schemas  # the APIs kafka-python lacks or has older, from Kafka's JSON


def _all_message_classes() -> list[Any]:
    found: list[Any] = []
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None) is not None:
            found.append(cls)
    return found


def _by_api_key(classes: Iterable[Any]) -> tuple[dict[int, Any], dict[int, Any]]:
    """Requests and responses by API key: kafka-python's classes, then the bundled ones
    over them (a bundled schema takes precedence for its API, whatever the subclass order;
    messages.bundled_schemas)."""
    requests: dict[int, Any] = {}
    responses: dict[int, Any] = {}
    bundled = list(bundled_schemas.CLASSES.values())
    upstream = [c for c in classes if c.__module__ != bundled_schemas.__name__]
    for cls in [*upstream, *bundled]:
        (requests if cls.is_request() else responses)[cls.API_KEY] = cls
    return requests, responses


_REQUESTS, _RESPONSES = _by_api_key(_all_message_classes())


def request_class(api_key: int) -> Any:
    """The request class for `api_key`; KeyError when kafka-python has no schema for it."""
    return _REQUESTS[api_key]


def response_class(api_key: int) -> Any:
    return _RESPONSES[api_key]


def api_name(api_key: int) -> str:
    """Kafka's name for an API, as in its metrics: "Produce", "DescribeClientQuotas"."""
    return str(request_class(api_key).__name__).removesuffix("Request")


def schema_versions(api_key: int) -> tuple[int, int]:
    """(min, max) versions of the schema in use (Apache Kafka 4.4's supported range)."""
    low, high = request_class(api_key)._valid_versions
    return int(low), int(high)
