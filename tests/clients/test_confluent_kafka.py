"""confluent-kafka (librdkafka) against the broker over TCP."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker import MockCluster
from tests.workload import MESSAGES, check_consumed, message, stored_codecs


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(timeout=10)


def produce(bootstrap: str, topic: str, numbers: range, **config: object) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    failures: list[object] = []
    for i in numbers:
        key, value = message(i)
        producer.produce(topic, value, key, on_delivery=lambda err, _msg: err and failures.append(err))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert failures == []


def consume(bootstrap: str, topic: str, group: str, count: int) -> dict[int, list[tuple[bytes, bytes]]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    consumed: dict[int, list[tuple[bytes, bytes]]] = {}
    deadline = time.monotonic() + 60
    received = 0
    while received < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        consumed.setdefault(msg.partition(), []).append((msg.key(), msg.value()))
        received += 1
    extra = consumer.poll(0.3)
    assert extra is None, "more messages than produced"
    consumer.commit(asynchronous=False)
    consumer.close()
    return consumed


def test_produce_consume_commit_resume(sync_cluster: MockCluster) -> None:
    bootstrap = sync_cluster.bootstrap_servers
    create_topic(bootstrap, "orders", 3)
    produce(bootstrap, "orders", range(MESSAGES))
    consumed = consume(bootstrap, "orders", "billing", MESSAGES)
    assert sorted(consumed) == [0, 1, 2]
    check_consumed(consumed)
    # A new consumer of the same group starts after the committed offsets.
    produce(bootstrap, "orders", range(MESSAGES, MESSAGES + 500))
    check_consumed(consume(bootstrap, "orders", "billing", 500), count=500, first=MESSAGES)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_pass_through(sync_cluster: MockCluster, codec: str) -> None:
    bootstrap = sync_cluster.bootstrap_servers
    create_topic(bootstrap, f"compressed-{codec}", 3)
    produce(bootstrap, f"compressed-{codec}", range(2000), **{"compression.type": codec})
    check_consumed(consume(bootstrap, f"compressed-{codec}", "g", 2000), count=2000)
    # The stored batches are the producer's, byte for byte: attributes still name the codec.
    codec_id = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[codec]
    assert codec_id in stored_codecs(sync_cluster, f"compressed-{codec}") <= {0, codec_id}


def test_idempotent_producer_no_duplicates(sync_cluster: MockCluster) -> None:
    bootstrap = sync_cluster.bootstrap_servers
    create_topic(bootstrap, "idem", 3)
    produce(bootstrap, "idem", range(MESSAGES), **{"enable.idempotence": True, "acks": "all"})
    check_consumed(consume(bootstrap, "idem", "g", MESSAGES))


def test_three_brokers_leaders_on_each(sync_cluster3: MockCluster) -> None:
    bootstrap = sync_cluster3.bootstrap_servers.split(",")[0]  # one bootstrap finds the rest
    create_topic(bootstrap, "spread", 6)
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    assert sorted(metadata.brokers) == [0, 1, 2]
    leaders = {p.id: p.leader for p in metadata.topics["spread"].partitions.values()}
    assert set(leaders.values()) == {0, 1, 2}
    produce(bootstrap, "spread", range(3000))
    for broker in sync_cluster3.brokers:
        led = [p for p in sync_cluster3.state.topics["spread"].partitions if p.leader == broker.node_id]
        assert led and all(p.log.log_end_offset > 0 for p in led)
    check_consumed(consume(bootstrap, "spread", "g", 3000), count=3000)


def test_unknown_topic_without_auto_create() -> None:
    with MockCluster(config={"auto.create.topics.enable": "false"}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "message.timeout.ms": 1500})
        errors: list[object] = []
        producer.produce("missing", b"x", on_delivery=lambda err, _msg: errors.append(err))
        producer.flush(10)
        assert len(errors) == 1 and errors[0] is not None
        assert "missing" not in cluster.state.topics


def test_list_offsets_by_position(sync_cluster: MockCluster) -> None:
    bootstrap = sync_cluster.bootstrap_servers
    create_topic(bootstrap, "offsets", 1)
    produce(bootstrap, "offsets", range(100))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "o"})
    low, high = consumer.get_watermark_offsets(TopicPartition("offsets", 0), timeout=10)
    assert (low, high) == (0, 100)
    with pytest.raises(KafkaException):
        consumer.get_watermark_offsets(TopicPartition("nope-not-here", 5), timeout=2)
    consumer.close()
