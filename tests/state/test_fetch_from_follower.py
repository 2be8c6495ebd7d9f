"""KIP-392, fetch from follower: `broker.rack`, `replica.selector.class` and consumers
served by a follower, as Kafka's ReplicaManager and RackAwareReplicaSelector do it.

The selector is checked alone (pure logic); the broker through confluent-kafka
(librdkafka with `client.rack`) over TCP, with the request recording showing which
broker returned the records; and over raw frames built with kafka-python's structs for
the exact preferred_read_replica values and error codes, written out here rather than
taken from the broker's own tables.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicCollection
from confluent_kafka.admin import AdminClient
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from broker import MockCluster
from broker.config.broker_config import broker_racks
from broker.state.cluster import Topic
from broker.state.replica_selector import (
    ClientMetadata,
    LeaderReplicaSelector,
    PartitionView,
    RackAwareReplicaSelector,
    ReplicaView,
    load_replica_selector,
    preferred_read_replica,
)
from tests.conftest import FAST
from tests.support.process import run_broker
from tests.support.wire import round_trip

# Kafka's error codes (org.apache.kafka.common.protocol.Errors)
NONE, OFFSET_OUT_OF_RANGE, NOT_LEADER_OR_FOLLOWER = 0, 1, 6
FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = 74, 75
FETCH = 1
RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER_ONLY = "org.apache.kafka.common.replica.LeaderReplicaSelector"


# -- the selector alone ---------------------------------------------------------------
def view(node_id: int, rack: str | None, end: int = 10, lag_ms: int = 0) -> ReplicaView:
    return ReplicaView(node_id, rack, end, lag_ms)


def choose(rack: str, leader: ReplicaView, *followers: ReplicaView) -> ReplicaView | None:
    partition = PartitionView((*followers, leader), leader)
    return RackAwareReplicaSelector().select("t", 0, ClientMetadata(rack), partition)


def test_rack_aware_selector_prefers_the_leader_in_the_clients_rack() -> None:
    leader = view(0, "a")
    assert choose("a", leader, view(1, "a"), view(2, "b")) == leader
    assert choose("b", leader, view(1, "a"), view(2, "b")) == view(2, "b")


def test_rack_aware_selector_gives_the_leader_without_a_rack_or_a_replica_there() -> None:
    leader = view(0, "a")
    assert choose("", leader, view(1, "b")) == leader  # client.rack unset
    assert choose("c", leader, view(1, "b")) == leader  # no replica in rack c
    assert choose("b", view(0, None), view(1, None)) == view(0, None)  # brokers without racks


def test_rack_aware_selector_breaks_ties_like_replica_view_comparator() -> None:
    # ReplicaView.comparator, max: the largest log end offset, then the shortest time
    # since last caught up, then the highest broker id.
    leader = view(0, "a", end=20)
    assert choose("b", leader, view(1, "b", end=20), view(2, "b", end=19)) == view(1, "b", end=20)
    assert choose("b", leader, view(1, "b", lag_ms=5), view(2, "b", lag_ms=9)) == view(1, "b", lag_ms=5)
    assert choose("b", leader, view(1, "b"), view(2, "b"), view(3, "c")) == view(2, "b")


def test_preferred_read_replica_offers_in_sync_followers_holding_the_offset() -> None:
    selector = RackAwareReplicaSelector()
    client = ClientMetadata("b")
    leader = view(0, "a", end=10)

    def preferred(*followers: tuple[ReplicaView, int, bool], offset: int = 5) -> int:
        return preferred_read_replica(selector, "t", 0, client, leader, followers, offset)

    assert preferred((view(1, "b"), 0, True)) == 1
    assert preferred((view(1, "b"), 0, False)) == -1  # out of the ISR
    assert preferred((view(1, "b", end=4), 0, True)) == -1  # its log ends before the offset
    assert preferred((view(1, "b"), 6, True)) == -1  # its log starts after it
    assert preferred((view(1, "b"), 0, False), (view(2, "b"), 0, True)) == 2
    # The leader is never named: -1 tells the client to stay.
    assert preferred_read_replica(selector, "t", 0, ClientMetadata("a"), leader, [], 5) == -1
    assert (
        preferred_read_replica(LeaderReplicaSelector(), "t", 0, client, leader, [(view(1, "b"), 0, True)], 5)
        == -1
    )


def test_selector_classes_and_rack_lists() -> None:
    assert load_replica_selector("") is None  # Kafka's default: null
    assert isinstance(load_replica_selector(RACK_AWARE), RackAwareReplicaSelector)
    assert isinstance(load_replica_selector(LEADER_ONLY), LeaderReplicaSelector)
    with pytest.raises(ValueError, match="replica.selector.class=com.example.Nearest"):
        load_replica_selector("com.example.Nearest")
    assert broker_racks("", 3) == [None, None, None]
    assert broker_racks("us-east-1a", 2) == ["us-east-1a", "us-east-1a"]  # one value: every broker's
    assert broker_racks("a, b,", 3) == ["a", "b", None]
    with pytest.raises(ValueError, match="2 racks for 3 broker"):
        broker_racks("a,b", 3)


def test_bad_rack_list_or_selector_refuses_to_start() -> None:
    with pytest.raises(ValueError, match="racks for 3 broker"):
        MockCluster(brokers=3, config={"broker.rack": "a,b"})
    with pytest.raises(ValueError, match="replica.selector.class"):
        MockCluster(config={"replica.selector.class": "com.example.Nearest"})
    result = run_broker("--port", "0", "--brokers", "3", "--override", "broker.rack=a,b")
    assert result.returncode != 0
    assert "2 racks for 3 broker(s)" in result.stderr
    assert "Traceback" not in result.stderr


# -- through confluent-kafka -----------------------------------------------------------
MESSAGES = 200


def rack_cluster(selector: str | None = RACK_AWARE, racks: str = "az-0,az-1,az-2") -> MockCluster:
    config = {**FAST, "broker.rack": racks, "record.requests.max": "100000"}
    if selector is not None:
        config["replica.selector.class"] = selector
    return MockCluster(brokers=3, config=config)


@pytest.fixture
def racks3() -> Iterator[MockCluster]:
    with rack_cluster() as cluster:
        yield cluster


def offsets_in(records: bytes | None) -> list[int]:
    """The offsets of the records in a fetched partition's record batches."""
    found: list[int] = []
    batches = MemoryRecords(records or b"")
    while batches.has_next():
        batch = batches.next_batch()
        found.extend(record.offset for record in batch)
    return found


def recorded_fetches(cluster: MockCluster) -> list[tuple[int, dict[str, Any]]]:
    """(broker, partition result) of every recorded Fetch response."""
    return [
        (entry["broker"], partition)
        for entry in cluster.requests.list(api_key=FETCH)
        for topic in entry["response"]["responses"]
        for partition in topic["partitions"]
    ]


def produce_and_consume(cluster: MockCluster, topic: str, rack: str) -> list[bytes]:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(MESSAGES):
        producer.produce(topic, f"m{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    del producer
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"{topic}-readers",
            "client.rack": rack,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 120  # only against a hang: no speed is asserted
        while len(values) < MESSAGES and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            values.append(value)
    finally:
        consumer.close()
    return values


def test_confluent_consumer_in_a_followers_rack_is_served_by_that_follower(racks3: MockCluster) -> None:
    topic = racks3.create_topic("nearby", partitions=1, replication_factor=3)
    partition = topic.partitions[0]
    leader = partition.leader
    follower = next(r for r in partition.replicas if r != leader)
    first = racks3.brokers[0].node_id

    admin = AdminClient({"bootstrap.servers": racks3.bootstrap_servers})
    cluster = admin.describe_cluster(request_timeout=10).result(timeout=30)  # DescribeCluster
    assert {node.id: node.rack for node in cluster.nodes} == {first + i: f"az-{i}" for i in range(3)}
    description = admin.describe_topics(TopicCollection(["nearby"]), request_timeout=10)["nearby"]
    replicas = description.result(timeout=30).partitions[0].replicas  # Metadata
    assert {node.id: node.rack for node in replicas} == {first + i: f"az-{i}" for i in range(3)}
    del admin

    values = produce_and_consume(racks3, "nearby", rack=f"az-{follower - first}")
    assert values == [f"m{i}".encode() for i in range(MESSAGES)]

    fetches = recorded_fetches(racks3)
    served: dict[int, set[int]] = {leader: set(), follower: set()}
    for broker, result in fetches:
        served.setdefault(broker, set()).update(offsets_in(result["records"]))
    # The leader named the follower and returned no records; the follower returned them all.
    assert {r["preferred_read_replica"] for b, r in fetches if b == leader} == {follower}
    assert served[leader] == set()
    assert served[follower] == set(range(MESSAGES))
    assert {r["preferred_read_replica"] for b, r in fetches if b == follower} == {-1}
    assert {r["error_code"] for _, r in fetches} == {NONE}


def test_without_a_replica_selector_the_leader_serves_a_rack_aware_consumer() -> None:
    with rack_cluster(selector=None) as cluster:
        topic = cluster.create_topic("local", partitions=1, replication_factor=3)
        partition = topic.partitions[0]
        follower = next(r for r in partition.replicas if r != partition.leader)
        rack = f"az-{follower - cluster.brokers[0].node_id}"
        assert produce_and_consume(cluster, "local", rack) == [f"m{i}".encode() for i in range(MESSAGES)]
        fetches = recorded_fetches(cluster)
        assert {broker for broker, _ in fetches} == {partition.leader}
        assert {r["preferred_read_replica"] for _, r in fetches} == {-1}
        assert set().union(*(offsets_in(r["records"]) for _, r in fetches)) == set(range(MESSAGES))


# -- raw frames ------------------------------------------------------------------------
FetchTopic = FetchRequest.FetchTopic
FetchPartition = FetchTopic.FetchPartition
TopicData = ProduceRequest.TopicProduceData


def connect(cluster: MockCluster, node_id: int) -> socket.socket:
    endpoint = cluster.broker(node_id).advertised_endpoint("PLAINTEXT")
    return socket.create_connection((endpoint.host, endpoint.port), timeout=60)


def produce(cluster: MockCluster, topic: Topic, count: int) -> None:
    """`count` records in one batch, written through the partition's leader (acks=all)."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for i in range(count):
        builder.append(timestamp=1_700_000_000_000, key=None, value=f"r{i}".encode())
    builder.close()
    data = TopicData.PartitionProduceData(index=0, records=bytes(builder.buffer()))
    request = ProduceRequest[9](
        transactional_id=None,
        acks=-1,
        timeout_ms=5000,
        topic_data=[TopicData(name=topic.name, partition_data=[data])],
    )
    with connect(cluster, topic.partitions[0].leader) as sock:
        response = round_trip(sock, request, 1, "producer")
    assert response.responses[0].partition_responses[0].error_code == NONE


def fetch(
    cluster: MockCluster,
    node_id: int,
    topic: Topic,
    *,
    version: int = 12,
    offset: int = 0,
    rack: str = "",
    replica_id: int = -1,
    epoch: int = -1,
    max_wait_ms: int = 0,
) -> Any:
    """One Fetch of partition 0 sent to broker `node_id`; its partition result."""
    wanted = FetchPartition(
        partition=0, current_leader_epoch=epoch, fetch_offset=offset, partition_max_bytes=1 << 20
    )
    fields: dict[str, Any] = {
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "topics": [FetchTopic(topic=topic.name, topic_id=topic.topic_id, partitions=[wanted])],
    }
    if version >= 15:
        fields["replica_state"] = FetchRequest.ReplicaState(replica_id=replica_id, replica_epoch=-1)
    else:
        fields["replica_id"] = replica_id
    if version >= 11:
        fields["rack_id"] = rack
    if version >= 7:
        fields.update(session_id=0, session_epoch=-1)
    with connect(cluster, node_id) as sock:
        response = round_trip(sock, FetchRequest[version](**fields), 7, "raw-fetcher")
    [topic_result] = response.responses
    [result] = topic_result.partitions
    return result


def led_by(cluster: MockCluster, topic: Topic, node_id: int) -> Topic:
    """`topic` with its partition 0 led by `node_id` (a leader election when needed)."""
    if topic.partitions[0].leader != node_id:
        cluster.move_leader(topic.name, 0, node_id)
    return topic


@pytest.mark.parametrize("version", [11, 12, 13, 15, 17])
def test_leader_names_the_preferred_read_replica(racks3: MockCluster, version: int) -> None:
    first = racks3.brokers[0].node_id
    topic = led_by(racks3, racks3.create_topic("named", partitions=1, replication_factor=3), first)
    produce(racks3, topic, 5)
    for rack, preferred in [
        ("az-1", first + 1),
        ("az-2", first + 2),
        ("az-0", -1),
        ("elsewhere", -1),
        ("", -1),
    ]:
        result = fetch(racks3, first, topic, version=version, rack=rack, max_wait_ms=60_000)
        assert (result.error_code, result.preferred_read_replica) == (NONE, preferred)
        # Offsets as the leader knows them; records only when the leader itself serves.
        assert (result.high_watermark, result.last_stable_offset, result.log_start_offset) == (5, 5, 0)
        assert offsets_in(result.records) == ([] if preferred >= 0 else [0, 1, 2, 3, 4])


def test_preferred_read_replica_ties_and_the_isr() -> None:
    with rack_cluster(racks="a,b,b") as cluster:
        first = cluster.brokers[0].node_id
        topic = led_by(cluster, cluster.create_topic("tied", partitions=1, replication_factor=3), first)
        produce(cluster, topic, 3)
        # Two followers in rack b, equally caught up: the higher broker id.
        assert fetch(cluster, first, topic, rack="b").preferred_read_replica == first + 2
        # A fetch offset outside the log: only the leader is offered, and it answers.
        out_of_range = fetch(cluster, first, topic, rack="b", offset=4)
        assert (out_of_range.error_code, out_of_range.preferred_read_replica) == (OFFSET_OUT_OF_RANGE, -1)
        # A stopped follower leaves the ISR and is no longer offered.
        cluster.stop_broker(first + 2)
        assert fetch(cluster, first, topic, rack="b").preferred_read_replica == first + 1
        cluster.stop_broker(first + 1)
        result = fetch(cluster, first, topic, rack="b")
        assert (result.preferred_read_replica, offsets_in(result.records)) == (-1, [0, 1, 2])


def test_leader_replica_selector_never_names_a_follower() -> None:
    with rack_cluster(selector=LEADER_ONLY) as cluster:
        first = cluster.brokers[0].node_id
        topic = led_by(cluster, cluster.create_topic("lead", partitions=1, replication_factor=3), first)
        produce(cluster, topic, 2)
        result = fetch(cluster, first, topic, rack="az-1")
        assert (result.preferred_read_replica, offsets_in(result.records)) == (-1, [0, 1])


@pytest.mark.parametrize("selector", [RACK_AWARE, None])
def test_follower_serves_consumer_fetches_from_v11(selector: str | None) -> None:
    """FetchParams.fetchOnlyLeader: a consumer's fetch carries client metadata from v11 on,
    so a follower serves it whether or not a selector sent the consumer there."""
    with rack_cluster(selector=selector) as cluster:
        first = cluster.brokers[0].node_id
        topic = led_by(cluster, cluster.create_topic("spread", partitions=1, replication_factor=3), first)
        produce(cluster, topic, 4)
        follower = first + 1
        for version in (11, 12, 13, 15, 16, 17, 18):
            result = fetch(cluster, follower, topic, version=version, rack="az-1")
            assert (result.error_code, result.preferred_read_replica) == (NONE, -1)
            assert offsets_in(result.records) == [0, 1, 2, 3]
        for version in (4, 7, 9, 10):  # no client metadata: the leader only
            result = fetch(cluster, follower, topic, version=version)
            assert (result.error_code, offsets_in(result.records)) == (NOT_LEADER_OR_FOLLOWER, [])
        for version in (11, 15):  # a replica's (broker's) fetch: the leader only
            assert (
                fetch(cluster, follower, topic, version=version, replica_id=2).error_code
                == NOT_LEADER_OR_FOLLOWER
            )


def test_follower_fetch_checks_the_leader_epoch_first() -> None:
    with rack_cluster() as cluster:
        first = cluster.brokers[0].node_id
        topic = cluster.create_topic("epochs", partitions=1, replication_factor=3)
        led_by(cluster, topic, first + 1)
        led_by(cluster, topic, first)  # two elections: epoch 2 or more
        epoch = topic.partitions[0].leader_epoch
        assert epoch >= 2
        follower = first + 2
        assert fetch(cluster, follower, topic, epoch=epoch).error_code == NONE
        assert fetch(cluster, follower, topic, epoch=epoch - 1).error_code == FENCED_LEADER_EPOCH
        assert fetch(cluster, follower, topic, epoch=epoch + 1).error_code == UNKNOWN_LEADER_EPOCH
        # Partition.localLogWithEpochOrThrow: the epoch before fetchOnlyLeader, at v10 too
        assert fetch(cluster, follower, topic, version=10, epoch=epoch - 1).error_code == FENCED_LEADER_EPOCH
        assert fetch(cluster, follower, topic, version=10, epoch=epoch).error_code == NOT_LEADER_OR_FOLLOWER


def test_broker_without_a_replica_is_not_leader_or_follower(racks3: MockCluster) -> None:
    first = racks3.brokers[0].node_id
    topic = racks3.create_topic("pair", partitions=1, replication_factor=2)
    outsider = next(b.node_id for b in racks3.brokers if b.node_id not in topic.partitions[0].replicas)
    for version in (10, 12, 17):
        result = fetch(racks3, outsider, topic, version=version, rack=f"az-{outsider - first}")
        assert (result.error_code, result.preferred_read_replica) == (NOT_LEADER_OR_FOLLOWER, -1)


def test_follower_reads_stop_at_the_high_watermark(racks3: MockCluster) -> None:
    first = racks3.brokers[0].node_id
    topic = led_by(racks3, racks3.create_topic("bounded", partitions=1, replication_factor=3), first)
    follower = first + 1
    produce(racks3, topic, 6)
    high_watermark = topic.partitions[0].log.high_watermark
    assert high_watermark == 6
    result = fetch(racks3, follower, topic, offset=2)
    assert result.high_watermark == high_watermark
    assert offsets_in(result.records) == [0, 1, 2, 3, 4, 5]  # the whole batch holding offset 2, no more
    at_end = fetch(racks3, follower, topic, offset=high_watermark)
    assert (at_end.error_code, offsets_in(at_end.records)) == (NONE, [])
    past = fetch(racks3, follower, topic, offset=high_watermark + 1)
    # an error carries no offsets (-1), as Kafka's ReplicaManager.createLogReadResult
    assert (past.error_code, past.high_watermark) == (OFFSET_OUT_OF_RANGE, -1)

    # A long poll on the follower at the high watermark returns what is appended next.
    answered: list[Any] = []
    waiting = threading.Thread(
        target=lambda: answered.append(fetch(racks3, follower, topic, offset=6, max_wait_ms=60_000))
    )
    waiting.start()
    produce(racks3, topic, 2)
    waiting.join()
    [woken] = answered
    assert (woken.error_code, woken.high_watermark, offsets_in(woken.records)) == (NONE, 8, [6, 7])
