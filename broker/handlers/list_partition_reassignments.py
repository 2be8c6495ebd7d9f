"""ListPartitionReassignments (46): the moves in progress (until their new replicas have
caught up: `replica.catch.up.ms` once their brokers are up), with their adding and
removing replicas; DESCRIBE on the cluster."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import DESCRIBE
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS
VERSIONS = (0, 0)
AUTHORIZATION = by_handler("DESCRIBE on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
TopicReassignment = response_class(API_KEY).OngoingTopicReassignment
PartitionReassignment = TopicReassignment.OngoingPartitionReassignment


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.authorizer.authorize_cluster(
        ctx.connection.principal, DESCRIBE, ctx.connection.peer[0]
    ):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            topics=[],
        )
    wanted = (
        None if request.topics is None else {(t.name, p) for t in request.topics for p in t.partition_indexes}
    )
    by_topic: dict[str, list[Any]] = {}
    for name, partition in ctx.cluster.reassignments():
        if wanted is None or (name, partition.index) in wanted:
            by_topic.setdefault(name, []).append(
                PartitionReassignment(
                    partition_index=partition.index,
                    replicas=list(partition.replicas),
                    adding_replicas=list(partition.adding),
                    removing_replicas=list(partition.removing),
                )
            )
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        topics=[TopicReassignment(name=name, partitions=rows) for name, rows in by_topic.items()],
    )
