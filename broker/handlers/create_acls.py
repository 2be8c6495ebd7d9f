"""CreateAcls (30): new bindings, each validated as Kafka's AclControlManager validates
it (INVALID_REQUEST with its message); an existing binding is created again as a no-op."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.acl import CreateAclsResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.acl_common import binding_of, refusal, refuse_unknown
from broker.handlers.spec import ALWAYS
from broker.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from broker.security.authorization import by_handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.CREATE_ACLS
VERSIONS = (1, 3)
AUTHORIZATION = by_handler("ALTER on the cluster; SECURITY_DISABLED without an authorizer")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = ("More than 10,000 ACLs in one request are not refused (Kafka answers POLICY_VIOLATION).",)
Result = CreateAclsResponse.AclCreationResult


def _unbuildable(creation: Any) -> bool:
    return (
        creation.resource_type == ResourceType.ANY
        or creation.resource_pattern_type in (PatternType.ANY, PatternType.MATCH)
        or creation.operation == Operation.ANY
        or creation.permission_type == Permission.ANY
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    for c in request.creations:
        refuse_unknown(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type)
    error, message = refusal(ctx, Operation.ALTER)
    if error == ErrorCode.NONE and any(_unbuildable(c) for c in request.creations):
        # Kafka's ResourcePattern/AccessControlEntry constructors throw for these before any
        # validation: the whole request fails with UNKNOWN_SERVER_ERROR.
        error, message = ErrorCode.UNKNOWN_SERVER_ERROR, None
    if error != ErrorCode.NONE:
        return ctx.response(
            throttle_time_ms=0,
            results=[Result(error_code=error, error_message=message) for _ in request.creations],
        )
    return _created(ctx, [binding_of(creation) for creation in request.creations])


async def _created(ctx: RequestContext, bindings: list[AclBinding]) -> Any:
    """Valid bindings are stored in one transaction; each invalid one is refused. A created
    one's message is empty, not null (Kafka's AclCreationResult as constructed)."""
    refusals = await ctx.broker.authorizer.admin.create_async(bindings)
    results = [
        Result(
            error_code=ErrorCode.NONE if refusal is None else ErrorCode.INVALID_REQUEST,
            error_message="" if refusal is None else refusal,
        )
        for refusal in refusals
    ]
    return ctx.response(throttle_time_ms=0, results=results)
