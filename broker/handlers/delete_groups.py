"""DeleteGroups (42): removes Empty groups and their committed offsets.

v3 adds an error message per group, which Kafka 4.4 leaves null (as here) for every
error this broker gives: NOT_COORDINATOR, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import Level, mirrors
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DELETE_GROUPS
VERSIONS = (0, 3)
AUTHORIZATION = authorization.each_group(Operation.DELETE)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(Level(("groups_names",), "results", (("group_id", ""),)))
Result = response_class(API_KEY).DeletableGroupResult


def handle(ctx: RequestContext, request: Any) -> Any:
    names = list(dict.fromkeys(request.groups_names))
    results = ctx.groups.delete_groups(g for g in names if ctx.groups.coordinator_for(g) == ctx.node_id)
    return ctx.response(
        throttle_time_ms=0,
        results=[Result(group_id=g, error_code=results.get(g, ErrorCode.NOT_COORDINATOR)) for g in names],
    )
