"""CreateAcls (30): new bindings, each validated as Kafka's AclControlManager validates
it (INVALID_REQUEST with its message); an existing binding is created again as a no-op."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.acl import CreateAclsResponse

from broker.context import RequestContext
from broker.handlers.acl_common import binding_of, refusal
from broker.security.acls import InvalidAcl, Operation
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.CREATE_ACLS
Result = CreateAclsResponse.AclCreationResult


def _create(ctx: RequestContext, creation: Any) -> Any:
    binding = binding_of(creation)
    try:
        binding.validate()
    except InvalidAcl as exc:
        return Result(error_code=ErrorCode.INVALID_REQUEST, error_message=str(exc))
    ctx.broker.authorizer.acls.add(binding)
    return Result(error_code=ErrorCode.NONE, error_message=None)


def handle(ctx: RequestContext, request: Any) -> Any:
    error, message = refusal(ctx, Operation.ALTER)
    if error != ErrorCode.NONE:
        results = [Result(error_code=error, error_message=message) for _ in request.creations]
    else:
        results = [_create(ctx, creation) for creation in request.creations]
    return ctx.response(throttle_time_ms=0, results=results)
