"""CreateDelegationToken (38): a token for the caller, or (v3, KIP-373) for another
owner the caller may CREATE_TOKENS for, with its renewers and a lifetime capped by
`delegation.token.max.lifetime.ms`.

The broker's checks come first, in KafkaApis.handleCreateTokenRequest's order
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a channel that may not manage tokens,
DELEGATION_TOKEN_AUTHORIZATION_FAILED without CREATE_TOKENS on the owner's USER
resource, INVALID_PRINCIPAL_TYPE for a renewer that is not a User), answered with -1
timestamps; then the controller's (DELEGATION_TOKEN_AUTH_DISABLED without a secret key),
answered with its response's defaults.
"""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.delegation_token_common import allow_token_requests, authorized, plain
from broker.handlers.spec import ALWAYS
from broker.security.acls import Operation, ResourceType
from broker.security.authorization import by_handler
from broker.security.delegation_tokens import ERROR_TIMESTAMP, USER_TYPE
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.callback import ANONYMOUS, KafkaPrincipal

API_KEY = ApiKey.CREATE_DELEGATION_TOKEN
VERSIONS = (1, 3)
AUTHORIZATION = by_handler(
    "CREATE_TOKENS on the owner USER for another owner; no token or unauthenticated session"
)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = ("Nothing is forwarded to a controller and there is no metadata-version check.",)


def handle(ctx: RequestContext, request: Any) -> Any:
    requester = plain(ctx.connection.principal)
    owner_name = getattr(request, "owner_principal_name", None)
    if owner_name:
        owner_type = getattr(request, "owner_principal_type", None)
        if owner_type is None:
            # new KafkaPrincipal(null, name) throws; handleError answers with
            # getErrorResponse, whose principals are ANONYMOUS.
            return _refused(ctx, ErrorCode.UNKNOWN_SERVER_ERROR, ANONYMOUS, ANONYMOUS)
        owner = KafkaPrincipal(owner_type, owner_name)
    else:
        owner = requester
    renewers = [KafkaPrincipal(r.principal_type, r.principal_name) for r in request.renewers]
    if not allow_token_requests(ctx):
        return _refused(ctx, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner, requester)
    if owner != requester and not authorized(ctx, Operation.CREATE_TOKENS, ResourceType.USER, str(owner)):
        return _refused(ctx, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner, requester)
    if any(r.principal_type != USER_TYPE for r in renewers):
        return _refused(ctx, ErrorCode.INVALID_PRINCIPAL_TYPE, owner, requester)
    return _create(ctx, owner, requester, renewers, request.max_lifetime_ms)


async def _create(
    ctx: RequestContext,
    owner: KafkaPrincipal,
    requester: KafkaPrincipal,
    renewers: list[KafkaPrincipal],
    max_lifetime_ms: int,
) -> Any:
    error_code, token = await ctx.broker.credentials.tokens.create(
        owner, requester, renewers, max_lifetime_ms
    )
    if token is None:  # the controller's refusal: the other fields keep their defaults
        return _response(ctx, error_code, owner, requester, 0, 0, 0, "", b"")
    return _response(
        ctx,
        ErrorCode.NONE,
        token.owner,
        token.requester,
        token.issue_ms,
        token.expiry_ms,
        token.max_ms,
        token.token_id,
        token.hmac,
    )


def _refused(ctx: RequestContext, error_code: int, owner: KafkaPrincipal, requester: KafkaPrincipal) -> Any:
    """CreateDelegationTokenResponse.prepareResponse(version, throttle, error, owner, requester)."""
    stamp = ERROR_TIMESTAMP
    return _response(ctx, error_code, owner, requester, stamp, stamp, stamp, "", b"")


def _response(
    ctx: RequestContext,
    error_code: int,
    owner: KafkaPrincipal,
    requester: KafkaPrincipal,
    issue_ms: int,
    expiry_ms: int,
    max_ms: int,
    token_id: str,
    token_hmac: bytes,
) -> Any:
    requester_fields = (
        {
            "token_requester_principal_type": requester.principal_type,
            "token_requester_principal_name": requester.name,
        }
        if ctx.api_version >= 3
        else {}
    )
    return ctx.response(
        error_code=error_code,
        principal_type=owner.principal_type,
        principal_name=owner.name,
        **requester_fields,
        issue_timestamp_ms=issue_ms,
        expiry_timestamp_ms=expiry_ms,
        max_timestamp_ms=max_ms,
        token_id=token_id,
        hmac=token_hmac,
        throttle_time_ms=0,
    )
