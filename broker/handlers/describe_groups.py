"""DescribeGroups (15): state, protocol and members of groups this broker coordinates."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeGroupsResponse

from broker.context import RequestContext
from broker.error_responses import Level, mirrors
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation, ResourceType
from broker.state.classic_groups import DEAD
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_GROUPS
VERSIONS = (0, 6)
AUTHORIZATION = authorization.each_group(Operation.DESCRIBE)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(Level(("groups",), "groups", (("group_id", ""),)))
Described = DescribeGroupsResponse.DescribedGroup
DescribedMember = Described.DescribedGroupMember
# kafka-python models the bitfield as a set of bit numbers; None encodes Kafka's
# "not requested" sentinel (Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = None
# Without an authorizer Kafka reports every operation a group supports:
# READ (3), DELETE (6) and DESCRIBE (8).


def describe(ctx: RequestContext, group_id: str, include_operations: bool) -> Any:
    if ctx.groups.coordinator_for(group_id) != ctx.node_id:
        return Described(
            error_code=ErrorCode.NOT_COORDINATOR,
            error_message="This is not the correct coordinator.",
            group_id=group_id,
            group_state="",
            protocol_type="",
            protocol_data="",
            members=[],
            authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
        )
    operations = (
        ctx.broker.authorizer.authorized_operations(
            ctx.connection.principal, ctx.connection.peer[0], ResourceType.GROUP, group_id
        )
        if include_operations
        else AUTHORIZED_OPERATIONS_OMITTED
    )
    description = ctx.groups.describe_group(group_id)
    if description is None:
        # v6 (KIP-1043) reports a missing group as an error; older versions as a Dead group.
        missing = ctx.api_version >= 6
        return Described(
            error_code=ErrorCode.GROUP_ID_NOT_FOUND if missing else ErrorCode.NONE,
            error_message=(
                (
                    f"Group {group_id} is not a classic group."
                    if ctx.groups.group_exists(group_id)  # a consumer or share group
                    else f"Group {group_id} not found."
                )
                if missing
                else None
            ),
            group_id=group_id,
            group_state=DEAD,
            protocol_type="",
            protocol_data="",
            members=[],
            authorized_operations=AUTHORIZED_OPERATIONS_OMITTED if missing else operations,
        )
    return Described(
        error_code=ErrorCode.NONE,
        error_message=None,
        group_id=group_id,
        group_state=description.state,
        protocol_type=description.protocol_type,
        protocol_data=description.protocol_data,
        members=[
            DescribedMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata,
                member_assignment=m.assignment,
            )
            for m in description.members
        ],
        authorized_operations=operations,
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    include_operations = ctx.api_version >= 3 and bool(request.include_authorized_operations)
    return ctx.response(
        throttle_time_ms=0,
        groups=[describe(ctx, group_id, include_operations) for group_id in request.groups],
    )
