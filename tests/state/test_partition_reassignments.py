"""AlterPartitionReassignments (45) and ListPartitionReassignments (46) through
kafka-python's admin client: a partition moves to other brokers (its leader too), in
progress until its new replicas have caught up (`replica.catch.up.ms`), as Kafka lists a
move until its new replicas joined the ISR; a move to a stopped broker stays in progress
until it returns, and can be cancelled; Kafka's refusals of bad replica lists."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from broker import MockCluster
from protocol.errors import ErrorCode


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as running:
        running.create_topic("t", 1, replication_factor=1)
        yield running


@pytest.fixture
def admin(cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


def codes(result: dict[TopicPartition, object]) -> dict[int, int]:
    return {tp.partition: (0 if error is None else error.errno) for tp, error in result.items()}  # type: ignore[attr-defined]


def wait_until_done(admin: KafkaAdminClient) -> None:
    deadline = time.monotonic() + 30
    while admin.list_partition_reassignments() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert admin.list_partition_reassignments() == {}


def metadata(admin: KafkaAdminClient, topic: str) -> tuple[int, list[int], list[int]]:
    """(leader, replicas, isr) of partition 0, as Metadata shows it."""
    [described] = admin.describe_topics([topic])
    [partition] = described["partitions"]
    return partition["leader_id"], partition["replica_nodes"], partition["isr_nodes"]


def test_a_move_is_in_progress_until_the_new_replicas_caught_up() -> None:
    """Kafka (ReplicationControlManager) lists the move with the target then the removed
    replicas, and Metadata shows that union with the new replicas out of the ISR, until
    they caught up; then the old replica goes and the first new one leads."""
    with MockCluster(brokers=3, config={"replica.catch.up.ms": 600_000}) as cluster:
        cluster.create_topic("t", 1, replication_factor=1)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            old = cluster.state.topics["t"].partitions[0].replicas[0]
            target = [b for b in (0, 1, 2) if b != old]
            assert codes(admin.alter_partition_reassignments({TopicPartition("t", 0): target})) == {0: 0}
            listed: dict[Any, Any] = admin.list_partition_reassignments()
            [ongoing] = listed.values()
            assert (ongoing["replicas"], ongoing["adding_replicas"], ongoing["removing_replicas"]) == (
                [*target, old],
                target,
                [old],
            )
            assert metadata(admin, "t") == (old, [*target, old], [old])
            # acks=all is served meanwhile: the ISR is the old replica
            producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
            producer.send("t", b"during", partition=0).get(10)
            producer.close()
            # cancelled: back to the old replica
            assert codes(admin.alter_partition_reassignments({TopicPartition("t", 0): None})) == {0: 0}
            assert admin.list_partition_reassignments() == {}
            assert metadata(admin, "t") == (old, [old], [old])
        finally:
            admin.close()


def test_a_partition_moves_with_its_data_and_its_leader(
    cluster: MockCluster, admin: KafkaAdminClient
) -> None:
    partition = cluster.state.topics["t"].partitions[0]
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    producer.send("t", b"before", partition=0).get(10)
    old = partition.replicas[0]
    target = [b for b in (0, 1, 2) if b != old][:2]
    assert codes(admin.alter_partition_reassignments({TopicPartition("t", 0): target})) == {0: 0}
    wait_until_done(admin)  # replica.catch.up.ms (500 ms) after the move
    assert (partition.replicas, partition.leader) == (target, target[0])
    assert metadata(admin, "t") == (target[0], target, target)
    producer.send("t", b"after", partition=0).get(10)  # the client follows the new leader
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("t", 0)])
    values = [r.value for records in consumer.poll(5000).values() for r in records]
    consumer.close()
    assert values == [b"before", b"after"]


def test_a_move_to_a_stopped_broker_waits_and_can_be_cancelled(cluster: MockCluster) -> None:
    partition = cluster.state.topics["t"].partitions[0]
    old = partition.replicas[0]
    down = next(b for b in (1, 2) if b != old)
    cluster.stop_broker(down)
    # A client created now knows only the live brokers (kafka-python may send to any).
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    admin.alter_partition_reassignments({TopicPartition("t", 0): [down]})
    listed = admin.list_partition_reassignments()
    [ongoing] = listed.values()
    assert (ongoing["replicas"], ongoing["adding_replicas"], ongoing["removing_replicas"]) == (
        [down, old],
        [down],
        [old],
    )
    assert partition.leader == old  # the new replica has not caught up
    assert codes(admin.alter_partition_reassignments({TopicPartition("t", 0): None})) == {0: 0}
    assert (partition.replicas, admin.list_partition_reassignments()) == ([old], {})
    admin.alter_partition_reassignments({TopicPartition("t", 0): [down]})
    cluster.start_broker(down)  # it catches up: the move completes
    wait_until_done(admin)
    admin.close()
    assert (partition.replicas, partition.leader) == ([down], down)


def test_refusals(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    admin.alter_partition_reassignments({TopicPartition("t", 0): [7], TopicPartition("missing", 0): [0]})
    admin.alter_partition_reassignments({TopicPartition("t", 0): [1, 1]})
    first, duplicate = (r["response"]["responses"] for r in cluster.requests.list(api_key=45))
    assert duplicate[0]["partitions"][0]["error_message"] == (
        "The manual partition assignment includes the broker 1 more than once."
    )
    answered = first
    errors = {
        (t["name"], p["partition_index"]): (p["error_code"], p["error_message"])
        for t in answered
        for p in t["partitions"]
    }
    assert errors == {
        ("t", 0): (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 7, but no such broker is registered.",
        ),
        ("missing", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named missing."),
    }
    assert codes(admin.alter_partition_reassignments({TopicPartition("t", 0): None})) == {
        0: ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    }
