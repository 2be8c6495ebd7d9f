"""Heartbeat (12): keeps a member's session alive and tells it when to rejoin."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.HEARTBEAT
VERSIONS = (0, 4)
AUTHORIZATION = authorization.the_group(Operation.READ)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def handle(ctx: RequestContext, request: Any) -> Any:
    group_id = request.group_id
    error: int
    if group_id and ctx.groups.coordinator_for(group_id) != ctx.node_id:
        error = ErrorCode.NOT_COORDINATOR
    else:
        error = ctx.groups.heartbeat(
            group_id,
            request.generation_id,
            request.member_id,
            request.group_instance_id if ctx.api_version >= 3 else None,
        )
    # The response's only error: counted here, the metrics row and the conformance
    # report need not walk it.
    ctx.error_code, ctx.error_count = error, 1 if error else 0
    if ctx.api_version == 0:  # no throttle time in v0
        return ctx.response(error_code=error)
    return ctx.response(throttle_time_ms=0, error_code=error)
