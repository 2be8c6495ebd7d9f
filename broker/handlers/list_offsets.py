"""ListOffsets (2): earliest, latest, max-timestamp and by-timestamp lookups.

As Kafka's Partition.fetchOffsetForTimestamp and UnifiedLog.fetchOffsetByTimestamp: the
timestamp lookups answer a record (its offset and timestamp, and the leader epoch of its
batch), decoding the records of the one batch they land in; nothing here is tiered, so
the tiered-storage specials answer -1/-1 with epoch -1; a special timestamp older than the
request version (and an unknown negative one) UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import ListOffsetsResponse

from broker.context import RequestContext
from broker.error_responses import PARTITIONS, mirrors, topics
from broker.handlers.common import find_topic, led_partition
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from broker.state.cluster import Partition
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.LIST_OFFSETS
VERSIONS = (1, 11)
AUTHORIZATION = authorization.each_topic(Operation.DESCRIBE)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(topics("topics", "topics", PARTITIONS, ("name", "name")))
LATEST = -1
READ_COMMITTED = 1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
UNKNOWN = -1  # UNKNOWN_OFFSET, UNKNOWN_TIMESTAMP and UNKNOWN_EPOCH alike
# The first version serving each special timestamp; below it, and for any other negative
# timestamp, Kafka answers UNSUPPORTED_VERSION.
SPECIAL_SINCE = {
    LATEST: 0,
    EARLIEST: 0,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL: 8,
    LATEST_TIERED: 9,
    EARLIEST_PENDING_UPLOAD: 11,
}
TopicResult = ListOffsetsResponse.ListOffsetsTopicResponse
PartitionResult = TopicResult.ListOffsetsPartitionResponse


def _lookup(
    partition: Partition, timestamp: int, version: int, committed_only: bool
) -> tuple[int, int, int, int]:
    """(error, offset, timestamp, leader epoch) for one partition. read_committed sees
    the log up to its last stable offset, as Partition.fetchOffsetForTimestamp does."""
    if timestamp < 0 and version < SPECIAL_SINCE.get(timestamp, 1 << 15):
        return ErrorCode.UNSUPPORTED_VERSION, UNKNOWN, UNKNOWN, UNKNOWN
    log = partition.log
    last_fetchable = log.last_stable_offset if committed_only else log.high_watermark
    if timestamp == LATEST:
        return ErrorCode.NONE, last_fetchable, UNKNOWN, partition.leader_epoch
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        # The earliest entry of the leader epoch cache: the epoch of the batch at the log
        # start, or, in an empty log, the one the leader assigned at becoming leader.
        epoch = log.earliest_leader_epoch()
        if epoch is None:
            epoch = partition.leader_epoch
        return ErrorCode.NONE, log.log_start_offset, UNKNOWN, epoch
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return ErrorCode.NONE, UNKNOWN, UNKNOWN, UNKNOWN
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
    else:
        found = log.offset_for_timestamp(timestamp)
    if found is None or found[0] >= last_fetchable:
        return ErrorCode.NONE, UNKNOWN, UNKNOWN, UNKNOWN
    offset, record_timestamp, epoch = found
    return ErrorCode.NONE, offset, record_timestamp, max(epoch, UNKNOWN)


def handle(ctx: RequestContext, request: Any) -> Any:
    topics = []
    committed_only = ctx.api_version >= 2 and request.isolation_level == READ_COMMITTED
    for wanted_topic in request.topics:
        topic, topic_error = find_topic(ctx, wanted_topic.name, None)
        partitions = []
        for wanted in wanted_topic.partitions:
            partition, error = (None, topic_error)
            if topic is not None:
                partition, error = led_partition(
                    ctx, topic, wanted.partition_index, wanted.current_leader_epoch
                )
            offset = timestamp = epoch = UNKNOWN
            if partition is not None:
                error, offset, timestamp, epoch = _lookup(
                    partition, wanted.timestamp, ctx.api_version, committed_only
                )
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
