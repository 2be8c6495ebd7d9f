"""DeleteShareGroupOffsets (92): forgets the share-partition state of topics of an empty
share group, as Kafka's KafkaApis, GroupCoordinatorShard.initiateDeleteShareGroupOffsets
and the share coordinator's DeleteShareGroupState do.

The group must exist, be a share group and have no members; a topic the caller may not
READ, one this cluster does not have and one without state for the group are answered
per topic. A member assigned the topic later starts where share.auto.offset.reset
says."""

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

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS
VERSIONS = (0, 0)


def _on_group(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """DELETE on the group, else GROUP_AUTHORIZATION_FAILED with its message (Kafka's
    getErrorResponse of the exception)."""
    if not access.allows(Operation.DELETE, GROUP, request.group_id):
        return _failed(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    return call(ctx, request)


AUTHORIZATION = Authorization(
    "DELETE on the group; READ on each topic (a refused one answers TOPIC_AUTHORIZATION_FAILED)",
    _on_group,
)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Response = response_class(API_KEY)
Topic = Response.DeleteShareGroupOffsetsResponseTopic
ZERO_UUID = uuid.UUID(int=0)


def _failed(ctx: RequestContext, code: int, message: str | None) -> Any:
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message, responses=[])


def _topic(name: str, code: int, message: str | None, topic_id: uuid.UUID = ZERO_UUID) -> Any:
    return Topic(topic_name=name, topic_id=topic_id, error_code=code, error_message=message)


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.cluster.features.finalized.get(SHARE_VERSION, 0) < 1:
        return _failed(ctx, ErrorCode.UNSUPPORTED_VERSION, "The version of API is not supported.")
    group_id = request.group_id
    connection = ctx.connection
    refused, wanted = [], []
    for topic in request.topics:
        if ctx.broker.authorizer.authorize(
            connection.principal, connection.peer[0], Operation.READ, ResourceType.TOPIC, topic.topic_name
        ):
            wanted.append(topic.topic_name)
        else:
            refused.append(
                _topic(topic.topic_name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
            )
    if not group_id:
        return _failed(ctx, ErrorCode.INVALID_GROUP_ID, "The group id is invalid.")
    if ctx.groups.coordinator_for(group_id) != ctx.node_id:
        return _failed(ctx, ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
    share = ctx.groups.share
    if group_id not in share.groups:
        exists = ctx.groups.group_exists(group_id)
        message = f"Group {group_id} is not a share group." if exists else f"Group {group_id} not found."
        return _failed(ctx, ErrorCode.GROUP_ID_NOT_FOUND, message)
    try:
        share.check_empty(group_id)
    except HeartbeatError as error:
        return _failed(ctx, error.code, error.message)
    deleted, failed = [], []
    for name in wanted:
        state = ctx.cluster.topics.get(name)
        if state is None:
            failed.append(
                _topic(
                    name,
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
            )
        elif share.delete_offsets(group_id, state.topic_id):
            deleted.append(_topic(name, ErrorCode.NONE, None, state.topic_id))
        else:
            failed.append(
                _topic(
                    name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete."
                )
            )
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        responses=refused + deleted + failed,
    )
