"""ACLs enforced on the data plane, through real clients as SASL users: produce needs
WRITE, consume READ on the topic and the group, Metadata shows only described topics,
DENY beats ALLOW, super users pass, idempotent and transactional producers need theirs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from broker import MockCluster
from tests.security.test_sasl import USERS, confluent_config, kafka_python_config, sasl_config

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[MockCluster]:
    config = sasl_config(tmp_path, **{"authorizer.class.name": STANDARD, "super.users": "User:admin"})
    with MockCluster(config=config) as cluster:
        cluster.create_topic("orders")
        cluster.create_topic("payroll")
        yield cluster


def _admin(cluster: MockCluster) -> AdminClient:
    return AdminClient(confluent_config(cluster, "PLAIN", "admin", USERS["admin"]))


def _grant(
    cluster: MockCluster,
    principal: str,
    operation: AclOperation,
    name: str,
    resource: ResourceType = ResourceType.TOPIC,
    permission: AclPermissionType = AclPermissionType.ALLOW,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
) -> None:
    binding = AclBinding(resource, name, pattern, principal, "*", operation, permission)
    admin = _admin(cluster)  # kept alive until the result is in
    for future in admin.create_acls([binding]).values():
        future.result(10)


def _produce(cluster: MockCluster, user: str, topic: str, **config: Any) -> KafkaError | None:
    outcome: list[KafkaError | None] = []
    producer = Producer(
        {**confluent_config(cluster, "SCRAM-SHA-256", user, USERS[user]), "retries": 0, **config}
    )
    producer.produce(topic, b"x", on_delivery=lambda err, _m: outcome.append(err))
    producer.flush(10)
    return outcome[0] if outcome else None


def test_produce_needs_write_and_deny_beats_allow(secured: MockCluster) -> None:
    refused = _produce(secured, "alice", "orders")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(secured, "User:alice", AclOperation.WRITE, "orders")
    assert _produce(secured, "alice", "orders") is None
    assert secured.state.topics["orders"].partitions[0].log.log_end_offset == 1
    _grant(
        secured,
        "User:*",
        AclOperation.ALL,
        "ord",
        permission=AclPermissionType.DENY,
        pattern=ResourcePatternType.PREFIXED,
    )
    refused = _produce(secured, "alice", "orders")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _produce(secured, "admin", "orders") is None  # a super user passes any ACL


def test_consume_needs_read_on_topic_and_group(secured: MockCluster) -> None:
    assert _produce(secured, "admin", "orders") is None

    def consume() -> list[bytes]:
        consumer = KafkaConsumer(
            "orders",
            group_id="order-readers",
            auto_offset_reset="earliest",
            consumer_timeout_ms=3000,
            **kafka_python_config(secured, "PLAIN", "bob", USERS["bob"]),
        )
        try:
            return [record.value for record in consumer]
        finally:
            consumer.close()

    with pytest.raises(GroupAuthorizationFailedError):
        consume()
    _grant(secured, "User:bob", AclOperation.READ, "order-readers", resource=ResourceType.GROUP)
    assert consume() == []  # the group is readable, the topic is not: nothing is delivered
    _grant(secured, "User:bob", AclOperation.READ, "orders")
    assert consume() == [b"x"]


def test_metadata_shows_only_described_topics(secured: MockCluster) -> None:
    _grant(secured, "User:alice", AclOperation.READ, "orders")  # READ implies DESCRIBE
    consumer = Consumer({**confluent_config(secured, "PLAIN", "alice", USERS["alice"]), "group.id": "g"})
    try:
        topics = consumer.list_topics(timeout=10).topics
        assert set(topics) == {"orders"}
        named = consumer.list_topics("payroll", timeout=10).topics["payroll"]
        assert named.error is not None and named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        consumer.close()


def test_idempotent_and_transactional_producers_need_their_acls(secured: MockCluster) -> None:
    _grant(secured, "User:alice", AclOperation.WRITE, "orders")
    # WRITE on some topic is enough for an idempotent producer (or IDEMPOTENT_WRITE)
    assert _produce(secured, "alice", "orders", **{"enable.idempotence": True, "retries": 3}) is None
    producer = Producer(
        {**confluent_config(secured, "PLAIN", "alice", USERS["alice"]), "transactional.id": "alice-app"}
    )
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(10)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    _grant(secured, "User:alice", AclOperation.WRITE, "alice-app", resource=ResourceType.TRANSACTIONAL_ID)
    producer = Producer(
        {**confluent_config(secured, "PLAIN", "alice", USERS["alice"]), "transactional.id": "alice-app"}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("orders", b"in a transaction")
    producer.commit_transaction(10)
    assert secured.transactions.describe("alice-app").state == "CompleteCommit"  # type: ignore[union-attr]


def test_kafka_python_producer_is_refused_per_topic(secured: MockCluster) -> None:
    _grant(secured, "User:bob", AclOperation.WRITE, "orders")
    producer = KafkaProducer(retries=0, **kafka_python_config(secured, "PLAIN", "bob", USERS["bob"]))
    try:
        assert producer.send("orders", b"ok").get(timeout=10).offset == 0
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("payroll", b"no").get(timeout=10)
    finally:
        producer.close()
    assert secured.state.topics["payroll"].partitions[0].log.log_end_offset == 0


def test_authorized_operations_in_describe_topics_and_cluster(secured: MockCluster) -> None:
    """Metadata's and DescribeCluster's authorized_operations when asked, per principal."""
    from confluent_kafka import TopicCollection

    _grant(secured, "User:alice", AclOperation.READ, "orders")
    alice = AdminClient(confluent_config(secured, "PLAIN", "alice", USERS["alice"]))
    described = alice.describe_topics(TopicCollection(["orders"]), include_authorized_operations=True)
    (orders,) = [future.result(10) for future in described.values()]
    assert set(orders.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}
    cluster = alice.describe_cluster(include_authorized_operations=True).result(10)
    assert not cluster.authorized_operations  # no DESCRIBE on the cluster: none reported
    admin = _admin(secured)
    everything = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert AclOperation.IDEMPOTENT_WRITE in everything.authorized_operations  # a super user


def test_add_partitions_to_txn_with_an_unwritable_topic_adds_nothing(secured: MockCluster) -> None:
    """Raw AddPartitionsToTxn: the unwritable topic's partitions TOPIC_AUTHORIZATION_FAILED,
    the others OPERATION_NOT_ATTEMPTED, and the transaction is unchanged."""
    import socket

    from kafka.protocol.producer import AddPartitionsToTxnRequest, InitProducerIdRequest

    from tests.support.wire import round_trip

    secured.acls.add("User:ANONYMOUS", "WRITE", "TRANSACTIONAL_ID", "tx")
    secured.acls.add("User:ANONYMOUS", "WRITE", "TOPIC", "orders")
    host, port = secured.bootstrap_for("PLAINTEXT").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        init = round_trip(
            sock, InitProducerIdRequest[4](transactional_id="tx", transaction_timeout_ms=60000), 1, "r"
        )
        response = round_trip(
            sock,
            AddPartitionsToTxnRequest[3](
                v3_and_below_transactional_id="tx",
                v3_and_below_producer_id=init.producer_id,
                v3_and_below_producer_epoch=init.producer_epoch,
                v3_and_below_topics=[("orders", [0]), ("payroll", [0])],
            ),
            2,
            "r",
        )
    errors = {
        t.name: t.results_by_partition[0].partition_error_code for t in response.results_by_topic_v3_and_below
    }
    assert errors == {"orders": 55, "payroll": 29}
    assert secured.transactions.describe("tx").partitions == set()  # type: ignore[union-attr]


def test_listings_leak_nothing_the_caller_may_not_describe(secured: MockCluster) -> None:
    """Metadata v0 with an empty topic list (all topics, in v0) and OffsetFetch of all of a
    group's offsets show only described topics; a named topic's offset is refused."""
    import socket

    from kafka.protocol.consumer import OffsetFetchRequest
    from kafka.protocol.metadata import MetadataRequest

    from broker.state.groups import OffsetCommit
    from tests.support.wire import round_trip

    secured.acls.add("User:ANONYMOUS", "DESCRIBE", "GROUP", "readers")
    secured.acls.add("User:ANONYMOUS", "DESCRIBE", "TOPIC", "orders")
    secured.on_loop(
        lambda: secured.groups.commit_offsets(
            "readers", -1, "", [OffsetCommit("orders", 0, 5), OffsetCommit("payroll", 0, 7)]
        )
    )
    host, port = secured.bootstrap_for("PLAINTEXT").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        v0 = round_trip(sock, MetadataRequest[0](topics=[]), 1, "r")
        assert [t.name for t in v0.topics] == ["orders"]
        everything = round_trip(
            sock, OffsetFetchRequest[7](group_id="readers", topics=None, require_stable=False), 2, "r"
        )
        assert [t.name for t in everything.topics] == ["orders"]
        named = round_trip(
            sock,
            OffsetFetchRequest[7](group_id="readers", topics=[("payroll", [0])], require_stable=False),
            3,
            "r",
        )
        partition = named.topics[0].partitions[0]
        assert (partition.error_code, partition.committed_offset) == (29, -1)


def test_a_refused_acks0_produce_closes_the_connection(secured: MockCluster) -> None:
    """Nobody is told of an acks=0 refusal, so Kafka closes the connection."""
    import socket

    from kafka.protocol.producer import ProduceRequest
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from tests.support.wire import encode_request

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 2**20)
    builder.append(0, 1000, None, b"v", [])
    request = ProduceRequest[9](
        transactional_id=None,
        acks=0,
        timeout_ms=1000,
        topic_data=[("payroll", [(0, bytes(builder.build()))])],
    )
    host, port = secured.bootstrap_for("PLAINTEXT").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode_request(request, 1, "r"))
        assert sock.recv(1) == b""  # closed, unanswered
    assert secured.state.topics["payroll"].partitions[0].log.log_end_offset == 0
