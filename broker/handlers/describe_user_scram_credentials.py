"""DescribeUserScramCredentials (50): which SCRAM mechanisms each user has, with iterations (KIP-554)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeUserScramCredentialsResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import DESCRIBE
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
VERSIONS = (0, 0)
AUTHORIZATION = by_handler("DESCRIBE on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
Info = Result.CredentialInfo


def handle(ctx: RequestContext, request: Any) -> Any:
    users = None if request.users is None else [user.name for user in request.users]
    if not ctx.broker.authorizer.authorize_cluster(
        ctx.connection.principal, DESCRIBE, ctx.connection.peer[0]
    ):
        # DescribeUserScramCredentialsRequest.getErrorResponse: the error at the top and
        # once per requested user, with no user name; ApiError drops the default message.
        refused = [
            Result(
                user="",
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                error_message=None,
                credential_infos=[],
            )
            for _ in users or ()
        ]
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            results=refused,
        )
    results = [
        Result(
            user=r.user,
            error_code=r.error_code,
            error_message=r.error_message,
            credential_infos=[Info(mechanism=m.type_code, iterations=i) for m, i in r.credentials],
        )
        for r in ctx.broker.credentials.describe(users)
    ]
    # ScramImage.describe leaves the top-level message at the schema's default, "".
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", results=results)
