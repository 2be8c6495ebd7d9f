"""DescribeAcls (29): the bindings a filter matches, grouped by resource pattern."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.acl import DescribeAclsResponse

from broker.context import RequestContext
from broker.handlers.acl_common import filter_of, refusal
from broker.security.acls import AclBinding, InvalidAcl, Operation
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_ACLS
Resource = DescribeAclsResponse.DescribeAclsResource
Description = Resource.AclDescription


def handle(ctx: RequestContext, request: Any) -> Any:
    error, message = refusal(ctx, Operation.DESCRIBE)
    if error == ErrorCode.NONE:
        acl_filter = filter_of(request, ctx.api_version)
        try:
            acl_filter.validate()
        except InvalidAcl as exc:
            error, message = ErrorCode.INVALID_REQUEST, str(exc)
    if error != ErrorCode.NONE:
        return ctx.response(throttle_time_ms=0, error_code=error, error_message=message, resources=[])
    grouped: dict[tuple[int, str, int], list[AclBinding]] = {}
    for binding in ctx.broker.authorizer.acls.matching(acl_filter):
        grouped.setdefault((binding.resource_type, binding.resource_name, binding.pattern_type), []).append(
            binding
        )
    resources = [
        Resource(
            resource_type=resource_type,
            resource_name=name,
            pattern_type=pattern_type,
            acls=[
                Description(
                    principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission
                )
                for b in bindings
            ],
        )
        for (resource_type, name, pattern_type), bindings in grouped.items()
    ]
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, resources=resources
    )
