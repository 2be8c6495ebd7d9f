"""IncrementalAlterConfigs (44): SET, DELETE, APPEND and SUBTRACT on BROKER resources (the
cluster-wide default or this broker), TOPIC resources and GROUP resources (KIP-848's
per-group consumer.session.timeout.ms and consumer.heartbeat.interval.ms), per resource
all or nothing.

The order is Kafka's: the receiving broker's preprocessing (ConfigAdminManager), then the
controller's authorization (ControllerApis.authorizeAlterResource), then the change
(ConfigurationControlManager); see broker/dynamic_config.py. AlterConfigs (33) shares it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from broker.config.dynamic import BROKER, Alteration, ConfigError, ConfigOp
from broker.config.group_configs import GROUP
from broker.context import RequestContext
from broker.error_responses import config_resources, mirrors
from broker.handlers.spec import ALWAYS
from broker.security.acls import Operation, ResourceType
from broker.security.authorization import by_handler
from broker.security.authorizer import ALTER_CONFIGS
from broker.telemetry.subscriptions import CLIENT_METRICS
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
VERSIONS = (0, 1)
AUTHORIZATION = by_handler("ALTER_CONFIGS on the cluster (broker resources) or on each topic or group")
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(config_resources("responses"))
# ControllerApis answers `new ApiError(error)`, which carries the error's default message.
CLUSTER_REFUSED = ConfigError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
TOPIC_REFUSED = ConfigError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
GROUP_REFUSED = ConfigError(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")


async def alter(ctx: RequestContext, alterations: Sequence[Alteration], validate_only: bool) -> Any:
    """Checks, authorizes and applies `alterations`; the response, in request order."""
    store = ctx.broker.configs
    errors = store.preprocess(alterations, ctx.node_id)
    # ALTER_CONFIGS on the cluster for broker and client metrics resources, on the topic
    # for topics, on the group for groups
    authorizer, principal, host = ctx.broker.authorizer, ctx.connection.principal, ctx.connection.peer[0]
    cluster_allowed = authorizer.authorize_cluster(principal, ALTER_CONFIGS, host)
    for index, alteration in enumerate(alterations):
        if errors[index] is not None:
            continue
        if alteration.resource_type in (BROKER, CLIENT_METRICS):
            if not cluster_allowed:
                errors[index] = CLUSTER_REFUSED
        elif alteration.resource_type == GROUP:
            if not authorizer.authorize(
                principal, host, Operation.ALTER_CONFIGS, ResourceType.GROUP, alteration.resource_name
            ):
                errors[index] = GROUP_REFUSED
        elif not authorizer.authorize(
            principal, host, Operation.ALTER_CONFIGS, ResourceType.TOPIC, alteration.resource_name
        ):
            errors[index] = TOPIC_REFUSED
    pending = [index for index, error in enumerate(errors) if error is None]
    results = await store.alter_resources([alterations[i] for i in pending], validate_only)
    for index, result in zip(pending, results, strict=True):
        errors[index] = result
    Response = response_class(ctx.api_key).AlterConfigsResourceResponse
    responses = [
        Response(
            error_code=error.code if error else ErrorCode.NONE,
            error_message=error.message if error else None,
            resource_type=alteration.resource_type,
            resource_name=alteration.resource_name,
        )
        for alteration, error in zip(alterations, errors, strict=True)
    ]
    return ctx.response(throttle_time_ms=0, responses=responses)


async def handle(ctx: RequestContext, request: Any) -> Any:
    alterations = [
        Alteration(
            resource.resource_type,
            resource.resource_name,
            [ConfigOp(c.name, c.config_operation, c.value) for c in resource.configs],
        )
        for resource in request.resources
    ]
    return await alter(ctx, alterations, bool(request.validate_only))
