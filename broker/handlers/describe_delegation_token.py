"""DescribeDelegationToken (41): the tokens the caller may see, HMACs included, as
KafkaApis.handleDescribeTokensRequest and DelegationTokenManager.filterToken choose
them: owners null asks for all, an empty list for none; a token is shown to its owner,
requester and renewers, and to others with DESCRIBE on its DELEGATION_TOKEN resource or
DESCRIBE_TOKENS on its owner's USER resource. Expired tokens are listed until the sweep
removes them."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.delegation_token_common import allow_token_requests, authorized, plain
from broker.handlers.spec import ALWAYS
from broker.security.acls import Operation, ResourceType
from broker.security.authorization import by_handler
from broker.security.delegation_tokens import Token
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.callback import KafkaPrincipal

API_KEY = ApiKey.DESCRIBE_DELEGATION_TOKEN
VERSIONS = (1, 3)
AUTHORIZATION = by_handler("DESCRIBE on each DELEGATION_TOKEN, or DESCRIBE_TOKENS on its owner USER")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = ("Tokens are listed in issue order (Kafka's is a hash map's).",)
DescribeDelegationTokenResponse = response_class(API_KEY)
Described = DescribeDelegationTokenResponse.DescribedDelegationToken
Renewer = Described.DescribedDelegationTokenRenewer


def handle(ctx: RequestContext, request: Any) -> Any:
    tokens = ctx.broker.credentials.tokens
    if not allow_token_requests(ctx):
        return _answer(ctx, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, [])
    if not tokens.enabled:
        return _answer(ctx, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, [])
    if request.owners is not None and not request.owners:  # ownersListEmpty
        return _answer(ctx, ErrorCode.NONE, [])
    owners = (
        None
        if request.owners is None
        else [KafkaPrincipal(o.principal_type, o.principal_name) for o in request.owners]
    )
    requester = plain(ctx.connection.principal)
    return _answer(ctx, ErrorCode.NONE, [t for t in tokens.tokens() if _eligible(ctx, requester, owners, t)])


def _eligible(
    ctx: RequestContext, requester: KafkaPrincipal, owners: list[KafkaPrincipal] | None, token: Token
) -> bool:
    """DelegationTokenManager.filterToken."""
    if owners is not None and not any(token.owner_or_renewer(owner) for owner in owners):
        return False  # not asked for
    if token.owner_or_renewer(requester):
        return True
    return authorized(ctx, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id) or authorized(
        ctx, Operation.DESCRIBE_TOKENS, ResourceType.USER, str(token.owner)
    )


def _answer(ctx: RequestContext, error_code: int, tokens: list[Token]) -> Any:
    requester_fields = ctx.api_version >= 3
    described = [
        Described(
            principal_type=t.owner.principal_type,
            principal_name=t.owner.name,
            **(
                {
                    "token_requester_principal_type": t.requester.principal_type,
                    "token_requester_principal_name": t.requester.name,
                }
                if requester_fields
                else {}
            ),
            issue_timestamp=t.issue_ms,
            expiry_timestamp=t.expiry_ms,
            max_timestamp=t.max_ms,
            token_id=t.token_id,
            hmac=t.hmac,
            renewers=[Renewer(principal_type=r.principal_type, principal_name=r.name) for r in t.renewers],
        )
        for t in tokens
    ]
    return ctx.response(error_code=error_code, tokens=described, throttle_time_ms=0)
