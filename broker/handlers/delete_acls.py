"""DeleteAcls (31): every binding each filter matches goes; the answer lists them."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.acl import DeleteAclsResponse

from broker.context import RequestContext
from broker.handlers.acl_common import filter_of, refusal, refuse_unknown
from broker.security.acls import InvalidAcl, Operation
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DELETE_ACLS
FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
Matching = FilterResult.DeleteAclsMatchingAcl


def _delete(ctx: RequestContext, wanted: Any) -> Any:
    acl_filter = filter_of(wanted, ctx.api_version)
    try:
        acl_filter.validate()
    except InvalidAcl as exc:
        return FilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=str(exc), matching_acls=[])
    acls = ctx.broker.authorizer.acls
    matching = acls.matching(acl_filter)
    for binding in matching:
        acls.remove(binding)
    return FilterResult(
        error_code=ErrorCode.NONE,
        error_message=None,
        matching_acls=[
            Matching(
                error_code=ErrorCode.NONE,
                error_message=None,
                resource_type=b.resource_type,
                resource_name=b.resource_name,
                pattern_type=b.pattern_type,
                principal=b.principal,
                host=b.host,
                operation=b.operation,
                permission_type=b.permission,
            )
            for b in matching
        ],
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
    else:
        results = [_delete(ctx, wanted) for wanted in request.filters]
    return ctx.response(throttle_time_ms=0, filter_results=results)
