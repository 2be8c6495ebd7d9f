"""Shared by the ACL APIs' handlers: wire fields to bindings and filters, and the
checks every one of them makes first (an authorizer exists; the caller may)."""

from __future__ import annotations

from typing import Any

from broker.context import CloseConnection, RequestContext
from broker.security.acls import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType
from protocol.errors import ErrorCode

SECURITY_DISABLED_MESSAGE = "No Authorizer is configured."  # DescribeAcls: "... on the broker"


def _enum(kind: Any, value: int) -> Any:
    try:
        return kind(value)
    except ValueError:
        return kind(0)  # UNKNOWN: refused by validation


def binding_of(creation: Any) -> AclBinding:
    return AclBinding(
        _enum(ResourceType, creation.resource_type),
        creation.resource_name,
        _enum(PatternType, creation.resource_pattern_type),
        creation.principal,
        creation.host,
        _enum(Operation, creation.operation),
        _enum(Permission, creation.permission_type),
    )


def filter_of(request: Any, version: int) -> AclFilter:
    """A DescribeAcls request or a DeleteAcls filter (v0 has no pattern type: LITERAL)."""
    return AclFilter(
        _enum(ResourceType, request.resource_type_filter),
        request.resource_name_filter,
        _enum(PatternType, request.pattern_type_filter) if version >= 1 else PatternType.LITERAL,
        request.principal_filter,
        request.host_filter,
        _enum(Operation, request.operation),
        _enum(Permission, request.permission_type),
    )


def refuse_unknown(*codes: int) -> None:
    """Kafka's parser refuses a raw UNKNOWN (0) in the enum fields: connection closed."""
    if 0 in codes:
        raise CloseConnection("an ACL request with UNKNOWN elements")


def refusal(
    ctx: RequestContext, operation: Operation, disabled: str = SECURITY_DISABLED_MESSAGE
) -> tuple[int, str | None]:
    """SECURITY_DISABLED without an authorizer; CLUSTER_AUTHORIZATION_FAILED when the
    caller may not `operation` the cluster (DESCRIBE to list, ALTER to change)."""
    authorizer = ctx.broker.authorizer
    if not authorizer.enabled:
        return ErrorCode.SECURITY_DISABLED, disabled
    if not authorizer.authorize_cluster(ctx.connection.principal, operation.name, ctx.connection.peer[0]):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None  # ApiError drops the default message
    return ErrorCode.NONE, None
