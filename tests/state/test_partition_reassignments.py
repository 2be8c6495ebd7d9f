"""AlterPartitionReassignments (45) and ListPartitionReassignments (46) through
kafka-python's admin client: a partition moves to other brokers (its leader too), a move
to a stopped broker stays in progress until it returns, and can be cancelled; Kafka's
refusals of bad replica lists."""

from __future__ import annotations

from collections.abc import Iterator

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


def test_a_partition_moves_with_its_data_and_its_leader(
    cluster: MockCluster, admin: KafkaAdminClient
) -> None:
    partition = cluster.state.topics["t"].partitions[0]
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    producer.send("t", b"before", partition=0).get(10)
    old = partition.replicas[0]
    target = [b for b in (0, 1, 2) if b != old][:2]
    assert codes(admin.alter_partition_reassignments({TopicPartition("t", 0): target})) == {0: 0}
    assert (partition.replicas, partition.leader) == (target, target[0])
    assert admin.list_partition_reassignments() == {}  # done at once: both brokers are up
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
