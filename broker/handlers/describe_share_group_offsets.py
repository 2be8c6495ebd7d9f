"""DescribeShareGroupOffsets (90): each share partition's start offset (and, from v1,
its lag) for share groups, as Kafka's KafkaApis, GroupCoordinatorService and share
coordinator answer it.

Kafka reads the share coordinator's state for the partitions named without asking the
group coordinator about the group: a group, topic or partition it holds no state for is
answered start offset -1, leader epoch 0, lag -1 and no error; the state exists once a
member has acknowledged or released records or the offsets were altered. Null topics
(v1's "all topics") lists the partitions whose state exists. The lag is the partition's
high watermark less the start offset and the records after it already acknowledged or
archived."""

from __future__ import annotations

import uuid
from typing import Any

from broker.context import RequestContext
from broker.error_responses import Level, mirrors
from broker.handlers.spec import ALWAYS
from broker.security.acls import Operation, ResourceType
from broker.security.authorization import Authorization, per_group
from broker.state.features import SHARE_VERSION
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
VERSIONS = (0, 1)
AUTHORIZATION = Authorization(
    "DESCRIBE on each group; DESCRIBE on each topic (a refused one answers TOPIC_AUTHORIZATION_FAILED,"
    " a listing of all leaves it out)",
    per_group(Operation.DESCRIBE, lambda group: group.group_id),
)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(Level(("groups",), "groups", (("group_id", "group_id"),)))
Response = response_class(API_KEY)
Group = Response.DescribeShareGroupOffsetsResponseGroup
Topic = Group.DescribeShareGroupOffsetsResponseTopic
Partition = Topic.DescribeShareGroupOffsetsResponsePartition
ZERO_UUID = uuid.UUID(int=0)
UNINITIALIZED = -1


def _may_describe(ctx: RequestContext, topic: str) -> bool:
    connection = ctx.connection
    return ctx.broker.authorizer.authorize(
        connection.principal, connection.peer[0], Operation.DESCRIBE, ResourceType.TOPIC, topic
    )


def _partition(ctx: RequestContext, group_id: str, topic_id: uuid.UUID, index: int) -> Any:
    """ReadShareGroupStateSummary of one partition, and its lag."""
    share = ctx.groups.share.written_state(group_id, topic_id, index)
    topic = ctx.cluster.topics_by_id.get(topic_id)
    if share is None or topic is None or not 0 <= index < len(topic.partitions) or share.start_offset < 0:
        return Partition(partition_index=index, start_offset=UNINITIALIZED, leader_epoch=0, lag=UNINITIALIZED)
    log = topic.partitions[index].log
    lag = log.high_watermark - share.start_offset - share.delivery_complete()
    leader_epoch = topic.partitions[index].leader_epoch
    return Partition(
        partition_index=index,
        start_offset=share.start_offset,
        leader_epoch=leader_epoch,
        lag=lag,
        error_code=ErrorCode.NONE,
        error_message=None,
    )


class _PersisterRefused(Exception):
    """DefaultStatePersister's validation refused the read: a topic with no partitions
    or a negative one (the group is answered UNKNOWN_SERVER_ERROR)."""


def _named(ctx: RequestContext, group_id: str, topics: list[Any]) -> list[Any]:
    """describeShareGroupOffsets: the topics named, those the caller may not describe
    last, refused, after those this cluster does not have."""
    known, unknown, refused = [], [], []
    for topic in topics:
        if not _may_describe(ctx, topic.topic_name):
            refused.append(
                Topic(
                    topic_name=topic.topic_name,
                    topic_id=ZERO_UUID,
                    partitions=[
                        Partition(
                            partition_index=p,
                            start_offset=UNINITIALIZED,
                            leader_epoch=0,
                            lag=UNINITIALIZED,
                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            error_message="Topic authorization failed.",
                        )
                        for p in topic.partitions
                    ],
                )
            )
            continue
        state = ctx.cluster.topics.get(topic.topic_name)
        if state is None:
            unknown.append(
                Topic(
                    topic_name=topic.topic_name,
                    topic_id=ZERO_UUID,
                    partitions=[
                        Partition(
                            partition_index=p, start_offset=UNINITIALIZED, leader_epoch=0, lag=UNINITIALIZED
                        )
                        for p in topic.partitions
                    ],
                )
            )
            continue
        if not topic.partitions or any(p < 0 for p in topic.partitions):
            raise _PersisterRefused
        known.append(
            Topic(
                topic_name=topic.topic_name,
                topic_id=state.topic_id,
                partitions=[_partition(ctx, group_id, state.topic_id, p) for p in topic.partitions],
            )
        )
    return known + unknown + refused


def _all(ctx: RequestContext, group_id: str) -> list[Any]:
    """describeShareGroupAllOffsets: every partition whose state exists, of the topics
    the caller may describe."""
    out = []
    for topic_id, indexes in ctx.groups.share.initialized(group_id).items():
        topic = ctx.cluster.topics_by_id.get(topic_id)
        if topic is None or not _may_describe(ctx, topic.name):
            continue
        out.append(
            Topic(
                topic_name=topic.name,
                topic_id=topic_id,
                partitions=[_partition(ctx, group_id, topic_id, p) for p in indexes],
            )
        )
    return out


def _group(ctx: RequestContext, wanted: Any) -> Any:
    group_id = wanted.group_id
    if ctx.cluster.features.finalized.get(SHARE_VERSION, 0) < 1:
        return Group(
            group_id=group_id, topics=[], error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=None
        )
    if wanted.topics is None:
        if ctx.groups.coordinator_for(group_id) != ctx.node_id:
            return Group(
                group_id=group_id,
                topics=[],
                error_code=ErrorCode.NOT_COORDINATOR,
                error_message="This is not the correct coordinator.",
            )
        return Group(
            group_id=group_id, topics=_all(ctx, group_id), error_code=ErrorCode.NONE, error_message=None
        )
    try:
        topics = _named(ctx, group_id, wanted.topics)
    except _PersisterRefused:
        return Group(
            group_id=group_id,
            topics=[],
            error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
            error_message="The server experienced an unexpected error when processing the request.",
        )
    return Group(group_id=group_id, topics=topics, error_code=ErrorCode.NONE, error_message=None)


def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.response(throttle_time_ms=0, groups=[_group(ctx, wanted) for wanted in request.groups])
