"""Tests of an application against the mock broker, with the plugin's fixtures. Installing
kafka-mock-broker registers the plugin: no conftest.py is needed."""

import json
import urllib.request

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer


def test_round_trip(kafka_cluster):  # a fresh one-broker cluster, stopped after the test
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers)
    producer.send("orders", b"order-1").get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=kafka_cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10000,
    )
    assert next(consumer).value == b"order-1"
    consumer.close()


@pytest.mark.kafka_cluster(brokers=3, config={"auto.create.topics.enable": "false"})
def test_three_brokers(kafka_cluster):  # shaped by the marker
    assert len(kafka_cluster.bootstrap_servers.split(",")) == 3
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    assert admin.describe_topics(["nope"])[0]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    admin.close()


def test_metadata_fails(kafka_cluster_session):  # one cluster for the session (pytest.ini)
    kafka_cluster_session.create_topic("payments", partitions=6)
    kafka_cluster_session.faults.add(api_key=3, error_code=7)  # Metadata: REQUEST_TIMED_OUT
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster_session.bootstrap_servers)
    assert admin.describe_topics(["payments"])[0]["error_code"] == 7
    admin.close()


def test_fault_is_gone(kafka_cluster_session):  # the topic persists, the fault does not
    assert len(kafka_cluster_session.brokers) == 3
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster_session.bootstrap_servers)
    assert len(admin.describe_topics(["payments"])[0]["partitions"]) == 6
    admin.close()


def test_broker_down(kafka_cluster_session):  # a stopped broker is started again after the test
    kafka_cluster_session.stop_broker(2)
    assert [b["up"] for b in kafka_cluster_session.describe()["brokers"]] == [True, True, False]


def test_broker_is_back(kafka_cluster_session):
    assert all(b["up"] for b in kafka_cluster_session.describe()["brokers"])


@pytest.mark.kafka_cluster(
    config={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "admin.port": 0,  # the HTTP control plane on a free port (the `http` extra)
    }
)
def test_sasl_user_and_http(kafka_cluster):  # any broker config goes in the marker
    kafka_cluster.credentials.upsert_user("alice", "alice-secret")
    producer = KafkaProducer(
        bootstrap_servers=kafka_cluster.bootstrap_for("SASL_PLAINTEXT"),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
    )
    producer.send("orders", b"from alice").get(timeout=10)
    producer.close()
    url = f"http://127.0.0.1:{kafka_cluster.admin.port}/v1/requests?api_key=0"
    with urllib.request.urlopen(url) as answer:
        assert [r["principal"] for r in json.load(answer)] == ["User:alice"]
