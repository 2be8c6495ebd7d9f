"""SASL listeners through real clients: kafka-python, aiokafka and confluent-kafka log in
with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, produce and consume as their user; a wrong
password fails cleanly; credentials made through AlterUserScramCredentials (51) log in
and deleted ones stop; the authorizer lets only super users administer quotas."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import ScramMechanism, UserScramCredentialDeletion, UserScramCredentialUpsertion
from kafka.errors import KafkaTimeoutError
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from broker import MockCluster
from tests.conftest import FAST

USERS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
MESSAGES = 20
CLUSTER_AUTHORIZATION_FAILED = 31


def sasl_config(tmp_path: Path, **extra: str) -> dict[str, str]:
    users = tmp_path / "users.json"
    users.write_text(json.dumps(USERS))
    return {
        **FAST,
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.users.file": str(users),
        **extra,
    }


@pytest.fixture
def sasl_cluster(tmp_path: Path) -> Iterator[MockCluster]:
    with MockCluster(config=sasl_config(tmp_path)) as cluster:
        yield cluster


def principals(cluster: MockCluster) -> set[str]:
    """The principals of every open connection, as the broker sees them."""
    return cluster.on_loop(lambda: {str(c.principal) for b in cluster.brokers for c in b.connections})


def kafka_python_config(cluster: MockCluster, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap_servers": cluster.bootstrap_for("SASL_PLAINTEXT"),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }


def confluent_config(cluster: MockCluster, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap_for("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def values(count: int) -> list[bytes]:
    return [f"m{i}".encode() for i in range(count)]


async def aiokafka_round_trip(
    cluster: MockCluster, config: dict[str, Any], topic: str, sent: list[bytes]
) -> tuple[set[str], list[bytes]]:
    """Produces `sent` to partition 0 and reads it back with aiokafka. Returns the
    principals the broker saw on the producer's connections, and what was read."""
    producer = AIOKafkaProducer(**config)
    await producer.start()
    try:
        for value in sent:
            await producer.send_and_wait(topic, value, partition=0)
        principals = {str(c.principal) for b in cluster.brokers for c in b.connections}
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(**config, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([AioTopicPartition(topic, 0)])
        received: list[bytes] = []
        while len(received) < len(sent):
            batches = await consumer.getmany(timeout_ms=5000)
            assert batches, "nothing consumed within 5 s"
            received += [record.value or b"" for records in batches.values() for record in records]
    finally:
        await consumer.stop()
    return principals, received


# -- each client, each mechanism -------------------------------------------------------
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_authenticates_produces_and_consumes(sasl_cluster: MockCluster, mechanism: str) -> None:
    config = kafka_python_config(sasl_cluster, mechanism, "alice", USERS["alice"])
    producer = KafkaProducer(**config)
    for value in values(MESSAGES):
        producer.send("kp", value, partition=0)
    producer.flush(10)
    assert principals(sasl_cluster) == {"User:alice"}
    producer.close()
    consumer = KafkaConsumer(**config, auto_offset_reset="earliest", consumer_timeout_ms=10000)
    consumer.assign([KafkaTopicPartition("kp", 0)])
    received = [record.value for _, record in zip(range(MESSAGES), consumer, strict=False)]
    consumer.close()
    assert received == values(MESSAGES)


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_aiokafka_authenticates_produces_and_consumes(tmp_path: Path, mechanism: str) -> None:
    async with MockCluster(config=sasl_config(tmp_path)) as cluster:
        config = {
            "bootstrap_servers": cluster.bootstrap_for("SASL_PLAINTEXT"),
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": "bob",
            "sasl_plain_password": USERS["bob"],
        }
        principals, received = await aiokafka_round_trip(cluster, config, "aio", values(MESSAGES))
        assert principals == {"User:bob"}
        assert received == values(MESSAGES)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_authenticates_produces_and_consumes(
    sasl_cluster: MockCluster, mechanism: str
) -> None:
    config = confluent_config(sasl_cluster, mechanism, "alice", USERS["alice"])
    producer = Producer(config)
    for value in values(MESSAGES):
        producer.produce("ck", value, partition=0)
    assert producer.flush(10) == 0
    assert principals(sasl_cluster) == {"User:alice"}
    consumer = Consumer({**config, "group.id": "ck-group", "enable.auto.commit": False})
    consumer.assign([TopicPartition("ck", 0, 0)])
    received: list[bytes] = []
    while len(received) < MESSAGES:
        message = consumer.poll(5)
        assert message is not None, "nothing consumed within 5 s"
        assert message.error() is None, message.error()
        received.append(message.value() or b"")
    consumer.close()
    assert received == values(MESSAGES)


# -- a wrong password ------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_wrong_password_fails_cleanly(
    sasl_cluster: MockCluster, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = kafka_python_config(sasl_cluster, mechanism, "alice", "not-her-password")
    with caplog.at_level(logging.WARNING, logger="kafka"), pytest.raises(KafkaTimeoutError):
        KafkaAdminClient(**config, bootstrap_timeout_ms=1500)
    refusals = [r.getMessage() for r in caplog.records if "SaslAuthenticationFailedError" in r.getMessage()]
    assert refusals, "kafka-python never saw the broker's refusal"
    expected = (
        "Invalid username or password"
        if mechanism == "PLAIN"
        else f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    )
    assert expected in refusals[0]
    assert "User:alice" not in principals(sasl_cluster)


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_aiokafka_wrong_password_fails_cleanly(tmp_path: Path, mechanism: str) -> None:
    async with MockCluster(config=sasl_config(tmp_path)) as cluster:
        producer = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_for("SASL_PLAINTEXT"),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_plain_username="bob",
            sasl_plain_password="wrong",
            request_timeout_ms=3000,
        )
        with pytest.raises(KafkaConnectionError):
            await producer.start()
        await producer.stop()
        assert not cluster.brokers[0].connections or {
            str(c.principal) for c in cluster.brokers[0].connections
        } == {"User:ANONYMOUS"}


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_wrong_password_fails_cleanly(sasl_cluster: MockCluster, mechanism: str) -> None:
    refusals = confluent_login(sasl_cluster, mechanism, "alice", "wrong")
    expected = "Invalid username or password" if mechanism == "PLAIN" else "due to invalid credentials"
    assert expected in refusals[0].str()
    assert "User:alice" not in principals(sasl_cluster)


# -- credentials made and removed through API 51 ---------------------------------------
def confluent_login(cluster: MockCluster, mechanism: str, user: str, password: str) -> list[KafkaError]:
    """Connects a confluent-kafka client; returns [] once it reads metadata, or the
    authentication errors librdkafka reports when the broker refuses it."""
    errors: list[KafkaError] = []
    producer = Producer({**confluent_config(cluster, mechanism, user, password), "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            producer.list_topics(timeout=0.2)
            return []
        except KafkaException:
            producer.poll(0)
            refusals = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
            if refusals:
                return refusals
    raise AssertionError(f"{user} neither logged in nor was refused: {errors}")


def can_log_in(cluster: MockCluster, mechanism: str, user: str, password: str) -> bool:
    return not confluent_login(cluster, mechanism, user, password)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_credentials_from_api_51_log_in_and_deleted_ones_stop(
    sasl_cluster: MockCluster, mechanism: str
) -> None:
    admin = KafkaAdminClient(**kafka_python_config(sasl_cluster, mechanism, "admin", USERS["admin"]))
    assert not can_log_in(sasl_cluster, mechanism, "carol", "carol-secret")
    admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", ScramMechanism[mechanism.replace("-", "_")], "carol-secret")]
    )
    assert can_log_in(sasl_cluster, mechanism, "carol", "carol-secret")
    assert not can_log_in(sasl_cluster, mechanism, "carol", "wrong")
    admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("carol", ScramMechanism[mechanism.replace("-", "_")])]
    )
    assert not can_log_in(sasl_cluster, mechanism, "carol", "carol-secret")
    admin.close()


def test_api_51_credentials_survive_a_restart(tmp_path: Path) -> None:
    config = sasl_config(tmp_path, **{"state.dir": str(tmp_path / "state")})
    with MockCluster(config=config) as cluster:
        cluster.credentials.upsert_user("dave", "dave-secret")
        cluster.credentials.delete_user("bob")
    with MockCluster(config=config) as restarted:
        assert can_log_in(restarted, "SCRAM-SHA-512", "dave", "dave-secret")
        assert not can_log_in(restarted, "SCRAM-SHA-256", "bob", USERS["bob"])
        assert can_log_in(restarted, "PLAIN", "bob", USERS["bob"])  # PLAIN uses the users file only


# -- user quotas follow the authenticated user ------------------------------------------
def test_user_quota_applies_to_the_authenticated_user(sasl_cluster: MockCluster) -> None:
    sasl_cluster.quotas.alter({"user": "alice"}, set={"producer_byte_rate": 1024})
    throttles: dict[str, list[int]] = {"alice": [], "bob": []}
    for user in ("alice", "bob"):
        config = confluent_config(sasl_cluster, "SCRAM-SHA-256", user, USERS[user])
        producer = Producer(
            {
                **config,
                "client.id": "shared",
                "throttle_cb": lambda e, u=user: throttles[u].append(e.throttle_time),
            }
        )
        producer.produce("quoted", b"x" * 20_000, partition=0)
        assert producer.flush(10) == 0
        producer.poll(0.5)
    assert throttles["alice"] and max(throttles["alice"]) > 0
    assert not any(throttles["bob"])
    tags = {
        (m.tags.get("user"), m.tags.get("client-id"))
        for m in sasl_cluster.metrics()
        if m.group == "Produce" and m.name == "byte-rate"
    }
    assert ("alice", "") in tags  # the user quota's sensor: user tag, no client-id tag


# -- authorization ------------------------------------------------------------------------
def send(admin: KafkaAdminClient, request: Any) -> Any:
    return admin._manager.run(admin._manager.send, request)


def alter_quota(admin: KafkaAdminClient, user: str, rate: float) -> Any:
    Entry = AlterClientQuotasRequest.EntryData
    entry = Entry(
        entity=[Entry.EntityData(entity_type="user", entity_name=user)],
        ops=[Entry.OpData(key="producer_byte_rate", value=rate, remove=False)],
    )
    return send(admin, AlterClientQuotasRequest(version=1, entries=[entry], validate_only=False))


def describe_quotas(admin: KafkaAdminClient) -> Any:
    return send(admin, DescribeClientQuotasRequest(version=1, components=[], strict=False))


def test_only_super_users_administer_quotas(tmp_path: Path) -> None:
    config = sasl_config(tmp_path, **{"authorizer.enabled": "true", "super.users": "User:admin;User:ops"})
    with MockCluster(config=config) as cluster:
        cluster.quotas.alter({"user": "carol"}, set={"producer_byte_rate": 2048})
        before = cluster.quotas.describe()
        alice = KafkaAdminClient(**kafka_python_config(cluster, "SCRAM-SHA-256", "alice", USERS["alice"]))
        refused = alter_quota(alice, "carol", 1.0)
        assert [(e.error_code, e.error_message) for e in refused.entries] == [
            (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
        ]
        described = describe_quotas(alice)
        assert (described.error_code, described.error_message, described.entries) == (
            CLUSTER_AUTHORIZATION_FAILED,
            None,
            None,
        )
        assert cluster.quotas.describe() == before  # nothing changed

        anonymous = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_for("PLAINTEXT"))
        assert alter_quota(anonymous, "carol", 1.0).entries[0].error_code == CLUSTER_AUTHORIZATION_FAILED

        admin = KafkaAdminClient(**kafka_python_config(cluster, "PLAIN", "admin", USERS["admin"]))
        assert alter_quota(admin, "carol", 4096.0).entries[0].error_code == 0
        assert describe_quotas(admin).error_code == 0
        assert cluster.quotas.describe() != before
        for client in (alice, anonymous, admin):
            client.close()


def test_without_an_authorizer_everyone_administers(sasl_cluster: MockCluster) -> None:
    alice = KafkaAdminClient(**kafka_python_config(sasl_cluster, "PLAIN", "alice", USERS["alice"]))
    assert alter_quota(alice, "carol", 4096.0).entries[0].error_code == 0
    alice.close()


# -- listeners ------------------------------------------------------------------------------
def test_metadata_returns_the_endpoints_of_the_listener_used(tmp_path: Path) -> None:
    with MockCluster(brokers=3, config=sasl_config(tmp_path)) as cluster:
        for listener in ("PLAINTEXT", "SASL_PLAINTEXT"):
            expected = {b.node_id: b.advertised_endpoint(listener).port for b in cluster.brokers}
            config = (
                confluent_config(cluster, "PLAIN", "alice", USERS["alice"])
                if listener == "SASL_PLAINTEXT"
                else {"bootstrap.servers": cluster.bootstrap_for(listener)}
            )
            brokers = Producer(config).list_topics(timeout=10).brokers
            assert {node: b.port for node, b in brokers.items()} == expected
        sasl, plain = (cluster.bootstrap_for(name) for name in ("SASL_PLAINTEXT", "PLAINTEXT"))
        assert len(set(sasl.split(",")) | set(plain.split(","))) == 6
