"""DescribeQuorum (55) through kafka-python's describe_metadata_quorum: the controller
(lowest live broker) as the one voter, the other live brokers as observers, a new epoch
when the controller moves; other partitions are unknown; DESCRIBE on the cluster."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.errors import ClusterAuthorizationFailedError

from broker import MockCluster
from messages.registry import request_class
from protocol.errors import ErrorCode
from tests.support.wire import round_trip


def quorum(cluster: MockCluster) -> dict[str, Any]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        return admin.describe_metadata_quorum()
    finally:
        admin.close()


def test_the_quorum_follows_the_controller() -> None:
    with MockCluster(brokers=3) as cluster:
        first = quorum(cluster)["topics"][0]["partitions"][0]
        cluster.create_topic("t", 1)
        cluster.stop_broker(0)
        moved = quorum(cluster)
        node = moved["nodes"][0]
    assert first["leader_id"] == 0 and [v["replica_id"] for v in first["current_voters"]] == [0]
    assert sorted(o["replica_id"] for o in first["observers"]) == [1, 2] and first["error"] is None
    partition = moved["topics"][0]["partitions"][0]
    assert (partition["leader_id"], [o["replica_id"] for o in partition["observers"]]) == (1, [2])
    assert partition["leader_epoch"] == first["leader_epoch"] + 1
    assert partition["high_watermark"] > first["high_watermark"]  # the topic and the stop are records
    assert node["node_id"] == 1 and node["listeners"][0]["port"] > 0


def test_other_partitions_and_authorization() -> None:
    secured = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1, config=secured) as cluster:
        with pytest.raises(ClusterAuthorizationFailedError):
            quorum(cluster)
        cluster.acls.add("User:ANONYMOUS", "DESCRIBE", "CLUSTER", "kafka-cluster")
        assert quorum(cluster)["topics"][0]["partitions"][0]["leader_id"] == 0
        Request = request_class(55)
        host, port = cluster.bootstrap_servers.rsplit(":", 1)

        with socket.create_connection((host, int(port)), timeout=10) as sock:
            answer = round_trip(
                sock,
                Request[2](
                    topics=[
                        Request.TopicData(
                            topic_name="t", partitions=[Request.TopicData.PartitionData(partition_index=0)]
                        )
                    ]
                ),
                1,
                "raw",
            )
    assert answer.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def describe_quorum_v2(cluster: MockCluster, topics: list[tuple[str, list[int]]]) -> Any:
    Request = request_class(55)
    request = Request[2](
        topics=[
            Request.TopicData(
                topic_name=name,
                partitions=[Request.TopicData.PartitionData(partition_index=i) for i in indexes],
            )
            for name, indexes in topics
        ]
    )
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        return round_trip(sock, request, 1, "raw")


def test_anything_but_exactly_the_log_partition_is_unknown() -> None:
    """KafkaRaftClient answers only a request for exactly __cluster_metadata-0: any other
    (no topic, another topic beside it, the partition twice) has every partition it names
    UNKNOWN_TOPIC_OR_PARTITION with the other fields 0, and no nodes."""
    with MockCluster(brokers=1) as cluster:
        nothing = describe_quorum_v2(cluster, [])
        mixed = describe_quorum_v2(cluster, [("__cluster_metadata", [0]), ("x", [0])])
        twice = describe_quorum_v2(cluster, [("__cluster_metadata", [0, 0])])
        exact = describe_quorum_v2(cluster, [("__cluster_metadata", [0])])
    assert (nothing.error_code, nothing.error_message, nothing.topics, nothing.nodes) == (0, "", [], [])
    for answer in (mixed, twice):
        assert (answer.error_code, answer.error_message, answer.nodes) == (0, "", [])
        partitions = [p for t in answer.topics for p in t.partitions]
        assert len(partitions) == 2
        assert {
            (p.error_code, p.error_message, p.leader_id, p.leader_epoch, p.high_watermark) for p in partitions
        } == {
            (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.", 0, 0, 0)
        }
    assert (exact.error_message, exact.topics[0].partitions[0].error_message) == ("", "")
    assert [n.node_id for n in exact.nodes] == [0]
    leader = exact.topics[0].partitions[0].current_voters[0]
    assert leader.last_fetch_timestamp > 0  # RaftUtil: the leader's fetch time is now
