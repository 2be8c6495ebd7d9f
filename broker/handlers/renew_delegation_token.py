"""RenewDelegationToken (39): the token named by its HMAC expires later, by
`delegation.token.expiry.time.ms` or the shorter period asked for, never past its max
timestamp; only its owner and renewers may, while it has not expired
(DELEGATION_TOKEN_NOT_FOUND, _EXPIRED, _OWNER_MISMATCH, _AUTH_DISABLED as the controller
answers; DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, with expiry -1, as the broker does)."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.handlers.delegation_token_common import allow_token_requests, plain
from broker.security.delegation_tokens import ERROR_TIMESTAMP
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.RENEW_DELEGATION_TOKEN


def handle(ctx: RequestContext, request: Any) -> Any:
    if not allow_token_requests(ctx):
        return ctx.response(
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            expiry_timestamp_ms=ERROR_TIMESTAMP,
            throttle_time_ms=0,
        )
    return _renew(ctx, bytes(request.hmac), request.renew_period_ms)


async def _renew(ctx: RequestContext, token_hmac: bytes, renew_period_ms: int) -> Any:
    tokens = ctx.broker.credentials.tokens
    outcome = await tokens.renew(token_hmac, plain(ctx.connection.principal), renew_period_ms)
    return ctx.response(
        error_code=outcome.error_code, expiry_timestamp_ms=outcome.expiry_ms, throttle_time_ms=0
    )
