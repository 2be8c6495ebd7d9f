"""OffsetDelete (47): kafka-python's admin client deletes committed offsets of an empty
group; a group still subscribed to the topic keeps them (GROUP_SUBSCRIBED_TO_TOPIC), a
busy non-consumer classic group refuses (NON_EMPTY_GROUP), unknown groups and topics get
Kafka's errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.errors import GroupAuthorizationFailedError, GroupIdNotFoundError, NonEmptyGroupError
from kafka.structs import OffsetAndMetadata

from broker import MockCluster
from broker.state.groups import OffsetCommit
from protocol.errors import ErrorCode
from tests.groups.test_consumer_group_heartbeat_wire import Wire, classic_member

CONFIG = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config=CONFIG) as running:
        running.create_topic("t", 2)
        yield running


@pytest.fixture
def admin(cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


def commit(cluster: MockCluster, group: str, offsets: dict[int, int]) -> None:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, group_id=group, enable_auto_commit=False
    )
    consumer.commit({TopicPartition("t", p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
    consumer.close()


def test_offsets_of_an_empty_group_are_deleted(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    commit(cluster, "done", {0: 5, 1: 7})
    result = admin.delete_group_offsets("done", [TopicPartition("t", 0), TopicPartition("missing", 0)])
    assert {tp: error.errno for tp, error in result.items()} == {
        TopicPartition("t", 0): ErrorCode.NONE,
        TopicPartition("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    remaining = cluster.groups.fetch_offsets("done")
    assert {key: c.offset for key, c in remaining.items() if c is not None} == {("t", 1): 7}


def test_a_group_subscribed_to_the_topic_keeps_its_offsets(
    cluster: MockCluster, admin: KafkaAdminClient
) -> None:
    commit(cluster, "g", {0: 3})
    wire = Wire(cluster)
    assert wire.join("a").error_code == ErrorCode.NONE  # a consumer group subscribed to "t"
    result = admin.delete_group_offsets("g", [TopicPartition("t", 0)])
    assert result[TopicPartition("t", 0)].errno == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    assert cluster.groups.fetch_offsets("g")[("t", 0)] is not None


def test_unknown_and_busy_groups_are_refused(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    with pytest.raises(GroupIdNotFoundError):
        admin.delete_group_offsets("nobody", [TopicPartition("t", 0)])
    classic_member(Wire(cluster), protocol_type="connect")  # a busy group of another protocol
    with pytest.raises(NonEmptyGroupError):
        admin.delete_group_offsets("g", [TopicPartition("t", 0)])


def test_delete_on_the_group_and_read_on_the_topic_are_needed() -> None:
    secured = {**CONFIG, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1, config=secured) as running:
        running.create_topic("t", 1)
        running.on_loop(lambda: running.groups.commit_offsets("g", -1, "", [OffsetCommit("t", 0, 5)]))
        running.acls.add("User:ANONYMOUS", "DESCRIBE", "CLUSTER", "kafka-cluster")
        running.acls.add("User:ANONYMOUS", "DESCRIBE", "GROUP", "g")
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap_servers)
        try:
            with pytest.raises(GroupAuthorizationFailedError):
                admin.delete_group_offsets("g", [TopicPartition("t", 0)])
            running.acls.add("User:ANONYMOUS", "DELETE", "GROUP", "g")
            result = admin.delete_group_offsets("g", [TopicPartition("t", 0)])
            assert result[TopicPartition("t", 0)].errno == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        finally:
            admin.close()
