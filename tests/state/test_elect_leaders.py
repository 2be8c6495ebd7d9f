"""ElectLeaders (43) through confluent-kafka's admin client: a preferred election gives a
partition back to its first replica after that broker returned, and Kafka's answers
when no election is needed or possible."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from broker import MockCluster
from protocol.errors import ErrorCode


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as running:
        running.create_topic("t", 2, replication_factor=3)
        yield running


def elect(
    cluster: MockCluster, kind: ElectionType, partitions: list[TopicPartition] | None
) -> dict[tuple[str, int], int]:
    """One election through a new admin client (librdkafka sends it to the controller
    it knows, which a stopped broker may have been)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    results = admin.elect_leaders(kind, partitions).result(10)
    return {
        (tp.topic, tp.partition): (error.code() if error is not None else 0) for tp, error in results.items()
    }


def test_preferred_election_after_a_broker_returns(cluster: MockCluster) -> None:
    partition = cluster.state.topics["t"].partitions[0]
    preferred = partition.replicas[0]
    assert elect(cluster, ElectionType.PREFERRED, [TopicPartition("t", 0)]) == {
        ("t", 0): ErrorCode.ELECTION_NOT_NEEDED
    }
    cluster.stop_broker(preferred)
    assert partition.leader != preferred
    # While the preferred replica is down it cannot lead.
    down = elect(cluster, ElectionType.PREFERRED, [TopicPartition("t", 0)])
    assert down == {("t", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}
    cluster.start_broker(preferred)
    assert partition.leader != preferred  # leaders stay where they moved
    epoch = partition.leader_epoch
    assert elect(cluster, ElectionType.PREFERRED, [TopicPartition("t", 0)]) == {("t", 0): ErrorCode.NONE}
    assert (partition.leader, partition.leader_epoch) == (preferred, epoch + 1)


def test_unclean_and_unknown(cluster: MockCluster) -> None:
    answers = elect(cluster, ElectionType.UNCLEAN, [TopicPartition("t", 1), TopicPartition("t", 9)])
    assert answers == {
        ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    # Every partition (None): those already led by their preferred replica are left out.
    assert elect(cluster, ElectionType.PREFERRED, None) == {}


def test_elections_need_alter_on_the_cluster() -> None:
    secured = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1, config=secured) as running:
        running.create_topic("t", 1)
        with pytest.raises(KafkaException) as refused:
            elect(running, ElectionType.PREFERRED, [TopicPartition("t", 0)])
        assert refused.value.args[0].code() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        running.acls.add("User:ANONYMOUS", "ALTER", "CLUSTER", "kafka-cluster")
        assert elect(running, ElectionType.PREFERRED, [TopicPartition("t", 0)]) == {
            ("t", 0): ErrorCode.ELECTION_NOT_NEEDED
        }


def test_election_not_needed_carries_kafkas_message(cluster: MockCluster) -> None:
    """As Kafka answers it: the error's own message, which admin clients show."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    results = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("t", 0)]).result(10)
    error = results[TopicPartition("t", 0)]
    assert error is not None and error.code() == ErrorCode.ELECTION_NOT_NEEDED
    assert error.str() == "Leader election not needed for topic partition."
