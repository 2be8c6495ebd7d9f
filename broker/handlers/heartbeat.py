"""Heartbeat (12): keeps a member's session alive and tells it when to rejoin."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.HEARTBEAT


def handle(ctx: RequestContext, request: Any) -> Any:
    group_id = request.group_id
    if group_id and ctx.groups.coordinator_for(group_id) != ctx.node_id:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NOT_COORDINATOR)
    error = ctx.groups.heartbeat(
        group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if ctx.api_version >= 3 else None,
    )
    return ctx.response(throttle_time_ms=0, error_code=error)
