"""OffsetForLeaderEpoch (23): the end offset of a leader epoch, so that a consumer whose
partition changed leader can tell whether the log it read was truncated (KIP-320;
librdkafka validates its position with it after every leader change). Consumers ask
the leader (replica id -1); FENCED/UNKNOWN_LEADER_EPOCH check their current epoch."""

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

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
VERSIONS = (2, 4)
AUTHORIZATION = authorization.each_topic(Operation.DESCRIBE)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(
    topics(
        "topics",
        "topics",
        Level(("partitions",), "partitions", (("partition", "partition"),)),
        ("topic", "topic"),
    )
)
TopicResult = response_class(API_KEY).OffsetForLeaderTopicResult
EpochEndOffset = TopicResult.EpochEndOffset


def _end_offset(ctx: RequestContext, topic_name: str, wanted: Any) -> Any:
    topic = ctx.cluster.topics.get(topic_name)
    error: int = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    epoch = end_offset = -1
    if topic is not None:
        partition, error = led_partition(ctx, topic, wanted.partition, wanted.current_leader_epoch)
        if partition is not None:
            epoch, end_offset = partition.log.end_offset_for_epoch(
                wanted.leader_epoch, partition.leader_epoch
            )
    return EpochEndOffset(
        error_code=error, partition=wanted.partition, leader_epoch=epoch, end_offset=end_offset
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.response(
        throttle_time_ms=0,
        topics=[
            TopicResult(
                topic=topic.topic, partitions=[_end_offset(ctx, topic.topic, p) for p in topic.partitions]
            )
            for topic in request.topics
        ],
    )
