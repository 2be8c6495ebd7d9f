"""DescribeTopicPartitions (75) through kafka-python's admin client: partitions in topic
name order, paged by the cursor, and Kafka's per-topic errors."""

from __future__ import annotations

from kafka import KafkaAdminClient

from broker import MockCluster
from protocol.errors import ErrorCode


def page(
    admin: KafkaAdminClient, topics: list[str], limit: int, cursor: dict[str, object] | None = None
) -> tuple:
    answer = admin.describe_topic_partitions(topics, response_partition_limit=limit, cursor=cursor)
    rows = [
        (t["name"], t["error_code"], [p["partition_index"] for p in t["partitions"]])
        for t in answer["topics"]
    ]
    return rows, answer["next_cursor"]


def test_pages_follow_the_cursor() -> None:
    with MockCluster(brokers=2) as cluster:
        cluster.create_topic("b", 2, replication_factor=2)
        cluster.create_topic("a", 3, replication_factor=2)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            first, cursor = page(admin, ["b", "a"], 4)
            second, after = page(admin, ["b", "a"], 4, cursor)
            everything, _ = page(admin, [], 100)
            unknown, _ = page(admin, ["a", "zzz"], 100)
            wrong_cursor, _ = page(admin, ["a"], 100, {"topic_name": "b", "partition_index": 0})
            detail = admin.describe_topic_partitions(["a"])["topics"][0]
        finally:
            admin.close()
    assert first == [("a", 0, [0, 1, 2]), ("b", 0, [0])]
    assert cursor == {"topic_name": "b", "partition_index": 1}
    assert (second, after) == ([("b", 0, [1])], None)
    assert everything == [("a", 0, [0, 1, 2]), ("b", 0, [0, 1])]
    assert unknown == [("a", 0, [0, 1, 2]), ("zzz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    assert wrong_cursor == [("a", ErrorCode.INVALID_REQUEST, [])]
    partition = detail["partitions"][0]
    assert len(partition["replica_nodes"]) == 2 and partition["isr_nodes"] == partition["replica_nodes"]
    assert partition["leader_id"] == partition["replica_nodes"][0] and partition["offline_replicas"] == []
