"""SaslAuthenticate (36): one SASL token each way (KIP-152).

A failed authentication (or re-authentication: a deleted credential, another principal)
is answered with SASL_AUTHENTICATION_FAILED and the mechanism's message, after Kafka's
failed-authentication delay, and the connection is closed. Success answers the session
lifetime (`connections.max.reauth.ms`, KIP-368).
"""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import NOT_CHECKED
from broker.security.scram import SaslAuthenticationError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.SASL_AUTHENTICATE
VERSIONS = (0, 2)
AUTHORIZATION = NOT_CHECKED
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def handle(ctx: RequestContext, request: Any) -> Any:
    session = ctx.connection.sasl
    if session is None:
        return ctx.response(
            error_code=ErrorCode.ILLEGAL_SASL_STATE,
            error_message="SaslAuthenticate request received after successful authentication",
            auth_bytes=b"",
        )
    try:
        challenge = session.evaluate(bytes(request.auth_bytes))
    except SaslAuthenticationError as exc:
        failure = ctx.response(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc), auth_bytes=b""
        )
        return ctx.connection.fail_authentication(failure)
    lifetime = 0
    if session.complete:
        ctx.connection.authenticated(session)
        lifetime = ctx.connection.session_lifetime_ms  # v1+: the client re-authenticates before it ends
    return ctx.response(
        error_code=ErrorCode.NONE, error_message=None, auth_bytes=challenge, session_lifetime_ms=lifetime
    )
