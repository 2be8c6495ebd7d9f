"""Online migration between the classic and consumer group protocols (KIP-848), as
confluent-kafka-python's test_consumer_upgrade_downgrade runs it against Kafka 4.x: a
classic member, then a consumer-protocol member joins (the group becomes a consumer
group and the broker splits the partitions), the classic one leaves, another classic
one joins the consumer group, and when the consumer-protocol member leaves the group is
classic again. For each of librdkafka's classic assignors."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, Producer
from confluent_kafka.admin import AdminClient

from broker import MockCluster

PARTITIONS = 10
CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
}
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config=CONFIG) as running:
        yield running


def group_type(admin: AdminClient, group_id: str) -> Any:
    return admin.describe_consumer_groups([group_id])[group_id].result(10).type


def check(
    cluster: MockCluster, consumers: list[Consumer], admin: AdminClient, topic: str, expected: Any
) -> None:
    """Every member holds exactly its share, together all partitions; the group has the
    expected type; 100 new keyed records are all read."""
    share = PARTITIONS // len(consumers)
    deadline = time.monotonic() + TIMEOUT
    while not (
        all(len(c.assignment()) == share for c in consumers)
        and len({(tp.topic, tp.partition) for c in consumers for tp in c.assignment()}) == PARTITIONS
    ):
        assert time.monotonic() < deadline, [len(c.assignment()) for c in consumers]
        for consumer in consumers:
            consumer.poll(0.1)
    assert group_type(admin, topic) == expected
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 50})
    for i in range(100):
        producer.produce(topic, key=f"test-key{i}", value=f"test-data{i}")
    assert producer.flush(10) == 0
    read = 0
    while read < 100:
        assert time.monotonic() < deadline + TIMEOUT, f"read {read} of 100"
        for consumer in consumers:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                read += 1
    assert read == 100


@pytest.mark.parametrize("strategy", ["roundrobin", "range", "cooperative-sticky"])
def test_upgrade_and_downgrade(cluster: MockCluster, strategy: str) -> None:
    topic = f"upgrade-downgrade-{strategy}"
    cluster.create_topic(topic, PARTITIONS)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    common = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": topic,
        "auto.offset.reset": "earliest",
    }
    classic = {
        **common,
        "group.protocol": "classic",
        "partition.assignment.strategy": strategy,
        "heartbeat.interval.ms": 300,
        "session.timeout.ms": 6000,
    }
    modern = {**common, "group.protocol": "consumer"}
    steps = [
        (classic, ConsumerGroupType.CLASSIC),  # [C1]
        (modern, ConsumerGroupType.CONSUMER),  # [C1, N2]: upgraded
        (None, ConsumerGroupType.CONSUMER),  # [N2]
        (classic, ConsumerGroupType.CONSUMER),  # [N2, C3]: a classic member in a consumer group
        (None, ConsumerGroupType.CLASSIC),  # [C3]: downgraded
    ]
    consumers: list[Consumer] = []
    try:
        for conf, expected in steps:
            if conf is not None:
                consumer = Consumer(conf)
                consumer.subscribe([topic])
                consumers.append(consumer)
            else:
                consumers.pop(0).close()
            check(cluster, consumers, admin, topic, expected)
        assert len(consumers) == 1
    finally:
        for consumer in consumers:
            consumer.close()
