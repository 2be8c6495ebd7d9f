"""ExpireDelegationToken (40): the token named by its HMAC expires after the period
given (at most at its max timestamp), or at once and for good with a negative period,
which the response echoes; the same checks and codes as RenewDelegationToken."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.handlers.delegation_token_common import allow_token_requests, plain
from broker.security.delegation_tokens import ERROR_TIMESTAMP
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.EXPIRE_DELEGATION_TOKEN


def handle(ctx: RequestContext, request: Any) -> Any:
    if not allow_token_requests(ctx):
        return ctx.response(
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            expiry_timestamp_ms=ERROR_TIMESTAMP,
            throttle_time_ms=0,
        )
    return _expire(ctx, bytes(request.hmac), request.expiry_time_period_ms)


async def _expire(ctx: RequestContext, token_hmac: bytes, expiry_period_ms: int) -> Any:
    tokens = ctx.broker.credentials.tokens
    outcome = await tokens.expire(token_hmac, plain(ctx.connection.principal), expiry_period_ms)
    return ctx.response(
        error_code=outcome.error_code, expiry_timestamp_ms=outcome.expiry_ms, throttle_time_ms=0
    )
