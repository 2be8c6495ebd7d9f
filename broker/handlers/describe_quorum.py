"""DescribeQuorum (55): the KRaft quorum of `__cluster_metadata` as the mock presents it
(kafka-metadata-quorum.sh, AdminClient.describeMetadataQuorum): one voter, the
controller (the lowest live broker, as DescribeCluster says), leading at an epoch that
grows whenever the controller moves, and the other live brokers as observers, all
caught up with a metadata offset that counts the cluster's changes. Once kraft.version
is 1 the voters are the dynamic set AddRaftVoter and RemoveRaftVoter change
(broker/state/quorum.py), a stopped voter shown as not fetching. DESCRIBE on the
cluster. A request naming anything but exactly `__cluster_metadata` partition 0 has every
partition it names UNKNOWN_TOPIC_OR_PARTITION and no nodes, as KafkaRaftClient answers."""

from __future__ import annotations

import time
from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import DESCRIBE
from broker.state.quorum import directory_id
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_QUORUM
VERSIONS = (0, 2)
AUTHORIZATION = by_handler("DESCRIBE on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = (
    "The quorum is the mock's: offsets count the cluster's changes and timestamps are not a real log's.",
)
METADATA_TOPIC = "__cluster_metadata"
UNKNOWN_PARTITION_MESSAGE = "This server does not host this topic-partition."  # Errors.message()
Response = response_class(API_KEY)
TopicData = Response.TopicData
PartitionData = TopicData.PartitionData
ReplicaState = PartitionData.ReplicaState
Node = Response.Node


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.authorizer.authorize_cluster(
        ctx.connection.principal, DESCRIBE, ctx.connection.peer[0]
    ):
        return ctx.response(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, topics=[], nodes=[]
        )
    cluster = ctx.cluster
    controller = cluster.quorum_leader
    running = cluster.running_ids()
    dynamic = cluster.quorum.voters
    voters = sorted(dynamic) if dynamic is not None else ([controller] if controller >= 0 else [])
    now_ms = int(time.time() * 1000)
    offset = cluster.metadata_offset

    def state(node_id: int) -> Any:
        fetching = node_id in running  # a stopped voter: nothing heard from it
        return ReplicaState(
            replica_id=node_id,
            replica_directory_id=directory_id(cluster.cluster_id, node_id),
            log_end_offset=offset if fetching else -1,
            last_fetch_timestamp=now_ms if fetching else -1,  # the leader's: now (RaftUtil)
            last_caught_up_timestamp=now_ms if fetching else -1,
        )

    if not _names_the_log(request):
        # KafkaRaftClient.handleDescribeQuorumRequest: anything but exactly
        # __cluster_metadata-0 is DescribeQuorumRequest.getPartitionLevelErrorResponse,
        # every partition UNKNOWN_TOPIC_OR_PARTITION with the other fields at their
        # defaults, and no nodes.
        unknown = [
            TopicData(
                topic_name=topic.topic_name,
                partitions=[
                    PartitionData(
                        partition_index=wanted.partition_index,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        error_message=UNKNOWN_PARTITION_MESSAGE,
                        leader_id=0,
                        leader_epoch=0,
                        high_watermark=0,
                        current_voters=[],
                        observers=[],
                    )
                    for wanted in topic.partitions
                ],
            )
            for topic in request.topics
        ]
        return ctx.response(error_code=ErrorCode.NONE, error_message="", topics=unknown, nodes=[])
    topics = [
        TopicData(
            topic_name=METADATA_TOPIC,
            partitions=[
                PartitionData(
                    partition_index=0,
                    error_code=ErrorCode.NONE,
                    error_message="",
                    leader_id=controller,
                    leader_epoch=cluster.controller_epoch,
                    high_watermark=offset,
                    current_voters=[state(v) for v in voters],
                    observers=[state(n) for n in running if n not in voters],
                )
            ],
        )
    ]
    nodes = []
    for voter in voters:  # the voters' endpoints: the VotersRecord's, or the static voter's
        node = cluster.brokers.get(voter) or cluster.unregistered_running.get(voter)
        endpoints = dynamic[voter].endpoints if dynamic is not None else (node.endpoints if node else {})
        nodes.append(
            Node(
                node_id=voter,
                listeners=[
                    Node.Listener(name=name, host=host, port=port) for name, (host, port) in endpoints.items()
                ],
            )
        )
    # RaftUtil.singletonDescribeQuorumResponse leaves both messages at the default, "".
    return ctx.response(error_code=ErrorCode.NONE, error_message="", topics=topics, nodes=nodes)


def _names_the_log(request: Any) -> bool:
    """KafkaRaftClient's hasValidTopicPartition: one topic, __cluster_metadata, with one
    partition, 0."""
    topics = request.topics
    return (
        len(topics) == 1
        and topics[0].topic_name == METADATA_TOPIC
        and len(topics[0].partitions) == 1
        and topics[0].partitions[0].partition_index == 0
    )
