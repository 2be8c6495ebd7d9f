"""Log compaction (cleanup.policy=compact), after Kafka's LogCleaner, with a batch for a
segment's unit of work.

What Kafka does and this follows: the active segment (here: the batches appended since
the last roll, by `segment.ms` measured on record timestamps or `segment.bytes`) is never
cleaned, nor anything from the last stable offset on (open transactions) or younger than
`min.compaction.lag.ms`; a partition is cleaned when
its dirty share (bytes appended since the last cleaning, over the cleanable bytes)
exceeds `min.cleanable.dirty.ratio`, or its oldest dirty record is older than
`max.compaction.lag.ms`. Cleaning keeps the latest record of each key (the offset map is
built over the dirty part, aborted transactions left out), drops records without a key
and the batches of aborted transactions, keeps tombstones (null values)
for `delete.retention.ms` after the cleaning that first saw them (KIP-534's delete
horizon) and rewrites batches as MemoryRecords.filterTo does: same base and last offset,
producer state and compression. A batch left empty goes, unless it is its producer's
last (Kafka keeps it so the producer's sequence numbers stay known).

Only the cleaner decodes records; it runs off the request path (MockCluster's periodic
task, every `log.cleaner.backoff.ms`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from broker.state.records import CONTROL_FLAG, decode_records, header_base_offset, rebuild_batch

LONG_MAX = 2**63 - 1


@dataclass(slots=True)
class CompactionConfig:
    """A compacted partition's cleaner settings (the topic's configs over the broker's)."""

    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_ratio: float = 0.5
    segment_ms: int = 604_800_000
    segment_bytes: int = 1_073_741_824


class Batch(Protocol):
    base_offset: int
    max_timestamp: int
    data: memoryview


B = TypeVar("B", bound=Batch)


def latest_offsets(dirty: Iterable[B], aborted: Callable[[B], bool]) -> dict[bytes, int]:
    """Kafka's OffsetMap: the last offset of each key in the dirty batches; control
    batches and the batches of aborted transactions do not count."""
    latest: dict[bytes, int] = {}
    for batch in dirty:
        if _is_control(batch) or aborted(batch):
            continue
        base = batch.base_offset - header_base_offset(batch.data)
        for record in decode_records(batch.data):
            if record.key is not None:
                latest[bytes(record.key)] = base + record.offset
    return latest


@dataclass(slots=True)
class Cleaned:
    """What cleaning made of one batch: its new bytes (None: unchanged), how many records
    it held and holds, and its delete horizon (-1: none)."""

    data: bytes | None
    records_before: int
    records_after: int
    delete_horizon_ms: int


def clean_batch(
    batch: Batch,
    latest: Mapping[bytes, int],
    now_ms: int,
    delete_retention_ms: int,
    delete_horizon_ms: int = -1,
    aborted: bool = False,
) -> Cleaned:
    """Cleaner.shouldRetainRecord over one batch: a record stays unless a later record
    has its key, it has no key, or it is a tombstone past the batch's delete horizon; an
    aborted transaction's batch goes whole. Markers stay."""
    if _is_control(batch):
        return Cleaned(None, 1, 1, delete_horizon_ms)
    records = decode_records(batch.data)
    if aborted:
        return Cleaned(rebuild_batch(batch.data, []), len(records), 0, delete_horizon_ms)
    base = batch.base_offset - header_base_offset(batch.data)
    drop_tombstones = 0 <= delete_horizon_ms <= now_ms
    kept = []
    tombstones = False
    for record in records:
        key = record.key
        if key is None or latest.get(bytes(key), -1) > base + record.offset:
            continue
        if record.value is None:
            if drop_tombstones:
                continue
            tombstones = True
        kept.append(record)
    if tombstones and delete_horizon_ms < 0:
        delete_horizon_ms = now_ms + delete_retention_ms  # first cleaning to see them
    data = rebuild_batch(batch.data, kept) if len(kept) < len(records) else None
    return Cleaned(data, len(records), len(kept), delete_horizon_ms)


def _is_control(batch: Batch) -> bool:
    return bool(int.from_bytes(batch.data[21:23], "big") & CONTROL_FLAG)  # the attributes int16
