"""DescribeProducers (61): the producers a partition leader knows of, with their epoch,
last sequence and open transaction (`kafka-transactions.sh describe-producers`)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.transactions import DescribeProducersResponse

from broker.context import RequestContext
from broker.error_responses import Level, mirrors, topics
from broker.handlers.common import find_topic, led_partition
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from protocol.api_keys import ApiKey

API_KEY = ApiKey.DESCRIBE_PRODUCERS
VERSIONS = (0, 0)
AUTHORIZATION = authorization.each_topic(Operation.READ)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(
    topics(
        "topics",
        "topics",
        Level(("partition_indexes",), "partitions", (("partition_index", ""),)),
        ("name", "name"),
    )
)
TopicResult = DescribeProducersResponse.TopicResponse
PartitionResult = TopicResult.PartitionResponse
Producer = PartitionResult.ProducerState


def handle(ctx: RequestContext, request: Any) -> Any:
    topics = []
    for wanted in request.topics:
        topic, topic_error = find_topic(ctx, wanted.name, None)
        partitions = []
        for index in wanted.partition_indexes:
            partition, error = (None, topic_error)
            if topic is not None:
                partition, error = led_partition(ctx, topic, index)
            active = []
            if partition is not None:
                active = [
                    Producer(
                        producer_id=producer_id,
                        producer_epoch=state.epoch,
                        last_sequence=state.last_sequence,
                        last_timestamp=state.last_timestamp,
                        coordinator_epoch=state.coordinator_epoch,
                        current_txn_start_offset=open_at,
                    )
                    for producer_id, state, open_at in partition.log.producers()
                ]
            partitions.append(
                PartitionResult(
                    partition_index=index,
                    error_code=error,
                    error_message=None,
                    active_producers=active,
                )
            )
        topics.append(TopicResult(name=wanted.name, partitions=partitions))
    return ctx.response(throttle_time_ms=0, topics=topics)
