"""OffsetDelete (47): removes a group's committed offsets for partitions of topics the
group no longer subscribes to (kafka-consumer-groups.sh --delete-offsets).

As in KafkaApis, topics the caller may not READ (TOPIC_AUTHORIZATION_FAILED) and unknown
topics (UNKNOWN_TOPIC_OR_PARTITION) are answered here and never reach the coordinator;
DELETE on the group is checked before (broker/security/authorization.py).
"""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation, ResourceType
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.OFFSET_DELETE
VERSIONS = (0, 0)
AUTHORIZATION = authorization.the_group(Operation.DELETE)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Topic = response_class(API_KEY).OffsetDeleteResponseTopic
Partition = Topic.OffsetDeleteResponsePartition


def handle(ctx: RequestContext, request: Any) -> Any:
    groups = ctx.groups
    if not request.group_id:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.INVALID_GROUP_ID, topics=[])
    if groups.coordinator_for(request.group_id) != ctx.node_id:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NOT_COORDINATOR, topics=[])
    rows: list[tuple[str, list[list[int]]]] = []
    known: list[tuple[str, int]] = []
    pending: list[list[int]] = []
    authorizer, principal, host = ctx.broker.authorizer, ctx.connection.principal, ctx.connection.peer[0]
    for topic in request.topics:
        if not authorizer.authorize(principal, host, Operation.READ, ResourceType.TOPIC, topic.name):
            refusal: int | None = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif topic.name not in ctx.cluster.topics:
            refusal = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            refusal = None
        partitions = []
        for partition in topic.partitions:
            row = [partition.partition_index, refusal or ErrorCode.NONE]
            partitions.append(row)
            if refusal is None:
                known.append((topic.name, partition.partition_index))
                pending.append(row)
        rows.append((topic.name, partitions))
    error, errors = groups.delete_offsets(request.group_id, known)
    if error != ErrorCode.NONE:
        return ctx.response(throttle_time_ms=0, error_code=error, topics=[])
    for row, code in zip(pending, errors, strict=True):
        row[1] = code
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        topics=[
            Topic(
                name=name,
                partitions=[Partition(partition_index=i, error_code=code) for i, code in partitions],
            )
            for name, partitions in rows
        ],
    )
