"""ListOffsets (2): earliest, latest, max-timestamp and by-timestamp lookups."""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import ListOffsetsResponse

from broker.context import RequestContext
from broker.handlers.common import find_topic, led_partition
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.LIST_OFFSETS
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
TopicResult = ListOffsetsResponse.ListOffsetsTopicResponse
PartitionResult = TopicResult.ListOffsetsPartitionResponse


def _lookup(log: Any, timestamp: int, version: int) -> tuple[int, int, int]:
    """(error, offset, timestamp) for one partition, as Kafka's Partition.fetchOffsetForTimestamp."""
    if timestamp in (LATEST, LATEST_TIERED):
        return ErrorCode.NONE, log.high_watermark, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return ErrorCode.NONE, log.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        if version < 7:
            return ErrorCode.UNSUPPORTED_VERSION, -1, -1
        found = log.max_timestamp_offset()
    else:
        found = log.offset_for_timestamp(timestamp)
    if found is None:
        return ErrorCode.NONE, -1, -1
    return ErrorCode.NONE, found[0], found[1]


def handle(ctx: RequestContext, request: Any) -> Any:
    topics = []
    for wanted_topic in request.topics:
        topic, topic_error = find_topic(ctx, wanted_topic.name, None)
        partitions = []
        for wanted in wanted_topic.partitions:
            partition, error = (None, topic_error)
            if topic is not None:
                partition, error = led_partition(
                    ctx, topic, wanted.partition_index, wanted.current_leader_epoch
                )
            offset = timestamp = -1
            epoch = -1
            if partition is not None:
                error, offset, timestamp = _lookup(partition.log, wanted.timestamp, ctx.api_version)
                epoch = partition.leader_epoch if offset >= 0 else -1
            partitions.append(
                PartitionResult(
                    partition_index=wanted.partition_index,
                    error_code=error,
                    timestamp=timestamp,
                    offset=offset,
                    leader_epoch=epoch,
                )
            )
        topics.append(TopicResult(name=wanted_topic.name, partitions=partitions))
    return ctx.response(throttle_time_ms=0, topics=topics)
