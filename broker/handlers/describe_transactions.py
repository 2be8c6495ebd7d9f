"""DescribeTransactions (65): the coordinator's view of transactional ids
(`kafka-transactions.sh describe`, AdminClient.describeTransactions)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.transactions import DescribeTransactionsResponse

from broker.context import RequestContext
from broker.error_responses import Level, mirrors
from broker.handlers.spec import ALWAYS
from broker.handlers.transactional import coordinator_error
from broker.security import authorization
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS
VERSIONS = (0, 0)
AUTHORIZATION = authorization.DESCRIBE_TRANSACTIONS
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(Level(("transactional_ids",), "transaction_states", (("transactional_id", ""),)))
State = DescribeTransactionsResponse.TransactionState
Topic = State.TopicData


def _describe(ctx: RequestContext, transactional_id: str) -> Any:
    error = coordinator_error(ctx, transactional_id)
    txn = ctx.transactions.describe(transactional_id) if error == ErrorCode.NONE else None
    if txn is None:
        # TransactionCoordinator.handleDescribeTransactions sets the error code alone: the
        # other fields keep the schema's defaults (0 and "").
        return State(
            error_code=error or ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
            transactional_id=transactional_id,
            transaction_state="",
            transaction_timeout_ms=0,
            transaction_start_time_ms=0,
            producer_id=0,
            producer_epoch=0,
            topics=[],
        )
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(index)
    return State(
        error_code=ErrorCode.NONE,
        transactional_id=transactional_id,
        transaction_state=txn.state,
        transaction_timeout_ms=txn.timeout_ms,
        transaction_start_time_ms=txn.start_ms,
        producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch,
        topics=[Topic(topic=topic, partitions=indexes) for topic, indexes in by_topic.items()],
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.response(
        throttle_time_ms=0, transaction_states=[_describe(ctx, tid) for tid in request.transactional_ids]
    )
