"""DeleteGroups (42): removes Empty groups and their committed offsets."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DeleteGroupsResponse

from broker.context import RequestContext
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DELETE_GROUPS
Result = DeleteGroupsResponse.DeletableGroupResult


def handle(ctx: RequestContext, request: Any) -> Any:
    names = list(dict.fromkeys(request.groups_names))
    results = ctx.groups.delete_groups(g for g in names if ctx.groups.coordinator_for(g) == ctx.node_id)
    return ctx.response(
        throttle_time_ms=0,
        results=[Result(group_id=g, error_code=results.get(g, ErrorCode.NOT_COORDINATOR)) for g in names],
    )
