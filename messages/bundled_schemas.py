"""Request and response classes for the APIs whose Kafka JSON definitions are bundled in
`messages/schemas/` (the APIs kafka-python 3 has no schema for).

Every `<Name>Request.json` and `<Name>Response.json` there becomes a class of that name,
loaded through kafka-python's own metaclass (`load_json`), so the same field machinery
encodes and decodes them as every other API: adding an API kafka-python lacks means
adding its two JSON files, unchanged from Apache Kafka's
`clients/src/main/resources/common/message/`. Look classes up by API key with
`messages.registry.request_class`/`response_class`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from types import new_class
from typing import Any

from kafka.protocol.api_message import ApiMessage

_PACKAGE = "messages.schemas"


def _authorized_operations_as_bitfield(json: dict[str, Any]) -> dict[str, Any]:
    """ConsumerGroupDescribe's AuthorizedOperations as a set of operation codes, as
    kafka-python models DescribeGroups' field (None encodes Kafka's "not requested")."""
    groups = next(f for f in json["fields"] if f["name"] == "Groups")
    next(f for f in groups["fields"] if f["name"] == "AuthorizedOperations")["type"] = "bitfield"
    return json


# Where a bundled schema needs kafka-python's view of a field type.
_PATCHES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "ConsumerGroupDescribeResponse": _authorized_operations_as_bitfield,
}


def _load(name: str) -> Any:
    namespace: dict[str, Any] = {"__module__": __name__}
    patch = _PATCHES.get(name)
    if patch is not None:
        namespace["json_patch"] = classmethod(lambda cls, json: patch(json))
    return new_class(name, (ApiMessage,), {"load_json": _PACKAGE}, lambda ns: ns.update(namespace))


CLASSES: dict[str, Any] = {
    entry.name.removesuffix(".json"): _load(entry.name.removesuffix(".json"))
    for entry in sorted(resources.files(_PACKAGE).iterdir(), key=lambda e: e.name)
    if entry.name.endswith(("Request.json", "Response.json"))
}
