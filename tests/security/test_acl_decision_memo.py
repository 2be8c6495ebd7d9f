"""The authorizer remembers its decisions (acls.py): a remembered answer is always the one
the bindings give now. Every change to the bindings, the super users or
allow.everyone.if.no.acl.found forgets them, and the memo is bounded."""

from __future__ import annotations

import itertools
import random
import socket

import pytest
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker import MockCluster
from broker.security import acls as acls_module
from broker.security.acls import (
    AclAuthorizer,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from tests.conftest import FAST
from tests.support.wire import round_trip

TOPIC = ResourceType.TOPIC
PRINCIPALS = ("User:alice", "User:bob", "User:root")
HOSTS = ("10.0.0.1", "10.0.0.2")
OPERATIONS = (Operation.READ, Operation.WRITE, Operation.DESCRIBE, Operation.ALTER)
NAMES = ("orders", "ord", "orders-eu", "payroll", "x")


def _random_binding(rng: random.Random) -> AclBinding:
    return AclBinding(
        TOPIC,
        rng.choice(("orders", "ord", "o", "pay", "*", "payroll")),
        rng.choice((PatternType.LITERAL, PatternType.PREFIXED)),
        rng.choice(PRINCIPALS[:2] + ("User:*",)),
        rng.choice(HOSTS + ("*",)),
        rng.choice(OPERATIONS + (Operation.ALL,)),
        rng.choice((Permission.ALLOW, Permission.DENY)),
    )


def _questions() -> list[tuple[str, str, Operation, ResourceType, str]]:
    return [(p, h, o, TOPIC, n) for p, h, o, n in itertools.product(PRINCIPALS, HOSTS, OPERATIONS, NAMES)]


def test_remembered_decisions_follow_every_change() -> None:
    rng = random.Random(20)
    acls = AclAuthorizer(super_users=["User:root"])
    added: list[AclBinding] = []
    for step in range(300):
        if added and rng.random() < 0.3:
            acls.remove(added.pop(rng.randrange(len(added))))
        elif step % 50 == 25:
            acls.allow_if_no_acl = not acls.allow_if_no_acl
        elif step % 70 == 35:
            acls.super_users = () if acls.super_users else ("User:root",)
        else:
            binding = _random_binding(rng)
            acls.add(binding)
            added.append(binding)
        for question in rng.sample(_questions(), 20):
            assert acls.authorize(*question) == acls.decide(*question), (step, question)
            assert acls.authorize(*question) == acls.decide(*question)  # remembered now


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acls_module, "MAX_REMEMBERED_DECISIONS", 10)
    acls = AclAuthorizer(allow_if_no_acl=True)
    for i in range(100):
        assert acls.authorize("User:alice", "h", Operation.READ, TOPIC, f"t{i}")
        assert len(acls._decisions) <= 10


def test_an_acl_change_applies_to_the_next_request() -> None:
    """Over the wire: a produce allowed, then denied by a DENY binding added, then allowed
    again once it is removed; each request sees the bindings of its time."""
    config = {
        **FAST,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    }
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, 0, None, b"v", [])
    records = bytes(builder.build())
    request = ProduceRequest[9](
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest[9].TopicProduceData(
                name="memo",
                partition_data=[
                    ProduceRequest[9].TopicProduceData.PartitionProduceData(index=0, records=records)
                ],
            )
        ],
    )
    with MockCluster(config=config) as cluster:
        cluster.create_topic("memo", partitions=1)
        host, _, port = cluster.bootstrap_servers.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:

            def produce_error(correlation_id: int) -> int:
                response = round_trip(sock, request, correlation_id, "memo-client", version=9)
                return int(response.responses[0].partition_responses[0].error_code)

            assert produce_error(1) == 0
            assert produce_error(2) == 0  # remembered
            cluster.acls.add("User:ANONYMOUS", "WRITE", "TOPIC", "memo", permission="DENY")
            assert produce_error(3) == 29  # TOPIC_AUTHORIZATION_FAILED
            cluster.acls.remove(
                principal="User:ANONYMOUS", operation="WRITE", resource_type="TOPIC", name="memo"
            )
            assert produce_error(4) == 0
