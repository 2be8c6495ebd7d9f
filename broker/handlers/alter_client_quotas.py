"""AlterClientQuotas (49): validated per entity, persisted in one transaction, then applied."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import AlterClientQuotasResponse

from broker.context import RequestContext
from broker.error_responses import Level, mirrors
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import ALTER_CONFIGS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.store import Alteration, QuotaOp

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS
VERSIONS = (0, 1)
AUTHORIZATION = by_handler("ALTER_CONFIGS on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(Level(("entries",), "entries", (("entity", "entity"),)))
Entry = AlterClientQuotasResponse.EntryData
Entity = Entry.EntityData


def _entity(pairs: Any) -> list[Any]:
    return [Entity(entity_type=t, entity_name=n) for t, n in pairs]


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.authorizer.authorize_cluster(
        ctx.connection.principal, ALTER_CONFIGS, ctx.connection.peer[0]
    ):
        entries = [
            Entry(
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                error_message="Cluster authorization failed.",
                entity=_entity((e.entity_type, e.entity_name) for e in entry.entity),
            )
            for entry in request.entries
        ]
        return ctx.response(throttle_time_ms=0, entries=entries)
    alterations = [
        Alteration(
            [(e.entity_type, e.entity_name) for e in entry.entity],
            [QuotaOp(op.key, op.value, op.remove) for op in entry.ops],
        )
        for entry in request.entries
    ]
    plan = await ctx.broker.quotas.alter_entries(alterations, bool(request.validate_only))
    entries = [
        Entry(error_code=r.error_code, error_message=r.error_message, entity=_entity(r.entity.kafka_items()))
        for r in plan.results
    ]
    return ctx.response(throttle_time_ms=0, entries=entries)
