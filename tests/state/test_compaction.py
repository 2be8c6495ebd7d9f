"""cleanup.policy=compact as Kafka applies it: keyless records refused at produce with
KIP-467 record errors, and the log cleaner keeping the latest record per key, removing
tombstones after delete.retention.ms, never touching the active segment."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, TopicPartition
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker import MockCluster
from broker.state.compaction import CompactionConfig
from broker.state.log import PartitionLog
from broker.state.records import decode_records, split_batches
from tests.conftest import FAST
from tests.support.wire import round_trip

COMPACTED = {
    "cleanup.policy": "compact",
    "segment.ms": "1",  # each later batch rolls the segment (timestamps are milliseconds apart)
    "min.cleanable.dirty.ratio": "0.01",
}


@pytest.fixture
def cleaning_cluster() -> Iterator[MockCluster]:
    with MockCluster(config={**FAST, "log.cleaner.backoff.ms": "50"}) as cluster:
        yield cluster


def _read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from the log start to the end."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=1000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    found = []
    for record in consumer:
        found.append((record.offset, record.key, record.value))
        if record.offset >= end - 1:
            break
    consumer.close()
    return found


def _eventually(read: callable, expected: object, seconds: float = 15) -> None:  # type: ignore[valid-type]
    deadline = time.monotonic() + seconds
    while (got := read()) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert got == expected


def _produce(
    bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]], **config: object
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **config})
    errors: list[object] = []
    for key, value in records:
        producer.produce(topic, value, key, partition=0, on_delivery=lambda err, _m: errors.append(err))
        producer.flush(10)  # one batch per record: the segments roll between them
        time.sleep(0.005)
    assert errors == [None] * len(records)


# -- produce -----------------------------------------------------------------------------
def test_keyless_records_are_refused_with_record_errors(sync_cluster: MockCluster) -> None:
    """LogValidator: INVALID_RECORD for the partition, one record error per keyless
    record (its index in the batch), Kafka's message; nothing of the batch is appended."""
    sync_cluster.create_topic("keys-only", config={"cleanup.policy": "compact"})
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 2**20)
    for index, key in enumerate([b"a", None, b"c", None]):
        builder.append(index, 1000, key, b"v", [])
    request = ProduceRequest[8](
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[("keys-only", [(0, bytes(builder.build()))])],
    )
    host, port = sync_cluster.bootstrap_servers.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        response = round_trip(sock, request, 1, "raw")
    partition = response.responses[0].partition_responses[0]
    text = "Compacted topic cannot accept message without key in topic partition keys-only-0"
    assert partition.error_code == KafkaError.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in partition.record_errors] == [
        (1, text),
        (3, text),
    ]
    assert partition.error_message == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the "
        f"first three errors at most: [RecordError(batchIndex=1, message='{text}'), "
        f"RecordError(batchIndex=3, message='{text}')]"
    )
    assert sync_cluster.state.topics["keys-only"].partitions[0].log.log_end_offset == 0


def test_librdkafka_fails_keyless_records_and_the_rest_of_their_batch(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("keyed", config={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": sync_cluster.bootstrap_servers, "linger.ms": 200, "retries": 0})
    outcome: dict[bytes, int | None] = {}

    def delivered(err: KafkaError | None, message: object) -> None:
        outcome[message.value()] = err.code() if err is not None else None  # type: ignore[attr-defined]

    producer.produce("keyed", b"with-key", b"k", partition=0, on_delivery=delivered)
    producer.produce("keyed", b"without-key", partition=0, on_delivery=delivered)
    producer.flush(10)
    producer.produce("keyed", b"alone", b"k", partition=0, on_delivery=delivered)
    producer.flush(10)
    # The whole batch fails; librdkafka 2.16 reports INVALID_RECORD for each of its messages.
    assert outcome[b"without-key"] == KafkaError.INVALID_RECORD
    assert outcome[b"with-key"] in (KafkaError.INVALID_RECORD, KafkaError._INVALID_DIFFERENT_RECORD)
    assert outcome[b"alone"] is None
    assert sync_cluster.state.topics["keyed"].partitions[0].log.log_end_offset == 1


# -- the cleaner -----------------------------------------------------------------------
def test_the_cleaner_keeps_the_latest_record_per_key(cleaning_cluster: MockCluster) -> None:
    cleaning_cluster.create_topic("latest", config={**COMPACTED, "delete.retention.ms": "3600000"})
    bootstrap = cleaning_cluster.bootstrap_servers
    _produce(
        bootstrap,
        "latest",
        [
            (b"a", b"a1"),
            (b"b", b"b1"),
            (b"a", b"a2"),
            (b"c", b"c1"),
            (b"b", None),
            (b"a", b"a3"),
            (b"d", b"d1"),
        ],
    )
    # Offsets stay; "d1" is in the active segment, b's tombstone waits out delete.retention.ms.
    expected = [(3, b"c", b"c1"), (4, b"b", None), (5, b"a", b"a3"), (6, b"d", b"d1")]
    _eventually(lambda: _read_all(bootstrap, "latest"), expected)
    log = cleaning_cluster.state.topics["latest"].partitions[0].log
    assert (log.log_start_offset, log.log_end_offset) == (0, 7)  # compaction moves neither


def test_tombstones_go_after_delete_retention_ms(cleaning_cluster: MockCluster) -> None:
    cleaning_cluster.create_topic("tombstones", config={**COMPACTED, "delete.retention.ms": "0"})
    bootstrap = cleaning_cluster.bootstrap_servers
    _produce(bootstrap, "tombstones", [(b"x", b"x1"), (b"y", b"y1"), (b"x", None), (b"z", b"z1")])
    _eventually(lambda: _read_all(bootstrap, "tombstones"), [(1, b"y", b"y1"), (3, b"z", b"z1")])


def test_an_idempotent_producer_goes_on_after_its_batches_are_compacted(
    cleaning_cluster: MockCluster,
) -> None:
    """Compaction rewrites the producer's batches keeping their sequence numbers, so the
    producer's next batch is in sequence; the active segment's records are not in the
    cleaner's offset map, so "2" survives until the segment holding "3" rolls."""
    cleaning_cluster.create_topic("idempotent", config={**COMPACTED, "delete.retention.ms": "0"})
    bootstrap = cleaning_cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
    errors: list[object] = []
    for value in (b"1", b"2", b"3"):
        producer.produce(
            "idempotent", value, b"same", partition=0, on_delivery=lambda e, _m: errors.append(e)
        )
        producer.flush(10)
        time.sleep(0.005)
    _eventually(lambda: _read_all(bootstrap, "idempotent"), [(1, b"same", b"2"), (2, b"same", b"3")])
    producer.produce("idempotent", b"4", b"same", partition=0, on_delivery=lambda e, _m: errors.append(e))
    producer.flush(10)
    assert errors == [None] * 4
    _eventually(lambda: _read_all(bootstrap, "idempotent"), [(2, b"same", b"3"), (3, b"same", b"4")])


def test_compact_without_delete_ignores_retention(sync_cluster: MockCluster) -> None:
    """retention.ms and retention.bytes apply only when cleanup.policy includes delete."""
    sync_cluster.create_topic("kept", config={"cleanup.policy": "compact", "retention.ms": "1"})
    _produce(sync_cluster.bootstrap_servers, "kept", [(b"k", b"old")])
    time.sleep(0.05)
    assert _read_all(sync_cluster.bootstrap_servers, "kept") == [(0, b"k", b"old")]


# -- the log, directly -----------------------------------------------------------------
def _batch(*records: tuple[bytes | None, bytes | None], timestamp: int = 1000) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 2**20)
    for offset, (key, value) in enumerate(records):
        builder.append(offset, timestamp + offset, key, value, [])
    return bytes(builder.build())


def test_the_active_segment_and_young_records_are_never_cleaned() -> None:
    log = PartitionLog()
    log.compaction = CompactionConfig(min_cleanable_ratio=0.0, segment_ms=10, min_compaction_lag_ms=5000)
    log.append(split_batches(_batch((b"k", b"1"))))
    assert log.clean(now_ms=10**6) == 0  # everything is in the active segment
    log.append(split_batches(_batch((b"k", b"2"), timestamp=2000)))  # rolls: "1" is cleanable
    assert log.clean(now_ms=2001) == 0  # but younger than min.compaction.lag.ms
    assert log.clean(now_ms=10**6) == 0  # "2", the only newer record of k, is in the active segment
    log.append(split_batches(_batch((b"k", b"3"), timestamp=3000)))
    assert log.clean(now_ms=10**6) == 1
    assert log.log_end_offset == 3 and log.read(0, 10**6).count(b"\x02k") == 2


def test_a_producers_last_batch_stays_when_emptied() -> None:
    """Kafka keeps an emptied batch that is its producer's last (RETAIN_EMPTY); others go."""
    log = PartitionLog()
    log.compaction = CompactionConfig(min_cleanable_ratio=0.0, segment_ms=10)
    idempotent = DefaultRecordBatchBuilder(2, 0, False, 42, 0, 0, 2**20)
    idempotent.append(0, 1000, b"k", b"from-42", [])
    log.append(split_batches(bytes(idempotent.build())))
    log.append(split_batches(_batch((b"k", b"plain"), timestamp=2000)))
    log.append(split_batches(_batch((b"k", b"newest"), timestamp=3000)))
    assert log.clean(now_ms=10**6) == 1
    served = split_batches(log.read(0, 10**6))
    assert [b.record_count for b in served] == [0, 1, 1]  # 42's batch, empty; "plain"; "newest"
    assert served[0].producer_id == 42 and served[0].last_offset_delta == 0


def _txn_batch(producer_id: int, *records: tuple[bytes, bytes], timestamp: int = 1000) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, True, producer_id, 0, 0, 2**20)
    for offset, (key, value) in enumerate(records):
        builder.append(offset, timestamp + offset, key, value, [])
    return bytes(builder.build())


def test_the_cleaner_ignores_aborted_records_and_keeps_open_transactions() -> None:
    """An aborted value never shadows a committed one, aborted batches go, and nothing
    from the last stable offset on is cleaned (Kafka's cleaner stops at the LSO)."""
    log = PartitionLog()
    log.compaction = CompactionConfig(min_cleanable_ratio=0.0, segment_bytes=1)  # a segment per append
    log.append(split_batches(_txn_batch(7, (b"k", b"committed"))))
    log.append_marker(7, 0, True, 0, 0)  # offset 1
    log.append(split_batches(_txn_batch(8, (b"k", b"aborted"), timestamp=2000)))  # offset 2
    log.append_marker(8, 0, False, 0, 0)  # offset 3
    log.append(split_batches(_txn_batch(9, (b"k", b"open"), timestamp=3000)))  # offset 4, open
    log.append(split_batches(_batch((b"other", b"x"), timestamp=4000)))  # offset 5 rolls again
    assert log.last_stable_offset == 4
    assert log.clean(now_ms=10**6) == 1  # the aborted record; "committed" stays, "open" untouched
    values = [r.value for b in split_batches(log.read(0, 10**6)) for r in decode_records(b.data)]
    assert b"committed" in values and b"open" in values and b"aborted" not in values


def test_a_fetch_into_a_gap_left_by_compaction_gets_the_next_batch() -> None:
    log = PartitionLog()
    log.compaction = CompactionConfig(min_cleanable_ratio=0.0, segment_ms=10)
    log.append(split_batches(_batch((b"a", b"1"))))  # offset 0
    log.append(split_batches(_batch((b"b", b"1"), timestamp=2000)))  # offset 1: goes
    log.append(split_batches(_batch((b"b", b"2"), timestamp=3000)))  # offset 2
    log.append(split_batches(_batch((b"c", b"1"), timestamp=4000)))  # offset 3: active
    assert log.clean(now_ms=10**6) == 1
    (served,) = split_batches(log.read(1, 100))  # one batch: the one after the gap
    assert [r.value for r in decode_records(served.data)] == [b"2"]
