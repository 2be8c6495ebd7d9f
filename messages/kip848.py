"""KIP-848's consumer group APIs (ConsumerGroupHeartbeat 68, ConsumerGroupDescribe 69).

kafka-python 3.0.12 ships no schema for them, so the classes load Kafka's own JSON
definitions from `messages/schemas` through kafka-python's metaclass (`load_json`):
the same field machinery encodes and decodes them as every other API.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "messages.schemas"


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    @classmethod
    def json_patch(cls, json: dict[str, Any]) -> dict[str, Any]:
        # AuthorizedOperations as a set of operation codes, as kafka-python models
        # DescribeGroups' field (None encodes Kafka's "not requested" sentinel).
        groups = next(f for f in json["fields"] if f["name"] == "Groups")
        next(f for f in groups["fields"] if f["name"] == "AuthorizedOperations")["type"] = "bitfield"
        return json
