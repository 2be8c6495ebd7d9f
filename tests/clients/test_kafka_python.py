"""kafka-python 3 against the broker over TCP."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewPartitions, NewTopic
from kafka.errors import TopicAlreadyExistsError

from broker import MockCluster
from tests.workload import MESSAGES, check_consumed, message, stored_codecs


def produce(bootstrap: str, topic: str, numbers: range, **config: object) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    futures = [producer.send(topic, key=message(i)[0], value=message(i)[1]) for i in numbers]
    producer.flush(timeout=30)
    for future in futures:
        future.get(timeout=10)
    producer.close()


def consume(bootstrap: str, topic: str, group: str, count: int) -> dict[int, list[tuple[bytes, bytes]]]:
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    consumed: dict[int, list[tuple[bytes, bytes]]] = {}
    received = 0
    deadline = time.monotonic() + 60
    while received < count and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=500).items():
            consumed.setdefault(tp.partition, []).extend((r.key, r.value) for r in records)
            received += len(records)
    assert not any(consumer.poll(timeout_ms=300).values()), "more messages than produced"
    consumer.commit()
    consumer.close()
    return consumed


def test_produce_consume_commit_resume(sync_cluster: MockCluster) -> None:
    bootstrap = sync_cluster.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("orders", 3, 1)])
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("orders", 3, 1)], raise_errors=True)
    admin.close()
    produce(bootstrap, "orders", range(MESSAGES))
    consumed = consume(bootstrap, "orders", "billing", MESSAGES)
    assert sorted(consumed) == [0, 1, 2]
    check_consumed(consumed)
    produce(bootstrap, "orders", range(MESSAGES, MESSAGES + 500))
    check_consumed(consume(bootstrap, "orders", "billing", 500), count=500, first=MESSAGES)


def test_gzip_batches_pass_through(sync_cluster: MockCluster) -> None:
    bootstrap = sync_cluster.bootstrap_servers
    KafkaAdminClient(bootstrap_servers=bootstrap).create_topics([NewTopic("zipped", 3, 1)])
    produce(bootstrap, "zipped", range(2000), compression_type="gzip")
    check_consumed(consume(bootstrap, "zipped", "g", 2000), count=2000)
    # The producer's gzip batches, untouched (clients send a batch plain when gzip does not shrink it).
    assert 1 in stored_codecs(sync_cluster, "zipped") <= {0, 1}


def test_admin_topic_lifecycle(sync_cluster: MockCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=sync_cluster.bootstrap_servers)
    admin.create_topics([NewTopic("grow", 2, 1, topic_configs={"retention.bytes": "1000"})])
    admin.create_partitions({"grow": NewPartitions(total_count=5)})
    assert len(sync_cluster.state.topics["grow"].partitions) == 5
    assert sync_cluster.state.topics["grow"].partitions[4].log.retention_bytes == 1000
    admin.delete_topics(["grow"])
    assert "grow" not in sync_cluster.state.topics
    admin.close()
