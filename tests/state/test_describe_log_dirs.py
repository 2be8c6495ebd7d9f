"""DescribeLogDirs (35) through kafka-python's admin client: each broker lists the
replicas it holds with the bytes kept, filtered as asked; DESCRIBE on the cluster."""

from __future__ import annotations

from typing import Any

from kafka import KafkaAdminClient, KafkaProducer

from broker import MockCluster
from protocol.errors import ErrorCode


def partitions(described: list[dict[str, Any]]) -> dict[int, dict[tuple[str, int], int]]:
    """broker -> {(topic, partition): size}"""
    return {
        broker["broker"]: {
            (topic["name"], p["partition_index"]): p["partition_size"]
            for log_dir in broker["log_dirs"]
            for topic in log_dir["topics"]
            for p in topic["partitions"]
        }
        for broker in described
    }


def test_each_broker_lists_its_replicas_with_their_sizes() -> None:
    with MockCluster(brokers=2, config={"log.dirs": "/var/lib/kafka/data"}) as cluster:
        cluster.create_topic("single", 2, replication_factor=1)
        cluster.create_topic("both", 1, replication_factor=2)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
        for _ in range(5):
            producer.send("both", b"x" * 100, partition=0)
        producer.flush()
        producer.close()
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            described = admin.describe_log_dirs()
            filtered = admin.describe_log_dirs(topic_partitions={"both": [0]}, brokers=[1])
        finally:
            admin.close()
        size = cluster.state.topics["both"].partitions[0].log.size_bytes
        holders = {p.index: p.replicas[0] for p in cluster.state.topics["single"].partitions}
    assert size > 500
    assert partitions(described) == {
        broker: {("both", 0): size} | {("single", p): 0 for p, holder in holders.items() if holder == broker}
        for broker in (0, 1)
    }
    assert partitions(filtered) == {1: {("both", 0): size}}
    [log_dir] = described[0]["log_dirs"]
    assert (
        log_dir["log_dir"] == "/var/lib/kafka/data" and log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
    )


def test_describe_on_the_cluster_is_needed() -> None:
    secured = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1, config=secured) as cluster:
        cluster.create_topic("t", 1)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            described = admin.describe_log_dirs()
        finally:
            admin.close()
        [answer] = cluster.requests.list(api_key=35)
    assert described == [{"broker": 0, "log_dirs": []}]  # kafka-python drops the top-level error
    assert answer["response"]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_replicas_stay_in_the_one_log_dir() -> None:
    """AlterReplicaLogDirs (34): the broker's own directory is accepted (nothing moves),
    another path is LOG_DIR_NOT_FOUND, a partition it holds no replica of
    REPLICA_NOT_AVAILABLE."""
    with MockCluster(brokers=2, config={"log.dirs": "/var/lib/kafka/data"}) as cluster:
        cluster.create_topic("t", 2, replication_factor=1)
        holders = {p.index: p.replicas[0] for p in cluster.state.topics["t"].partitions}
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            here = admin.alter_replica_log_dirs({("t", 0, holders[0]): "/var/lib/kafka/data"})
            elsewhere = admin.alter_replica_log_dirs({("t", 0, holders[0]): "/mnt/other"})
            missing = admin.alter_replica_log_dirs({("t", 1, 1 - holders[1]): "/var/lib/kafka/data"})
        finally:
            admin.close()
    assert [e.errno for e in here.values()] == [ErrorCode.NONE]
    assert [e.errno for e in elsewhere.values()] == [ErrorCode.LOG_DIR_NOT_FOUND]
    assert [e.errno for e in missing.values()] == [ErrorCode.REPLICA_NOT_AVAILABLE]
