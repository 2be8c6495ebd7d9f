"""AddOffsetsToTxn (25): the consumer group's offsets join the producer's transaction."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.handlers.transactional import coordinator_error, fenced_for_version
from broker.security import authorization
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN
VERSIONS = (0, 4)
AUTHORIZATION = authorization.ADD_OFFSETS_TO_TXN
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def handle(ctx: RequestContext, request: Any) -> Any:
    error = coordinator_error(ctx, request.transactional_id)
    if error == ErrorCode.NONE:
        error = ctx.transactions.add_offsets(
            request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
        )
    return ctx.response(throttle_time_ms=0, error_code=fenced_for_version(error, ctx.api_version, 2))
