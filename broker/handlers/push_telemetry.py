"""PushTelemetry (72, KIP-714): a client's metrics, checked (instance, pace, subscription
id, compression, size) and handed to the exporters: the metrics sink's client metrics
table and the recent pushes kept for tests. Served only with telemetry.enabled."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.get_telemetry_subscriptions import client_info
from broker.handlers.spec import WITH_TELEMETRY
from broker.security.authorization import NOT_CHECKED
from messages.registry import response_class
from protocol.api_keys import ApiKey

API_KEY = ApiKey.PUSH_TELEMETRY
VERSIONS = (0, 0)
AUTHORIZATION = NOT_CHECKED
ENABLED = WITH_TELEMETRY
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = (
    "Histogram and summary points are kept as their sum; a payload that is not OTLP MetricsData is accepted and only counted, as Kafka never parses it.",
)
PushTelemetryResponse = response_class(API_KEY)


def handle(ctx: RequestContext, request: Any) -> Any:
    assert ctx.broker.telemetry is not None, "advertised only with telemetry.enabled"
    error = ctx.broker.telemetry.push(
        request.client_instance_id,
        request.subscription_id,
        request.terminating,
        request.compression_type,
        request.metrics or b"",
        client_info(ctx),
    )
    return PushTelemetryResponse(throttle_time_ms=0, error_code=error)
