"""Codes and messages of CreatePartitions, CreateTopics and DeleteTopics (issue 15, item 14)
as Kafka 4.x's controller answers them (ControllerApis.createPartitions/createTopics/
deleteTopics, ReplicationControlManager, Topic.validate, StripedReplicaPlacer), through
kafka-python's KafkaAdminClient and confluent-kafka's AdminClient, raw frames for
requests the clients will not build (repeated names, topic ids with names).
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions
from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)

from broker import MockCluster
from tests.conftest import FAST
from tests.support.wire import round_trip

UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS = 3, 17, 36
INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG = 37, 38, 40
INVALID_REQUEST, UNKNOWN_TOPIC_ID = 42, 100
Creatable = CreateTopicsRequest.CreatableTopic
Deletable = DeleteTopicsRequest.DeleteTopicState


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config=FAST) as running:
        yield running


@pytest.fixture
def admin(cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    yield client
    client.close()


def call(cluster: MockCluster, request: Any) -> Any:
    endpoint = cluster.brokers[0].advertised_endpoint("PLAINTEXT")
    with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as sock:
        return round_trip(sock, request, 1, "messages")


def creatable(name: str, partitions: int = 1, replication: int = 1, **configs: str | None) -> Any:
    return Creatable(
        name=name,
        num_partitions=partitions,
        replication_factor=replication,
        assignments=[],
        configs=[
            Creatable.CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in configs.items()
        ],
    )


def create_topics(cluster: MockCluster, *topics: Any) -> list[tuple[str, int, str | None]]:
    request = CreateTopicsRequest[7](topics=list(topics), timeout_ms=5000, validate_only=False)
    return [(t.name, t.error_code, t.error_message) for t in call(cluster, request).topics]


# -- CreatePartitions ---------------------------------------------------------------------
def test_create_partitions_messages(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    cluster.create_topic("three", partitions=3)

    def grow(name: str, count: int) -> tuple[int, str | None]:
        [result] = admin.create_partitions({name: NewPartitions(count)}, raise_errors=False).results
        return result.error_code, result.error_message

    assert grow("three", 2) == (
        INVALID_PARTITIONS,
        "The topic three currently has 3 partition(s); 2 would not be an increase.",
    )
    assert grow("three", 3) == (INVALID_PARTITIONS, "Topic already has 3 partition(s).")
    # UnknownTopicOrPartitionException() carries no message, so the response has none.
    assert grow("nothing", 5) == (UNKNOWN_TOPIC_OR_PARTITION, None)
    assert grow("three", 4) == (0, None)


def test_create_partitions_repeated_name(cluster: MockCluster) -> None:
    """A name given twice is answered once, first, and neither entry grows the topic."""
    cluster.create_topic("twice")
    cluster.create_topic("once")
    topic = CreatePartitionsRequest.CreatePartitionsTopic
    request = CreatePartitionsRequest[3](
        topics=[
            topic(name="twice", count=2, assignments=None),
            topic(name="once", count=2, assignments=None),
            topic(name="twice", count=3, assignments=None),
        ],
        timeout_ms=5000,
        validate_only=False,
    )
    results = [(r.name, r.error_code, r.error_message) for r in call(cluster, request).results]
    assert results == [("twice", INVALID_REQUEST, "Duplicate topic name."), ("once", 0, None)]
    assert [len(cluster.state.topics[n].partitions) for n in ("twice", "once")] == [1, 2]


# -- CreateTopics -------------------------------------------------------------------------
def test_create_topics_messages(cluster: MockCluster) -> None:
    cluster.create_topic("taken")
    cluster.create_topic("metrics_in")
    long_name = "x" * 250
    assert create_topics(
        cluster,
        creatable("taken"),
        creatable("rf0", replication=0),
        creatable("p0", partitions=0),
        creatable("rf4", replication=4),
        creatable(""),
        creatable(".."),
        creatable(long_name),
        creatable("bad/name"),
        creatable("metrics.in"),
        creatable("nulls", retention_ms=None, segment_ms=None),
        creatable("bad/and-bad-config", no_such="1"),
    ) == [
        ("taken", TOPIC_ALREADY_EXISTS, "Topic 'taken' already exists."),
        (
            "rf0",
            INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        ("p0", INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."),
        (
            "rf4",
            INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be "
            "reached because only 3 broker(s) are registered or some brokers have all their log directories "
            "cordoned.",
        ),
        ("", INVALID_TOPIC_EXCEPTION, "Topic name is invalid: the empty string is not allowed"),
        ("..", INVALID_TOPIC_EXCEPTION, "Topic name is invalid: '..' is not allowed"),
        (
            long_name,
            INVALID_TOPIC_EXCEPTION,
            f"Topic name is invalid: the length of '{long_name}' is longer than the max allowed length 249",
        ),
        (
            "bad/name",
            INVALID_TOPIC_EXCEPTION,
            "Topic name is invalid: 'bad/name' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'",
        ),
        (
            "metrics.in",
            INVALID_TOPIC_EXCEPTION,
            "Topic 'metrics.in' collides with existing topic: metrics_in",
        ),
        ("nulls", INVALID_CONFIG, "Null value not supported for topic configs: retention.ms,segment.ms"),
        (
            "bad/and-bad-config",
            INVALID_TOPIC_EXCEPTION,
            "Topic name is invalid: 'bad/and-bad-config' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'",
        ),
    ]
    assert sorted(cluster.state.topics) == ["metrics_in", "taken"]


def test_create_topics_repeated_name(cluster: MockCluster) -> None:
    """ControllerApis.createTopics drops every entry of a repeated name and answers it
    once, after the others."""
    assert create_topics(cluster, creatable("dup"), creatable("single"), creatable("dup", partitions=2)) == [
        ("single", 0, None),
        ("dup", INVALID_REQUEST, "Duplicate topic name."),
    ]
    assert sorted(cluster.state.topics) == ["single"]


def test_create_topics_messages_through_confluent(cluster: MockCluster) -> None:
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = client.create_topics([NewTopic("rf9", 1, 9), NewTopic("zero", 0, 1)], operation_timeout=5)
    errors = {name: future.exception(timeout=10).args[0] for name, future in futures.items()}
    assert {name: (e.code(), e.str()) for name, e in errors.items()} == {
        "rf9": (
            INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 9 time(s): The target replication factor of 9 cannot be "
            "reached because only 3 broker(s) are registered or some brokers have all their log directories "
            "cordoned.",
        ),
        "zero": (INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."),
    }


NEW_IN_KAFKA_44 = {
    "errors.deadletterqueue.group.enable": "false",
    "max.decompressed.message.bytes": "2147483639",
    "remote.copy.lag.bytes": "-1",
    "remote.copy.lag.ms": "0",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
}


def test_create_topics_validate_only_through_kafka_python(admin: KafkaAdminClient) -> None:
    """A validate-only creation answers the id ReplicationControlManager drew for the topic,
    and the configs a new topic would have, Kafka 4.4's newest included."""
    answer = admin.create_topics(
        {"checked": {"num_partitions": 2, "replication_factor": 1}, "refused": {"num_partitions": 0}},
        validate_only=True,
        raise_errors=False,
    )
    by_name = {t["name"]: t for t in answer["topics"]}
    checked, refused = by_name["checked"], by_name["refused"]
    assert checked["error_code"] == 0 and uuid.UUID(checked["topic_id"]) != uuid.UUID(int=0)
    assert {k: checked["configs"][k]["value"] for k in NEW_IN_KAFKA_44} == NEW_IN_KAFKA_44
    assert (refused["error_code"], refused["topic_id"]) == (INVALID_PARTITIONS, None)
    assert "checked" not in admin.list_topics()


def test_create_topics_refused_configs_are_empty_lists(cluster: MockCluster) -> None:
    """CreatableTopicResult's configs keep the schema's default, [], on every refusal: a
    topic error, a repeated name, a request over the partition limit."""
    request = CreateTopicsRequest[7](
        topics=[creatable("rf-too-high", replication=4), creatable("twice"), creatable("twice")],
        timeout_ms=5000,
        validate_only=False,
    )
    too_many = CreateTopicsRequest[5](
        topics=[creatable("huge", partitions=10_001)], timeout_ms=5000, validate_only=True
    )
    answers = [*call(cluster, request).topics, *call(cluster, too_many).topics]
    assert [(t.name, t.configs) for t in answers] == [("rf-too-high", []), ("twice", []), ("huge", [])]


def test_internal_topic_names(cluster: MockCluster) -> None:
    """__consumer_offsets and __transaction_state exist on Kafka once their coordinators
    answered (the mock's always do): creating them is TOPIC_ALREADY_EXISTS, validate-only
    too, and a colliding name is refused; __cluster_metadata is never creatable."""
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = client.create_topics(
        [NewTopic("__consumer_offsets", 1, 1), NewTopic("__transaction_state", 1, 1)], operation_timeout=5
    )
    errors = {name: future.exception(timeout=10) for name, future in futures.items()}
    assert {name: (e.args[0].code(), e.args[0].str()) for name, e in errors.items() if e} == {
        "__consumer_offsets": (TOPIC_ALREADY_EXISTS, "Topic '__consumer_offsets' already exists."),
        "__transaction_state": (TOPIC_ALREADY_EXISTS, "Topic '__transaction_state' already exists."),
    }
    request = CreateTopicsRequest[7](
        topics=[
            creatable("__consumer_offsets"),
            creatable("__consumer.offsets"),
            creatable("__cluster_metadata"),
        ],
        timeout_ms=5000,
        validate_only=True,
    )
    assert [(t.name, t.error_code, t.error_message) for t in call(cluster, request).topics] == [
        ("__consumer_offsets", TOPIC_ALREADY_EXISTS, "Topic '__consumer_offsets' already exists."),
        (
            "__consumer.offsets",
            INVALID_TOPIC_EXCEPTION,
            "Topic '__consumer.offsets' collides with existing topic: __consumer_offsets",
        ),
        (
            "__cluster_metadata",
            INVALID_REQUEST,
            "Creation of internal topic __cluster_metadata is prohibited.",
        ),
    ]
    assert sorted(cluster.state.topics) == []


# -- DeleteTopics -------------------------------------------------------------------------
def delete(cluster: MockCluster, *entries: tuple[str | None, uuid.UUID | None]) -> set[tuple[Any, ...]]:
    """DeleteTopics v6 by name and/or id: the results as a set (Kafka shuffles them)."""
    topics = [Deletable(name=name, topic_id=topic_id) for name, topic_id in entries]
    response = call(cluster, DeleteTopicsRequest[6](topics=topics, timeout_ms=5000))
    return {(r.name, r.topic_id, r.error_code, r.error_message) for r in response.responses}


def test_delete_topics_messages(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    kept = cluster.create_topic("kept")
    doomed = cluster.create_topic("doomed")
    ghost = uuid.uuid4()
    assert delete(
        cluster,
        (None, None),
        ("kept", kept.topic_id),
        ("kept", None),
        ("kept", None),
        (None, ghost),
        (None, ghost),
        ("missing", None),
        (None, doomed.topic_id),
    ) == {
        (None, None, INVALID_REQUEST, "Neither topic name nor id were specified."),
        ("kept", kept.topic_id, INVALID_REQUEST, "You may not specify both topic name and topic id."),
        ("kept", None, INVALID_REQUEST, "Duplicate topic name."),
        (None, ghost, INVALID_REQUEST, "Duplicate topic id."),
        ("missing", None, UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."),
        ("doomed", doomed.topic_id, 0, None),
    }
    assert sorted(cluster.state.topics) == ["kept"]
    assert delete(cluster, (None, ghost)) == {
        (None, ghost, UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
    }
    # A name and an id of the same topic: the name is answered, nothing is deleted.
    assert delete(cluster, (None, kept.topic_id), ("kept", None)) == {
        (
            "kept",
            kept.topic_id,
            INVALID_REQUEST,
            "The provided topic name maps to an ID that was already supplied.",
        )
    }
    assert sorted(cluster.state.topics) == ["kept"]
    result = admin.delete_topics(["kept", "gone"], raise_errors=False)
    assert sorted((t["name"], t["error_code"], t["error_message"]) for t in result["topics"]) == [
        ("gone", UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."),
        ("kept", 0, None),
    ]


def test_create_topics_without_describe_configs_answers_the_id_alone() -> None:
    """ReplicationControlManager withholds the partition count, replication factor and
    configs of a topic the caller may create but not DESCRIBE_CONFIGS."""
    secured = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1, config=secured) as cluster:
        cluster.acls.add("User:ANONYMOUS", "CREATE", "TOPIC", "*")
        cluster.acls.add("User:ANONYMOUS", "DESCRIBE_CONFIGS", "TOPIC", "open")
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
        try:
            answer = admin.create_topics(
                {"open": {"num_partitions": 2}, "closed": {"num_partitions": 2}}, validate_only=True
            )
        finally:
            admin.close()
    by_name = {t["name"]: t for t in answer["topics"]}
    opened, closed = by_name["open"], by_name["closed"]
    assert (opened["num_partitions"], opened["topic_config_error_code"], len(opened["configs"]) > 30) == (
        2,
        0,
        True,
    )
    assert (closed["error_code"], closed["num_partitions"], closed["replication_factor"]) == (0, -1, -1)
    assert closed["topic_config_error_code"] == 29  # TOPIC_AUTHORIZATION_FAILED
    assert not closed.get("configs") and uuid.UUID(closed["topic_id"]) != uuid.UUID(int=0)
