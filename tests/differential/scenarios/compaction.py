"""What a consumer reads back from a compacted topic (cleanup.policy=compact), once each
broker's log cleaner has done its work.

Kafka's cleaner runs on its own schedule, so the family compares the eventual result: the
layout wakes both cleaners every 100 ms (`log.cleaner.backoff.ms`), every topic cleans at
any dirty share (`min.cleanable.dirty.ratio=0.01`, `min.compaction.lag.ms=0`) and rolls a
segment on each produce (`segment.ms=100`, the records' timestamps a second apart: the
active segment is never cleaned, so the batch after a roll makes the one before it
cleanable). A fetch from offset 0 is repeated on each side (`Step.until`) until the
offsets it returns are the compacted ones, then both answers are compared in full (which
batches remain, their base offsets, counts and records, tombstones kept or gone), with
the earliest and latest offsets (log start offset, high watermark).

Where the two differ (docs/explanation/differences.md, "Logs, retention and
compaction"): Kafka's fetch stops at the end of the cleaned segment, the mock's reads on
into the active one (so each side has its own accepted shape); Kafka writes a tombstone
batch's delete horizon into its header (attribute bit 6, the base timestamp), the mock
keeps it beside the batch; the mock removes tombstones at the first pass after their
horizon, Kafka at its next cleaning that new dirty data starts. Not here: aborted
transactions (the mock's cleaner keeps their records, Kafka's removes them).

Every topic is the scenario's own, so scenarios share the family's clusters freely."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tests.differential.model import Scenario, Step
from tests.differential.scenarios.records import (
    Record,
    batch,
    create,
    drop,
    fetch,
    list_offsets,
    produce,
)

FAMILY = "compaction"
CLEANED = 20.0  # seconds each side has to reach a compacted shape
T0 = 1_500_000_000_000
LAYOUT = {"log.cleaner.backoff.ms": "100", "log.initial.task.delay.ms": "0"}


def configs(delete_retention_ms: int) -> dict[str, str]:
    return {
        "cleanup.policy": "compact",
        "min.cleanable.dirty.ratio": "0.01",
        "segment.ms": "100",
        "min.compaction.lag.ms": "0",
        "delete.retention.ms": str(delete_retention_ms),
    }


def rec(key: str, value: str | None, second: int) -> Record:
    return (key.encode(), None if value is None else value.encode(), T0 + second * 1000)


def offsets_of(answer: Any) -> list[int] | None:
    """The record offsets a fetch of one partition returned, in order (None: no records)."""
    try:
        partition = only(only(answer["responses"])["partitions"])
        return [r["offset"] for b in partition["records"] for r in b["records"]]
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def only(items: Any) -> Any:
    """The one element of a normalised array: a list, or a dict keyed by its identifying
    field (normalise.Keyed)."""
    (item,) = items.values() if isinstance(items, dict) else items
    return item


def offsets_in(*shapes: Sequence[int]) -> Callable[[Any], bool]:
    """Whether a fetch returned one of `shapes` (the offsets of a compacted log as each
    broker serves it: Kafka's fetch stops at the end of the cleaned segment, the mock's
    reads on into the active one)."""
    wanted = [list(shape) for shape in shapes]
    return lambda answer: offsets_of(answer) in wanted


def read_compacted(
    topic: str, shapes: Sequence[Sequence[int]], suffix: str = "", isolation: int = 0
) -> list[Step]:
    return [
        fetch(
            topic,
            0,
            12,
            isolation,
            label=f"Fetch-compacted{suffix}",
            settle=CLEANED,
            until=offsets_in(*shapes),
        ),
        fetch(topic, 0, 4, isolation, label=f"Fetch-v4-compacted{suffix}"),
        list_offsets(topic, -2, 9, label=f"ListOffsets-earliest{suffix}"),
        list_offsets(topic, -1, 9, label=f"ListOffsets-latest{suffix}"),
    ]


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []

    def add(name: str, steps: list[Step]) -> None:
        out.append(Scenario(f"compaction-{name}", FAMILY, tuple(steps), config=LAYOUT))

    # overwrites and a tombstone kept (delete.retention.ms a day): batch 1 (offsets 0-2)
    # and 2 (3-4) are cleaned once batch 3 (5) rolls a new active segment
    topic = "compaction-overwrites"
    add(
        "overwrites",
        [
            *create(topic, configs=configs(86_400_000)),
            produce(
                topic, batch([rec("k0", "v0", 0), rec("k1", "v1", 0), rec("k2", "v2", 0)]), label="Produce-1"
            ),
            produce(topic, batch([rec("k0", "v3", 1), rec("k1", None, 1)]), label="Produce-2"),
            produce(topic, batch([rec("k2", "v5", 2)]), label="Produce-3"),
            *read_compacted(topic, [[2, 3, 4], [2, 3, 4, 5]]),
            drop(topic),
        ],
    )
    # a whole batch overwritten goes; tombstones go at the cleaning after their delete
    # horizon (delete.retention.ms=0): batch 4 makes batch 3 dirty, so the cleaner runs again
    topic = "compaction-tombstones"
    add(
        "tombstones",
        [
            *create(topic, configs=configs(0)),
            produce(topic, batch([rec("k0", "v0", 0), rec("k1", "v1", 0)]), label="Produce-1"),
            produce(topic, batch([rec("k0", "v2", 1), rec("k1", "v3", 1)]), label="Produce-2"),
            produce(topic, batch([rec("k2", "v4", 2), rec("k1", None, 2)]), label="Produce-3"),
            produce(topic, batch([rec("k3", "v6", 3)]), label="Produce-4"),
            *read_compacted(topic, [[2, 4, 5], [2, 4, 6]], "-first"),
            produce(topic, batch([rec("k2", "v7", 4)]), label="Produce-5"),
            *read_compacted(topic, [[2, 4, 6], [2, 4, 6, 7]], "-second"),
            drop(topic),
        ],
    )
    return out
