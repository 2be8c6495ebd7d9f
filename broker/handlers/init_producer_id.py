"""InitProducerId (22): producer ids and epochs for idempotent and transactional producers.

A transactional id is the transaction coordinator's: it keeps its producer id and gets
the next epoch, fencing the previous producer with that id (see broker/state/transactions.py).
Without one, every request gets a new producer id at epoch 0, as in Kafka (the id and
epoch it names are only checked to come together): bumping the named epoch instead
overflowed the int16 epoch at 32767 and failed to encode the response.
"""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.handlers.transactional import coordinator_error, fenced_for_version
from broker.security import authorization
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.INIT_PRODUCER_ID
VERSIONS = (0, 5)  # v6 (KIP-939's two-phase commit) is unstable in Kafka 4.4: not advertised
AUTHORIZATION = authorization.INIT_PRODUCER_ID
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NO_PRODUCER_ID = NO_PRODUCER_EPOCH = -1


def handle(ctx: RequestContext, request: Any) -> Any:
    cluster = ctx.cluster
    if request.transactional_id is not None:
        error = coordinator_error(ctx, request.transactional_id)
        if error != ErrorCode.NONE:
            return ctx.response(throttle_time_ms=0, error_code=error, producer_id=-1, producer_epoch=-1)
        recovering = ctx.api_version >= 3
        producer_id = request.producer_id if recovering else -1
        producer_epoch = request.producer_epoch if recovering else -1
        if (producer_id < 0) != (producer_epoch < 0):
            return ctx.response(
                throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1
            )
        result = ctx.transactions.init_producer_id(
            request.transactional_id, request.transaction_timeout_ms, producer_id, producer_epoch
        )
        return ctx.response(
            throttle_time_ms=0,
            error_code=fenced_for_version(result.error, ctx.api_version, 4),
            producer_id=result.producer_id,
            producer_epoch=result.producer_epoch,
        )
    if ctx.api_version >= 3 and (request.producer_id == NO_PRODUCER_ID) != (
        request.producer_epoch == NO_PRODUCER_EPOCH
    ):
        # KafkaApis: an id without an epoch (or the reverse) is refused before the coordinator.
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1
        )
    # TransactionCoordinator.handleInitProducerId without a transactional id "blindly
    # accepts" the request: a new producer id at epoch 0, whatever id and epoch it names
    # (an idempotent producer bumps its epoch itself, KIP-360; it asks here only for a new
    # id, e.g. once its epoch is exhausted).
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        producer_id=cluster.next_producer_id(),
        producer_epoch=0,
    )
