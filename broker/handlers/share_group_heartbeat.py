"""ShareGroupHeartbeat (76): KIP-932's request for joining, staying in and leaving a
share group and being told its partitions; the assignment is the broker's."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.state.consumer_groups import HeartbeatError
from broker.state.features import SHARE_VERSION
from broker.state.share_groups import ShareHeartbeat
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT
VERSIONS = (1, 1)
AUTHORIZATION = authorization.SHARE_GROUP_HEARTBEAT
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
ShareGroupHeartbeatResponse = response_class(API_KEY)
Assignment = ShareGroupHeartbeatResponse.Assignment
TopicPartitions = Assignment.TopicPartitions


def _error(ctx: RequestContext, code: int, message: str | None = None) -> Any:
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.cluster.features.finalized.get(SHARE_VERSION, 0) < 1:
        # KafkaApis: share groups need share.version 1 (UpdateFeatures can take it away)
        return _error(ctx, ErrorCode.UNSUPPORTED_VERSION)
    heartbeat = ShareHeartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        rack_id=request.rack_id,
        subscribed_topic_names=request.subscribed_topic_names,
        client_id=ctx.client_id or "",
        client_host=f"/{ctx.connection.peer[0]}",
    )
    groups = ctx.groups
    try:
        groups.share.validate(heartbeat)
        if groups.coordinator_for(heartbeat.group_id) != ctx.node_id:
            return _error(ctx, ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
        result = groups.share_group_heartbeat(heartbeat)
    except HeartbeatError as error:
        return _error(ctx, error.code, error.message)
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=None
        if result.assignment is None
        else Assignment(
            topic_partitions=[
                TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
                for topic_id, partitions in result.assignment.items()
            ]
        ),
    )
