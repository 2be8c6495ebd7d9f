"""DescribeTopicPartitions (75, KIP-966): topics and their partitions like Metadata, paged
by a cursor so that topics with many partitions fit in bounded responses
(DescribeTopicPartitionsRequestHandler with KRaftMetadataCache.describeTopicResponse):
topics in name order from the cursor's, at most `response_partition_limit` partitions
(capped by `max.request.partition.size.limit`, at least one), and the cursor to continue
from. A topic that is not there is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for
a name Kafka refuses) with the caller's authorized operations, as Kafka fills them in for
every topic that passed DESCRIBE."""

from __future__ import annotations

import uuid
from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.common import PartitionState
from broker.handlers.spec import ALWAYS
from broker.security.acls import Operation, ResourceType
from broker.security.authorization import by_handler
from broker.state.cluster import ClusterError, Topic, validate_topic_name
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS
VERSIONS = (0, 0)
AUTHORIZATION = by_handler("DESCRIBE on each topic (a topic without it is answered as unknown)")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = ("Eligible leader replicas (KIP-966) are always empty.",)
Response = response_class(API_KEY)
TopicResult = Response.DescribeTopicPartitionsResponseTopic
PartitionResult = TopicResult.DescribeTopicPartitionsResponsePartition
NO_TOPIC_ID = uuid.UUID(int=0)


def _partitions(ctx: RequestContext, topic: Topic, start: int, limit: int) -> list[Any]:
    live = set(ctx.cluster.live_broker_ids())
    rows = []
    for partition in topic.partitions[start : start + limit]:
        state = PartitionState.of(partition, live)
        rows.append(
            PartitionResult(
                error_code=state.error_code,
                partition_index=partition.index,
                leader_id=state.leader_id,
                leader_epoch=partition.leader_epoch,
                replica_nodes=list(partition.replicas),
                isr_nodes=state.isr,
                eligible_leader_replicas=[],
                last_known_elr=[],
                offline_replicas=state.offline,
            )
        )
    return rows


def _failed(name: str, code: int) -> Any:
    return TopicResult(error_code=code, name=name, topic_id=NO_TOPIC_ID, is_internal=False, partitions=[])


def _unknown_error(name: str) -> int:
    """KRaftMetadataCache: INVALID_TOPIC_EXCEPTION for a name Topic.validate refuses, else
    UNKNOWN_TOPIC_OR_PARTITION."""
    try:
        validate_topic_name(name)
    except ClusterError:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def handle(ctx: RequestContext, request: Any) -> Any:
    authorizer, principal, host = ctx.broker.authorizer, ctx.connection.principal, ctx.connection.peer[0]
    cluster = ctx.cluster
    cursor = request.cursor
    if request.topics:
        names = sorted({t.name for t in request.topics})
        if cursor is not None and cursor.topic_name not in names:
            # InvalidRequestException: getErrorResponse answers each requested topic with it
            return ctx.response(
                throttle_time_ms=0,
                topics=[_failed(t.name, ErrorCode.INVALID_REQUEST) for t in request.topics],
                next_cursor=None,
            )
        listing = False
    else:  # every topic the caller may describe
        names = sorted(cluster.topics)
        listing = True
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    if "" in names:
        # Kafka fails the whole request on an empty name: getErrorResponse answers every
        # topic asked for with UNKNOWN_SERVER_ERROR.
        return ctx.response(
            throttle_time_ms=0,
            topics=[_failed(t.name, ErrorCode.UNKNOWN_SERVER_ERROR) for t in request.topics],
            next_cursor=None,
        )
    # at least one partition, however small the limit asked for
    remaining = max(
        min(request.response_partition_limit, ctx.broker.config.get_int("max.request.partition.size.limit")),
        1,
    )
    results: list[Any] = []
    next_cursor = None
    for name in names:
        allowed = authorizer.authorize(principal, host, Operation.DESCRIBE, ResourceType.TOPIC, name)
        if not allowed:
            if not listing:
                results.append(_failed(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        if remaining <= 0:  # the cursor points at the next topic, whether it exists or not
            next_cursor = Response.Cursor(topic_name=name, partition_index=0)
            break
        # DescribeTopicPartitionsRequestHandler: every topic that passed DESCRIBE, known
        # or not, gets what the caller may do to it
        operations = sum(
            1 << op for op in authorizer.authorized_operations(principal, host, ResourceType.TOPIC, name)
        )
        topic = cluster.topics.get(name)
        if topic is None:
            failed = _failed(name, _unknown_error(name))
            failed.topic_authorized_operations = operations
            results.append(failed)
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        rows = _partitions(ctx, topic, start, remaining)
        remaining -= len(rows)
        results.append(
            TopicResult(
                error_code=ErrorCode.NONE,
                name=name,
                topic_id=topic.topic_id,
                is_internal=topic.is_internal,
                partitions=rows,
                topic_authorized_operations=operations,
            )
        )
        if start + len(rows) < len(topic.partitions):
            next_cursor = Response.Cursor(topic_name=name, partition_index=start + len(rows))
            break
    return ctx.response(throttle_time_ms=0, topics=results, next_cursor=next_cursor)
