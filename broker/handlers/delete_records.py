"""DeleteRecords (21): moves partitions' log start offsets forward (kafka-delete-records.sh,
AdminClient.deleteRecords); what lies before is gone: Fetch answers OFFSET_OUT_OF_RANGE
there and ListOffsets' earliest is the new start. ReplicaManager.deleteRecords' checks:
offset -1 is the high watermark, beyond it OFFSET_OUT_OF_RANGE, a compact-only topic
POLICY_VIOLATION; DELETE on the topic is checked before (authorization.py)."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import Level, mirrors, topics
from broker.handlers.common import led_partition
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DELETE_RECORDS
VERSIONS = (0, 2)
AUTHORIZATION = authorization.each_topic(Operation.DELETE)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(
    topics(
        "topics",
        "topics",
        Level(("partitions",), "partitions", (("partition_index", "partition_index"),)),
        ("name", "name"),
    )
)
HIGH_WATERMARK = -1
TopicResult = response_class(API_KEY).DeleteRecordsTopicResult
PartitionResult = TopicResult.DeleteRecordsPartitionResult


def _delete(ctx: RequestContext, topic_name: str, index: int, offset: int) -> tuple[int, int]:
    """(low watermark, error code) for one partition."""
    topic = ctx.cluster.topics.get(topic_name)
    if topic is None:
        return -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    partition, error = led_partition(ctx, topic, index)
    if partition is None:
        return -1, error
    log = partition.log
    if not log.delete_policy:
        return -1, ErrorCode.POLICY_VIOLATION
    wanted = log.high_watermark if offset == HIGH_WATERMARK else offset
    if wanted < 0 or wanted > log.high_watermark:
        return -1, ErrorCode.OFFSET_OUT_OF_RANGE
    return log.delete_records(wanted), ErrorCode.NONE


def handle(ctx: RequestContext, request: Any) -> Any:
    results = []
    for topic in request.topics:
        partitions = []
        for wanted in topic.partitions:
            low_watermark, error = _delete(ctx, topic.name, wanted.partition_index, wanted.offset)
            partitions.append(
                PartitionResult(
                    partition_index=wanted.partition_index, low_watermark=low_watermark, error_code=error
                )
            )
        results.append(TopicResult(name=topic.name, partitions=partitions))
    return ctx.response(throttle_time_ms=0, topics=results)
