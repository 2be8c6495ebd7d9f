"""Transactions through real clients: commit, abort, read_committed against
read_uncommitted, exactly-once consume-transform-produce across a producer crash,
fencing and the coordinator's timeout aborts."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpPartition

from broker import MockCluster
from tests.conftest import FAST


@pytest.fixture
def txn_cluster() -> Iterator[MockCluster]:
    with MockCluster(
        brokers=3, config={**FAST, "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"}
    ) as cluster:
        yield cluster


def _transactional(cluster: MockCluster, transactional_id: str, **config: object) -> Producer:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id, **config}
    )
    producer.init_transactions(10)
    return producer


def _read(
    cluster: MockCluster, topic: str, isolation: str, expected: int, partitions: int = 1
) -> list[bytes]:
    """Values from the start of `topic`, stopping after `expected` or when nothing
    more comes (the end is known from the offsets the isolation level allows)."""
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, isolation_level=isolation, consumer_timeout_ms=1500
    )
    assigned = [KpPartition(topic, p) for p in range(partitions)]
    consumer.assign(assigned)
    consumer.seek_to_beginning()
    values = []
    for record in consumer:
        values.append(record.value)
        if len(values) >= expected:
            break
    consumer.close()
    return values


# -- confluent-kafka -----------------------------------------------------------------------
def test_commit_and_abort_seen_by_each_isolation_level(txn_cluster: MockCluster) -> None:
    txn_cluster.create_topic("orders")
    producer = _transactional(txn_cluster, "orders-writer")
    producer.begin_transaction()
    producer.produce("orders", b"committed-1")
    producer.commit_transaction(10)
    producer.begin_transaction()
    producer.produce("orders", b"aborted")
    producer.flush(10)  # sent before the abort (librdkafka purges what is unsent)
    producer.abort_transaction(10)
    producer.begin_transaction()
    producer.produce("orders", b"committed-2")
    producer.commit_transaction(10)
    assert _read(txn_cluster, "orders", "read_committed", 3) == [b"committed-1", b"committed-2"]
    assert _read(txn_cluster, "orders", "read_uncommitted", 3) == [b"committed-1", b"aborted", b"committed-2"]
    log = txn_cluster.state.topics["orders"].partitions[0].log
    assert log.log_end_offset == 6  # three records, three markers


def test_confluent_read_committed_consumer_skips_aborted_records(txn_cluster: MockCluster) -> None:
    txn_cluster.create_topic("mixed")
    producer = _transactional(txn_cluster, "mixed-writer")
    for index in range(6):
        producer.begin_transaction()
        producer.produce("mixed", b"%d" % index)
        producer.flush(10)
        if index % 2:
            producer.abort_transaction(10)
        else:
            producer.commit_transaction(10)
    consumer = Consumer(
        {
            "bootstrap.servers": txn_cluster.bootstrap_servers,
            "group.id": "mixed-readers",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe(["mixed"])
    seen: list[bytes] = []
    deadline = time.monotonic() + 15
    while len(seen) < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            seen.append(message.value())
    extra = consumer.poll(1.0)
    consumer.close()
    assert seen == [b"0", b"2", b"4"]
    assert extra is None or extra.error() is not None


def test_abort_retry_commit(txn_cluster: MockCluster) -> None:
    """confluent-kafka-python's test_abort_retry_commit_transaction, in spirit."""
    txn_cluster.create_topic("retried")
    producer = _transactional(txn_cluster, "retrier")
    producer.begin_transaction()
    producer.produce("retried", b"first try")
    producer.flush(10)
    producer.abort_transaction(10)
    producer.begin_transaction()
    producer.produce("retried", b"second try")
    producer.commit_transaction(10)
    assert _read(txn_cluster, "retried", "read_committed", 2) == [b"second try"]


def test_exactly_once_across_a_producer_crash(txn_cluster: MockCluster) -> None:
    """Consume-transform-produce with send_offsets_to_transaction. The first worker
    processes a batch, commits, then dies mid-transaction; a new worker with the same
    transactional id fences it (its open transaction is aborted) and resumes from the
    committed offsets: every input appears exactly once in the output."""
    txn_cluster.create_topic("input")
    txn_cluster.create_topic("output")
    source = Producer({"bootstrap.servers": txn_cluster.bootstrap_servers})
    for index in range(10):
        source.produce("input", b"%d" % index)
    assert source.flush(10) == 0

    def worker(limit: int, commit_last: bool) -> Producer:
        consumer = Consumer(
            {
                "bootstrap.servers": txn_cluster.bootstrap_servers,
                "group.id": "transformers",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        consumer.subscribe(["input"])
        producer = _transactional(txn_cluster, "transformer")
        done = 0
        deadline = time.monotonic() + 20
        while done < limit and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error():
                continue
            producer.begin_transaction()
            producer.produce("output", message.value() * 2)
            producer.send_offsets_to_transaction(
                [TopicPartition("input", message.partition(), message.offset() + 1)],
                consumer.consumer_group_metadata(),
            )
            done += 1
            if done == limit and not commit_last:
                producer.flush(10)  # the crash: sent, never committed
                break
            producer.commit_transaction(10)
        consumer.close()
        return producer

    crashed = worker(limit=4, commit_last=False)  # commits 3, leaves the 4th open
    worker(limit=7, commit_last=True)  # resumes at input offset 3
    output = _read(txn_cluster, "output", "read_committed", 11)
    assert sorted(output) == sorted(b"%d" % i * 2 for i in range(10))
    with pytest.raises(KafkaException) as fenced:
        crashed.commit_transaction(10)
    assert fenced.value.args[0].code() == KafkaError._FENCED


def test_a_new_producer_fences_the_old_one(txn_cluster: MockCluster) -> None:
    txn_cluster.create_topic("fenced")
    old = _transactional(txn_cluster, "single-writer")
    _transactional(txn_cluster, "single-writer")
    old.begin_transaction()
    old.produce("fenced", b"from the past")
    with pytest.raises(KafkaException) as fenced:
        old.commit_transaction(10)
    assert fenced.value.args[0].fatal()
    assert _read(txn_cluster, "fenced", "read_committed", 1) == []


def test_the_coordinator_aborts_a_transaction_past_its_timeout(txn_cluster: MockCluster) -> None:
    txn_cluster.create_topic("hung")
    producer = _transactional(txn_cluster, "hanger", **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    producer.produce("hung", b"never committed")
    producer.flush(10)
    txn = txn_cluster.transactions.describe("hanger")
    assert txn is not None and txn.state == "Ongoing"
    deadline = time.monotonic() + 10
    while txn.state == "Ongoing" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert txn.state == "CompleteAbort"
    with pytest.raises(KafkaException) as fenced:
        producer.commit_transaction(10)
    assert fenced.value.args[0].code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED)
    assert _read(txn_cluster, "hung", "read_uncommitted", 1) == [b"never committed"]
    assert _read(txn_cluster, "hung", "read_committed", 1) == []


# -- kafka-python and aiokafka ---------------------------------------------------------------
def test_kafka_python_commit_and_abort(txn_cluster: MockCluster) -> None:
    txn_cluster.create_topic("kp", partitions=2)
    producer = KafkaProducer(bootstrap_servers=txn_cluster.bootstrap_servers, transactional_id="kp-writer")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("kp", b"kept", partition=0)
    producer.send("kp", b"kept too", partition=1)
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send("kp", b"dropped", partition=1).get(timeout=10)
    producer.abort_transaction()
    producer.close()
    assert sorted(_read(txn_cluster, "kp", "read_committed", 3, partitions=2)) == [b"kept", b"kept too"]
    assert sorted(_read(txn_cluster, "kp", "read_uncommitted", 3, partitions=2)) == [
        b"dropped",
        b"kept",
        b"kept too",
    ]


async def test_aiokafka_commit_and_abort(cluster: MockCluster) -> None:
    cluster.create_topic("aio")
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="aio-writer")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait("aio", b"committed", partition=0)
        await producer.begin_transaction()
        await producer.send_and_wait("aio", b"aborted", partition=0)
        await producer.abort_transaction()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        "aio",
        bootstrap_servers=cluster.bootstrap_servers,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        batch = await consumer.getmany(timeout_ms=3000)
    finally:
        await consumer.stop()
    assert [r.value for records in batch.values() for r in records] == [b"committed"]


def test_kafka_python_sends_offsets_by_group_id_while_the_group_is_active(txn_cluster: MockCluster) -> None:
    """The group-id form of send_offsets_to_transaction (no member, generation -1) is
    accepted for an active group, as Kafka accepts transactional commits."""
    from kafka.structs import OffsetAndMetadata

    txn_cluster.create_topic("consumed")
    consumer = KafkaConsumer(
        "consumed", bootstrap_servers=txn_cluster.bootstrap_servers, group_id="busy-readers"
    )
    consumer.poll(timeout_ms=3000)  # joined: the group is Stable
    producer = KafkaProducer(bootstrap_servers=txn_cluster.bootstrap_servers, transactional_id="by-group-id")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send_offsets_to_transaction(
        {KpPartition("consumed", 0): OffsetAndMetadata(5, "", -1)}, "busy-readers"
    )
    producer.commit_transaction()
    producer.close()
    assert consumer.committed(KpPartition("consumed", 0)) == 5
    consumer.close()
