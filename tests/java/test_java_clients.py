"""The Java client, org.apache.kafka:kafka-clients 4.x (the version tests/java/pom.xml
pins), against the broker: an idempotent acks=all producer with every codec and consumers
of both group protocols read back exactly what was written; a producer under a quota sees
in its own metrics the throttle times the broker sent."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaProducer

from broker import MockCluster
from tests.java.runner import assert_java_sent, run_java

MiB = 1_048_576


@pytest.fixture(scope="module")
def cluster() -> Any:
    with MockCluster(brokers=3, config={"num.partitions": "3", "record.requests.max": 100_000}) as cluster:
        yield cluster


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_idempotent_producer_and_group_consumer(
    java_classpath: str, cluster: MockCluster, codec: str, group_protocol: str
) -> None:
    topic = f"java-{codec}-{group_protocol}"
    result = run_java(
        java_classpath, "produce-consume", cluster.bootstrap_servers, topic, codec, "300", group_protocol
    )
    assert result["produced"] == result["consumed"] == 300
    assert result["matching"]  # every value came back under its key
    # The keys spread over the three partitions; offsets are dense from 0 in each.
    assert result["partitions"] == 3
    assert sum(last + 1 for last in result["last_offsets"].values()) == 300
    # The consumer's commitSync reached the group: kafka-python's admin client reads it back.
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        group = f"java-{group_protocol}-{topic}"
        committed = admin.list_group_offsets([group])[group]
    finally:
        admin.close()
    assert sum(offset.offset for offset in committed.values()) == 300
    if group_protocol == "consumer":
        assert_java_sent(cluster, "produce-consume")


def test_the_java_clients_throttle_metrics_are_what_the_broker_sent(java_classpath: str) -> None:
    with MockCluster(config={"quota.window.num": 2, "quota.window.size.seconds": 1}) as cluster:
        cluster.create_topic("loaded")
        cluster.quotas.alter({"client-id": "java-loader"}, set={"producer_byte_rate": MiB})
        result = run_java(java_classpath, "throttled", cluster.bootstrap_servers, "loaded", "4000")
        sent = [
            r["throttle_time_ms"] for r in cluster.requests.list(api_key=0) if r["client_id"] == "java-loader"
        ]
    assert len(sent) == result["sent_bytes"] // 100_000  # one produce request per record
    assert max(sent) > 0
    # produce-throttle-time-max is the largest throttle time any response carried.
    assert result["throttle_max"] == max(sent)
    # -avg also counts the responses of other requests (ApiVersions, Metadata: 0 ms).
    assert 0 < result["throttle_avg"] <= sum(sent) / len(sent)


def test_the_java_admin_client_administers_client_quotas(java_classpath: str) -> None:
    """Admin.alterClientQuotas/describeClientQuotas with the Java client's own
    ClientQuotaAlteration and ClientQuotaFilter (KIP-546): what Kafka answers."""
    alice = "{user=alice} -> {consumer_byte_rate=2000000.0, producer_byte_rate=1048576.0}"
    alice_app = "{client-id=app, user=alice} -> {controller_mutation_rate=10.0}"
    default_client = "{client-id=null} -> {request_percentage=25.5}"
    with MockCluster() as cluster:
        result = run_java(java_classpath, "quotas", cluster.bootstrap_servers)
        held = cluster.quotas.describe()
        assert_java_sent(cluster, "quotas")
    assert result["all"] == [alice_app, default_client, alice]
    assert result["alice"] == [alice_app, alice]  # contains: alice with any client id
    assert result["alice_only"] == [alice]  # containsOnly: the user entity alone
    assert result["default_client"] == [default_client]
    assert result["refused"] == "InvalidRequestException: Quota producer_byte_rate must be greater than 0"
    # The removal took consumer_byte_rate away; the validateOnly alteration changed nothing.
    assert result["after_removal"] == [
        alice_app,
        default_client,
        "{user=alice} -> {producer_byte_rate=1048576.0}",
    ]
    assert {tuple(sorted(entity.kafka_items())): values for entity, values in held.items()} == {
        (("user", "alice"),): {"producer_byte_rate": 1048576.0},
        (("client-id", None),): {"request_percentage": 25.5},
        (("client-id", "app"), ("user", "alice")): {"controller_mutation_rate": 10.0},
    }


def test_java_transactions_commit_abort_and_fence(java_classpath: str) -> None:
    """A transactional producer commits ten records, aborts five, leaves three open and is
    fenced by a second producer with its transactional id, which aborts the open ones and
    commits two of its own: read_committed sees exactly the committed records in order,
    read_uncommitted sees all twenty."""
    with MockCluster() as cluster:
        cluster.create_topic("java-tx", partitions=1)
        result = run_java(java_classpath, "transactions", cluster.bootstrap_servers, "java-tx")
    assert result["fenced"] == "ProducerFencedException"
    assert result["read_committed"] == [f"committed-{i}" for i in range(10)] + ["second-0", "second-1"]
    assert result["read_uncommitted"] == 20


def test_the_java_consumers_fetch_throttle_metrics_are_what_the_broker_sent(java_classpath: str) -> None:
    config = {"quota.window.num": 2, "quota.window.size.seconds": 1, "record.requests.max": 10_000}
    with MockCluster(config=config) as cluster:
        cluster.create_topic("big", partitions=1)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, max_request_size=2_000_000)
        for _ in range(100):
            producer.send("big", b"x" * 40_000)
        producer.flush()
        producer.close()
        cluster.quotas.alter({"client-id": "java-reader"}, set={"consumer_byte_rate": MiB})
        result = run_java(java_classpath, "fetch-throttled", cluster.bootstrap_servers, "big", "100")
        fetches = [
            r["throttle_time_ms"] for r in cluster.requests.list(api_key=1) if r["client_id"] == "java-reader"
        ]
    assert result["read"] == 100
    assert max(fetches) > 0  # 4 MB at 1 MiB/s: the broker throttled the consumer
    # fetch-throttle-time-max is the largest throttle any fetch response carried; a fetch
    # in flight when the client read its metrics may be answered after (the last one).
    assert result["throttle_max"] in {max(fetches), max(fetches[:-1])}
    assert 0 < result["throttle_avg"] <= result["throttle_max"]


def test_the_java_admin_client_over_topics_configs_records_groups_and_cluster(java_classpath: str) -> None:
    with MockCluster(brokers=3, config={"record.requests.max": 100_000}) as cluster:
        result = run_java(java_classpath, "admin", cluster.bootstrap_servers)
        assert_java_sent(cluster, "admin")
        sent = {(r["api"], r["api_version"]) for r in cluster.requests.list()}
    # Kafka 4.4's newest versions, which the Java client 4.4 sends
    assert {("ApiVersions", 5), ("DeleteGroups", 3)} <= sent
    assert result == {
        "cluster_nodes": 3,
        "listed": True,
        "duplicate_topic": "TopicExistsException",
        "partitions": 4,  # createPartitions from 2
        "replicas": 3,
        "retention_ms": "3600000",  # set at creation
        "cleanup_policy": "compact,delete",  # incrementalAlterConfigs SET
        "cleanup_policy_source": "DYNAMIC_TOPIC_CONFIG",
        "earliest_after_delete": 4,  # deleteRecords before offset 4
        "latest": 10,
        "group_offset": 7,  # alterConsumerGroupOffsets, read back
        "group_offsets_after_delete": 0,  # deleteConsumerGroups
        "transaction_version": 2,  # describeFeatures: finalized as a new 4.x cluster has it
        "quorum_voters": 1,
        "log_dirs": 1,
        "listed_after_delete": False,
    }


@pytest.mark.parametrize("transaction_version", [1, 2])
def test_java_read_process_write_commits_offsets_in_the_transaction(
    java_classpath: str, transaction_version: int
) -> None:
    """Consume-transform-produce with sendOffsetsToTransaction. Under transaction.version 1
    the client adds partitions and the group with AddPartitionsToTxn and AddOffsetsToTxn;
    under 2 (KIP-890) the broker adds them itself. Either way the aborted first batch is
    copied again, and read_committed sees every record once."""
    with MockCluster(config={"record.requests.max": 10_000}) as cluster:
        cluster.create_topic("source", partitions=2)
        cluster.create_topic("copy", partitions=2)
        result = run_java(
            java_classpath,
            "read-process-write",
            cluster.bootstrap_servers,
            "source",
            "copy",
            str(transaction_version),
        )
        sent = {r["api"] for r in cluster.requests.list()}
        versions = {(r["api"], r["api_version"]) for r in cluster.requests.list()}
        if transaction_version == 1:
            assert_java_sent(cluster, "read-process-write-v1")
    assert result["read_committed"] == sorted(f"VALUE-{i}" for i in range(20))
    assert result["read_uncommitted"] > 20  # the aborted batch is in the log
    assert result["group_offsets"] == {"0": 10, "1": 10}
    assert "TxnOffsetCommit" in sent
    if transaction_version == 2:
        assert not {"AddPartitionsToTxn", "AddOffsetsToTxn"} & sent
        assert ("TxnOffsetCommit", 6) in versions  # by topic id (Kafka 4.4)


def test_the_java_client_pushes_its_metrics(java_classpath: str) -> None:
    """KIP-714: the Java producer gets its subscription and pushes the metrics it names;
    its clientInstanceId is the broker's id for it."""
    with MockCluster(config={"telemetry.enabled": "true"}) as cluster:
        cluster.create_topic("measured")
        cluster.client_metrics.set(
            "java", ["org.apache.kafka.producer."], interval_ms=500, match={"client_id": "java-telemetry"}
        )
        result = run_java(java_classpath, "telemetry", cluster.bootstrap_servers, "measured")
        pushes = cluster.client_metrics.pushes()
        assert_java_sent(cluster, "telemetry")
    assert pushes
    # Kafka's Uuid prints as URL-safe base64 of its 16 bytes.
    java_id = uuid.UUID(bytes=base64.urlsafe_b64decode(result["client_instance_id"] + "=="))
    assert {push.instance_id for push in pushes} == {java_id}
    assert {push.client.software_name for push in pushes} == {"apache-kafka-java"}
    names = {point.name for push in pushes for point in push.points}
    assert names and all(name.startswith("org.apache.kafka.producer.") for name in names)
    assert "org.apache.kafka.producer.record.queue.time.avg" in names
