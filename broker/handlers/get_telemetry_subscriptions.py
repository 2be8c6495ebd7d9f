"""GetTelemetrySubscriptions (71, KIP-714): a client learns its instance id and what to
push, how often and how compressed, from the CLIENT_METRICS subscriptions that match it.
Served only with telemetry.enabled (see broker/telemetry/manager.py for the checks)."""

from __future__ import annotations

import uuid
from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import WITH_TELEMETRY
from broker.security.authorization import NOT_CHECKED
from broker.telemetry.manager import ClientInfo
from messages.registry import response_class
from protocol.api_keys import ApiKey

API_KEY = ApiKey.GET_TELEMETRY_SUBSCRIPTIONS
VERSIONS = (0, 0)
AUTHORIZATION = NOT_CHECKED
ENABLED = WITH_TELEMETRY
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = (
    "Subscription ids use Kafka's CRC32C formula over the sorted metric list, so they differ from Kafka's while behaving the same.",
)
GetTelemetrySubscriptionsResponse = response_class(API_KEY)
_ZERO = uuid.UUID(int=0)


def client_info(ctx: RequestContext) -> ClientInfo:
    connection = ctx.connection
    return ClientInfo(
        ctx.broker.node_id,
        connection.connection_id,
        ctx.client_id,
        connection.client_software_name or None,
        connection.client_software_version or None,
        connection.peer[0],
        connection.peer[1],
        str(connection.principal),
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    assert ctx.broker.telemetry is not None, "advertised only with telemetry.enabled"
    answer = ctx.broker.telemetry.get_subscriptions(request.client_instance_id, client_info(ctx))
    return GetTelemetrySubscriptionsResponse(
        throttle_time_ms=0,
        error_code=answer.error,
        client_instance_id=answer.instance_id or _ZERO,
        subscription_id=answer.subscription_id,
        accepted_compression_types=answer.accepted_compression,
        push_interval_ms=answer.push_interval_ms,
        telemetry_max_bytes=answer.max_bytes,
        delta_temporality=answer.error == 0,
        requested_metrics=answer.metrics,
    )
