"""ListOffsets' timestamp lookups at record granularity, and per-batch leader epochs, on the
partition log directly (no sockets).

Kafka's answers, from its source: a timestamp lookup is the first batch whose max
timestamp is >= the target, then the first record inside it at or after the target
(LogSegment.findOffsetByTimestamp, FileRecords.searchForTimestamp); MAX_TIMESTAMP is the
first batch carrying the log's largest timestamp, then the first record with it
(UnifiedLog.fetchOffsetByTimestamp, RecordBatch.offsetOfMaxTimestamp); both answer the
partitionLeaderEpoch of that batch, written at append (LogValidator).
"""

from __future__ import annotations

import random
import struct

import pytest
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker.state.log import PartitionLog
from broker.state.records import split_batches

GZIP = 1
LOG_APPEND_TIME = 0x08


def batch(timestamps: list[int], codec: int = 0, value: bytes = b"v" * 200) -> bytes:
    """One v2 batch (kafka-python's builder), a record per timestamp."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for delta, timestamp in enumerate(timestamps):
        assert builder.append(delta, timestamp=timestamp, key=None, value=value, headers=[]) is not None
    built = bytes(builder.build())
    assert built[21 + 1] & 0x07 == codec  # attributes (int16) low byte: really compressed
    return built


def with_attributes(data: bytes, set_bits: int, max_timestamp: int | None = None) -> bytes:
    """The batch with attribute bits set (and max timestamp replaced), CRC recomputed."""
    raw = bytearray(data)
    attributes = struct.unpack_from(">h", raw, 21)[0] | set_bits
    struct.pack_into(">h", raw, 21, attributes)
    if max_timestamp is not None:
        struct.pack_into(">q", raw, 35, max_timestamp)  # after firstTimestamp (27)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def served_epochs(log: PartitionLog) -> list[tuple[int, int]]:
    """(base offset, partitionLeaderEpoch) of every served batch."""
    return [
        (int.from_bytes(b.data[0:8], "big"), int.from_bytes(b.data[12:16], "big", signed=True))
        for b in split_batches(log.read(log.log_start_offset, 1 << 30))
    ]


@pytest.mark.parametrize("codec", [0, GZIP])
def test_lookups_answer_the_record_not_the_batch(codec: int) -> None:
    log = PartitionLog()
    log.append(split_batches(batch([1000, 3000, 2000], codec)), leader_epoch=4)
    # inside the batch: the first record at or after the target, with its own timestamp
    assert log.offset_for_timestamp(500) == (0, 1000, 4)
    assert log.offset_for_timestamp(1000) == (0, 1000, 4)
    assert log.offset_for_timestamp(1001) == (1, 3000, 4)
    assert log.offset_for_timestamp(1500) == (1, 3000, 4)  # offset order, not timestamp order
    assert log.offset_for_timestamp(3000) == (1, 3000, 4)
    assert log.offset_for_timestamp(3001) is None
    # the record holding the largest timestamp, not the batch's last offset
    assert log.max_timestamp_offset() == (1, 3000, 4)


def test_max_timestamp_takes_the_first_record_and_batch_holding_it() -> None:
    log = PartitionLog()
    log.append(split_batches(batch([10, 50, 50, 20])), leader_epoch=0)  # offsets 0-3
    log.append(split_batches(batch([30, 50])), leader_epoch=1)  # offsets 4-5: same max, later
    assert log.max_timestamp_offset() == (1, 50, 0)
    log.append(split_batches(batch([5, 60, 7])), leader_epoch=2)  # offsets 6-8
    assert log.max_timestamp_offset() == (7, 60, 2)
    # a later batch whose max is reached again does not win either
    assert log.offset_for_timestamp(40) == (1, 50, 0)
    assert log.offset_for_timestamp(55) == (7, 60, 2)


def test_log_append_time_batch_gives_records_the_batch_timestamp() -> None:
    # Kafka's DefaultRecordBatch: in a LogAppendTime batch every record's timestamp is the
    # batch's max timestamp, whatever the record's own delta says.
    log = PartitionLog()
    log.append(split_batches(batch([100, 200])))
    log.append(split_batches(with_attributes(batch([300, 400, 350]), LOG_APPEND_TIME, max_timestamp=9000)))
    assert log.offset_for_timestamp(250) == (2, 9000, 0)
    assert log.offset_for_timestamp(9000) == (2, 9000, 0)
    assert log.max_timestamp_offset() == (2, 9000, 0)


def test_empty_log_answers_nothing() -> None:
    log = PartitionLog()
    assert log.offset_for_timestamp(0) is None
    assert log.max_timestamp_offset() is None
    assert log.earliest_leader_epoch() is None


def test_undecodable_records_fall_back_to_the_batch() -> None:
    # codec 7 names no codec: kafka-python cannot decode it (as with a missing codec library)
    log = PartitionLog()
    log.append(split_batches(with_attributes(batch([1000, 3000, 2000]), 0x07)), leader_epoch=2)
    assert log.offset_for_timestamp(1500) == (0, 3000, 2)
    assert log.max_timestamp_offset() == (2, 3000, 2)


def reference(log_batches: list[tuple[int, list[int], int]], start: int, target: int | None):
    """Brute force over (base offset, record timestamps, epoch) of the retained batches."""
    retained = [b for b in log_batches if b[0] >= start]
    if target is None:
        if not retained:
            return None
        top = max(max(ts) for _, ts, _ in retained)
        for base, stamps, epoch in retained:
            if max(stamps) == top:
                return base + stamps.index(top), top, epoch
    for base, stamps, epoch in retained:
        for delta, ts in enumerate(stamps):
            if ts >= target:
                return base + delta, ts, epoch
    return None


def test_lookups_match_brute_force_through_appends_and_retention() -> None:
    # The lazily built time index is extended on appends and repaired when retention drops
    # the batches its first entries point at.
    rng = random.Random(15)
    size = len(batch([0, 0, 0]))
    log = PartitionLog(retention_bytes=size * 12)
    appended: list[tuple[int, list[int], int]] = []
    epoch = 0
    for step in range(300):
        if rng.random() < 0.05:
            epoch += 1
        stamps = [rng.randrange(0, 1000) + (step * 3 if rng.random() < 0.5 else 0) for _ in range(3)]
        base = log.append(split_batches(batch(stamps)), leader_epoch=epoch)
        appended.append((base, stamps, epoch))
        if rng.random() < 0.3:
            start = log.log_start_offset
            for target in (None, *(rng.randrange(-5, 1900) for _ in range(5))):
                expected = reference(appended, start, target)
                got = log.max_timestamp_offset() if target is None else log.offset_for_timestamp(target)
                assert got == expected, (step, target)
    assert log.log_start_offset > 0


def test_batches_keep_the_epoch_they_were_appended_under() -> None:
    log = PartitionLog()
    log.append(split_batches(batch([1, 2])), leader_epoch=0)
    log.append(split_batches(batch([3]) + batch([4])), leader_epoch=3)
    log.append(split_batches(batch([5])), leader_epoch=5)
    assert served_epochs(log) == [(0, 0), (2, 3), (3, 3), (4, 5)]
    assert served_epochs(log) == served_epochs(log)  # serving rewrites nothing stored
    assert log.earliest_leader_epoch() == 0
    assert log.offset_for_timestamp(3) == (2, 3, 3)
    assert log.offset_for_timestamp(4) == (3, 4, 3)
    assert log.max_timestamp_offset() == (4, 5, 5)


def test_earliest_epoch_follows_retention() -> None:
    size = len(batch([1]))
    log = PartitionLog(retention_bytes=size * 2)
    for epoch in range(4):
        log.append(split_batches(batch([epoch])), leader_epoch=epoch)
    assert log.log_start_offset == 2
    assert log.earliest_leader_epoch() == 2
    assert served_epochs(log) == [(2, 2), (3, 3)]
