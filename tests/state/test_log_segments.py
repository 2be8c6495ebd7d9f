"""The partition log's segments: what a fetch reads is what the batch-by-batch rule gives
(each batch with its offset and leader epoch stamped, whole batches up to max_bytes, at
least one), served as a view of the segment where it lies in one, and a segment's memory
goes when retention drops its last batch."""

from __future__ import annotations

import gc
import random
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker.state import log as log_module
from broker.state.log import PartitionLog
from broker.state.records import split_batches


def _batch(rng: random.Random, records: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    for i in range(records):
        builder.append(
            i, timestamp=1_000 + i, key=None, value=rng.randbytes(rng.randrange(1, 300)), headers=[]
        )
    return bytes(builder.build())


def _expected(
    batches: list[tuple[int, int, bytes]], offset: int, max_bytes: int, end_offset: int | None
) -> bytes:
    """The rule batch by batch, as Kafka's log reads it."""
    taken, out = 0, []
    for base, epoch, data in batches:
        if base + struct.unpack_from(">i", data, 23)[0] < offset:
            continue  # before the batch holding `offset`
        if taken + len(data) > max_bytes and taken > 0:
            break
        if end_offset is not None and base >= end_offset:
            break
        out.append(struct.pack(">qii", base, len(data) - 12, epoch) + data[16:])
        taken += len(data)
    return b"".join(out)


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_module, "SEGMENT_BYTES", 4096)


def test_reads_match_the_batch_by_batch_rule_within_and_across_segments(small_segments: None) -> None:
    rng = random.Random(7)
    log = PartitionLog()
    appended = []
    for i in range(200):
        data = _batch(rng, rng.randrange(1, 8))
        base = log.append(split_batches(data), leader_epoch=i // 50)
        appended.append((base, i // 50, data))
    assert len({id(segment) for segment in log._segments}) > 10  # the reads below cross segments
    for _ in range(500):
        offset = rng.randrange(0, log.log_end_offset)
        max_bytes = rng.choice([0, 1, 100, 2000, 4096, 10_000, 1 << 20])
        end_offset = rng.choice([None, None, rng.randrange(0, log.log_end_offset + 1)])
        records, count = log.read_counted(offset, max_bytes, min_one=True, end_offset=end_offset)
        assert bytes(records) == _expected(appended, offset, max_bytes, end_offset)
        if records:
            first = struct.unpack_from(">q", records)[0]
            last_batch = split_batches(bytes(records))[-1]
            last = struct.unpack_from(">q", last_batch.data)[0] + last_batch.last_offset_delta
            assert count == last - first + 1


def test_a_read_within_one_segment_is_a_view_not_a_copy() -> None:
    rng = random.Random(8)
    log = PartitionLog()
    for _ in range(20):
        log.append(split_batches(_batch(rng, 5)))
    records, _ = log.read_counted(0, 1 << 20)
    assert isinstance(records, memoryview)
    assert records.obj is log._segments[0].view.obj  # type: ignore[union-attr]


def _segments() -> int:
    gc.collect()
    return sum(isinstance(o, log_module._Segment) for o in gc.get_objects())


def test_retention_frees_a_segment_with_its_last_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_module, "MIN_SEGMENT_BYTES", 4096)
    rng = random.Random(9)
    before = _segments()
    log = PartitionLog(retention_bytes=16_384)  # segments of 4 KiB
    for _ in range(300):
        log.append(split_batches(_batch(rng, 3)))
    assert log.size_bytes <= 16_384
    held = _segments() - before
    assert 4 <= held <= 7  # the retained bytes' segments, not the 300 batches' ~50
    fetched, _ = log.read_counted(log.log_start_offset, 1 << 20)
    for _ in range(300):
        log.append(split_batches(_batch(rng, 3)))
    assert _segments() - before <= held + 2  # a response's view keeps only its own segments
    assert bytes(fetched)  # still readable after its batches left the log


def test_retained_batches_are_not_objects_for_the_garbage_collector() -> None:
    """A log of many small batches must not make every full collection walk them: with an
    object per batch, a small-batch produce load paused the broker's loop for 100s of ms."""
    rng = random.Random(3)
    data = _batch(rng, 1)
    log = PartitionLog()
    log.append(split_batches(data))
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(20_000):
        log.append(split_batches(data))
    gc.collect()
    assert len(gc.get_objects()) - before < 100  # a few segments, not 20,000 of anything
    assert log.log_end_offset == 20_001
