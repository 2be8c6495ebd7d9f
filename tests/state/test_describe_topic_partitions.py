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


ALL_TOPIC_OPERATIONS = 3576  # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS


def test_unknown_and_invalid_topics_carry_the_callers_operations() -> None:
    """DescribeTopicPartitionsRequestHandler fills in the authorized operations of every
    topic that passed DESCRIBE, known or not; a name Topic.validate refuses is
    INVALID_TOPIC_EXCEPTION; once the partition limit is reached the cursor points at the
    next topic, whether it exists or not; a limit below one still answers one partition."""
    secured = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1) as cluster, MockCluster(brokers=1, config=secured) as guarded:
        cluster.create_topic("a", 2)
        guarded.acls.add("User:ANONYMOUS", "DESCRIBE", "TOPIC", "*")
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        guarded_admin = KafkaAdminClient(bootstrap_servers=guarded.bootstrap_servers)
        try:
            answer = admin.describe_topic_partitions(["zzz", "a b", ".", "a"])
            limited = admin.describe_topic_partitions(["a", "zzz"], response_partition_limit=2)
            at_least_one = admin.describe_topic_partitions(["a"], response_partition_limit=0)
            described_only = guarded_admin.describe_topic_partitions(["zzz"])["topics"]
        finally:
            admin.close()
            guarded_admin.close()
    rows = [(t["name"], t["error_code"], t["topic_authorized_operations"]) for t in answer["topics"]]
    assert rows == [
        (".", ErrorCode.INVALID_TOPIC_EXCEPTION, ALL_TOPIC_OPERATIONS),
        ("a", 0, ALL_TOPIC_OPERATIONS),
        ("a b", ErrorCode.INVALID_TOPIC_EXCEPTION, ALL_TOPIC_OPERATIONS),
        ("zzz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ALL_TOPIC_OPERATIONS),
    ]
    assert [t["name"] for t in limited["topics"]] == ["a"]
    assert limited["next_cursor"] == {"topic_name": "zzz", "partition_index": 0}
    assert [len(t["partitions"]) for t in at_least_one["topics"]] == [1]
    assert at_least_one["next_cursor"] == {"topic_name": "a", "partition_index": 1}
    assert [(t["error_code"], t["topic_authorized_operations"]) for t in described_only] == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 1 << 8)  # DESCRIBE alone
    ]


def test_an_empty_name_fails_the_whole_request() -> None:
    """Kafka 4.4 answers a request naming the empty topic with UNKNOWN_SERVER_ERROR for
    every topic it names (its error response), operations unset."""
    with MockCluster(brokers=1) as cluster:
        cluster.create_topic("a", 1)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            topics = admin.describe_topic_partitions(["a", ""])["topics"]
        finally:
            admin.close()
    assert sorted(
        (t["name"], t["error_code"], t["partitions"], t["topic_authorized_operations"]) for t in topics
    ) == [
        ("", ErrorCode.UNKNOWN_SERVER_ERROR, [], -(2**31)),
        ("a", ErrorCode.UNKNOWN_SERVER_ERROR, [], -(2**31)),
    ]
