"""ExpireDelegationToken (40): the token named by its HMAC expires after the period
given (at most at its max timestamp), or at once and for good with a negative period,
which the response echoes; the same checks and codes as RenewDelegationToken."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.delegation_token_common import expiry_change
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from protocol.api_keys import ApiKey

API_KEY = ApiKey.EXPIRE_DELEGATION_TOKEN
VERSIONS = (1, 2)
AUTHORIZATION = by_handler(
    "only the token's owner or a renewer; a token or unauthenticated session is refused"
)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def handle(ctx: RequestContext, request: Any) -> Any:
    token_hmac = bytes(request.hmac)
    return expiry_change(
        ctx, lambda tokens, principal: tokens.expire(token_hmac, principal, request.expiry_time_period_ms)
    )
