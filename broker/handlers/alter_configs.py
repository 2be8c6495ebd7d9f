"""AlterConfigs (33), the legacy form: each resource's configs are replaced by the ones
sent (keys not named are removed from that layer), with IncrementalAlterConfigs' checks."""

from __future__ import annotations

from typing import Any

from broker.config.dynamic import SET, Alteration, ConfigOp
from broker.context import RequestContext
from broker.handlers.incremental_alter_configs import alter
from protocol.api_keys import ApiKey

API_KEY = ApiKey.ALTER_CONFIGS


async def handle(ctx: RequestContext, request: Any) -> Any:
    alterations = [
        Alteration(
            resource.resource_type,
            resource.resource_name,
            [ConfigOp(c.name, SET, c.value) for c in resource.configs],
            incremental=False,
        )
        for resource in request.resources
    ]
    return await alter(ctx, alterations, bool(request.validate_only))
