"""Java semantics that Kafka's observable behaviour depends on."""

from __future__ import annotations

from collections.abc import Iterable


def java_string_hash(value: str) -> int:
    """Java's String.hashCode(): 31-polynomial over UTF-16 code units, as a signed int32."""
    h = 0
    data = value.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def hashmap_order(keys: Iterable[str], capacity: int = 16) -> list[str]:
    """Iteration order of a java.util.HashMap (default capacity) holding string keys put
    in this order: by bucket, then insertion order within a bucket."""

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # sorted() is stable: insertion order within a bucket
