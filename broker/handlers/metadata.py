"""Metadata (3): brokers on the client's listener, topics, leaders; auto-creates topics."""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import MetadataResponse

from broker import throttling
from broker.context import RequestContext
from broker.state.cluster import ClusterError, Topic
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.METADATA
Broker = MetadataResponse.MetadataResponseBroker
TopicEntry = MetadataResponse.MetadataResponseTopic
PartitionEntry = TopicEntry.MetadataResponsePartition
# kafka-python encodes None as Kafka's "not requested" sentinel (INT32_MIN).
AUTHORIZED_OPERATIONS_OMITTED = None


def topic_entry(ctx: RequestContext, topic: Topic) -> Any:
    live = set(ctx.cluster.live_broker_ids())
    partitions = []
    for partition in topic.partitions:
        leader_up = partition.leader in live
        isr = [r for r in partition.replicas if r in live]
        partitions.append(
            PartitionEntry(
                error_code=ErrorCode.NONE if leader_up else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=partition.index,
                leader_id=partition.leader if leader_up else -1,
                leader_epoch=partition.leader_epoch,
                replica_nodes=list(partition.replicas),
                isr_nodes=isr,
                offline_replicas=[r for r in partition.replicas if r not in live],
            )
        )
    return TopicEntry(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=partitions,
        authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


def _error_entry(code: int, name: str | None, topic_id: Any = None) -> Any:
    return TopicEntry(
        error_code=code,
        name=name,
        topic_id=topic_id,
        is_internal=False,
        partitions=[],
        authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


def _may_auto_create(ctx: RequestContext, request: Any) -> bool:
    allowed = ctx.api_version < 4 or request.allow_auto_topic_creation
    return bool(allowed and ctx.config.get_bool("auto.create.topics.enable"))


def handle(ctx: RequestContext, request: Any) -> Any:
    cluster = ctx.cluster
    entries = []
    if request.topics is None or (ctx.api_version == 0 and not request.topics):
        entries = [topic_entry(ctx, topic) for topic in cluster.topics.values()]
    else:
        for wanted in request.topics:
            if wanted.name is None:
                topic = cluster.topics_by_id.get(wanted.topic_id) if wanted.topic_id else None
                entries.append(
                    topic_entry(ctx, topic)
                    if topic
                    else _error_entry(ErrorCode.UNKNOWN_TOPIC_ID, None, wanted.topic_id)
                )
                continue
            topic = cluster.topics.get(wanted.name)
            if topic is None and _may_auto_create(ctx, request):
                # Auto-creation counts against the controller mutation quota but is
                # never refused by it, and the Metadata response is not throttled for it.
                quota = throttling.mutation_quota(ctx, strict=False)
                try:
                    topic = cluster.create_topic(
                        wanted.name,
                        ctx.config.get_int("num.partitions"),
                        ctx.config.get_int("default.replication.factor"),
                        charge=throttling.charge_to(quota),
                    )
                except ClusterError as exc:
                    entries.append(
                        _error_entry(
                            exc.code
                            if exc.code == ErrorCode.INVALID_TOPIC_EXCEPTION
                            else ErrorCode.LEADER_NOT_AVAILABLE,
                            wanted.name,
                        )
                    )
                    continue
            entries.append(
                topic_entry(ctx, topic)
                if topic
                else _error_entry(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, wanted.name)
            )
    listener = ctx.connection.listener
    brokers = []
    for node_id in cluster.live_broker_ids():
        host, port = cluster.brokers[node_id].endpoint(listener)
        brokers.append(Broker(node_id=node_id, host=host, port=port, rack=cluster.brokers[node_id].rack))
    return ctx.response(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        topics=entries,
        authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
        error_code=ErrorCode.NONE,
    )
