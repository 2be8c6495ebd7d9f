"""ACLs in state.dir: kept across restarts, every acknowledged CreateAcls kept across a
kill -9 mid-stream and never half of one; and the Python API (`cluster.acls`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from kafka.protocol.admin.acl import CreateAclsRequest, CreateAclsResponse

from broker import MockCluster
from broker.security.acls import InvalidAcl, Operation, PatternType, Permission, ResourceType
from tests.kill9 import stream_until_killed
from tests.support.process import BrokerProcess
from tests.support.wire import encode_request

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SECURED = {"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"}


def test_python_api_and_restart(tmp_path: Path) -> None:
    config = {**SECURED, "state.dir": str(tmp_path / "state")}
    with MockCluster(config=config) as cluster:
        cluster.acls.add("User:alice", "WRITE", "TOPIC", "orders")
        cluster.acls.add("User:*", "READ", "GROUP", "app-", pattern="PREFIXED", permission="DENY")
        with pytest.raises(InvalidAcl, match="kafka-cluster"):
            cluster.acls.add("User:alice", "ALTER", "CLUSTER", "mine")
        assert [b.resource_name for b in cluster.acls.list(principal="User:alice")] == ["orders"]
    with MockCluster(config=config) as reopened:
        assert {(b.principal, b.resource_name) for b in reopened.acls.list()} == {
            ("User:alice", "orders"),
            ("User:*", "app-"),
        }
        assert reopened.authorizer.authorize(
            "User:alice", "10.0.0.1", Operation.WRITE, ResourceType.TOPIC, "orders"
        )
        gone = reopened.acls.remove(resource_type="GROUP")
        assert [b.resource_name for b in gone] == ["app-"]
    with MockCluster(config=config) as again:
        assert [b.resource_name for b in again.acls.list()] == ["orders"]


def test_acls_from_the_python_api_let_a_client_produce() -> None:
    with MockCluster(config={"authorizer.class.name": STANDARD}) as cluster:
        cluster.create_topic("open")

        def produce() -> object:
            errors: list[object] = []
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "retries": 0})
            try:
                producer.produce("open", b"x", on_delivery=lambda err, _m: errors.append(err))
            except KafkaException as exc:  # librdkafka knows from Metadata: not even described
                return exc.args[0].code()
            producer.flush(10)
            return errors[0]

        assert produce() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        cluster.acls.add("User:ANONYMOUS", "WRITE", "TOPIC", "open")  # WRITE implies DESCRIBE
        assert produce() is None
        assert cluster.state.topics["open"].partitions[0].log.log_end_offset == 1


# -- kill -9 -----------------------------------------------------------------------------
def _request(i: int) -> bytes:
    """CreateAcls with two bindings: one of its own, one every request shares."""
    creations = [
        (
            ResourceType.TOPIC,
            f"t{i}",
            PatternType.LITERAL,
            f"User:u{i}",
            "*",
            Operation.READ,
            Permission.ALLOW,
        ),
        (
            ResourceType.TOPIC,
            "shared",
            PatternType.LITERAL,
            f"User:u{i}",
            "*",
            Operation.WRITE,
            Permission.ALLOW,
        ),
    ]
    return encode_request(CreateAclsRequest[1](creations=creations), i, "acl-stream")


@pytest.fixture
def child(tmp_path: Path) -> Iterator[BrokerProcess]:
    overrides = [arg for key, value in SECURED.items() for arg in ("--override", f"{key}={value}")]
    process = BrokerProcess("--port", "0", "--state-dir", str(tmp_path / "state"), *overrides)
    yield process
    process.kill()


def test_acknowledged_creations_survive_kill_9(tmp_path: Path, child: BrokerProcess) -> None:
    def check(_i: int, frame: bytes) -> None:
        response = CreateAclsResponse[1].decode(frame[4:], header=True)
        assert [r.error_code for r in response.results] == [0, 0]

    acked = stream_until_killed(child, _request, check, kill_after=200).acked

    with MockCluster(config={**SECURED, "state.dir": str(tmp_path / "state")}) as reopened:
        stored = set(reopened.acls.list())
    own = {int(b.resource_name[1:]) for b in stored if b.resource_name != "shared"}
    shared = {int(b.principal[6:]) for b in stored if b.resource_name == "shared"}
    assert set(acked) <= own  # every acknowledged request is there
    assert own == shared  # and never one binding of a request without the other
    assert own == set(range(len(own)))  # requests apply in order
