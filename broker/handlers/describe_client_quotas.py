"""DescribeClientQuotas (48): the configured entities matching a filter (KIP-546)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeClientQuotasResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import DESCRIBE_CONFIGS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.structs import maker
from quotas.validation import QuotaError, parse_filter

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS
VERSIONS = (0, 1)
AUTHORIZATION = by_handler("DESCRIBE_CONFIGS on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Entry = DescribeClientQuotasResponse.EntryData
Entity = Entry.EntityData
Value = Entry.ValueData


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.authorizer.authorize_cluster(
        ctx.connection.principal, DESCRIBE_CONFIGS, ctx.connection.peer[0]
    ):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            entries=None,
        )
    try:
        quota_filter = parse_filter(
            ((c.entity_type, c.match_type, c.match) for c in request.components), request.strict
        )
    except QuotaError as exc:
        ctx.error_code, ctx.error_count = exc.code, 1
        return ctx.response(throttle_time_ms=0, error_code=exc.code, error_message=exc.message, entries=None)
    entries = [
        _entry([_entity(t, n) for t, n in entity.kafka_items()], [_value(k, v) for k, v in values.items()])
        for entity, values in ctx.broker.quotas.store.describe(quota_filter)
    ]
    ctx.error_code = ctx.error_count = 0  # the one error code is NONE: nothing to walk for
    # ClientQuotasImage.describe leaves the message at the schema's default, "".
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", entries=entries)


# Entries built as the unversioned constructors build them, without their schema walk.
_entry = maker(Entry, "entity", "values")
_entity = maker(Entity, "entity_type", "entity_name")
_value = maker(Value, "key", "value")
