"""ShareGroupHeartbeat (76): KIP-932's request for joining, staying in and leaving a
share group and being told its partitions; the assignment is the broker's."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.common import failed_heartbeat, heartbeat_answer
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.state.consumer_groups import HeartbeatError
from broker.state.features import SHARE_VERSION
from broker.state.share_groups import ShareHeartbeat
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT
VERSIONS = (1, 1)
AUTHORIZATION = authorization.SHARE_GROUP_HEARTBEAT
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.cluster.features.finalized.get(SHARE_VERSION, 0) < 1:
        # KafkaApis: share groups need share.version 1 (UpdateFeatures can take it away)
        return failed_heartbeat(ctx, ErrorCode.UNSUPPORTED_VERSION)
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
            return failed_heartbeat(ctx, ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
        result = groups.share_group_heartbeat(heartbeat)
    except HeartbeatError as error:
        return failed_heartbeat(ctx, error.code, error.message)
    return heartbeat_answer(ctx, result)
