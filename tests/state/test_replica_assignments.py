"""Explicit replica assignments (issue 15, item 13): CreatePartitions and CreateTopics place
each partition's replicas exactly as asked, in that order, leader first, and refuse what
ReplicationControlManager refuses (validateManualPartitionAssignment, the count of
assignments, fenced brokers) with its code and message. Through confluent-kafka's
AdminClient (librdkafka) and kafka-python's KafkaAdminClient on three brokers; raw
frames for what the clients will not send.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions as KpNewPartitions
from kafka.protocol.admin import CreatePartitionsRequest, CreateTopicsRequest

from broker import MockCluster
from tests.conftest import FAST
from tests.support.wire import round_trip

INVALID_REQUEST, INVALID_REPLICA_ASSIGNMENT, INVALID_PARTITIONS = 42, 39, 37
Assignment = CreateTopicsRequest.CreatableTopic.CreatableReplicaAssignment


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config=FAST) as running:
        yield running


@pytest.fixture
def admin(cluster: MockCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def placed(admin: AdminClient, topic: str) -> list[tuple[int, list[int]]]:
    """(leader, replicas) of each partition, as Metadata tells librdkafka."""
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    return [(partitions[i].leader, list(partitions[i].replicas)) for i in sorted(partitions)]


def outcome(futures: dict[str, Any]) -> tuple[int, str] | None:
    [future] = futures.values()
    try:
        future.result(timeout=10)
    except KafkaException as exc:
        return exc.args[0].code(), exc.args[0].str()
    return None


def call(cluster: MockCluster, request: Any) -> Any:
    endpoint = cluster.brokers[0].advertised_endpoint("PLAINTEXT")
    with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as sock:
        return round_trip(sock, request, 1, "assignments")


def test_create_partitions_places_replicas_as_asked(cluster: MockCluster, admin: AdminClient) -> None:
    """The broker used to put new partitions where its own placement would, so librdkafka
    saw other replicas than it asked for ("expected replica 2, not 0")."""
    cluster.create_topic("grow", partitions=1, replication_factor=2)
    first = placed(admin, "grow")[0]
    futures = admin.create_partitions(
        [NewPartitions("grow", 4, replica_assignment=[[2, 0], [1, 2], [2, 1]])], operation_timeout=5
    )
    assert outcome(futures) is None
    assert placed(admin, "grow") == [first, (2, [2, 0]), (1, [1, 2]), (2, [2, 1])]
    assert [(p.leader, p.replicas) for p in cluster.state.topics["grow"].partitions[1:]] == [
        (2, [2, 0]),
        (1, [1, 2]),
        (2, [2, 1]),
    ]


def test_create_partitions_through_kafka_python(cluster: MockCluster, admin: AdminClient) -> None:
    cluster.create_topic("kp", partitions=1, replication_factor=3)
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    try:
        response = client.create_partitions({"kp": KpNewPartitions(3, [[1, 2, 0], [2, 0, 1]])})
    finally:
        client.close()
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [("kp", 0, None)]
    assert placed(admin, "kp")[1:] == [(1, [1, 2, 0]), (2, [2, 0, 1])]


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        (
            [[2, 7], [0, 1]],
            "The manual partition assignment includes broker 7, but no such broker is registered.",
        ),
        ([[1, 1], [0, 2]], "The manual partition assignment includes the broker 1 more than once."),
        (
            [[0, 1], [2]],
            "The manual partition assignment includes a partition with 1 replica(s), but this is not "
            "consistent with previous partitions, which have 2 replica(s).",
        ),
        ([[0, 1]], "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."),
    ],
)
def test_create_partitions_refuses_bad_assignments(
    cluster: MockCluster, admin: AdminClient, assignment: list[list[int]], message: str
) -> None:
    cluster.create_topic("checked", partitions=1, replication_factor=2)
    futures = admin.create_partitions(
        [NewPartitions("checked", 3, replica_assignment=assignment)], operation_timeout=5
    )
    assert outcome(futures) == (INVALID_REPLICA_ASSIGNMENT, message)
    assert len(cluster.state.topics["checked"].partitions) == 1


def test_create_partitions_raw_assignment_edge_cases(cluster: MockCluster) -> None:
    """An empty replica list, and an empty list of assignments (not null: the count is
    checked), as the admin clients would not send them."""
    cluster.create_topic("edges", partitions=1, replication_factor=1)
    topic = CreatePartitionsRequest.CreatePartitionsTopic
    cases = [
        (topic(name="edges", count=2, assignments=[topic.CreatePartitionsAssignment(broker_ids=[])]),),
        (topic(name="edges", count=2, assignments=[]),),
    ]
    messages = []
    for (wanted,) in cases:
        response = call(
            cluster, CreatePartitionsRequest[3](topics=[wanted], timeout_ms=5000, validate_only=False)
        )
        messages += [(r.error_code, r.error_message) for r in response.results]
    assert messages == [
        (INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."),
        (
            INVALID_REPLICA_ASSIGNMENT,
            "Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified.",
        ),
    ]
    assert len(cluster.state.topics["edges"].partitions) == 1


def test_create_topics_places_replicas_as_asked(cluster: MockCluster, admin: AdminClient) -> None:
    futures = admin.create_topics(
        [NewTopic("manual", num_partitions=3, replica_assignment=[[1, 2], [2, 0], [0, 1]])],
        operation_timeout=5,
    )
    assert outcome(futures) is None
    assert placed(admin, "manual") == [(1, [1, 2]), (2, [2, 0]), (0, [0, 1])]


def test_create_topics_places_by_partition_index(cluster: MockCluster) -> None:
    """Assignments name their partition: the order they come in does not matter, a gap or
    a repeat is refused."""
    topic = CreateTopicsRequest.CreatableTopic

    def create(name: str, assignments: list[tuple[int, list[int]]], **kw: int) -> tuple[int, str | None]:
        wanted = topic(
            name=name,
            num_partitions=kw.get("num_partitions", -1),
            replication_factor=kw.get("replication_factor", -1),
            assignments=[Assignment(partition_index=i, broker_ids=b) for i, b in assignments],
            configs=[],
        )
        response = call(
            cluster, CreateTopicsRequest[7](topics=[wanted], timeout_ms=5000, validate_only=False)
        )
        [result] = response.topics
        return result.error_code, result.error_message

    assert create("reversed", [(1, [2, 0]), (0, [0, 1])]) == (0, None)
    assert [(p.leader, p.replicas) for p in cluster.state.topics["reversed"].partitions] == [
        (0, [0, 1]),
        (2, [2, 0]),
    ]
    assert create("gap", [(0, [0]), (2, [1])]) == (
        INVALID_REPLICA_ASSIGNMENT,
        "partitions should be a consecutive 0-based integer sequence",
    )
    assert create("twice", [(0, [0]), (0, [1])]) == (
        INVALID_REPLICA_ASSIGNMENT,
        "Found multiple manual partition assignments for partition 0",
    )
    assert create("with-rf", [(0, [0])], replication_factor=1) == (
        INVALID_REQUEST,
        "A manual partition assignment was specified, but replication factor was not set to -1.",
    )
    assert create("with-count", [(0, [0])], num_partitions=1) == (
        INVALID_REQUEST,
        "A manual partition assignment was specified, but numPartitions was not set to -1.",
    )
    assert sorted(cluster.state.topics) == ["reversed"]


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        (
            [[1, 2], [2]],
            "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).",
        ),
        ([[9]], "The manual partition assignment includes broker 9, but no such broker is registered."),
        ([[0, 0]], "The manual partition assignment includes the broker 0 more than once."),
    ],
)
def test_create_topics_refuses_bad_assignments(
    cluster: MockCluster, admin: AdminClient, assignment: list[list[int]], message: str
) -> None:
    futures = admin.create_topics(
        [NewTopic("refused", num_partitions=len(assignment), replica_assignment=assignment)],
        operation_timeout=5,
    )
    assert outcome(futures) == (INVALID_REPLICA_ASSIGNMENT, message)
    assert cluster.state.topics == {}


def test_assignments_with_a_broker_down(cluster: MockCluster, admin: AdminClient) -> None:
    """A stopped broker is still registered (fenced): it may hold replicas, the leader is
    the first live one, and a partition with no live replica is refused."""
    cluster.create_topic("spread", partitions=1, replication_factor=1)
    cluster.stop_broker(2)
    futures = admin.create_partitions(
        [NewPartitions("spread", 2, replica_assignment=[[2]])], operation_timeout=5
    )
    assert outcome(futures) == (
        INVALID_REPLICA_ASSIGNMENT,
        "All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled shutdown.",
    )
    futures = admin.create_topics(
        [NewTopic("follows", num_partitions=1, replica_assignment=[[2, 0]])], operation_timeout=5
    )
    assert outcome(futures) is None
    [partition] = cluster.state.topics["follows"].partitions
    assert (partition.leader, partition.replicas) == (0, [2, 0])
    # The placer, too, may put a replica on a stopped broker, never its leader.
    futures = admin.create_topics([NewTopic("rf3", 2, 3)], operation_timeout=5)
    assert outcome(futures) is None
    for partition in cluster.state.topics["rf3"].partitions:
        assert sorted(partition.replicas) == [0, 1, 2]
        assert partition.replicas[-1] == 2 and partition.leader == partition.replicas[0] != 2


def test_validate_only_places_nothing(cluster: MockCluster, admin: AdminClient) -> None:
    cluster.create_topic("dry", partitions=1, replication_factor=2)
    futures = admin.create_partitions(
        [NewPartitions("dry", 2, replica_assignment=[[2, 1]])], operation_timeout=5, validate_only=True
    )
    assert outcome(futures) is None
    assert len(cluster.state.topics["dry"].partitions) == 1
