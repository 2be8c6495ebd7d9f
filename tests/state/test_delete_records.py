"""DeleteRecords (21) through confluent-kafka's admin client (the API its
test_delete_records* use): the log start moves, consumers start there, ListOffsets'
earliest follows, and Kafka's refusals (beyond the high watermark, compact-only topics)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from broker import MockCluster
from protocol.errors import ErrorCode


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1) as running:
        yield running


def produce(cluster: MockCluster, topic: str, count: int, one_batch: bool = False) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 100 if one_batch else 0}
    )
    for i in range(count):
        producer.produce(topic, key=f"k{i}", value=str(i).encode(), partition=0)
        if not one_batch:
            producer.flush(10)
    assert producer.flush(10) == 0


def delete(admin: AdminClient, topic: str, offset: int) -> int:
    [future] = admin.delete_records([TopicPartition(topic, 0, offset)]).values()
    return int(future.result(10).low_watermark)


def earliest(admin: AdminClient, topic: str) -> int:
    [future] = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()}).values()
    return int(future.result(10).offset)


def read_all(cluster: MockCluster, topic: str) -> list[int]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"read-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    values: list[int] = []
    try:
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(int(message.value()))
            elif values and message is None:
                break
    finally:
        consumer.close()
    return values


def test_records_before_the_new_log_start_are_gone(cluster: MockCluster) -> None:
    cluster.create_topic("trimmed", 1)
    produce(cluster, "trimmed", 10)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    assert delete(admin, "trimmed", 4) == 4
    assert delete(admin, "trimmed", 2) == 4  # the log start never moves back
    assert earliest(admin, "trimmed") == 4
    assert read_all(cluster, "trimmed") == [4, 5, 6, 7, 8, 9]
    log = cluster.state.topics["trimmed"].partitions[0].log
    assert log.read(3, 1 << 20) != b"" and log.log_start_offset == 4
    assert delete(admin, "trimmed", -1) == 10  # OFFSET_END: up to the high watermark


def test_the_log_start_may_fall_inside_a_batch(cluster: MockCluster) -> None:
    cluster.create_topic("batched", 1)
    produce(cluster, "batched", 10, one_batch=True)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    assert delete(admin, "batched", 5) == 5
    assert read_all(cluster, "batched") == [5, 6, 7, 8, 9]


def test_refusals(cluster: MockCluster) -> None:
    cluster.create_topic("short", 1)
    cluster.create_topic("compacted", 1, config={"cleanup.policy": "compact"})
    produce(cluster, "short", 3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    with pytest.raises(KafkaException) as beyond:
        delete(admin, "short", 4)
    assert beyond.value.args[0].code() == ErrorCode.OFFSET_OUT_OF_RANGE
    with pytest.raises(KafkaException) as compacted:
        delete(admin, "compacted", 0)
    assert compacted.value.args[0].code() == ErrorCode.POLICY_VIOLATION
