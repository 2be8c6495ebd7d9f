"""AlterPartitionReassignments (45): moves partitions to other replicas among the mock
brokers (kafka-reassign-partitions.sh, AdminClient.alterPartitionReassignments), or
cancels a move in progress (null replicas). The partition's replicas are the target and
the replicas to remove until the new ones, their brokers up, have caught up
(`replica.catch.up.ms` later: the log being shared, there is no fetching to wait for); then
the removed ones go and, if the leader left, the first new replica leads. See
ClusterState.reassign. ALTER on the cluster."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import ALTER
from broker.state.cluster import ClusterError
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.ALTER_PARTITION_REASSIGNMENTS
VERSIONS = (0, 1)
AUTHORIZATION = by_handler("ALTER on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
TopicResponse = response_class(API_KEY).ReassignableTopicResponse
PartitionResponse = TopicResponse.ReassignablePartitionResponse


def handle(ctx: RequestContext, request: Any) -> Any:
    allow_change = bool(request.allow_replication_factor_change) if ctx.api_version >= 1 else True
    if not ctx.broker.authorizer.authorize_cluster(ctx.connection.principal, ALTER, ctx.connection.peer[0]):
        return ctx.response(
            throttle_time_ms=0,
            allow_replication_factor_change=allow_change,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            responses=[],
        )
    responses = []
    for topic in request.topics:
        partitions = []
        for wanted in topic.partitions:
            code: int = ErrorCode.NONE
            message: str | None = None
            try:
                ctx.cluster.reassign(topic.name, wanted.partition_index, wanted.replicas, allow_change)
            except ClusterError as exc:
                code, message = exc.code, exc.message
            partitions.append(
                PartitionResponse(
                    partition_index=wanted.partition_index, error_code=code, error_message=message
                )
            )
        responses.append(TopicResponse(name=topic.name, partitions=partitions))
    return ctx.response(
        throttle_time_ms=0,
        allow_replication_factor_change=allow_change,
        error_code=ErrorCode.NONE,
        # QuorumController answers no topics with a fresh response (the schema's default
        # message, ""); ReplicationControlManager sets null once it has walked any.
        error_message=None if request.topics else "",
        responses=responses,
    )
