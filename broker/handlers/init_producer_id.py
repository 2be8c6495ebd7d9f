"""InitProducerId (22): producer ids and epochs for idempotent producers.

A transactional id keeps its producer id and gets the next epoch on every call; the
transaction APIs themselves are not implemented (nor advertised).
"""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.INIT_PRODUCER_ID


def handle(ctx: RequestContext, request: Any) -> Any:
    cluster = ctx.cluster
    if request.transactional_id:
        known = cluster.transactional_producers.get(request.transactional_id)
        producer_id, epoch = known if known else (cluster.next_producer_id(), -1)
        cluster.transactional_producers[request.transactional_id] = (producer_id, epoch + 1)
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=epoch + 1
        )
    if ctx.api_version >= 3 and request.producer_id >= 0:
        # KIP-360: an idempotent producer bumps its epoch to recover after an error.
        if request.producer_epoch < 0:
            return ctx.response(
                throttle_time_ms=0,
                error_code=ErrorCode.INVALID_PRODUCER_EPOCH,
                producer_id=-1,
                producer_epoch=-1,
            )
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch + 1,
        )
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        producer_id=cluster.next_producer_id(),
        producer_epoch=0,
    )
