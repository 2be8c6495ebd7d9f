"""Regressions the soak (`scripts/soak.py`) found, each reproduced in a few seconds.

- Stopping one broker of three moved the coordinators of groups and transactional ids it
  did not coordinate (they were spread over the *live* brokers, so the spread changed
  with their number): a client asking the coordinator it had found got NOT_COORDINATOR,
  and librdkafka's admin client handed that to the application (describe_consumer_groups
  failed during a broker bounce). In Kafka the coordinator is the leader of the id's
  __consumer_offsets / __transaction_state partition, and a stopped broker's failure
  moves only the partitions it led (which stay where they moved when it returns, until a
  preferred-leader election).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from broker import MockCluster

CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config=CONFIG) as running:
        yield running


def test_stopping_a_broker_moves_only_the_coordinators_it_held(cluster: MockCluster) -> None:
    ids = [f"id-{i}" for i in range(60)]
    groups = {i: cluster.groups.coordinator_for(i) for i in ids}
    transactions = {i: cluster.transactions.coordinator_for(i) for i in ids}
    assert set(groups.values()) == set(transactions.values()) == {0, 1, 2}
    cluster.stop_broker(1)
    for placed, now in (
        (groups, cluster.groups.coordinator_for),
        (transactions, cluster.transactions.coordinator_for),
    ):
        moved = {i for i in ids if now(i) != placed[i]}
        assert moved == {i for i in ids if placed[i] == 1}
        assert all(now(i) in (0, 2) for i in moved)
    during = {i: (cluster.groups.coordinator_for(i), cluster.transactions.coordinator_for(i)) for i in ids}
    cluster.start_broker(1)  # leaders stay where they moved, as the data partitions' do
    assert {
        i: (cluster.groups.coordinator_for(i), cluster.transactions.coordinator_for(i)) for i in ids
    } == during


def test_a_group_coordinated_elsewhere_is_described_while_a_broker_is_down(cluster: MockCluster) -> None:
    cluster.create_topic("t", 3, replication_factor=3)
    group = next(g for g in (f"g-{i}" for i in range(100)) if cluster.groups.coordinator_for(g) == 2)
    member = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "group.protocol": "consumer"}
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        member.subscribe(["t"])
        deadline = time.monotonic() + 30
        while not member.assignment():
            assert time.monotonic() < deadline, "no assignment"
            member.poll(0.1)
        assert admin.describe_consumer_groups([group])[group].result(10).coordinator.id == 2
        cluster.stop_broker(1)
        for _ in range(10):
            member.poll(0.1)
        described = admin.describe_consumer_groups([group])[group].result(10)  # NOT_COORDINATOR before
        assert described.coordinator.id == 2
        assert {m.client_id for m in described.members} == {"rdkafka"}
    finally:
        member.close()
