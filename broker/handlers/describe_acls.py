"""DescribeAcls (29): the bindings a filter matches, grouped by resource pattern."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.acl import DescribeAclsResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.acl_common import filter_of, refusal, refuse_unknown
from broker.handlers.spec import ALWAYS
from broker.security.acls import AclBinding, Operation
from broker.security.authorization import by_handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_ACLS
VERSIONS = (1, 3)
AUTHORIZATION = by_handler("DESCRIBE on the cluster; SECURITY_DISABLED without an authorizer")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = (
    "Bindings are listed in a fixed order (Kafka's is a hash map's); an out-of-range enum code gets an empty answer where Kafka closes the connection.",
)
Resource = DescribeAclsResponse.DescribeAclsResource
Description = Resource.AclDescription


def handle(ctx: RequestContext, request: Any) -> Any:
    refuse_unknown(
        request.resource_type_filter, request.pattern_type_filter, request.operation, request.permission_type
    )
    # an out-of-range code reads as UNKNOWN, which matches nothing
    acl_filter = filter_of(request, ctx.api_version)
    error, message = refusal(ctx, Operation.DESCRIBE, "No Authorizer is configured on the broker")
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
    # the message is empty, not null, as Kafka's DescribeAclsResponseData leaves it
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", resources=resources)
