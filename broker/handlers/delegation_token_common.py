"""Shared by the delegation token APIs' handlers (38-41): the check KafkaApis makes
before any of them (allowTokenRequests) and the authorizer questions they ask."""

from __future__ import annotations

from broker.context import RequestContext
from broker.security.acls import Operation, ResourceType
from quotas.callback import ANONYMOUS, KafkaPrincipal


def allow_token_requests(ctx: RequestContext) -> bool:
    """KafkaApis.allowTokenRequests: tokens are managed only over an authenticated
    channel (not PLAINTEXT, not SSL without a client certificate) and never by a
    connection that itself authenticated with a token (KIP-48: a token cannot make
    or renew tokens)."""
    principal = ctx.connection.principal
    protocol = ctx.broker.config.security_protocol(ctx.connection.listener)
    return not (
        principal.token_authenticated
        or protocol == "PLAINTEXT"
        or (protocol == "SSL" and principal == ANONYMOUS)
    )


def authorized(ctx: RequestContext, operation: Operation, resource_type: ResourceType, name: str) -> bool:
    """AuthHelper.authorize for the request's principal and host (true without an authorizer)."""
    return ctx.broker.authorizer.authorize(
        ctx.connection.principal, ctx.connection.peer[0], operation, resource_type, name
    )


def plain(principal: KafkaPrincipal) -> KafkaPrincipal:
    """The principal as tokens record it: type and name only."""
    return KafkaPrincipal(principal.principal_type, principal.name)
