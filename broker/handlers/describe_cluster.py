"""DescribeCluster (60): brokers on the client's listener, cluster id, controller."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeClusterResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.acls import ResourceType
from broker.security.authorization import by_handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_CLUSTER
VERSIONS = (0, 2)
AUTHORIZATION = by_handler("DESCRIBE on the cluster to see its authorized operations")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
BROKER_ENDPOINTS = 1  # EndpointType ids
CONTROLLER_ENDPOINTS = 2
Broker = DescribeClusterResponse.DescribeClusterBroker


def handle(ctx: RequestContext, request: Any) -> Any:
    if request.endpoint_type != BROKER_ENDPOINTS:  # v0 always asks for brokers
        # AuthHelper.computeDescribeClusterResponse: only the error is set.
        if request.endpoint_type == CONTROLLER_ENDPOINTS:
            return ctx.response(
                error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                error_message="The request was sent to an endpoint of type BROKER, "
                "but we wanted an endpoint of type CONTROLLER",
            )
        return ctx.response(
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"Unsupported endpoint type {request.endpoint_type}",
        )
    cluster = ctx.cluster
    include_fenced = ctx.api_version >= 2 and request.include_fenced_brokers
    brokers = []
    for node_id, node in sorted(cluster.brokers.items()):
        if not node.up and not include_fenced:
            continue
        host, port = node.endpoint(ctx.connection.listener)
        brokers.append(Broker(broker_id=node_id, host=host, port=port, rack=node.rack, is_fenced=not node.up))
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=BROKER_ENDPOINTS,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        brokers=brokers,
        authorized_operations=cluster_operations(ctx)
        if request.include_cluster_authorized_operations
        else None,
    )


def cluster_operations(ctx: RequestContext) -> frozenset[int]:
    """What the caller may do to the cluster, or nothing without DESCRIBE on it
    (AuthHelper.computeDescribeClusterResponse)."""
    authorizer, principal, host = ctx.broker.authorizer, ctx.connection.principal, ctx.connection.peer[0]
    if not authorizer.authorize_cluster(principal, "DESCRIBE", host):
        return frozenset()
    return authorizer.authorized_operations(principal, host, ResourceType.CLUSTER)
