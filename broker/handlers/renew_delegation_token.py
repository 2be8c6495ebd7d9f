"""RenewDelegationToken (39): the token named by its HMAC expires later, by
`delegation.token.expiry.time.ms` or the shorter period asked for, never past its max
timestamp; only its owner and renewers may, while it has not expired
(DELEGATION_TOKEN_NOT_FOUND, _EXPIRED, _OWNER_MISMATCH, _AUTH_DISABLED as the controller
answers; DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, with expiry -1, as the broker does)."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.delegation_token_common import expiry_change
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from protocol.api_keys import ApiKey

API_KEY = ApiKey.RENEW_DELEGATION_TOKEN
VERSIONS = (1, 2)
AUTHORIZATION = by_handler(
    "only the token's owner or a renewer; a token or unauthenticated session is refused"
)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def handle(ctx: RequestContext, request: Any) -> Any:
    token_hmac = bytes(request.hmac)
    return expiry_change(
        ctx, lambda tokens, principal: tokens.renew(token_hmac, principal, request.renew_period_ms)
    )
