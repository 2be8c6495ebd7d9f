"""AddPartitionsToTxn (24): partitions join the producer's transaction.

v0-v3 come from producers (one transaction); v4+ is the brokers' batched form (many
transactions, `verify_only` to check membership, KIP-890 part 1), answered per
transaction. Partitions of unknown topics fail the request as Kafka fails it: those
get UNKNOWN_TOPIC_OR_PARTITION and every other one OPERATION_NOT_ATTEMPTED; internal
topics are never a producer's to add (TOPIC_AUTHORIZATION_FAILED; AddOffsetsToTxn adds
__consumer_offsets).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer import AddPartitionsToTxnResponse

from broker.context import RequestContext
from broker.error_responses import Level, by_version
from broker.handlers.spec import ALWAYS
from broker.handlers.transactional import coordinator_error, fenced_for_version
from broker.security import authorization
from broker.state.cluster import INTERNAL_TOPICS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
VERSIONS = (0, 5)
AUTHORIZATION = authorization.ADD_PARTITIONS_TO_TXN
ENABLED = ALWAYS
# v0-3, the producers' form; v4+, the brokers' batched form, has a top-level error code
ERROR_RESPONSE = by_version(
    (
        0,
        Level(
            ("v3_and_below_topics",),
            "results_by_topic_v3_and_below",
            (("name", "name"),),
            Level(("partitions",), "results_by_partition", (("partition_index", ""),)),
            True,
        ),
    ),
    (4, None),
)
TopicResult = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
PartitionResult = TopicResult.AddPartitionsToTxnPartitionResult
TransactionResult = AddPartitionsToTxnResponse.AddPartitionsToTxnResult


def _results(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: Any,
    verify: bool,
) -> list[Any]:
    wanted = [(topic.name, index) for topic in topics for index in topic.partitions]
    refused: dict[tuple[str, int], int] = {}
    for name, index in wanted:
        if name in INTERNAL_TOPICS and ctx.api_version <= 3:
            refused[(name, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif (topic := ctx.cluster.topics.get(name)) is None or not 0 <= index < len(topic.partitions):
            refused[(name, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    errors: dict[tuple[str, int], int]
    error = coordinator_error(ctx, transactional_id)
    if error != ErrorCode.NONE:
        errors = dict.fromkeys(wanted, error)
    elif refused:
        errors = {key: refused.get(key, ErrorCode.OPERATION_NOT_ATTEMPTED) for key in wanted}
    elif verify:
        errors = ctx.transactions.verify_partitions(transactional_id, producer_id, producer_epoch, wanted)
    else:
        error = ctx.transactions.add_partitions(transactional_id, producer_id, producer_epoch, wanted)
        errors = dict.fromkeys(wanted, fenced_for_version(error, ctx.api_version, 2))
    by_topic: dict[str, list[Any]] = {}
    for (name, index), code in errors.items():
        by_topic.setdefault(name, []).append(
            PartitionResult(partition_index=index, partition_error_code=code)
        )
    return [TopicResult(name=name, results_by_partition=results) for name, results in by_topic.items()]


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version <= 3:
        results = _results(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            request.v3_and_below_topics,
            False,
        )
        return ctx.response(throttle_time_ms=0, results_by_topic_v3_and_below=results)
    transactions = [
        TransactionResult(
            transactional_id=txn.transactional_id,
            topic_results=_results(
                ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics, txn.verify_only
            ),
        )
        for txn in request.transactions
    ]
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, results_by_transaction=transactions)
