"""EndTxn (26): commit or abort the producer's transaction; markers are written to each
of its partitions and the offsets it carries are committed or dropped. v5 is transaction
version 2: the epoch is bumped and the new producer id and epoch are answered."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.handlers.transactional import coordinator_error, fenced_for_version
from broker.security import authorization
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.END_TXN
VERSIONS = (0, 5)
AUTHORIZATION = authorization.END_TXN
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = (
    "The markers are written before EndTxn is answered (Kafka writes them after), so clients never see PrepareCommit or PrepareAbort unless a fault injects CONCURRENT_TRANSACTIONS.",
)
TRANSACTION_V2 = 5


def handle(ctx: RequestContext, request: Any) -> Any:
    error = coordinator_error(ctx, request.transactional_id)
    if ctx.api_version >= TRANSACTION_V2:
        producer_id = producer_epoch = -1
        if error == ErrorCode.NONE:
            error, producer_id, producer_epoch = ctx.transactions.end_transaction_v2(
                request.transactional_id, request.producer_id, request.producer_epoch, request.committed
            )
        return ctx.response(
            throttle_time_ms=0, error_code=error, producer_id=producer_id, producer_epoch=producer_epoch
        )
    if error == ErrorCode.NONE:
        error = ctx.transactions.end_transaction(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed
        )
    return ctx.response(throttle_time_ms=0, error_code=fenced_for_version(error, ctx.api_version, 2))
