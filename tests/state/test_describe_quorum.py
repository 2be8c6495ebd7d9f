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
