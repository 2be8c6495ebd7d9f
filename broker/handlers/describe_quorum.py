"""DescribeQuorum (55): the KRaft quorum of `__cluster_metadata` as the mock presents it
(kafka-metadata-quorum.sh, AdminClient.describeMetadataQuorum): one voter, the
controller (the lowest live broker, as DescribeCluster says), leading at an epoch that
grows whenever the controller moves, and the other live brokers as observers, all
caught up with a metadata offset that counts the cluster's changes. DESCRIBE on the
cluster; any other partition is UNKNOWN_TOPIC_OR_PARTITION, as KafkaRaftClient answers."""

from __future__ import annotations

import time
import uuid
from typing import Any

from broker.context import RequestContext
from broker.security.authorizer import DESCRIBE
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_QUORUM
METADATA_TOPIC = "__cluster_metadata"
Response = response_class(API_KEY)
TopicData = Response.TopicData
PartitionData = TopicData.PartitionData
ReplicaState = PartitionData.ReplicaState
Node = Response.Node


def _directory_id(cluster_id: str, node_id: int) -> uuid.UUID:
    """A stable metadata log directory id per node (Kafka's is random, kept in meta.properties)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-mock-broker:{cluster_id}:{node_id}")


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.authorizer.authorize_cluster(
        ctx.connection.principal, DESCRIBE, ctx.connection.peer[0]
    ):
        return ctx.response(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, topics=[], nodes=[]
        )
    cluster = ctx.cluster
    controller = cluster.controller_id
    now_ms = int(time.time() * 1000)
    offset = cluster.metadata_offset

    def state(node_id: int, leader: bool) -> Any:
        return ReplicaState(
            replica_id=node_id,
            replica_directory_id=_directory_id(cluster.cluster_id, node_id),
            log_end_offset=offset,
            last_fetch_timestamp=-1 if leader else now_ms,
            last_caught_up_timestamp=now_ms,
        )

    topics = []
    for topic in request.topics:
        partitions = []
        for wanted in topic.partitions:
            if topic.topic_name != METADATA_TOPIC or wanted.partition_index != 0:
                partitions.append(
                    PartitionData(
                        partition_index=wanted.partition_index,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        error_message=None,
                        leader_id=-1,
                        leader_epoch=-1,
                        high_watermark=-1,
                        current_voters=[],
                        observers=[],
                    )
                )
                continue
            partitions.append(
                PartitionData(
                    partition_index=0,
                    error_code=ErrorCode.NONE,
                    error_message=None,
                    leader_id=controller,
                    leader_epoch=cluster.controller_epoch,
                    high_watermark=offset,
                    current_voters=[state(controller, leader=True)] if controller >= 0 else [],
                    observers=[state(n, leader=False) for n in cluster.live_broker_ids() if n != controller],
                )
            )
        topics.append(TopicData(topic_name=topic.topic_name, partitions=partitions))
    node = cluster.brokers.get(controller)
    nodes = (
        [
            Node(
                node_id=controller,
                listeners=[
                    Node.Listener(name=name, host=host, port=port)
                    for name, (host, port) in node.endpoints.items()
                ],
            )
        ]
        if node is not None
        else []
    )
    return ctx.response(error_code=ErrorCode.NONE, error_message=None, topics=topics, nodes=nodes)
