"""JoinGroup (11): enter a classic group; parked until the group's join phase completes."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import JoinGroupResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.JOIN_GROUP
VERSIONS = (0, 9)
AUTHORIZATION = authorization.the_group(Operation.READ)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Member = JoinGroupResponse.JoinGroupResponseMember


async def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    group_id = request.group_id
    if group_id and ctx.groups.coordinator_for(group_id) != ctx.node_id:
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.NOT_COORDINATOR,
            protocol_name=None if version >= 7 else "",
        )
    result = await ctx.groups.join_group(
        group_id,
        request.member_id,
        request.protocol_type,
        [(protocol.name, protocol.metadata) for protocol in request.protocols],
        request.session_timeout_ms,
        # v0 has no rebalance timeout: Kafka uses the session timeout for both.
        request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
        group_instance_id=request.group_instance_id if version >= 5 else None,
        client_id=ctx.client_id or "",
        client_host=f"/{ctx.connection.peer[0]}",
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= 9,
    )
    protocol_name = result.protocol_name
    if protocol_name is None and version < 7:
        protocol_name = ""  # nullable only from v7
    return ctx.response(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            Member(member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
            for m in result.members
        ],
    )
