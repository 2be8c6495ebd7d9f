"""SaslHandshake (17): the client picks a mechanism before authenticating.

On a SASL listener before authentication the connection's SaslSession answers. After
authentication it starts re-authentication (KIP-368) when the session has a lifetime
(`connections.max.reauth.ms`); otherwise, and on listeners without SASL, KafkaApis
answers ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import NOT_CHECKED
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.SASL_HANDSHAKE
VERSIONS = (0, 1)
AUTHORIZATION = NOT_CHECKED
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def handle(ctx: RequestContext, request: Any) -> Any:
    session = ctx.connection.sasl or ctx.connection.start_reauthentication()
    if session is None:
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    error_code = session.handshake(request.mechanism, ctx.api_version)
    response = ctx.response(error_code=error_code, mechanisms=session.enabled_mechanisms)
    return ctx.connection.fail_authentication(response) if error_code else response
