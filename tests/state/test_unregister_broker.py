"""UnregisterBroker (64) in raw frames (kafka-python 3.0.12's admin has no
unregister_broker): a stopped broker leaves Metadata, DescribeCluster (fenced ones
included) and the quorum's observers until it starts again and re-registers; a running
one is accepted too and loses its leaderships, as ReplicationControlManager does; an
unknown id is BROKER_ID_NOT_REGISTERED; ALTER on the cluster is required."""

from __future__ import annotations

from typing import Any

from broker import MockCluster
from messages.registry import request_class
from protocol.errors import ErrorCode
from tests.support.wire import Connection

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
Unregister = request_class(64)
Metadata = request_class(3)
DescribeCluster = request_class(60)
DescribeQuorum = request_class(55)
ApiVersions = request_class(18)


class Wire(Connection):
    """One connection to one broker, numbering its requests."""

    def __init__(self, cluster: MockCluster, node_id: int) -> None:
        endpoint = cluster.broker(node_id).advertised_endpoint(cluster.brokers[0].listeners[0].listener)
        super().__init__(f"{endpoint.host}:{endpoint.port}")

    def unregister(self, broker_id: int) -> Any:
        return self(Unregister[0](broker_id=broker_id))

    def metadata(self) -> Any:
        return self(
            Metadata[12](
                topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
            )
        )

    def brokers(self) -> list[tuple[int, bool]]:
        """DescribeCluster's brokers, fenced ones included: (id, fenced)."""
        answer = self(
            DescribeCluster[2](
                include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=True
            )
        )
        return [(b.broker_id, b.is_fenced) for b in answer.brokers]

    def observers(self) -> list[int]:
        partition = DescribeQuorum.TopicData.PartitionData(partition_index=0)
        answer = self(
            DescribeQuorum[2](
                topics=[DescribeQuorum.TopicData(topic_name="__cluster_metadata", partitions=[partition])]
            )
        )
        return sorted(o.replica_id for o in answer.topics[0].partitions[0].observers)


def test_a_stopped_broker_disappears_until_it_starts_again() -> None:
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("t", 3, replication_factor=3)
        cluster.stop_broker(2)
        wire = Wire(cluster, 0)
        try:
            assert wire.brokers() == [(0, False), (1, False), (2, True)]  # fenced, still registered
            answer = wire.unregister(2)
            assert (answer.error_code, answer.error_message, answer.throttle_time_ms) == (
                ErrorCode.NONE,
                "",  # Kafka 4.4's, as the schema's default
                0,
            )
            metadata = wire.metadata()
            assert sorted(b.node_id for b in metadata.brokers) == [0, 1]
            assert wire.brokers() == [(0, False), (1, False)]
            assert wire.observers() == [1]
            replicas = {
                p.partition_index: (p.replica_nodes, p.offline_replicas)
                for p in metadata.topics[0].partitions
            }
            assert all(2 in nodes and offline == [2] for nodes, offline in replicas.values())
            again = wire.unregister(2)  # no registration left
            assert (again.error_code, again.error_message) == (
                ErrorCode.BROKER_ID_NOT_REGISTERED,
                "Broker ID 2 is not currently registered",
            )
            cluster.start_broker(2)  # registers anew
            assert sorted(b.node_id for b in wire.metadata().brokers) == [0, 1, 2]
            assert wire.brokers() == [(0, False), (1, False), (2, False)]
            assert wire.observers() == [1, 2]
        finally:
            wire.close()


def test_a_running_broker_loses_its_registration_and_leaderships() -> None:
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("t", 1, replication_factor=2)
        before = cluster.move_leader("t", 0, 2)
        epoch = before.leader_epoch
        wire = Wire(cluster, 0)
        try:
            assert wire.unregister(2).error_code == ErrorCode.NONE
            metadata = wire.metadata()
            assert sorted(b.node_id for b in metadata.brokers) == [0, 1]
            partition = metadata.topics[0].partitions[0]
            assert partition.leader_id != 2 and partition.leader_id in (0, 1)
            assert partition.leader_epoch == epoch + 1
            assert wire.brokers() == [(0, False), (1, False)]
            assert wire.observers() == [1, 2]  # it still replicates the metadata log
            unregistered = Wire(cluster, 2)  # and still serves, outside the metadata
            try:
                assert sorted(b.node_id for b in unregistered.metadata().brokers) == [0, 1]
            finally:
                unregistered.close()
            cluster.stop_broker(2)
            assert wire.observers() == [1]
            cluster.start_broker(2)
            assert wire.brokers() == [(0, False), (1, False), (2, False)]
        finally:
            wire.close()


def test_unknown_ids() -> None:
    with MockCluster(brokers=1) as cluster:
        wire = Wire(cluster, 0)
        try:
            for broker_id in (7, -1):
                answer = wire.unregister(broker_id)
                assert (answer.error_code, answer.error_message) == (
                    ErrorCode.BROKER_ID_NOT_REGISTERED,
                    f"Broker ID {broker_id} is not currently registered",
                )
            apis = {
                k.api_key: (k.min_version, k.max_version)
                for k in wire(ApiVersions[3](client_software_name="t", client_software_version="1")).api_keys
            }
            assert apis[64] == (0, 0)
        finally:
            wire.close()


def test_alter_on_the_cluster_is_required() -> None:
    with MockCluster(brokers=2, config={"authorizer.class.name": STANDARD}) as cluster:
        cluster.stop_broker(1)
        wire = Wire(cluster, 0)
        try:
            refused = wire.unregister(1)
            assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            assert refused.error_message is None  # Kafka's names the Java request (README)
            cluster.acls.add("User:ANONYMOUS", "DESCRIBE", "CLUSTER", "kafka-cluster")
            assert wire.unregister(1).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            assert wire.brokers() == [(0, False), (1, True)]  # nothing unregistered
            assert wire.unregister(7).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED  # before the id
            cluster.acls.add("User:ANONYMOUS", "ALTER", "CLUSTER", "kafka-cluster")
            assert wire.unregister(1).error_code == ErrorCode.NONE
            assert wire.brokers() == [(0, False)]
        finally:
            wire.close()
