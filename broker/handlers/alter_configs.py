"""AlterConfigs (33), the legacy form: each resource's configs are replaced by the ones
sent (keys not named are removed from that layer), with IncrementalAlterConfigs' checks."""

from __future__ import annotations

from typing import Any

from broker.config.dynamic import SET, Alteration, ConfigOp
from broker.context import RequestContext
from broker.error_responses import config_resources, mirrors
from broker.handlers.incremental_alter_configs import alter
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.ALTER_CONFIGS
VERSIONS = (0, 2)
AUTHORIZATION = by_handler("ALTER_CONFIGS on the cluster (broker resources) or on each topic or group")
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(config_resources("responses"))


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
    response = await alter(ctx, alterations, bool(request.validate_only))
    for result in response.responses:
        if result.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            result.error_message = None  # Kafka's legacy AlterConfigs sends no message here
    return response
