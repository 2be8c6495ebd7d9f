"""AddRaftVoter (80) and RemoveRaftVoter (81) in raw frames (kafka-python 3.0.12's admin
has neither) against the mock's quorum: refused with UNSUPPORTED_VERSION while
kraft.version is 0 (a static quorum); after kafka-python's update_features finalizes
kraft.version 1 (never to go down again) live brokers join and leave the voters, which
kafka-python's describe_metadata_quorum reports; every refusal of KafkaRaftClient,
AddVoterHandler and RemoveVoterHandler; ALTER on the cluster."""

from __future__ import annotations

import socket
import uuid
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.errors import InvalidUpdateVersionError

from broker import MockCluster
from broker.state.quorum import directory_id
from messages.registry import request_class
from protocol.errors import ErrorCode
from tests.support.wire import round_trip

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
Add = request_class(80)
Remove = request_class(81)


class Wire:
    def __init__(self, cluster: MockCluster) -> None:
        host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0
        self.cluster = cluster

    def __call__(self, request: Any) -> tuple[int, str | None]:
        self.correlation_id += 1
        answer = round_trip(self.sock, request, self.correlation_id, "wire")
        return answer.error_code, answer.error_message

    def close(self) -> None:
        self.sock.close()

    def add(
        self,
        node_id: int,
        directory: uuid.UUID | None = None,
        listeners: dict[str, tuple[str, int]] | None = None,
        cluster_id: str | None = None,
        version: int = 1,
    ) -> tuple[int, str | None]:
        if listeners is None:
            listeners = dict(self.cluster.state.brokers[node_id].endpoints)
        return self(
            Add[version](
                cluster_id=cluster_id,
                timeout_ms=30000,
                voter_id=node_id,
                voter_directory_id=directory or key(self.cluster, node_id),
                listeners=[Add.Listener(name=n, host=h, port=p) for n, (h, p) in listeners.items()],
            )
        )

    def remove(
        self, node_id: int, directory: uuid.UUID | None = None, cluster_id: str | None = None
    ) -> tuple[int, str | None]:
        return self(
            Remove[0](
                cluster_id=cluster_id,
                voter_id=node_id,
                voter_directory_id=directory or key(self.cluster, node_id),
            )
        )


def key(cluster: MockCluster, node_id: int) -> uuid.UUID:
    return directory_id(cluster.state.cluster_id, node_id)


def quorum(cluster: MockCluster) -> dict[str, Any]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        partition = admin.describe_metadata_quorum()
    finally:
        admin.close()
    found = partition["topics"][0]["partitions"][0]
    return {
        "leader": found["leader_id"],
        "epoch": found["leader_epoch"],
        "voters": [v["replica_id"] for v in found["current_voters"]],
        "observers": sorted(o["replica_id"] for o in found["observers"]),
        "nodes": [n["node_id"] for n in partition["nodes"]],
    }


def upgrade(cluster: MockCluster, level: int, kind: str = "UPGRADE") -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.update_features({"kraft.version": level if kind == "UPGRADE" else (kind, level)})
    finally:
        admin.close()


def test_a_static_quorum_refuses_both() -> None:
    with MockCluster(brokers=2) as cluster:
        wire = Wire(cluster)
        try:
            assert wire.add(1) == (
                ErrorCode.UNSUPPORTED_VERSION,
                "Cluster doesn't support adding voter because the kraft.version feature is 0",
            )
            assert wire.remove(0) == (
                ErrorCode.UNSUPPORTED_VERSION,
                "Cluster doesn't support removing voter because the kraft.version feature is 0",
            )
            # the request's own checks come first
            assert wire.add(1, cluster_id="other")[0] == ErrorCode.INCONSISTENT_CLUSTER_ID
            assert wire.add(1, directory=uuid.UUID(int=0))[0] == ErrorCode.INVALID_REQUEST
        finally:
            wire.close()
        assert quorum(cluster) | {"epoch": 0} == {
            "leader": 0,
            "epoch": 0,
            "voters": [0],
            "observers": [1],
            "nodes": [0],
        }


def test_kraft_version_1_makes_the_voters_dynamic() -> None:
    with MockCluster(brokers=3) as cluster:
        upgrade(cluster, 1)
        with pytest.raises(InvalidUpdateVersionError, match="Can't downgrade the version of this feature."):
            upgrade(cluster, 0, "SAFE_DOWNGRADE")
        start = quorum(cluster)
        assert (start["leader"], start["voters"], start["observers"]) == (0, [0], [1, 2])
        wire = Wire(cluster)
        try:
            assert wire.add(1, version=0) == (ErrorCode.NONE, None)
            added = quorum(cluster)
            assert (added["leader"], added["voters"], added["observers"], added["nodes"]) == (
                0,
                [0, 1],
                [2],
                [0, 1],
            )
            assert added["epoch"] == start["epoch"]  # a voter change elects no one
            code, message = wire.add(1)
            assert code == ErrorCode.DUPLICATE_VOTER
            assert message is not None and message.startswith(
                "The voter id for ReplicaKey(id=1, directoryId=Optional["
            )
            code, message = wire.add(2, directory=uuid.uuid4())
            assert (
                code == ErrorCode.REQUEST_TIMED_OUT
                and message is not None
                and message.endswith("since it is lagging behind")
            )
            elsewhere = {name: (host, 1) for name, (host, _) in cluster.state.brokers[2].endpoints.items()}
            code, message = wire.add(2, listeners=elsewhere)  # no one answers ApiVersions there
            assert code == ErrorCode.REQUEST_TIMED_OUT and message is not None and "API_VERSIONS" in message
            code, message = wire.add(2, listeners={"OTHER": ("localhost", 9)})
            assert (
                code == ErrorCode.INVALID_REQUEST
                and message is not None
                and "for the default listener" in message
            )
            assert wire.add(-1, listeners=dict(cluster.state.brokers[2].endpoints)) == (
                ErrorCode.INVALID_REQUEST,
                "Add voter request didn't include a valid voter",
            )
            assert wire.remove(1, directory=uuid.UUID(int=0)) == (
                ErrorCode.INVALID_REQUEST,
                "Remove voter request didn't include a valid voter",
            )
            assert wire.remove(1, cluster_id="other") == (
                ErrorCode.INCONSISTENT_CLUSTER_ID,
                f'The given id "other" doesn\'t match the cluster id "{cluster.state.cluster_id}"',
            )
            code, message = wire.remove(1, directory=uuid.uuid4())
            assert (
                code == ErrorCode.VOTER_NOT_FOUND
                and message is not None
                and message.startswith("Cannot remove voter")
            )
            assert wire.remove(2)[0] == ErrorCode.VOTER_NOT_FOUND  # an observer
            assert wire.remove(0) == (ErrorCode.NONE, None)  # the leader resigns
            moved = quorum(cluster)
            assert (moved["leader"], moved["voters"], moved["observers"]) == (1, [1], [0, 2])
            assert moved["epoch"] == start["epoch"] + 1
            assert wire.remove(1)[0] == ErrorCode.VOTER_NOT_FOUND  # never the last voter
        finally:
            wire.close()


def test_a_stopped_voter() -> None:
    with MockCluster(brokers=3) as cluster:
        upgrade(cluster, 1)
        wire = Wire(cluster)
        try:
            assert wire.add(2) == (ErrorCode.NONE, None)
            cluster.stop_broker(2)
            stopped = quorum(cluster)
            assert (stopped["leader"], stopped["voters"], stopped["observers"]) == (0, [0, 2], [1])
            code, _ = wire.add(2)
            assert code == ErrorCode.DUPLICATE_VOTER
            assert wire.remove(2) == (ErrorCode.NONE, None)  # a stopped voter can go
            cluster.stop_broker(1)
            assert wire.add(1)[0] == ErrorCode.REQUEST_TIMED_OUT  # not running
        finally:
            wire.close()
    with MockCluster(brokers=2) as cluster:  # the leader stops: the other voter leads
        upgrade(cluster, 1)
        wire = Wire(cluster)
        try:
            assert wire.add(1) == (ErrorCode.NONE, None)
        finally:
            wire.close()
        epoch = quorum(cluster)["epoch"]
        cluster.stop_broker(0)
        after = quorum(cluster)
        assert (after["leader"], after["voters"], after["epoch"]) == (1, [0, 1], epoch + 1)


def test_alter_on_the_cluster_is_required() -> None:
    secured = {"authorizer.class.name": STANDARD}
    with MockCluster(brokers=2, config=secured) as cluster:
        cluster.acls.add("User:ANONYMOUS", "DESCRIBE", "CLUSTER", "kafka-cluster")
        wire = Wire(cluster)
        try:
            for code, message in (wire.add(1), wire.remove(0)):
                assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                assert message is None  # Kafka's names the Java request (README)
            cluster.acls.add("User:ANONYMOUS", "ALTER", "CLUSTER", "kafka-cluster")
            assert wire.add(1)[0] == ErrorCode.UNSUPPORTED_VERSION
        finally:
            wire.close()
