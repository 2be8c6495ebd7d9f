"""The produce/consume workload every client test runs, and its checks."""

from __future__ import annotations

MESSAGES = 10_000
KEYS = 97


def message(i: int) -> tuple[bytes, bytes]:
    return b"key-%d" % (i % KEYS), b"value-%d" % i


def check_consumed(
    consumed: dict[int, list[tuple[bytes, bytes]]], count: int = MESSAGES, first: int = 0
) -> None:
    """Every produced message exactly once; within a partition, in produce order; one key
    always lands in one partition."""
    seen = sorted(int(value.split(b"-")[1]) for records in consumed.values() for _, value in records)
    assert seen == list(range(first, first + count))
    key_partition: dict[bytes, int] = {}
    for partition, records in consumed.items():
        numbers = [int(value.split(b"-")[1]) for _, value in records]
        assert numbers == sorted(numbers), f"partition {partition} out of order"
        for key, value in records:
            assert (key, value) == message(int(value.split(b"-")[1]))
            assert key_partition.setdefault(key, partition) == partition


def stored_codecs(cluster: object, topic: str) -> set[int]:
    """Compression codecs (batch attribute bits 0-2) of every batch the broker stored."""
    from broker.state.records import split_batches

    codecs = set()
    for partition in cluster.state.topics[topic].partitions:  # type: ignore[attr-defined]
        if partition.log.log_end_offset:
            codecs |= {b.attributes & 0x07 for b in split_batches(partition.log.read(0, 1 << 30))}
    return codecs
