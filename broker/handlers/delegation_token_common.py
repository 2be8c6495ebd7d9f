"""Shared by the delegation token APIs' handlers (38-41): the check KafkaApis makes
before any of them (allowTokenRequests) and the authorizer questions they ask."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from broker.context import RequestContext
from broker.security.acls import Operation, ResourceType
from broker.security.delegation_tokens import ERROR_TIMESTAMP, Outcome, TokenStore
from protocol.errors import ErrorCode
from quotas.callback import ANONYMOUS, KafkaPrincipal

Change = Callable[[TokenStore, KafkaPrincipal], Awaitable[Outcome]]


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


def expiry_change(ctx: RequestContext, change: Change) -> Any:
    """Renew (39) and Expire (40): refused by the broker with expiry -1, else the token
    store's outcome and the token's new expiry timestamp."""
    if not allow_token_requests(ctx):
        return ctx.response(
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            expiry_timestamp_ms=ERROR_TIMESTAMP,
            throttle_time_ms=0,
        )
    return _changed(ctx, change)


async def _changed(ctx: RequestContext, change: Change) -> Any:
    outcome = await change(ctx.broker.credentials.tokens, plain(ctx.connection.principal))
    return ctx.response(
        error_code=outcome.error_code, expiry_timestamp_ms=outcome.expiry_ms, throttle_time_ms=0
    )
