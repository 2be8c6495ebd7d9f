"""Request and response classes from the Kafka JSON definitions bundled in
`messages/schemas/`: the APIs kafka-python 3 has no schema for, and the APIs whose
kafka-python schema is older than the Kafka release this broker models (4.4).

Every `<Name>Request.json` and `<Name>Response.json` there becomes a class of that name,
loaded through kafka-python's own metaclass (`load_json`), so the same field machinery
encodes and decodes them as every other API: adding an API means adding its two JSON
files, unchanged from Apache Kafka's `clients/src/main/resources/common/message/`
(tests/java/test_bundled_schemas.py checks each version's wire shape against the
kafka-clients release the tests pin).

Precedence: a bundled schema wins over kafka-python's for its API. When kafka-python has a
class of the same name (`OVERRIDDEN`), the bundled class subclasses it, so what
kafka-python's class adds to the schema (ApiVersionsResponse's non-flexible header and
its v0 answer to an error) is kept and only the fields and versions are Kafka 4.4's;
`messages.registry` maps the API key to the bundled class. Look classes up by API key
with `messages.registry.request_class`/`response_class`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from types import new_class
from typing import Any

from kafka.protocol.api_message import ApiMessage

_PACKAGE = "messages.schemas"


def _authorized_operations_as_bitfield(json: dict[str, Any]) -> dict[str, Any]:
    """ConsumerGroupDescribe's (and ShareGroupDescribe's) AuthorizedOperations as a set of operation codes, as
    kafka-python models DescribeGroups' field (None encodes Kafka's "not requested")."""
    groups = next(f for f in json["fields"] if f["name"] == "Groups")
    next(f for f in groups["fields"] if f["name"] == "AuthorizedOperations")["type"] = "bitfield"
    return json


# Where a bundled schema needs kafka-python's view of a field type.
_PATCHES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "ConsumerGroupDescribeResponse": _authorized_operations_as_bitfield,
    "ShareGroupDescribeResponse": _authorized_operations_as_bitfield,
}


def _kafka_python_classes() -> dict[str, Any]:
    """kafka-python's own message classes by name (its modules imported by the registry
    first): the ones a bundled schema of the same name overrides."""
    found: dict[str, Any] = {}
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("kafka.") and getattr(cls, "_class_version", None) is None:
            found[cls.__name__] = cls
    return found


def _load(name: str, base: Any) -> Any:
    namespace: dict[str, Any] = {"__module__": __name__}
    patch = _PATCHES.get(name)
    if patch is not None:
        namespace["json_patch"] = classmethod(lambda cls, json: patch(json))
    return new_class(name, (base,), {"load_json": _PACKAGE}, lambda ns: ns.update(namespace))


_NAMES = sorted(
    entry.name.removesuffix(".json")
    for entry in resources.files(_PACKAGE).iterdir()
    if entry.name.endswith(("Request.json", "Response.json"))
)
_UPSTREAM = _kafka_python_classes()

OVERRIDDEN: frozenset[str] = frozenset(name for name in _NAMES if name in _UPSTREAM)
"""The bundled schemas that replace a kafka-python schema of the same name."""

CLASSES: dict[str, Any] = {name: _load(name, _UPSTREAM.get(name, ApiMessage)) for name in _NAMES}
"""Every bundled class by name; `messages.registry` prefers these for their API keys."""
