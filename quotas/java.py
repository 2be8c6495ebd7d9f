"""Java semantics that Kafka's observable behaviour depends on."""

from __future__ import annotations

import math
from collections.abc import Iterable

INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def java_string_hash(value: str) -> int:
    """Java's String.hashCode(): 31-polynomial over UTF-16 code units, as a signed int32."""
    h = 0
    data = value.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def hashmap_capacity(initial_capacity: int | None, size: int) -> int:
    """The table length of a java.util.HashMap built as `new HashMap<>(initial_capacity)`
    (None: `new HashMap<>()`) once `size` distinct keys have been put: the table is
    allocated at the first put (tableSizeFor(initial), or 16) and doubles whenever the
    size goes above capacity x 0.75 (HashMap.putVal and resize). Bins turned into trees
    (9 or more keys in one bucket) are not modelled."""
    if initial_capacity is None:
        capacity = 16
    else:
        capacity = 1 if initial_capacity <= 1 else 1 << (initial_capacity - 1).bit_length()  # tableSizeFor
    threshold = int(capacity * 0.75)
    for count in range(1, size + 1):
        if count > threshold:
            old, capacity = capacity, capacity * 2
            threshold = threshold * 2 if old >= 16 else int(capacity * 0.75)
    return capacity


def hashmap_order(keys: Iterable[str], capacity: int = 16) -> list[str]:
    """Iteration order of a java.util.HashMap whose table has `capacity` buckets, holding
    string keys put in this order: by bucket, then insertion order within a bucket (a
    resize splits each bucket keeping that order)."""

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # sorted() is stable: insertion order within a bucket


def java_d2i(value: float) -> int:
    """A double narrowed to an int as Java's `(int)` and Scala's `.toInt` do: NaN is 0,
    fractions are truncated towards zero, values beyond the int range saturate."""
    if math.isnan(value):
        return 0
    if value >= INT_MAX:
        return INT_MAX
    if value <= INT_MIN:
        return INT_MIN
    return int(value)


def java_min(a: float, b: float) -> float:
    """Math.min on doubles: NaN if either is NaN (Python's min() keeps whichever comes
    first when compared with NaN)."""
    if a != a or b != b:  # NaN is the only value unequal to itself
        return math.nan
    return a if a <= b else b


def java_divide(dividend: float, divisor: float) -> float:
    """Java's double division: by zero gives a signed infinity, or NaN for 0/0 and NaN/0."""
    try:
        return dividend / divisor
    except ZeroDivisionError:
        if dividend == 0 or math.isnan(dividend):
            return math.nan
        return math.copysign(math.inf, dividend) * math.copysign(1.0, divisor)


LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def java_round(value: float) -> int:
    """Math.round: the closest integer, halves up (Python's round() rounds them to even),
    as a long: NaN is 0 and values beyond the long range saturate. x - floor(x) is exact
    in binary64, so 0.49999999999999994 stays 0 as in Java 7+."""
    if math.isnan(value):
        return 0
    if value >= LONG_MAX:
        return LONG_MAX
    if value <= LONG_MIN:
        return LONG_MIN
    floor = math.floor(value)
    return floor + 1 if value - floor >= 0.5 else floor


def java_int(value: int) -> int:
    """A long narrowed to an int as Java's `(int)` and Scala's `.toInt` do: the low 32
    bits, two's complement. Kafka narrows throttle times this way, so a throttle of
    2^31 ms or more wraps (a negative one means no throttle at all)."""
    return ((value + 2**31) & 0xFFFFFFFF) - 2**31
