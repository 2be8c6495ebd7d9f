"""WriteTxnMarkers (27): commit or abort markers written straight to partition leaders.

Kafka's coordinator sends it to leaders; administrators send it to abort a hanging
transaction (`kafka-transactions.sh abort`, KafkaAdminClient.abort_transaction). Markers
for __consumer_offsets partitions complete the group's pending transactional offsets.
A marker older than the producer's epoch is refused (INVALID_PRODUCER_EPOCH), and one
from an older coordinator epoch than the partition last saw for the producer too
(TRANSACTION_COORDINATOR_FENCED, ProducerAppendInfo.checkCoordinatorEpoch).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer import WriteTxnMarkersResponse

from broker import throttling
from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.common import find_topic, led_partition
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.state.transactions import OFFSETS_TOPIC
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.WRITE_TXN_MARKERS
VERSIONS = (1, 2)  # v0 is gone from Kafka 4.0
AUTHORIZATION = by_handler("CLUSTER_ACTION on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
MarkerResult = WriteTxnMarkersResponse.WritableTxnMarkerResult
TopicResult = MarkerResult.WritableTxnMarkerTopicResult
PartitionResult = TopicResult.WritableTxnMarkerPartitionResult


def _write(ctx: RequestContext, marker: Any, topic_name: str, index: int) -> int:
    if not ctx.broker.authorizer.authorize_cluster(
        ctx.connection.principal, "CLUSTER_ACTION", ctx.connection.peer[0]
    ):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if marker.producer_id < 0 or marker.producer_epoch < 0:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if topic_name == OFFSETS_TOPIC:
        ctx.groups.complete_transactional_offsets(index, marker.producer_id, marker.transaction_result)
        return ErrorCode.NONE
    topic, error = find_topic(ctx, topic_name, None)
    if topic is None:
        return error
    partition, error = led_partition(ctx, topic, index)
    if partition is None:
        return error
    log = partition.log
    known_epoch = log.producer_epoch(marker.producer_id)
    if known_epoch is not None and marker.producer_epoch < known_epoch:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if marker.coordinator_epoch < log.coordinator_epoch(marker.producer_id):
        return ErrorCode.TRANSACTION_COORDINATOR_FENCED
    log.append_marker(
        marker.producer_id,
        marker.producer_epoch,
        marker.transaction_result,
        marker.coordinator_epoch,
        partition.leader_epoch,
    )
    return ErrorCode.NONE


def handle(ctx: RequestContext, request: Any) -> Any:
    throttling.exempt_request(ctx)  # a cluster action: never throttled
    results = [
        MarkerResult(
            producer_id=marker.producer_id,
            topics=[
                TopicResult(
                    name=topic.name,
                    partitions=[
                        PartitionResult(
                            partition_index=index, error_code=_write(ctx, marker, topic.name, index)
                        )
                        for index in topic.partition_indexes
                    ],
                )
                for topic in marker.topics
            ],
        )
        for marker in request.markers
    ]
    return ctx.response(markers=results)
