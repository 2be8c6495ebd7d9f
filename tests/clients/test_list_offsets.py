"""ListOffsets by timestamp and MAX_TIMESTAMP at record granularity, and the leader epoch
each batch was appended under, through confluent-kafka (librdkafka) and kafka-python.

Kafka answers the record: the first one at or after a timestamp, the first one holding
the largest timestamp (UnifiedLog.fetchOffsetByTimestamp), with the partitionLeaderEpoch
its batch got at append (LogValidator); batches keep that epoch across leader changes.
"""

from __future__ import annotations

import socket
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

from broker import MockCluster
from broker.state.records import split_batches
from tests.support.wire import encode_request, read_frame
from tests.workload import stored_codecs

BASE = 1_700_000_000_000
# ListOffsets' special timestamps
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4
LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -5, -6


def create_topic(bootstrap: str, name: str, replication: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, replication)]).values():
        future.result(timeout=10)


def produce_batch(bootstrap: str, topic: str, timestamps: list[int], **config: object) -> None:
    """One batch: one record per timestamp, values compressible so a codec really compresses."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000, **config})
    failures: list[object] = []
    for i, timestamp in enumerate(timestamps):
        producer.produce(
            topic,
            b"value-%d-" % i + b"x" * 300,
            partition=0,
            timestamp=timestamp,
            on_delivery=lambda err, _msg: err and failures.append(err),
        )
    assert producer.flush(30) == 0
    assert failures == []


def list_offsets(bootstrap: str, topic: str, spec: OffsetSpec) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch) from AdminClient.list_offsets."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)
    info = admin.list_offsets({tp: spec})[tp].result(timeout=10)
    return info.offset, info.timestamp, info.leader_epoch


def stored_batches(cluster: MockCluster, topic: str) -> int:
    log = cluster.state.topics[topic].partitions[0].log
    return cluster.on_loop(lambda: len(split_batches(log.read(0, 1 << 30))))


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_timestamps_answered_at_record_granularity(sync_cluster: MockCluster, codec: str) -> None:
    bootstrap = sync_cluster.bootstrap_servers
    topic = f"times-{codec}"
    create_topic(bootstrap, topic)
    produce_batch(bootstrap, topic, [BASE + 1000, BASE + 3000, BASE + 2000], **{"compression.type": codec})
    assert stored_batches(sync_cluster, topic) == 1  # the three records share one batch
    codec_id = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[codec]
    assert stored_codecs(sync_cluster, topic) == {codec_id}

    # confluent-kafka's AdminClient (the values confluent-kafka-python's test_list_offsets expects)
    assert list_offsets(bootstrap, topic, OffsetSpec.max_timestamp()) == (1, BASE + 3000, 0)
    assert list_offsets(bootstrap, topic, OffsetSpec.for_timestamp(BASE + 1500)) == (1, BASE + 3000, 0)
    assert list_offsets(bootstrap, topic, OffsetSpec.for_timestamp(BASE + 2500)) == (1, BASE + 3000, 0)
    assert list_offsets(bootstrap, topic, OffsetSpec.for_timestamp(BASE)) == (0, BASE + 1000, 0)
    assert list_offsets(bootstrap, topic, OffsetSpec.for_timestamp(BASE + 3001))[:2] == (-1, -1)
    assert list_offsets(bootstrap, topic, OffsetSpec.earliest()) == (0, -1, 0)
    assert list_offsets(bootstrap, topic, OffsetSpec.latest()) == (3, -1, 0)

    # librdkafka's consumer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "times"})
    try:
        found = consumer.offsets_for_times([TopicPartition(topic, 0, BASE + 1500)], timeout=10)
        assert [(tp.offset, tp.leader_epoch) for tp in found] == [(1, 0)]
        found = consumer.offsets_for_times([TopicPartition(topic, 0, BASE + 1000)], timeout=10)
        assert [tp.offset for tp in found] == [0]
    finally:
        consumer.close()

    # kafka-python's consumer
    kafka_consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tp = KafkaTopicPartition(topic, 0)
        found_kp = kafka_consumer.offsets_for_times({tp: BASE + 1500})[tp]
        assert (found_kp.offset, found_kp.timestamp, found_kp.leader_epoch) == (1, BASE + 3000, 0)
        assert kafka_consumer.offsets_for_times({tp: BASE + 3001})[tp] is None
    finally:
        kafka_consumer.close()


def test_max_timestamp_ties_answer_the_first_record(sync_cluster: MockCluster) -> None:
    bootstrap = sync_cluster.bootstrap_servers
    create_topic(bootstrap, "ties")
    produce_batch(bootstrap, "ties", [BASE + 10, BASE + 50, BASE + 50, BASE + 20])
    produce_batch(bootstrap, "ties", [BASE + 50, BASE + 30])
    assert stored_batches(sync_cluster, "ties") == 2
    assert list_offsets(bootstrap, "ties", OffsetSpec.max_timestamp()) == (1, BASE + 50, 0)
    assert list_offsets(bootstrap, "ties", OffsetSpec.for_timestamp(BASE + 40)) == (1, BASE + 50, 0)


def consumed_epochs(bootstrap: str, topic: str, count: int) -> list[tuple[int, int | None]]:
    """(offset, leader epoch) of every message, as librdkafka reads them from the batches."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[tuple[int, int | None]] = []
    deadline = time.monotonic() + 30
    try:
        while len(seen) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                seen.append((msg.offset(), msg.leader_epoch()))
    finally:
        consumer.close()
    return seen


def test_batches_keep_their_epoch_after_a_leader_move(sync_cluster3: MockCluster) -> None:
    bootstrap = sync_cluster3.bootstrap_servers
    create_topic(bootstrap, "epochs", replication=3)
    produce_batch(bootstrap, "epochs", [BASE + 100, BASE + 200])
    leader = sync_cluster3.on_loop(lambda: sync_cluster3.state.topics["epochs"].partitions[0].leader)
    moved = sync_cluster3.move_leader("epochs", 0, (leader + 1) % 3)
    assert moved.leader_epoch == 1
    produce_batch(bootstrap, "epochs", [BASE + 50, BASE + 300])

    # old batches are served with the epoch they were appended under, new ones with the new
    assert consumed_epochs(bootstrap, "epochs", 4) == [(0, 0), (1, 0), (2, 1), (3, 1)]
    # ListOffsets answers the epoch of the batch holding the record found...
    assert list_offsets(bootstrap, "epochs", OffsetSpec.for_timestamp(BASE + 150)) == (1, BASE + 200, 0)
    assert list_offsets(bootstrap, "epochs", OffsetSpec.for_timestamp(BASE + 250)) == (3, BASE + 300, 1)
    assert list_offsets(bootstrap, "epochs", OffsetSpec.max_timestamp()) == (3, BASE + 300, 1)
    # ...the earliest entry of the epoch cache for EARLIEST, the current epoch for LATEST
    assert list_offsets(bootstrap, "epochs", OffsetSpec.earliest()) == (0, -1, 0)
    assert list_offsets(bootstrap, "epochs", OffsetSpec.latest()) == (4, -1, 1)

    kafka_consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tp = KafkaTopicPartition("epochs", 0)
        found = kafka_consumer.offsets_for_times({tp: BASE + 150})[tp]
        assert (found.offset, found.timestamp, found.leader_epoch) == (1, BASE + 200, 0)
    finally:
        kafka_consumer.close()


def raw_list_offsets(
    cluster: MockCluster, topic: str, timestamp: int, version: int = 11
) -> tuple[int, int, int, int]:
    """(error, offset, timestamp, leader epoch) from a raw ListOffsets (v11 unless told) to
    the leader, for the special timestamps no client here sends."""
    leader = cluster.on_loop(lambda: cluster.state.topics[topic].partitions[0].leader)
    endpoint = next(b for b in cluster.brokers if b.node_id == leader).advertised_endpoint("PLAINTEXT")
    Topic = ListOffsetsRequest[version].ListOffsetsTopic
    request = ListOffsetsRequest[version](
        replica_id=-1,
        isolation_level=0,
        topics=[
            Topic(name=topic, partitions=[Topic.ListOffsetsPartition(partition_index=0, timestamp=timestamp)])
        ],
        **({"timeout_ms": 5000} if version >= 10 else {}),
    )
    with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as sock:
        sock.sendall(encode_request(request, 1, "list-offsets"))
        response = ListOffsetsResponse.decode(read_frame(sock), version=version, header=True)
    [result] = response.topics[0].partitions
    return result.error_code, result.offset, result.timestamp, result.leader_epoch


def test_special_timestamps_without_tiered_storage(sync_cluster3: MockCluster) -> None:
    bootstrap = sync_cluster3.bootstrap_servers
    create_topic(bootstrap, "specials", replication=3)
    for _ in range(2):
        leader = sync_cluster3.on_loop(lambda: sync_cluster3.state.topics["specials"].partitions[0].leader)
        sync_cluster3.move_leader("specials", 0, (leader + 1) % 3)
    # An empty log: the epoch cache holds the epoch the leader assigned at becoming leader.
    assert raw_list_offsets(sync_cluster3, "specials", EARLIEST) == (0, 0, -1, 2)
    assert raw_list_offsets(sync_cluster3, "specials", LATEST) == (0, 0, -1, 2)
    assert raw_list_offsets(sync_cluster3, "specials", MAX_TIMESTAMP) == (0, -1, -1, -1)
    assert raw_list_offsets(sync_cluster3, "specials", BASE) == (0, -1, -1, -1)
    produce_batch(bootstrap, "specials", [BASE + 1, BASE + 2])
    assert raw_list_offsets(sync_cluster3, "specials", EARLIEST_LOCAL) == (0, 0, -1, 2)
    # Nothing is tiered: Kafka answers -1/-1 with epoch -1 to these (UnifiedLog.fetchOffsetByTimestamp).
    assert raw_list_offsets(sync_cluster3, "specials", LATEST_TIERED) == (0, -1, -1, -1)
    assert raw_list_offsets(sync_cluster3, "specials", EARLIEST_PENDING_UPLOAD) == (0, -1, -1, -1)


UNSUPPORTED_VERSION = 35


def test_special_timestamps_need_their_version(sync_cluster: MockCluster) -> None:
    """As Kafka 4.4 answers: a special timestamp the request's version predates, and a
    negative timestamp that is no special one, get UNSUPPORTED_VERSION (offset, timestamp
    and epoch -1) rather than a lookup."""
    create_topic(sync_cluster.bootstrap_servers, "specials-versions")
    produce_batch(sync_cluster.bootstrap_servers, "specials-versions", [BASE + 1, BASE + 2])
    unsupported = (UNSUPPORTED_VERSION, -1, -1, -1)
    for timestamp, since in (
        (MAX_TIMESTAMP, 7),
        (EARLIEST_LOCAL, 8),
        (LATEST_TIERED, 9),
        (EARLIEST_PENDING_UPLOAD, 11),
    ):
        assert raw_list_offsets(sync_cluster, "specials-versions", timestamp, since - 1) == unsupported, (
            timestamp
        )
        assert raw_list_offsets(sync_cluster, "specials-versions", timestamp, since)[0] == 0, timestamp
    for version in (1, 11):
        assert raw_list_offsets(sync_cluster, "specials-versions", -7, version) == unsupported
    # the plain ones at every version (v1 has no leader epoch)
    assert raw_list_offsets(sync_cluster, "specials-versions", LATEST, 1)[:3] == (0, 2, -1)
    assert raw_list_offsets(sync_cluster, "specials-versions", EARLIEST, 1)[:3] == (0, 0, -1)
