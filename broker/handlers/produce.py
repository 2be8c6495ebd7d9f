"""Produce (0): validates batch headers and CRCs, appends opaque batches, acks=0 is silent."""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer import ProduceResponse

from broker.context import RequestContext
from broker.handlers.common import NONE, NOT_LEADER_OR_FOLLOWER, find_topic, led_partition
from broker.log import SequenceError
from broker.records import InvalidRecords, split_batches

API_KEY = 0
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_REQUIRED_ACKS = 21
INVALID_RECORD = 87
TopicResult = ProduceResponse.TopicProduceResponse
PartitionResult = TopicResult.PartitionProduceResponse
LeaderIdAndEpoch = PartitionResult.LeaderIdAndEpoch


def _append(ctx: RequestContext, partition: Any, records: bytes | None) -> tuple[int, int, str | None]:
    """(error code, base offset, error message) for one partition's records."""
    if records is None:
        return INVALID_RECORD, -1, "records are null"
    try:
        batches = split_batches(records)
    except InvalidRecords as exc:
        return (CORRUPT_MESSAGE if exc.corrupt else INVALID_RECORD), -1, str(exc)
    limit = ctx.config.get_int("message.max.bytes")
    for batch in batches:
        if batch.size > limit:
            return MESSAGE_TOO_LARGE, -1, f"batch of {batch.size} bytes exceeds message.max.bytes={limit}"
    try:
        return NONE, partition.log.append(batches), None
    except SequenceError as exc:
        return exc.code, -1, str(exc)


def handle(ctx: RequestContext, request: Any) -> Any:
    acks = request.acks
    uses_ids = ctx.api_version >= 13
    responses = []
    for topic_data in request.topic_data:
        topic, topic_error = find_topic(ctx, None if uses_ids else topic_data.name, topic_data.topic_id if uses_ids else None)
        results = []
        for data in topic_data.partition_data:
            error, base_offset, message = topic_error, -1, None
            partition = None
            if acks not in (-1, 0, 1):
                error = INVALID_REQUIRED_ACKS
            elif topic is not None:
                partition, error = led_partition(ctx, topic, data.index)
            if partition is not None:
                error, base_offset, message = _append(ctx, partition, data.records)
            extra = {}
            if error == NOT_LEADER_OR_FOLLOWER and topic is not None and ctx.api_version >= 10:
                leader = topic.partitions[data.index]
                extra["current_leader"] = LeaderIdAndEpoch(leader_id=leader.leader, leader_epoch=leader.leader_epoch)
            result = PartitionResult(
                index=data.index,
                error_code=error,
                base_offset=base_offset,
                log_append_time_ms=-1,
                log_start_offset=partition.log.log_start_offset if partition is not None else -1,
                record_errors=[],
                error_message=message,
                **extra,
            )
            results.append(result)
        responses.append(TopicResult(name=topic_data.name, topic_id=topic_data.topic_id, partition_responses=results))
    if acks == 0:
        return None
    return ctx.response(responses=responses, throttle_time_ms=0)
