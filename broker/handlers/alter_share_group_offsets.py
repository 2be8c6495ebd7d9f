"""AlterShareGroupOffsets (91): sets the start offset of share partitions of an empty
share group, as Kafka's KafkaApis and GroupMetadataManager.alterShareGroupOffsets do.

A group with members is refused as a whole (NON_EMPTY_GROUP); a group id taken by another
type of group is GROUP_ID_NOT_FOUND; a group that does not exist is created (empty) when
a topic of the request exists. Topics the caller may not READ or this cluster does not
have, and partitions past a topic's count, are answered per partition; each partition
altered starts afresh at its offset: its records in flight are forgotten."""

from __future__ import annotations

import uuid
from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.acls import Operation, ResourceType
from broker.security.authorization import GROUP, Access, Authorization, Handler
from broker.state.consumer_groups import HeartbeatError
from broker.state.features import SHARE_VERSION
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.uuids import uuid_string

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS
VERSIONS = (0, 0)


def _on_group(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """READ on the group, else GROUP_AUTHORIZATION_FAILED with its message (Kafka's
    getErrorResponse of the exception)."""
    if not access.allows(Operation.READ, GROUP, request.group_id):
        return _failed(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    return call(ctx, request)


AUTHORIZATION = Authorization(
    "READ on the group; READ on each topic (a refused one answers TOPIC_AUTHORIZATION_FAILED)",
    _on_group,
)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Response = response_class(API_KEY)
Topic = Response.AlterShareGroupOffsetsResponseTopic
Partition = Topic.AlterShareGroupOffsetsResponsePartition
ZERO_UUID = uuid.UUID(int=0)
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
REFUSED_MESSAGE = "Topic authorization failed."


def _failed(ctx: RequestContext, code: int, message: str | None) -> Any:
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message, responses=[])


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.cluster.features.finalized.get(SHARE_VERSION, 0) < 1:
        return _failed(ctx, ErrorCode.UNSUPPORTED_VERSION, "The version of API is not supported.")
    group_id = request.group_id
    connection = ctx.connection
    share = ctx.groups.share
    answered: dict[str, Any] = {}  # by topic name, in the order KafkaApis answers them

    def topic_answer(name: str, topic_id: uuid.UUID) -> Any:
        if name not in answered:
            answered[name] = Topic(topic_name=name, topic_id=topic_id, partitions=[])
        return answered[name]

    wanted: list[tuple[str, uuid.UUID, int, list[Any]]] = []
    for topic in request.topics:
        state = ctx.cluster.topics.get(topic.topic_name)
        topic_id = state.topic_id if state is not None else ZERO_UUID
        if not ctx.broker.authorizer.authorize(
            connection.principal, connection.peer[0], Operation.READ, ResourceType.TOPIC, topic.topic_name
        ):
            failure: tuple[int, str] | None = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, REFUSED_MESSAGE)
        elif state is None:
            failure = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
        else:
            failure = None
        if failure is not None:
            answer = topic_answer(topic.topic_name, topic_id)
            answer.partitions += [
                Partition(partition_index=p.partition_index, error_code=failure[0], error_message=failure[1])
                for p in topic.partitions
            ]
            continue
        assert state is not None
        wanted.append((topic.topic_name, state.topic_id, len(state.partitions), topic.partitions))
    if not group_id:
        return _failed(ctx, ErrorCode.INVALID_GROUP_ID, "The group id is invalid.")
    if ctx.groups.coordinator_for(group_id) != ctx.node_id:
        return _failed(ctx, ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
    if group_id not in share.groups and ctx.groups.group_exists(group_id):
        return _failed(ctx, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
    offsets: dict[uuid.UUID, dict[int, int]] = {}
    outcomes: list[tuple[str, uuid.UUID, list[Any]]] = []
    for name, topic_id, count, partitions in wanted:
        rows = []
        for p in partitions:
            if p.partition_index < count:
                offsets.setdefault(topic_id, {})[p.partition_index] = p.start_offset
                rows.append(
                    Partition(
                        partition_index=p.partition_index, error_code=ErrorCode.NONE, error_message=None
                    )
                )
            else:
                rows.append(
                    Partition(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        error_message=UNKNOWN_TOPIC_MESSAGE,
                    )
                )
        outcomes.append((name, topic_id, rows))
    # DefaultStatePersister refuses a negative partition (the group coordinator let it by)
    negative = next(((t, p) for t, starts in offsets.items() for p in starts if p < 0), None)
    try:
        share.alter_offsets(group_id, offsets, create=bool(wanted), initialize=negative is None)
    except HeartbeatError as error:
        return _failed(ctx, error.code, error.message)
    if negative is not None:
        return _failed(
            ctx,
            ErrorCode.UNKNOWN_SERVER_ERROR,
            "Initialize share group parameters has invalid partitionId - "
            f"{group_id} {uuid_string(negative[0])} {negative[1]}",
        )
    for name, topic_id, rows in outcomes:
        topic_answer(name, topic_id).partitions += rows
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, responses=list(answered.values())
    )
