"""librdkafka's share consumer (KIP-932), through confluent-kafka's ShareConsumer at the
version constraints.txt pins: several members of a share group share the records, each
delivered once; with explicit acknowledgement a released record comes back with its
delivery count one higher, a rejected one never does, and one released at the delivery
count limit is archived."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterator

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from broker import MockCluster

# Waits are for progress, never a bound on speed: only to fail rather than hang.
PATIENCE_S = 60


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    config = {"group.share.delivery.count.limit": "3", "record.requests.max": 50_000}
    with MockCluster(brokers=3, config=config) as cluster:
        yield cluster


def start_at_earliest(cluster: MockCluster, group: str) -> None:
    """The group's share.auto.offset.reset (IncrementalAlterConfigs on the GROUP)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def produce(cluster: MockCluster, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0


def share_consumer(cluster: MockCluster, group: str, explicit: bool = False) -> ShareConsumer:
    config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group}
    if explicit:
        config["share.acknowledgement.mode"] = "explicit"
    return ShareConsumer(config)


def test_members_of_a_share_group_share_the_records(cluster: MockCluster) -> None:
    cluster.create_topic("rd-shared", partitions=3)
    start_at_earliest(cluster, "rd-three")
    produce(cluster, "rd-shared", 3000)
    members = [share_consumer(cluster, "rd-three") for _ in range(3)]
    seen: Counter[str] = Counter()
    per_member = [0, 0, 0]
    try:
        for member in members:
            member.subscribe(["rd-shared"])
        deadline = time.monotonic() + PATIENCE_S
        while len(seen) < 3000:
            assert time.monotonic() < deadline, f"{len(seen)} of 3000 records delivered"
            for i, member in enumerate(members):
                for message in member.poll(0.2):
                    assert message.error() is None, message.error()
                    seen[(message.value() or b"").decode()] += 1
                    per_member[i] += 1
        for member in members:
            member.commit_sync(30)  # implicit mode: what the last poll returned is accepted
    finally:
        for member in members:
            member.close()
    assert len(seen) == 3000 and max(seen.values()) == 1  # every record, none twice
    assert sum(per_member) == 3000
    described = cluster.describe_group("rd-three")
    assert described is not None and described["state"] == "Empty"  # they left on close
    sent = {r["api"] for r in cluster.requests.list() if r["api"].startswith("Share")}
    assert {"ShareGroupHeartbeat", "ShareFetch"} <= sent


def test_explicit_acknowledgement_release_reject_and_the_delivery_limit(cluster: MockCluster) -> None:
    """v0 is released every time (archived at the delivery limit, 3), v1 rejected, v2 accepted."""
    cluster.create_topic("rd-acks", partitions=1)
    start_at_earliest(cluster, "rd-acks")
    produce_one = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(3):
        produce_one.produce("rd-acks", value=f"v{i}".encode(), partition=0)
    assert produce_one.flush(30) == 0
    deliveries: dict[str, list[int]] = defaultdict(list)
    member = share_consumer(cluster, "rd-acks", explicit=True)
    try:
        member.subscribe(["rd-acks"])
        deadline = time.monotonic() + 20  # long enough for the redeliveries, then nothing more
        while time.monotonic() < deadline:
            for message in member.poll(0.2):
                assert message.error() is None, message.error()
                value = (message.value() or b"").decode()
                deliveries[value].append(message.delivery_count() or 0)
                kind = {"v0": AcknowledgeType.RELEASE, "v1": AcknowledgeType.REJECT}.get(
                    value, AcknowledgeType.ACCEPT
                )
                member.acknowledge(message, kind)
            member.commit_sync(30)
            if deliveries["v0"] == [1, 2, 3] and time.monotonic() < deadline - 5:
                deadline = time.monotonic() + 5  # a little longer: nothing may come back
    finally:
        member.close()
    assert dict(deliveries) == {"v0": [1, 2, 3], "v1": [1], "v2": [1]}
