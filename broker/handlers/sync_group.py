"""SyncGroup (14): the leader hands out assignments; members wait for theirs."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.SYNC_GROUP
VERSIONS = (0, 5)
AUTHORIZATION = authorization.the_group(Operation.READ)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


async def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    if version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # Kafka rejects v5+ requests without the (then mandatory) protocol type and name.
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    group_id = request.group_id
    if group_id and ctx.groups.coordinator_for(group_id) != ctx.node_id:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NOT_COORDINATOR)
    result = await ctx.groups.sync_group(
        group_id,
        request.generation_id,
        request.member_id,
        [(entry.member_id, entry.assignment) for entry in request.assignments],
        group_instance_id=request.group_instance_id if version >= 3 else None,
        protocol_type=request.protocol_type if version >= 5 else None,
        protocol_name=request.protocol_name if version >= 5 else None,
    )
    return ctx.response(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
