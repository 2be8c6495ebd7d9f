"""LeaveGroup (13): members leave at once instead of waiting out their session (v3+: batches)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import LeaveGroupResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.LEAVE_GROUP
VERSIONS = (0, 5)
AUTHORIZATION = authorization.the_group(Operation.READ)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
MemberResponse = LeaveGroupResponse.MemberResponse


def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    if version <= 2:
        leaving: list[tuple[str, str | None]] = [(request.member_id, None)]
    else:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    group_id = request.group_id
    member_errors: list[int] = []
    if group_id and ctx.groups.coordinator_for(group_id) != ctx.node_id:
        error: int = ErrorCode.NOT_COORDINATOR
    else:
        error, member_errors = ctx.groups.leave_group(group_id, leaving)
    if version <= 2:
        # Single-member versions carry the member's error at the top level.
        if error == ErrorCode.NONE:
            error = next((code for code in member_errors if code != ErrorCode.NONE), ErrorCode.NONE)
        return ctx.response(throttle_time_ms=0, error_code=error)
    return ctx.response(
        throttle_time_ms=0,
        error_code=error,
        members=[
            MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=code)
            for (member_id, instance_id), code in zip(leaving, member_errors, strict=False)
        ],
    )
