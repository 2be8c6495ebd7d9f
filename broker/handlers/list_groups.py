"""ListGroups (16): the groups this broker coordinates (v4 states filter, v5 types filter)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import ListGroupsResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.LIST_GROUPS
VERSIONS = (0, 5)
AUTHORIZATION = authorization.LIST_GROUPS
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Listed = ListGroupsResponse.ListedGroup


def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    # Like Kafka, each broker lists only its own groups; admin clients ask every broker.
    groups = ctx.groups.list_groups(
        states=request.states_filter if version >= 4 else (),
        types=request.types_filter if version >= 5 else (),
        coordinator=ctx.node_id,
    )
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        groups=[
            Listed(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.state,
                group_type=g.group_type,
            )
            for g in groups
        ],
    )
