"""KIP-714's client telemetry APIs (GetTelemetrySubscriptions 71, PushTelemetry 72).

kafka-python 3.0.12 ships no schema for them, so, as in `messages.kip848`, the classes
load Kafka's own JSON definitions from `messages/schemas` through kafka-python's
metaclass.
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "messages.schemas"


class GetTelemetrySubscriptionsRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class GetTelemetrySubscriptionsResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class PushTelemetryRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass


class PushTelemetryResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg]
    pass
