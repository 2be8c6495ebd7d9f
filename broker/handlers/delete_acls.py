"""DeleteAcls (31): every binding each filter matches goes; the answer lists them."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.acl import DeleteAclsResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.acl_common import filter_of, refusal, refuse_unknown
from broker.handlers.spec import ALWAYS
from broker.security.acls import AclBinding, AclFilter, InvalidAcl, Operation
from broker.security.authorization import by_handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DELETE_ACLS
VERSIONS = (1, 3)
AUTHORIZATION = by_handler("ALTER on the cluster; SECURITY_DISABLED without an authorizer")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
Matching = FilterResult.DeleteAclsMatchingAcl


def _matching(binding: AclBinding) -> Any:
    return Matching(
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=binding.resource_type,
        resource_name=binding.resource_name,
        pattern_type=binding.pattern_type,
        principal=binding.principal,
        host=binding.host,
        operation=binding.operation,
        permission_type=binding.permission,
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    for wanted in request.filters:
        refuse_unknown(
            wanted.resource_type_filter, wanted.pattern_type_filter, wanted.operation, wanted.permission_type
        )
    error, message = refusal(ctx, Operation.ALTER)
    if error != ErrorCode.NONE:
        results = [
            FilterResult(error_code=error, error_message=message, matching_acls=[]) for _ in request.filters
        ]
        return ctx.response(throttle_time_ms=0, filter_results=results)
    return _deleted(ctx, [filter_of(wanted, ctx.api_version) for wanted in request.filters])


async def _deleted(ctx: RequestContext, filters: list[AclFilter]) -> Any:
    """Each valid filter's matches go, all in one transaction; an invalid filter fails alone."""
    refusals: list[str | None] = []
    for acl_filter in filters:
        try:
            acl_filter.validate()
            refusals.append(None)
        except InvalidAcl as exc:
            refusals.append(str(exc))
    valid = [f for f, refused in zip(filters, refusals, strict=True) if refused is None]
    matched = iter(await ctx.broker.authorizer.admin.delete_async(valid))
    results = [
        FilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=refused, matching_acls=[])
        if refused is not None
        else FilterResult(
            error_code=ErrorCode.NONE, error_message=None, matching_acls=[_matching(b) for b in next(matched)]
        )
        for refused in refusals
    ]
    return ctx.response(throttle_time_ms=0, filter_results=results)
