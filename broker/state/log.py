"""One partition's log: opaque record batches indexed by offset, bounded by retention.

Pure data structure (no asyncio); the fetch path is woken through `append_listeners`.

Each batch keeps the leader epoch it was appended under, served in its
partitionLeaderEpoch field (Kafka's LogValidator writes it into the batch at append).
Timestamp lookups (ListOffsets) go through a time index built lazily on that path only,
and decode the records of the one batch they land in.

Storage, as Kafka's segment files: each batch is copied once, at append, into the
partition's current segment (an anonymous mmap, so only the bytes written cost memory),
where its baseOffset and partitionLeaderEpoch are stamped. Consecutive batches are
consecutive bytes, so a fetch serves any run of them as one memoryview of a segment,
however many batches it holds, and the socket writes it from there. A segment goes when
retention has dropped its last batch and no response still holds a view of it.
"""

from __future__ import annotations

import bisect
import logging
import mmap
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from broker.state.compaction import Cleaned, CompactionConfig, clean_batch, latest_offsets
from broker.state.records import (
    BATCH_PREFIX,
    CONTROL_FLAG,
    TRANSACTIONAL_FLAG,
    BatchInfo,
    UndecodableBatch,
    batch_max_timestamp,
    control_batch,
    producer_id_of,
    record_timestamps,
    set_log_append_time,
    split_batches,
)
from protocol.errors import ErrorCode

log = logging.getLogger("broker.log")
_undecodable_warned: set[str] = set()  # one warning per kind of failure, per process

# Kafka keeps the metadata of the last five batches per producer to detect retries.
PRODUCER_BATCH_CACHE = 5
NO_TIMESTAMP = -1  # RecordBatch.NO_TIMESTAMP
# Bytes per segment: address space only until written. A fetch that spans two segments
# joins its pieces (one copy), so they are large next to a fetch's partition_max_bytes;
# under log.retention.bytes a quarter of it (a segment's memory goes with its last batch).
SEGMENT_BYTES = 16 * 1024 * 1024
MIN_SEGMENT_BYTES = 64 * 1024


class SequenceError(Exception):
    """An idempotent batch out of order; `code` is the Kafka error code to return."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Segment:
    """Consecutive stored batches, back to back in one mapping.

    Its pages are populated ahead of the writes, a run at a time (MADV_POPULATE_WRITE,
    Linux 5.14+): one system call instead of a page fault per 4 KiB page takes about a
    third off the cost of storing a batch. A run is as long as what the segment holds
    already, within 16-256 KiB, so a partition that holds little costs little memory.
    """

    __slots__ = ("mapping", "view", "used", "populated")

    def __init__(self, size: int) -> None:
        self.mapping = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
        self.view = memoryview(self.mapping)
        self.used = 0
        self.populated = 0

    def add(self, batch: memoryview | bytes) -> int:
        """Where the batch's copy starts here, or -1 when it does not fit."""
        global _populate
        start = self.used
        end = start + len(batch)
        size = len(self.view)
        if end > size:
            return -1
        if end > self.populated and _populate:
            run = max(min(max(start, _POPULATE_MIN), _POPULATE_MAX), end - self.populated)
            length = min(-(-run // mmap.PAGESIZE) * mmap.PAGESIZE, size - self.populated)
            try:
                self.mapping.madvise(_MADV_POPULATE_WRITE, self.populated, length)
                self.populated += length
            except OSError:  # an older kernel: pages fault in one by one
                _populate = False
        self.view[start:end] = batch
        self.used = end
        return start


_MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)  # the constant is Python 3.13+
_POPULATE_MIN = 16 * 1024
_POPULATE_MAX = 256 * 1024
_populate = True


@dataclass(slots=True)
class _StoredBatch:
    """One retained batch as the paths that look inside batches (compaction) take it;
    the log keeps its batches as columns (PartitionLog._base_offsets and the rest)."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    leader_epoch: int  # the partition's leader epoch when the batch was appended
    data: memoryview  # baseOffset and partitionLeaderEpoch stamped
    delete_horizon_ms: int = -1  # compaction: when its tombstones may go (-1: not yet cleaned)


@dataclass(slots=True)
class ProducerState:
    """What the partition knows of one producer (Kafka's ProducerStateEntry)."""

    epoch: int
    # (first sequence, last sequence, base offset, max timestamp) of the most recent batches
    recent: deque[tuple[int, int, int, int]] = field(
        default_factory=lambda: deque(maxlen=PRODUCER_BATCH_CACHE)
    )
    last_timestamp: int = NO_TIMESTAMP
    coordinator_epoch: int = -1  # of the last marker written for it

    @property
    def last_sequence(self) -> int:
        return self.recent[-1][1] if self.recent else -1


class PartitionLog:
    """Batches with assigned offsets. The high watermark equals the log end offset:
    every replica is this process, so an append is committed when it returns."""

    def __init__(self, retention_bytes: int = -1, retention_ms: int = -1) -> None:
        self.retention_bytes = retention_bytes
        # retention.ms (-1: unlimited); LogAppendTime stamping (message.timestamp.type).
        # Both are set by the config layer (DynamicConfigs.apply_retention).
        self.retention_ms = retention_ms
        self.log_append_time = False
        # After append: the original batch's timestamp when the batches were a duplicate
        # (Kafka answers a retry with it as the log append time), else None.
        self.duplicate_timestamp: int | None = None
        # cleanup.policy=compact: the cleaner's settings (None: not compacted), the
        # cleaner's checkpoint, and the active segment, which is never cleaned.
        self.compaction: CompactionConfig | None = None
        # cleanup.policy includes delete (DeleteRecords is refused on compact-only logs)
        self.delete_policy = True
        # Transactions: the first offset of each producer's open transaction here, and
        # the aborted ones (producer id, first offset, marker offset) in marker order.
        self._ongoing: dict[int, int] = {}
        self.aborted: list[tuple[int, int, int]] = []
        self.first_dirty_offset = 0
        self._active_base = 0
        self._active_bytes = 0
        self._active_rolling_ms = NO_TIMESTAMP
        self._reset_batches()
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.size_bytes = 0
        self._producers: dict[int, ProducerState] = {}
        self.append_listeners: list[Callable[[], None]] = []
        # Kafka's TimeIndex, built only when ListOffsets asks: over the retained batches in
        # offset order, one entry each time the running maximum of their max timestamps
        # grows (that maximum, the base offset of the batch reaching it).
        self._time_stamps: list[int] = []
        self._time_offsets: list[int] = []
        self._time_indexed_to = 0  # the log end offset when the index was last extended

    def _reset_batches(self) -> None:
        """No batches. They are kept as columns, an entry per batch: numbers in arrays
        and segments in a list, so that a log of a million small batches is a dozen
        objects to the garbage collector. (An object per batch made each full collection
        walk them all: pauses near a second under a small-batch produce load.)"""
        self._base_offsets = array("q")
        self._last_offsets = array("q")
        self._max_timestamps = array("q")
        self._epochs = array("q")  # the partition's leader epoch when each was appended
        self._starts = array("q")  # where each starts in its segment
        self._sizes = array("q")
        # Running total of the stored bytes at each batch's end (a batch's position in
        # the log, as in a segment file), for fetch sizes without walking batches.
        self._ends = array("q")
        self._segments: list[_Segment | None] = []  # None once dropped: its memory is not held
        self._delete_horizons: dict[int, int] = {}  # compaction's, by base offset (see _StoredBatch)
        self._segment: _Segment | None = None  # where the next batch goes
        self._first = 0  # index of the first retained batch (trimmed lazily)

    def _data(self, index: int) -> memoryview:
        segment = self._segments[index]
        assert segment is not None, "a dropped batch"
        start = self._starts[index]
        return segment.view[start : start + self._sizes[index]]

    def _stored(self, index: int) -> _StoredBatch:
        base = self._base_offsets[index]
        return _StoredBatch(
            base,
            self._last_offsets[index],
            self._max_timestamps[index],
            self._epochs[index],
            self._data(index),
            self._delete_horizons.get(base, -1),
        )

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction, else the high watermark:
        how far a read_committed consumer may read."""
        if not self._ongoing:
            return self.log_end_offset
        return max(min(self._ongoing.values()), self.log_start_offset)

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, leader_epoch: int
    ) -> int:
        """Ends the producer's transaction on this partition with a commit or abort marker
        (a control batch); returns the marker's offset."""
        marker = control_batch(
            producer_id, producer_epoch, commit, coordinator_epoch, int(time.time() * 1000)
        )
        offset = self.append(split_batches(marker), leader_epoch)
        state = self._producers.get(producer_id)
        if state is not None:
            state.coordinator_epoch = coordinator_epoch
        first = self._ongoing.pop(producer_id, None)
        if first is not None and not commit:
            self.aborted.append((producer_id, first, offset))
        return offset

    def producer_epoch(self, producer_id: int) -> int | None:
        state = self._producers.get(producer_id)
        return state.epoch if state is not None else None

    def coordinator_epoch(self, producer_id: int) -> int:
        state = self._producers.get(producer_id)
        return state.coordinator_epoch if state is not None else -1

    def in_transaction(self, producer_id: int) -> bool:
        return producer_id in self._ongoing

    def producers(self) -> list[tuple[int, ProducerState, int]]:
        """(producer id, state, first offset of its open transaction or -1) of each
        producer that wrote here, for DescribeProducers."""
        return [(pid, state, self._ongoing.get(pid, -1)) for pid, state in sorted(self._producers.items())]

    def aborted_transactions(self, fetch_offset: int, upper_offset: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping
        [fetch_offset, upper_offset), as Kafka's collectAbortedTransactions gives them."""
        start = bisect.bisect_left(self.aborted, fetch_offset, key=lambda entry: entry[2])
        return [
            (producer_id, first) for producer_id, first, _ in self.aborted[start:] if first < upper_offset
        ]

    def append(self, batches: list[BatchInfo], leader_epoch: int = 0, append_time_ms: int = -1) -> int:
        """Appends batches under the partition's current `leader_epoch` and returns the
        base offset of the first one. With `append_time_ms` >= 0 (message.timestamp.type=
        LogAppendTime) each batch is stamped with it first, as Kafka's LogValidator does.

        Idempotent batches are checked first: a retry of one of the producer's last five
        batches returns its original offset without appending (as Kafka does).
        """
        self.duplicate_timestamp = None
        duplicate = self._check_sequences(batches)
        if duplicate is not None:
            self.duplicate_timestamp = duplicate[1]
            return duplicate[0]
        if append_time_ms >= 0:
            for batch in batches:
                set_log_append_time(batch, append_time_ms)
        if self.compaction is not None:
            self._maybe_roll(batches)
        first_offset = self.log_end_offset
        for batch in batches:
            base = self.log_end_offset
            last = base + batch.last_offset_delta
            self._store(base, last, batch.max_timestamp, leader_epoch, batch.data)
            self.log_end_offset = last + 1
            if batch.producer_id >= 0:
                state = self._producers.setdefault(batch.producer_id, ProducerState(batch.producer_epoch))
                if batch.producer_epoch != state.epoch:
                    # A new epoch starts its sequences over: the old epoch's batches are
                    # neither duplicates nor predecessors of the new one's.
                    state.epoch = batch.producer_epoch
                    state.recent.clear()
                state.last_timestamp = batch.max_timestamp
                if batch.attributes & CONTROL_FLAG:
                    continue  # a marker: append_marker ends the transaction; sequences go on
                state.recent.append(
                    (
                        batch.base_sequence,
                        batch.base_sequence + batch.last_offset_delta,
                        base,
                        batch.max_timestamp,
                    )
                )
                if batch.attributes & TRANSACTIONAL_FLAG:
                    self._ongoing.setdefault(batch.producer_id, base)
        self._enforce_retention()
        for listener in self.append_listeners:
            listener()
        return first_offset

    def _store(
        self, base: int, last: int, max_timestamp: int, leader_epoch: int, data: memoryview | bytes
    ) -> None:
        """Copies a batch into the current segment (a new one when it is full), stamps
        its offset and leader epoch there, and indexes it."""
        segment = self._segment
        start = segment.add(data) if segment is not None else -1
        if segment is None or start < 0:
            size = SEGMENT_BYTES
            if self.retention_bytes >= 0:
                size = min(size, max(self.retention_bytes // 4, MIN_SEGMENT_BYTES))
            segment = self._segment = _Segment(max(size, len(data)))
            start = segment.add(data)
        size = len(data)
        BATCH_PREFIX.pack_into(segment.view, start, base, size - 12, leader_epoch)  # stamp_batch, inlined
        self._base_offsets.append(base)
        self._last_offsets.append(last)
        self._max_timestamps.append(max_timestamp)
        self._epochs.append(leader_epoch)
        self._starts.append(start)
        self._sizes.append(size)
        self._ends.append((self._ends[-1] if self._ends else 0) + size)
        self._segments.append(segment)
        self.size_bytes += size

    def _maybe_roll(self, batches: list[BatchInfo]) -> None:
        """LogSegment.shouldRoll: a new active segment when the incoming batches would
        overflow segment.bytes, or their timestamps are segment.ms past the segment's first."""
        config = self.compaction
        assert config is not None
        incoming = sum(batch.size for batch in batches)
        newest = max(batch.max_timestamp for batch in batches)
        if self._active_bytes > 0 and (
            self._active_bytes + incoming > config.segment_bytes
            or (
                self._active_rolling_ms != NO_TIMESTAMP
                and newest - self._active_rolling_ms > config.segment_ms
            )
        ):
            self._active_base, self._active_bytes = self.log_end_offset, 0
            self._active_rolling_ms = NO_TIMESTAMP
        if self._active_rolling_ms == NO_TIMESTAMP:
            self._active_rolling_ms = batches[0].max_timestamp
        self._active_bytes += incoming

    def clean(self, now_ms: int) -> int:
        """One pass of Kafka's log cleaner over this partition if it is due (see
        compaction.py); returns how many records it removed."""
        config = self.compaction
        if config is None:
            return 0
        first = self._first
        # neither the active segment nor an open transaction is cleaned
        end_offset = max(min(self._active_base, self.last_stable_offset), self.log_start_offset)
        end = bisect.bisect_left(self._base_offsets, end_offset, lo=first)
        if config.min_compaction_lag_ms > 0:
            for index in range(first, end):
                if self._max_timestamps[index] > now_ms - config.min_compaction_lag_ms:
                    end = index
                    break
        if end <= first:
            return 0
        cleanable = [self._stored(index) for index in range(first, end)]
        dirty = [b for b in cleanable if b.base_offset >= self.first_dirty_offset]
        total_bytes = sum(len(b.data) for b in cleanable)
        dirty_bytes = sum(len(b.data) for b in dirty)
        due = (
            (total_bytes and dirty_bytes / total_bytes > config.min_cleanable_ratio)
            or (dirty and now_ms - dirty[0].max_timestamp > config.max_compaction_lag_ms)
            or any(0 <= b.delete_horizon_ms <= now_ms for b in cleanable)
        )
        if not due:
            return 0
        try:  # every batch is cleaned before any is replaced: a failure changes nothing
            latest = latest_offsets(dirty, self._aborted_batch)
            cleaned = [
                clean_batch(
                    b, latest, now_ms, config.delete_retention_ms, b.delete_horizon_ms, self._aborted_batch(b)
                )
                for b in cleanable
            ]
        except UndecodableBatch as exc:
            log.warning("not cleaning a partition whose records cannot be decoded: %s", exc)
            return 0
        self.first_dirty_offset = cleanable[-1].last_offset + 1
        return self._replace(cleanable, cleaned)

    def _aborted_batch(self, stored: _StoredBatch) -> bool:
        """Whether the batch belongs to a transaction that was aborted here."""
        if not self.aborted or not int.from_bytes(stored.data[21:23], "big") & TRANSACTIONAL_FLAG:
            return False
        producer_id = producer_id_of(stored.data)
        return any(p == producer_id and first <= stored.base_offset < last for p, first, last in self.aborted)

    def _replace(self, cleanable: list[_StoredBatch], cleaned: list[Cleaned]) -> int:
        last_of_producer = {state.recent[-1][2] for state in self._producers.values() if state.recent}
        kept: list[_StoredBatch] = []
        removed = 0
        for stored, result in zip(cleanable, cleaned, strict=True):
            stored.delete_horizon_ms = result.delete_horizon_ms
            removed += result.records_before - result.records_after
            if result.data is not None:
                self.size_bytes += len(result.data) - len(stored.data)
                stored.data = memoryview(result.data)
                stored.max_timestamp = batch_max_timestamp(stored.data)
            if result.records_after == 0 and stored.base_offset not in last_of_producer:
                self.size_bytes -= len(stored.data)
                continue
            kept.append(stored)
        rest = [self._stored(index) for index in range(self._first + len(cleanable), len(self._base_offsets))]
        # Rewritten as the cleaner writes new segments: every retained batch copied anew.
        self._reset_batches()
        self.size_bytes = 0
        for old in kept + rest:
            self._store(old.base_offset, old.last_offset, old.max_timestamp, old.leader_epoch, old.data)
            if old.delete_horizon_ms >= 0:
                self._delete_horizons[old.base_offset] = old.delete_horizon_ms
        self._time_stamps, self._time_offsets, self._time_indexed_to = [], [], 0
        return removed

    def _check_sequences(self, batches: list[BatchInfo]) -> tuple[int, int] | None:
        """ProducerAppendInfo.checkSequence: None to append, or the (base offset,
        timestamp) of the batch these duplicate. A producer id the partition has no
        state for may start at any sequence; a new epoch of a known one at 0."""
        batch = batches[0]
        if batch.producer_id < 0 or batch.base_sequence < 0:
            return None
        state = self._producers.get(batch.producer_id)
        if state is None:
            return None
        if batch.producer_epoch < state.epoch:
            raise SequenceError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer epoch {batch.producer_epoch} is older than {state.epoch}",
            )
        if batch.producer_epoch > state.epoch:
            if batch.base_sequence != 0:
                raise SequenceError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, "a new producer epoch must start at sequence 0"
                )
            return None
        last_sequence = batch.base_sequence + batch.last_offset_delta
        for first_seq, last_seq, base_offset, timestamp in state.recent:
            if first_seq == batch.base_sequence and last_seq == last_sequence:
                return base_offset, timestamp
        expected = (state.recent[-1][1] + 1) & 0x7FFFFFFF if state.recent else 0
        if batch.base_sequence != expected:
            raise SequenceError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"expected sequence {expected}, got {batch.base_sequence}",
            )
        return None

    def _enforce_retention(self) -> None:
        if self.retention_bytes < 0:
            if self.retention_ms >= 0:
                self.enforce_retention_ms(int(time.time() * 1000))
            return
        if self.retention_ms >= 0:
            self.enforce_retention_ms(int(time.time() * 1000))
        while self.size_bytes > self.retention_bytes and len(self._base_offsets) - self._first > 1:
            self._drop_first()
        self._compact()

    def enforce_retention_ms(self, now_ms: int) -> int:
        """Kafka's UnifiedLog.deleteRetentionMsBreachedSegments with a batch as the unit
        (Kafka deletes whole segments): from the log start, drops batches while
        now - max timestamp > retention.ms, stopping at the first younger one. Kafka
        deletes the active segment too when it breached (rolling an empty one first), so
        the last batch may go and the log start reach the log end. Returns how many went."""
        if self.retention_ms < 0:
            return 0
        cutoff = now_ms - self.retention_ms
        dropped = 0
        while self._first < len(self._base_offsets) and self._max_timestamps[self._first] < cutoff:
            self._drop_first()
            dropped += 1
        if dropped:
            self._compact()
        return dropped

    def _drop_first(self) -> None:
        dropped = self._first
        self._first += 1
        self.size_bytes -= self._sizes[dropped]
        # The segment is freed once no retained batch (or response) holds a view of it.
        self._segments[dropped] = None
        if self._delete_horizons:
            self._delete_horizons.pop(self._base_offsets[dropped], None)
        self.log_start_offset = max(self.log_start_offset, self._last_offsets[dropped] + 1)
        if self.aborted and self.aborted[0][2] < self.log_start_offset:
            self.aborted = [entry for entry in self.aborted if entry[2] >= self.log_start_offset]

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: the log start offset moves up to `offset` (never back; it may
        fall inside a batch, as in Kafka), batches wholly before it go; the new log start."""
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            while self._first < len(self._base_offsets) and self._last_offsets[self._first] < offset:
                self._drop_first()
            self._compact()
        return self.log_start_offset

    def _compact(self) -> None:
        first = self._first
        if first > 1024 and first * 2 > len(self._base_offsets):
            for column in (
                self._base_offsets,
                self._last_offsets,
                self._max_timestamps,
                self._epochs,
                self._starts,
                self._sizes,
                self._ends,
                self._segments,
            ):
                del column[:first]
            self._first = 0

    def read(self, offset: int, max_bytes: int, min_one: bool = True) -> bytes:
        """Whole batches from the one containing `offset`, up to max_bytes (at least one
        batch when `min_one`, as KIP-74 requires), each with the leader epoch it was
        appended under. Offsets must be in range."""
        return bytes(self.read_counted(offset, max_bytes, min_one)[0])

    def read_counted(
        self, offset: int, max_bytes: int, min_one: bool = True, end_offset: int | None = None
    ) -> tuple[memoryview | bytes, int]:
        """`read`, and how many records (offsets) the batches hold, for the metrics; with
        `end_offset` (read_committed: the last stable offset) no batch from there on.
        The batches come as one view of their segment (joined only where a read spans
        two segments), found by bisection: no per-batch work."""
        index = max(self._batch_index(offset), self._first)
        count = len(self._base_offsets)
        if index < count and self._last_offsets[index] < offset:
            index += 1  # the offset fell in a gap compaction left: the next batch
        if index >= count:
            return b"", 0
        position = self._ends[index] - self._sizes[index]
        stop = bisect.bisect_right(self._ends, position + max_bytes, lo=index)
        if stop == index and min_one:
            stop = index + 1
        if end_offset is not None:
            stop = min(stop, bisect.bisect_left(self._base_offsets, end_offset, lo=index))
        if stop <= index:
            return b"", 0
        last = stop - 1
        if self.compaction is None:
            records = self._last_offsets[last] - self._base_offsets[index] + 1
        else:  # offsets the cleaner removed are not records
            records = sum(self._last_offsets[i] - self._base_offsets[i] + 1 for i in range(index, stop))
        segment = self._segments[index]
        if segment is not None and self._segments[last] is segment:  # consecutive bytes
            return segment.view[self._starts[index] : self._starts[last] + self._sizes[last]], records
        return b"".join(self._data(i) for i in range(index, stop)), records

    def batches(
        self, offset: int, end_offset: int, max_records: int = 2**31, max_bytes: int = 2**31
    ) -> list[tuple[int, int, memoryview]]:
        """(base offset, last offset, bytes) of the batches from the one holding `offset`
        that start before `end_offset`: at least one, then while under `max_records`
        records (offsets) and `max_bytes`. For share fetches, which acquire whole batches
        and must know where each starts and ends."""
        index = max(self._batch_index(offset), self._first)
        count = len(self._base_offsets)
        if index < count and self._last_offsets[index] < offset:
            index += 1
        found: list[tuple[int, int, memoryview]] = []
        records = size = 0
        while index < count and self._base_offsets[index] < end_offset:
            if found and (records >= max_records or size + self._sizes[index] > max_bytes):
                break
            base, last = self._base_offsets[index], self._last_offsets[index]
            found.append((base, last, self._data(index)))
            records += last - max(base, offset) + 1
            size += self._sizes[index]
            index += 1
        return found

    def end_offset_for_epoch(self, requested: int, current_epoch: int) -> tuple[int, int]:
        """Kafka's LeaderEpochFileCache.endOffsetFor: (epoch, end offset) for a client
        checking its position after a leader change. The cache is read off the retained
        batches' leader epochs (each epoch starts at its first batch, the earliest at the
        log start), plus the partition's `current_epoch` from the log end when no batch
        was appended under it yet (Kafka writes that entry at the election)."""
        if requested < 0:
            return -1, -1
        starts: list[tuple[int, int]] = []  # (epoch, start offset), epochs increasing
        for index in range(self._first, len(self._base_offsets)):
            epoch = self._epochs[index]
            if not starts or epoch > starts[-1][0]:
                starts.append((epoch, max(self._base_offsets[index], self.log_start_offset)))
        if not starts or current_epoch > starts[-1][0]:
            starts.append((current_epoch, self.log_end_offset))
        if starts[-1][0] == requested:
            return requested, self.log_end_offset
        higher = next(((epoch, start) for epoch, start in starts if epoch > requested), None)
        if higher is None:
            return -1, -1
        floor = [epoch for epoch, _ in starts if epoch <= requested]
        return (floor[-1] if floor else requested), higher[1]

    def earliest_leader_epoch(self) -> int | None:
        """The leader epoch of the batch at the log start offset (None if the log is empty):
        the earliest entry of Kafka's leader epoch cache once truncated to the log start."""
        if self._first >= len(self._base_offsets):
            return None
        return self._epochs[self._first]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the first record whose timestamp is >=
        `timestamp`, as Kafka's LogSegment.findOffsetByTimestamp / FileRecords.searchForTimestamp:
        the first batch whose max timestamp is >= it, then the first such record inside it
        (only that batch is decoded); None if there is none."""
        stamps, offsets = self._time_index()
        entry = bisect.bisect_left(stamps, timestamp)
        if entry == len(stamps):
            return None
        for index in range(self._batch_index(offsets[entry]), len(self._base_offsets)):
            if self._max_timestamps[index] < timestamp:
                continue
            stored = self._stored(index)
            try:
                for delta, record_timestamp in record_timestamps(stored.data):
                    if record_timestamp >= timestamp:
                        return stored.base_offset + delta, record_timestamp, stored.leader_epoch
            except UndecodableBatch as exc:
                self._warn_undecodable(exc)
                return stored.base_offset, stored.max_timestamp, stored.leader_epoch
        return None

    def max_timestamp_offset(self) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the record with the largest timestamp, the
        first of them if several share it, as Kafka's UnifiedLog.fetchOffsetByTimestamp
        answers MAX_TIMESTAMP: the first batch whose max timestamp is the log's largest,
        then RecordBatch.offsetOfMaxTimestamp inside it (only that batch is decoded)."""
        stamps, offsets = self._time_index()
        if not stamps or stamps[-1] < NO_TIMESTAMP:
            return None
        stored = self._stored(self._batch_index(offsets[-1]))
        try:
            for delta, record_timestamp in record_timestamps(stored.data):
                if record_timestamp == stored.max_timestamp:
                    return stored.base_offset + delta, record_timestamp, stored.leader_epoch
        except UndecodableBatch as exc:
            self._warn_undecodable(exc)
            return stored.last_offset, stored.max_timestamp, stored.leader_epoch
        return None

    def _batch_index(self, offset: int) -> int:
        return bisect.bisect_right(self._base_offsets, offset, lo=self._first) - 1

    def _time_index(self) -> tuple[list[int], list[int]]:
        """The time index, brought up to date with appends and retention since its last use."""
        stamps, offsets = self._time_stamps, self._time_offsets
        if offsets and offsets[0] < self.log_start_offset:
            stale = bisect.bisect_left(offsets, self.log_start_offset)
            del stamps[:stale], offsets[:stale]
            # The retained batches before the first surviving entry were shadowed by the
            # dropped ones; their maxima all stay below that entry's, so index them in front.
            stop = offsets[0] if offsets else self._time_indexed_to
            lead_stamps: list[int] = []
            lead_offsets: list[int] = []
            for index in range(self._first, len(self._base_offsets)):
                base, max_timestamp = self._base_offsets[index], self._max_timestamps[index]
                if base >= stop:
                    break
                if not lead_stamps or max_timestamp > lead_stamps[-1]:
                    lead_stamps.append(max_timestamp)
                    lead_offsets.append(base)
            stamps[:0] = lead_stamps
            offsets[:0] = lead_offsets
        if self._time_indexed_to < self.log_end_offset:
            start = bisect.bisect_left(self._base_offsets, self._time_indexed_to, lo=self._first)
            for index in range(start, len(self._base_offsets)):
                max_timestamp = self._max_timestamps[index]
                if not stamps or max_timestamp > stamps[-1]:
                    stamps.append(max_timestamp)
                    offsets.append(self._base_offsets[index])
            self._time_indexed_to = self.log_end_offset
        return stamps, offsets

    @staticmethod
    def _warn_undecodable(exc: UndecodableBatch) -> None:
        kind = str(exc).split(":", 1)[0]
        if kind not in _undecodable_warned:
            _undecodable_warned.add(kind)
            log.warning("ListOffsets answers at batch granularity where records cannot be decoded: %s", exc)
