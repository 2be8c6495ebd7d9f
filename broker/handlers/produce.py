"""Produce (0): validates batch headers and CRCs, appends opaque batches, acks=0 is silent.

After the append the whole request's size counts against producer_byte_rate, acks=0
included (its connection is muted too, though no response is sent)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kafka.protocol.producer import ProduceResponse

from broker import throttling
from broker.context import RequestContext
from broker.error_responses import Level, mirrors, topics
from broker.handlers.common import find_topic, led_partition
from broker.handlers.spec import ALWAYS
from broker.handlers.transactional import verification_error
from broker.security import authorization
from broker.state.cluster import Partition, Topic
from broker.state.log import SequenceError
from broker.state.records import (
    CONTROL_FLAG,
    TRANSACTIONAL_FLAG,
    BatchInfo,
    InvalidRecords,
    UndecodableBatch,
    keyless_records,
    split_batches,
)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.structs import maker, new

API_KEY = ApiKey.PRODUCE
VERSIONS = (3, 13)
# What ApiVersions advertises: Kafka 4.x advertises v0-2 too, which it no longer serves
# (librdkafka before 2.10 refuses a broker whose Produce starts above 0: KAFKA-18659), and
# closes the connection when one arrives, as the pipeline does for any unserved version.
ADVERTISED_VERSIONS = (0, 13)
AUTHORIZATION = authorization.PRODUCE
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(
    topics(
        "topic_data", "responses", Level(("partition_data",), "partition_responses", (("index", "index"),))
    )
)
NOT_IMPLEMENTED = (
    "Record timestamps are not checked against `message.timestamp.before.max.ms` and `message.timestamp.after.max.ms`; with CreateTime the batch's max timestamp is kept as the producer wrote it.",
)
TopicResult = ProduceResponse.TopicProduceResponse
PartitionResult = TopicResult.PartitionProduceResponse
LeaderIdAndEpoch = PartitionResult.LeaderIdAndEpoch
NodeEndpoint = ProduceResponse.NodeEndpoint
RecordError = PartitionResult.BatchIndexAndErrorMessage


def _append(
    ctx: RequestContext, topic: Topic, partition: Partition, records: bytes | None, max_batch_bytes: int
) -> tuple[int, int, str | None, int, list[Any], int]:
    """(error code, base offset, error message, log append time or -1, KIP-467 record
    errors, log start offset) for one partition's records. As Kafka, refusals before the
    log (ProduceRequest.validateRecords, the size check) carry log start offset -1 and
    no message; the log's own (LogValidator, producer state) carry its log start offset."""
    log = partition.log
    if records is None:
        return ErrorCode.INVALID_RECORD, -1, None, -1, [], -1
    try:
        batches = split_batches(records, client=True)
    except InvalidRecords as exc:
        code = ErrorCode.CORRUPT_MESSAGE if exc.corrupt else ErrorCode.INVALID_RECORD
        return code, -1, str(exc) if exc.sent else None, -1, [], log.log_start_offset if exc.validator else -1
    record_count = 0
    for batch in batches:
        record_count += batch.record_count
        if batch.size > max_batch_bytes:
            return ErrorCode.MESSAGE_TOO_LARGE, -1, None, -1, [], -1
    first = batches[0]
    if first.attributes & (CONTROL_FLAG | TRANSACTIONAL_FLAG):
        refused_txn = _transactional_error(ctx, topic, partition, first)
        if refused_txn is not None:
            return refused_txn[0], -1, refused_txn[1], -1, [], log.log_start_offset
    if log.compaction is not None:
        refused = _keyless_records(topic, partition, batches)
        if refused is not None:
            return ErrorCode.INVALID_RECORD, -1, refused[0], -1, refused[1], log.log_start_offset
    # message.timestamp.type=LogAppendTime: the produce response's log_append_time_ms
    append_time = int(time.time() * 1000) if log.log_append_time else -1
    try:
        base_offset = log.append(batches, partition.leader_epoch, append_time)
    except SequenceError as exc:
        return exc.code, -1, None, -1, [], log.log_start_offset  # Kafka: no message
    if log.duplicate_timestamp is not None:
        # UnifiedLog: a duplicate is answered with the original's offset and timestamp
        return ErrorCode.NONE, base_offset, None, log.duplicate_timestamp, [], log.log_start_offset
    ctx.record_count = (ctx.record_count or 0) + record_count
    return ErrorCode.NONE, base_offset, None, append_time, [], log.log_start_offset


def _transactional_error(
    ctx: RequestContext, topic: Topic, partition: Partition, batch: BatchInfo
) -> tuple[int, str | None] | None:
    """LogValidator refuses control batches from clients. A transactional batch needs a
    current epoch and its partition added to the producer's ongoing transaction: the
    leader verifies with the coordinator (KIP-890 part 1) unless the producer already
    has a transaction open here; v12+ (transaction version 2) adds it instead."""
    where = f"{topic.name}-{partition.index}"
    if batch.attributes & CONTROL_FLAG:
        return (
            ErrorCode.INVALID_RECORD,
            f"Clients are not allowed to write control records in topic partition {where}",
        )
    log = partition.log
    known_epoch = log.producer_epoch(batch.producer_id)
    if known_epoch is not None and known_epoch > batch.producer_epoch:
        return ErrorCode.INVALID_PRODUCER_EPOCH, None
    if known_epoch == batch.producer_epoch and log.in_transaction(batch.producer_id):
        return None
    tp = (topic.name, partition.index)
    transactional_id = ctx.request.transactional_id
    error = verification_error(ctx, transactional_id, batch.producer_id, batch.producer_epoch, tp)
    if error == ErrorCode.TRANSACTION_ABORTABLE and ctx.api_version >= 12 and transactional_id:
        error = ctx.transactions.add_partitions(
            transactional_id, batch.producer_id, batch.producer_epoch, [tp]
        )
        error = ErrorCode.INVALID_PRODUCER_EPOCH if error == ErrorCode.PRODUCER_FENCED else error
    if error == ErrorCode.NONE:
        return None
    if error == ErrorCode.TRANSACTION_ABORTABLE and ctx.api_version <= 10:
        return ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction"
    if error in _UNVERIFIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS, (
            "Unable to verify the partition has been added to the transaction. "
            f"Underlying error: {ErrorCode(error).name}"
        )
    return error, None


# ReplicaManager's postVerificationCallback: coordinator trouble is a retriable NOT_ENOUGH_REPLICAS.
_UNVERIFIABLE = frozenset(
    {
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    }
)


def _keyless_records(
    topic: Topic, partition: Partition, batches: list[BatchInfo]
) -> tuple[str, list[Any]] | None:
    """LogValidator on a compacted topic: the first batch holding records without a key
    fails the append, with one record error per such record (its index in the batch)."""
    where = f"{topic.name}-{partition.index}"
    for batch in batches:
        try:
            keyless = keyless_records(batch.data)
        except UndecodableBatch as exc:
            return f"records of {where} cannot be decoded: {exc}", []
        if keyless:
            text = f"Compacted topic cannot accept message without key in topic partition {where}"
            shown = ", ".join(f"RecordError(batchIndex={index}, message='{text}')" for index in keyless[:3])
            message = (
                f"One or more records have been rejected due to {len(keyless)} record errors in total, "
                f"and only showing the first three errors at most: [{shown}]"
            )
            return message, [
                RecordError(batch_index=index, batch_index_error_message=text) for index in keyless
            ]
    return None


def _max_batch_bytes(ctx: RequestContext, topic: Topic | None) -> int:
    """The topic's max.message.bytes, else the broker's message.max.bytes (as Kafka)."""
    override = topic.configs.get("max.message.bytes") if topic is not None else None
    return int(override) if override is not None else ctx.config.get_int("message.max.bytes")


def _check_min_isr(
    ctx: RequestContext, topic: Topic, partition: Partition, live: set[int]
) -> tuple[int, str | None]:
    """Partition.appendRecordsToLeader: acks=all needs an ISR (here: the replicas on
    `live` brokers) of at least min(min.insync.replicas, replicas)."""
    replicas = partition.replicas
    if len(replicas) == 1 and replicas[0] in live:
        return ErrorCode.NONE, None  # min(min.insync.replicas, 1) = 1: met
    configured = topic.configs.get("min.insync.replicas")
    min_isr = min(
        int(configured) if configured is not None else ctx.config.get_int("min.insync.replicas"),
        len(replicas),
    )
    isr = [replica for replica in replicas if replica in live and replica not in partition.adding]
    if len(isr) >= min_isr:
        return ErrorCode.NONE, None
    return ErrorCode.NOT_ENOUGH_REPLICAS, (
        f"The size of the current ISR Set({', '.join(map(str, isr))}) is insufficient to satisfy "
        f"the min.isr requirement of {min_isr} for partition {topic.name}-{partition.index}"
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    acks = ctx.acks = request.acks
    ctx.record_count, ctx.partition_count = 0, sum(len(t.partition_data) for t in request.topic_data)
    ctx.error_code = ctx.error_count = 0  # counted here: the metrics row need not walk the response
    version = ctx.api_version
    uses_ids = version >= 13
    make_result, make_topic = _MAKERS.get(version) or _makers(version)
    responses = []
    failed = False
    leaders: set[int] = set()  # brokers named in current_leader (KIP-951 node endpoints)
    live: set[int] | None = None  # the live brokers, for acks=all
    for topic_data in request.topic_data:
        topic, topic_error = find_topic(
            ctx, None if uses_ids else topic_data.name, topic_data.topic_id if uses_ids else None
        )
        max_batch_bytes = _max_batch_bytes(ctx, topic)
        results = []
        for data in topic_data.partition_data:
            error, base_offset, message, append_time, log_start = topic_error, -1, None, -1, -1
            record_errors: list[Any] = []
            partition = None
            if acks not in (-1, 0, 1):
                error = ErrorCode.INVALID_REQUIRED_ACKS
            elif topic is not None:
                partition, error = led_partition(ctx, topic, data.index)
            if partition is not None and topic is not None and acks == -1:
                if live is None:
                    live = set(ctx.cluster.live_broker_ids())
                error, message = _check_min_isr(ctx, topic, partition, live)
                if error:
                    partition = None
            if partition is not None and topic is not None:
                error, base_offset, message, append_time, record_errors, log_start = _append(
                    ctx, topic, partition, data.records, max_batch_bytes
                )
            if error != ErrorCode.NONE:
                failed = True
                ctx.count_error(error)
            if error == ErrorCode.NOT_LEADER_OR_FOLLOWER and topic is not None and ctx.api_version >= 10:
                leader = topic.partitions[data.index]
                leaders.add(leader.leader)
                results.append(
                    new(
                        PartitionResult,
                        version,
                        index=data.index,
                        error_code=error,
                        base_offset=base_offset,
                        log_append_time_ms=append_time,
                        log_start_offset=log_start,
                        record_errors=record_errors,
                        error_message=message,
                        current_leader=LeaderIdAndEpoch(
                            leader_id=leader.leader, leader_epoch=leader.leader_epoch
                        ),
                    )
                )
            else:
                results.append(
                    make_result(
                        data.index, error, base_offset, append_time, log_start, record_errors, message
                    )
                )
        responses.append(make_topic(topic_data.topic_id if uses_ids else topic_data.name, results))
    throttling.record_produce(ctx, acks)
    if acks == 0:
        if failed:
            # Kafka closes the connection so that the producer notices and refreshes metadata.
            ctx.connection.close()
        return None
    extra_fields = {}
    if leaders:
        extra_fields["node_endpoints"] = _endpoints(ctx, leaders)
    return ctx.response(responses=responses, throttle_time_ms=0, **extra_fields)


# Per version, the constructors of a partition's and a topic's result, positional and
# written once (protocol.structs.maker): what `new(PartitionResult, version, index=...,
# ...)` builds (and, for v3-v7, whose versions lack some of these fields, what its
# fallback to the schema-walking constructor built), without a keyword dict per partition.
_MAKERS: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {}
_RESULT_FIELDS = (
    "index",
    "error_code",
    "base_offset",
    "log_append_time_ms",
    "log_start_offset",
    "record_errors",
    "error_message",
)


def _makers(version: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
    found = _MAKERS[version] = (
        maker(PartitionResult, *_RESULT_FIELDS, version=version),
        maker(TopicResult, "topic_id" if version >= 13 else "name", "partition_responses", version=version),
    )
    return found


def _endpoints(ctx: RequestContext, node_ids: set[int]) -> list[Any]:
    endpoints = []
    for node_id in sorted(node_ids):
        node = ctx.cluster.brokers.get(node_id)
        if node is not None:
            host, port = node.endpoint(ctx.connection.listener)
            endpoints.append(NodeEndpoint(node_id=node_id, host=host, port=port, rack=node.rack))
    return endpoints
