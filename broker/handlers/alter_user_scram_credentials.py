"""AlterUserScramCredentials (51): validated per user, persisted in one transaction, then applied."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import AlterUserScramCredentialsResponse

from broker.context import RequestContext
from broker.error_responses import Level, mirrors
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import ALTER
from broker.security.credentials import Deletion, Upsertion
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
VERSIONS = (0, 0)
AUTHORIZATION = by_handler("ALTER on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(Level(("deletions", "upsertions"), "results", (("user", "name"),)))
Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


async def handle(ctx: RequestContext, request: Any) -> Any:
    deletions = [Deletion(d.name, d.mechanism) for d in request.deletions]
    upsertions = [
        Upsertion(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password))
        for u in request.upsertions
    ]
    if not ctx.broker.authorizer.authorize_cluster(ctx.connection.principal, ALTER, ctx.connection.peer[0]):
        # AlterUserScramCredentialsRequest.getErrorResponse: every user named, sorted,
        # once; ApiError drops the default message.
        users = sorted({d.user for d in deletions} | {u.user for u in upsertions})
        refused = [
            Result(user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None)
            for u in users
        ]
        return ctx.response(throttle_time_ms=0, results=refused)
    results = await ctx.broker.credentials.alter(deletions, upsertions)
    return ctx.response(
        throttle_time_ms=0,
        results=[
            Result(user=r.user, error_code=r.error_code, error_message=r.error_message) for r in results
        ],
    )
