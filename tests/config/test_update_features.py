"""UpdateFeatures (57) through kafka-python's admin client: transaction.version is
downgraded and upgraded again, ApiVersions reports the finalized level and a new epoch,
and FeatureControlManager's refusals come back with its messages. A new cluster finalizes
what a freshly formatted Kafka 4.4 cluster does (less the streams groups this broker
does not serve), and eligible leader replicas keep a cluster-level
min.insync.replicas as Kafka's ConfigurationControlManager does."""

from __future__ import annotations

import socket
import time

import pytest
from confluent_kafka import Consumer, KafkaError
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.errors import InvalidUpdateVersionError
from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.metadata import ApiVersionsRequest

from broker import MockCluster
from tests.config.test_dynamic_configs_wire import (
    DEFAULT,
    DELETE,
    DYNAMIC_DEFAULT,
    INVALID_CONFIG,
    SET,
    STATIC,
    described,
    incremental,
    send,
)
from tests.support.wire import round_trip

# What Kafka 4.4 finalizes after `kafka-storage format`
NEW_CLUSTER = {
    "group.version": 1,
    "streams.version": 1,
    "transaction.version": 2,
    "eligible.leader.replicas.version": 1,
    "share.version": 2,
    "metadata.version": 33,
}


def finalized(cluster: MockCluster) -> tuple[dict[str, int], int]:
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        answer = round_trip(
            sock, ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 1, "raw"
        )
    return {f.name: f.max_version_level for f in answer.finalized_features}, answer.finalized_features_epoch


def test_transaction_version_goes_down_and_up() -> None:
    with MockCluster(brokers=1) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            before, epoch = finalized(cluster)
            assert before == NEW_CLUSTER
            with pytest.raises(
                InvalidUpdateVersionError, match="without setting the upgrade type to either safe"
            ):
                admin.update_features({"transaction.version": 1})  # a downgrade needs its type
            assert finalized(cluster) == (before, epoch)
            assert admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 1)}) == {
                "transaction.version": "OK"
            }
            lowered, lowered_epoch = finalized(cluster)
            assert (lowered, lowered_epoch > epoch) == ({**NEW_CLUSTER, "transaction.version": 1}, True)
            admin.update_features({"transaction.version": 2}, validate_only=True)
            assert finalized(cluster)[0] == {**NEW_CLUSTER, "transaction.version": 1}
            admin.update_features({"transaction.version": 2})
            assert finalized(cluster)[0] == NEW_CLUSTER
            with pytest.raises(
                InvalidUpdateVersionError,
                match="Invalid update version 1 for feature fancy.version. Local controller 0 does not support",
            ):
                admin.update_features({"fancy.version": 1})
            with pytest.raises(InvalidUpdateVersionError, match="only supports versions 0-2"):
                admin.update_features({"transaction.version": 3})
        finally:
            admin.close()


def supported(cluster: MockCluster) -> dict[str, tuple[int, int]]:
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        answer = round_trip(
            sock, ApiVersionsRequest[4](client_software_name="t", client_software_version="1"), 1, "raw"
        )
    return {f.name: (f.min_version, f.max_version) for f in answer.supported_features}


def test_a_new_cluster_finalizes_kafka_4_4s_features() -> None:
    with MockCluster(brokers=1) as cluster:
        assert finalized(cluster)[0] == NEW_CLUSTER
        assert supported(cluster) == {
            "group.version": (0, 1),
            "kraft.version": (0, 1),
            "metadata.version": (7, 33),
            "share.version": (0, 2),
            "streams.version": (0, 1),
            "transaction.version": (0, 2),
            "eligible.leader.replicas.version": (0, 1),
        }
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            for kind, why in (
                ("SAFE_DOWNGRADE", "Refusing to perform the requested downgrade because it might delete"),
                ("UNSAFE_DOWNGRADE", "Unsafe metadata downgrade is not supported in this version."),
            ):
                with pytest.raises(
                    InvalidUpdateVersionError,
                    match=f"Unsupported metadata.version downgrade from 33 to 32. {why}",
                ):
                    admin.update_features({"metadata.version": (kind, 32)})
            with pytest.raises(InvalidUpdateVersionError, match="does not support this feature"):
                admin.update_features({"fancy.version": 1})
        finally:
            admin.close()


def test_eligible_leader_replicas_keep_a_cluster_level_min_insync_replicas() -> None:
    """Every topic reports min.insync.replicas from the cluster-level record ELR wrote
    (DYNAMIC_DEFAULT_BROKER_CONFIG, the static value); broker-level values are refused
    and the record cannot go while ELR is on; turning ELR on again writes it again and
    drops broker-level values (ConfigurationControlManager.maybeGenerateElrSafetyRecords)."""
    with MockCluster(brokers=1, config={"min.insync.replicas": "2"}) as cluster:
        ck = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        ck.create_topics([NewTopic("t", 1, 1)])["t"].result(timeout=10)

        def topic_min_isr() -> tuple[str, int, list[tuple[str, str, int]]]:
            [future] = ck.describe_configs([ConfigResource(ResourceType.TOPIC, "t")]).values()
            entry = future.result(timeout=10)["min.insync.replicas"]
            synonyms = [(s.name, s.value, s.source) for s in entry.synonyms.values()]
            return entry.value, entry.source, synonyms

        value, source, _ = topic_min_isr()
        assert (value, source) == ("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:  # CreateTopics v5+ answers the new topic's configs with the same sources
            request = CreateTopicsRequest[7]
            topic_class = request._struct.fields["topics"].data_class
            new_topic = topic_class(
                name="u", num_partitions=1, replication_factor=1, assignments=[], configs=[]
            )
            created = send(kp, request(topics=[new_topic], timeout_ms=10000, validate_only=True))
        finally:
            kp.close()
        [topic] = created.topics
        assert {c.name: (c.value, c.config_source) for c in topic.configs}["min.insync.replicas"] == (
            "2",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
        )

        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)

        def alter(name: str, op: int, value: str | None = "3") -> tuple[int, str | None]:
            # kafka-python's request: the admin clients refuse the empty (cluster-wide) name
            return incremental(admin, name, ("min.insync.replicas", op, value))

        assert alter("0", SET) == (
            INVALID_CONFIG,
            "Broker-level min.insync.replicas cannot be altered while ELR is enabled.",
        )
        assert alter("", DELETE, None) == (
            INVALID_CONFIG,
            "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.",
        )
        assert alter("", SET) == (0, None)  # changing it is fine
        assert topic_min_isr()[:2] == ("3", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)

        try:
            admin.update_features({"eligible.leader.replicas.version": ("SAFE_DOWNGRADE", 0)})
            assert alter("", DELETE, None) == (0, None)
            assert alter("0", SET, "4") == (0, None)
            assert topic_min_isr()[:2] == ("4", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
            admin.update_features({"eligible.leader.replicas.version": 1})
            assert topic_min_isr()[:2] == ("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
            # the broker-level value is gone: the cluster-level record, static, default
            assert described(admin, "0", keys=["min.insync.replicas"])["min.insync.replicas"][2] == [
                ("min.insync.replicas", "2", DYNAMIC_DEFAULT),
                ("min.insync.replicas", "2", STATIC),
                ("min.insync.replicas", "1", DEFAULT),
            ]
        finally:
            admin.close()


def test_group_version_0_turns_the_consumer_protocol_off() -> None:
    """KafkaApis answers ConsumerGroupHeartbeat UNSUPPORTED_VERSION without group.version 1."""
    with MockCluster(brokers=1, config={"group.initial.rebalance.delay.ms": 0}) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            admin.update_features({"group.version": ("SAFE_DOWNGRADE", 0)})
        finally:
            admin.close()
        assert "group.version" not in finalized(cluster)[0]
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "g",
                "group.protocol": "consumer",
            }
        )
        errors: list[KafkaError] = []
        try:
            consumer.subscribe(["t"])
            deadline = time.monotonic() + 30
            while not errors and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and message.error():
                    errors.append(message.error())
        finally:
            consumer.close()
        # librdkafka makes the refusal fatal for the consumer
        assert errors, "no error"
        assert "ConsumerGroupHeartbeat fatal error: Broker: API version not supported" in errors[0].str()
