"""ListConfigResources (74; ListClientMetricsResources at v0, KIP-1142 at v1): the names
of the config resources of the requested types (kafka-configs --list,
Admin.listConfigResources), in KafkaApis' order: groups with configs, client metrics
subscriptions, brokers (as BROKER_LOGGER and as BROKER), topics. v0 lists client
metrics only; a type outside the supported five is UNSUPPORTED_VERSION. DESCRIBE_CONFIGS
on the cluster."""

from __future__ import annotations

from typing import Any

from broker.config.group_configs import GROUP
from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import DESCRIBE_CONFIGS
from broker.telemetry.subscriptions import CLIENT_METRICS
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.LIST_CONFIG_RESOURCES
VERSIONS = (0, 1)
AUTHORIZATION = by_handler("DESCRIBE_CONFIGS on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Response = response_class(API_KEY)
ConfigResource = Response.ConfigResource
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SUPPORTED = frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP})


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.authorizer.authorize_cluster(
        ctx.connection.principal, DESCRIBE_CONFIGS, ctx.connection.peer[0]
    ):
        return ctx.response(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, config_resources=[])
    if ctx.api_version == 0:
        wanted = {CLIENT_METRICS}
    else:
        wanted = set(request.resource_types or SUPPORTED)
        if not wanted <= SUPPORTED:
            return ctx.response(error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[])
    cluster = ctx.cluster
    found: list[tuple[str, int]] = []
    if GROUP in wanted:
        found += [(group_id, GROUP) for group_id in cluster.group_configs]
    if CLIENT_METRICS in wanted:
        found += [(name, CLIENT_METRICS) for name in cluster.client_metrics.configs]
    live = [str(node_id) for node_id, node in sorted(cluster.brokers.items()) if node.up]
    for resource_type in (BROKER_LOGGER, BROKER):
        if resource_type in wanted:
            found += [(node_id, resource_type) for node_id in live]
    if TOPIC in wanted:
        found += [(name, TOPIC) for name in cluster.topics]
    return ctx.response(
        error_code=ErrorCode.NONE,
        config_resources=[ConfigResource(resource_name=name, resource_type=kind) for name, kind in found],
    )
