"""min.insync.replicas takes effect as in Kafka's Partition.appendRecordsToLeader: an
acks=all produce to a partition whose ISR (here: its live replicas) is smaller than
min(min.insync.replicas, replicas) gets NOT_ENOUGH_REPLICAS (19) and nothing is
appended; acks=1 is not affected."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaProducer
from kafka.errors import NotEnoughReplicasError

from broker import MockCluster
from tests.conftest import FAST


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config=FAST) as running:
        yield running


def producer(cluster: MockCluster, acks: int | str) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=acks, retries=0, linger_ms=0)


def test_acks_all_is_refused_below_min_insync_replicas(cluster: MockCluster) -> None:
    cluster.create_topic("durable", replication_factor=3, config={"min.insync.replicas": "2"})
    first = cluster.brokers[0].node_id
    for broker in cluster.brokers[1:]:
        cluster.stop_broker(broker.node_id)  # the partition fails over to the first broker
    all_acks, one_ack = producer(cluster, "all"), producer(cluster, 1)
    try:
        with pytest.raises(NotEnoughReplicasError):
            all_acks.send("durable", b"lost").get(timeout=20)
        assert one_ack.send("durable", b"kept").get(timeout=20).offset == 0  # acks=1: appended
        partition = cluster.state.topics["durable"].partitions[0]
        assert partition.leader == first and partition.log.log_end_offset == 1
        cluster.start_broker(cluster.brokers[1].node_id)  # two live replicas: enough again
        assert all_acks.send("durable", b"safe").get(timeout=20).offset == 1
    finally:
        all_acks.close(timeout=10)
        one_ack.close(timeout=10)


def test_the_requirement_is_capped_at_the_replica_count(cluster: MockCluster) -> None:
    """min.insync.replicas=3 on a one-replica topic: Kafka's effective minimum is 1."""
    cluster.create_topic("single", replication_factor=1, config={"min.insync.replicas": "3"})
    all_acks = producer(cluster, "all")
    try:
        assert all_acks.send("single", b"fine").get(timeout=20).offset == 0
    finally:
        all_acks.close(timeout=10)
