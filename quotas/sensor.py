"""How quotas are measured: Kafka's sampled stats, Rate, TokenBucket and throttle maths.

A line-by-line port of org.apache.kafka.common.metrics.stats (SampledStat, Rate,
WindowedSum, Avg, Max, TokenBucket) and server-common's QuotaUtils, so a client sees the
same throttle times here as against Apache Kafka. Pure: every call takes `now_ms`
(integer milliseconds from any fixed origin), so tests drive time.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from quotas.java import java_divide, java_int, java_min, java_round


@dataclass(frozen=True, slots=True)
class WindowConfig:
    """Kafka's MetricConfig as quotas use it: `samples` windows of `window_ms` each
    (quota.window.num, quota.window.size.seconds)."""

    samples: int = 11
    window_ms: int = 1000


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric value, named, grouped and tagged as Apache Kafka registers it."""

    name: str
    group: str
    tags: dict[str, str]
    value: float
    broker: int | None = None  # set by the broker that reports it


DEFAULT_METRIC_CONFIG = WindowConfig(samples=2, window_ms=30_000)  # Kafka's MetricConfig defaults


class Combine(Enum):
    SUM = "sum"  # WindowedSum, the numerator of a Rate
    AVG = "avg"
    MAX = "max"


_VOID = -(1 << 62)  # a `_quiet_until` / `_roll_at` every clock passes: the next call takes the slow path

# Kafka sums a stat's samples left to right in doubles. Python 3.11's sum() of floats does
# exactly that in C (3.12 made it compensated, which rounds differently: a loop there).
if sys.version_info < (3, 12):
    ordered_sum: Callable[[Iterable[float], float], float] = sum
else:  # pragma: no cover - the venv runs 3.11

    def ordered_sum(values: Iterable[float], start: float) -> float:
        total = start
        for value in values:
            total += value
        return total


class _Samples:
    """Kafka's SampledStat samples, stored as columns: slot i is Sample i of Java's list
    (start, last event, event count, value), `_current` the index being recorded. A
    sample is created by appending a slot and recycled in place, as Java's list.

    The values are a list of floats that `sum()` adds in C, left to right (the same doubles
    in the same order as Java's loop: the same result, bit for bit), instead of a Python
    loop over a Sample object per slot; a quota-checked record sums them all. An
    array('d') would keep them contiguous, but `sum()` then makes a float per item: more
    instructions, and no fewer cache misses in situ (measured; see README).

    `_roll_at` is the current sample's start plus the window (when a record starts the next
    sample; `_VOID` before the first). `_quiet_until` and `_min_start` are what the last full
    pass found: before `_quiet_until` no sample can expire (the earliest last event plus the
    expiry age; later events only push it back), and `_min_start` is the earliest start;
    `_fast_until` is the earlier of `_quiet_until` and `_roll_at` (one test for a
    quota-checked record's common case). Creating or resetting a sample voids them."""

    __slots__ = (
        "config",
        "combine",
        "_values",
        "_starts",
        "_lasts",
        "_counts",
        "_current",
        "_initial",
        "_roll_at",
        "_quiet_until",
        "_fast_until",
        "_min_start",
        "_window_ms",
        "_expire_age",
        "_slots",
    )

    def __init__(self, config: WindowConfig, combine: Combine) -> None:
        self.config = config
        self.combine = combine
        self._initial = -math.inf if combine is Combine.MAX else 0.0
        self._values: list[float] = []
        self._starts: list[int] = []
        self._lasts: list[int] = []
        self._counts: list[int] = []
        self._current = 0
        self._roll_at = _VOID
        self._quiet_until = self._fast_until = _VOID
        self._min_start = 0
        self._window_ms = config.window_ms
        self._expire_age = config.samples * config.window_ms
        # One slot more than `samples`: a sample overlapping the start of the monitored
        # window is kept until its last event expires (Kafka 3.8+).
        self._slots = config.samples + 1

    def _roll(self, now_ms: int) -> int:
        """The slot a record at `now_ms` goes to when the current sample is complete or
        none exists yet (SampledStat.current, then advance when isComplete)."""
        if not self._values:
            self._new_slot(now_ms)
            if now_ms < self._roll_at:  # a new sample is complete only with a window of 0 ms
                return self._current
        self._quiet_until = self._fast_until = _VOID
        current = self._current = (self._current + 1) % self._slots
        if current >= len(self._values):
            self._new_slot(now_ms)
        else:
            self._reset(current, now_ms)
        return current

    def _new_slot(self, now_ms: int) -> None:
        self._values.append(self._initial)
        self._starts.append(now_ms)
        self._lasts.append(now_ms)
        self._counts.append(0)
        self._quiet_until = self._fast_until = _VOID
        if len(self._values) - 1 == self._current:
            self._roll_at = now_ms + self._window_ms

    def _reset(self, slot: int, now_ms: int) -> None:
        self._values[slot] = self._initial
        self._starts[slot] = self._lasts[slot] = now_ms
        self._counts[slot] = 0
        self._quiet_until = self._fast_until = _VOID
        if slot == self._current:
            self._roll_at = now_ms + self._window_ms

    def purge_obsolete(self, now_ms: int) -> None:
        """Resets every sample whose last event is `samples` x window old."""
        self._quiet_until = self._fast_until = _VOID
        expire_age = self._expire_age
        for slot, last in enumerate(self._lasts):
            if now_ms - last >= expire_age:
                self._reset(slot, now_ms)

    def oldest_start_ms(self, now_ms: int) -> int:
        if not self._values:  # SampledStat.oldest creates the first sample
            self._new_slot(now_ms)
        return min(self._starts)

    def measure_combined(self, now_ms: int) -> float:
        """SampledStat.measure: purge, then combine the samples (sum, average or max)."""
        self.purge_obsolete(now_ms)
        values = self._values
        if self.combine is Combine.SUM:
            return ordered_sum(values, 0.0)
        if self.combine is Combine.AVG:
            count = sum(self._counts)
            return math.nan if count == 0 else ordered_sum(values, 0.0) / count
        if not any(self._counts):
            return math.nan
        return max(values)

    def sample_rows(self) -> list[tuple[int, int, int, float]]:
        """(start, last event, event count, value) of each sample in Java's list order."""
        return list(zip(self._starts, self._lasts, self._counts, self._values, strict=True))


class SampledStat(_Samples):
    """Samples of `window_ms` each, started by the first event after the previous one
    completes; a sample expires once its last event is `samples` x `window_ms` old."""

    __slots__ = ()

    def __init__(self, config: WindowConfig, combine: Combine = Combine.SUM) -> None:
        super().__init__(config, combine)

    def record(self, value: float, now_ms: int) -> None:
        current = self._current if now_ms < self._roll_at else self._roll(now_ms)
        if self.combine is Combine.MAX:
            self._values[current] = max(self._values[current], value)
        else:
            self._values[current] += value
        self._counts[current] += 1
        self._lasts[current] = now_ms

    def measure(self, now_ms: int) -> float:
        return self.measure_combined(now_ms)


class _WindowedSum:
    """`Rate.stat`: the WindowedSum a Rate divides, as Kafka's Rate.stat (a view: the
    Rate keeps the samples itself, one object fewer on every quota-checked record)."""

    __slots__ = ("_rate",)

    def __init__(self, rate: Rate) -> None:
        self._rate = rate

    @property
    def config(self) -> WindowConfig:
        return self._rate.config

    def record(self, value: float, now_ms: int) -> None:
        self._rate.record(value, now_ms)

    def measure(self, now_ms: int) -> float:
        return self._rate.measure_combined(now_ms)

    def purge_obsolete(self, now_ms: int) -> None:
        self._rate.purge_obsolete(now_ms)

    def oldest_start_ms(self, now_ms: int) -> int:
        return self._rate.oldest_start_ms(now_ms)


class Rate(_Samples):
    """Units per second over the retained samples (Kafka's Rate over a WindowedSum).

    A Rate counts no events (its samples' counts stay 0): Kafka's WindowedSum counts them,
    but only Sample.isComplete reads them, against an event window quotas never set
    (Long.MAX_VALUE), and every record under a quota paid for the count.

    The window is measured from the oldest sample's start, padded up to
    (samples - 1) full windows while younger: a new sensor's first burst is divided by
    about 10 s with the defaults, so roughly 10 x the quota passes unthrottled."""

    __slots__ = ("_min_full_windows", "_min_elapsed")

    def __init__(self, config: WindowConfig) -> None:
        super().__init__(config, Combine.SUM)
        self._min_full_windows = config.samples - 1
        self._min_elapsed = self._min_full_windows * config.window_ms

    @property
    def stat(self) -> _WindowedSum:
        return _WindowedSum(self)

    def record(self, value: float, now_ms: int) -> None:
        """SampledStat.record for a sum: it runs on every request under a quota."""
        current = self._current if now_ms < self._roll_at else self._roll(now_ms)
        self._values[current] += value
        self._lasts[current] = now_ms

    def measure(self, now_ms: int) -> float:
        return self.measure_with_window(now_ms)[0]

    def measure_with_window(self, now_ms: int) -> tuple[float, int]:
        """(rate, window size): Kafka's measure() and windowSize() at `now_ms`, in one
        pass over the samples (this runs on every quota-checked request)."""
        if not self._values:  # as SampledStat.oldest() does, measuring creates the first sample
            self._new_slot(now_ms)
        total, oldest = self._full_pass(now_ms)
        window_ms = self._pad(now_ms - oldest)
        return total / (window_ms / 1000.0), window_ms

    def record_and_measure(self, value: float, now_ms: int) -> tuple[float, int]:
        """`record(value, now_ms)` then `measure_with_window(now_ms)`, in one call: a
        quota-checked record (every request under a quota, twice for a produce) paid for
        three calls. The same steps in the same order (the tests compare them)."""
        current = self._current if now_ms < self._roll_at else self._roll(now_ms)
        values = self._values
        values[current] += value
        self._lasts[current] = now_ms
        total, oldest = self._sum_and_oldest(now_ms)
        elapsed = now_ms - oldest
        # _pad, inlined
        window = self._window_ms
        full_windows = elapsed // window
        min_full_windows = self._min_full_windows
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * window
        window_ms = elapsed if elapsed > 1 else 1
        return total / (window_ms / 1000.0), window_ms

    def _sum_and_oldest(self, now_ms: int) -> tuple[float, int]:
        """(sum of the samples in order, earliest start) at `now_ms`, right after a record."""
        if now_ms < self._quiet_until:
            # No sample can have expired since the last full pass and none was created
            # or reset: the same sum over every sample in the same order (a reset one adds
            # its 0.0, which changes no sum: no sample value is ever -0.0), the same oldest
            # start, without the expiry test per sample.
            oldest = self._min_start
            return ordered_sum(self._values, 0.0), now_ms if now_ms < oldest else oldest
        return self._full_pass(now_ms)

    def _full_pass(self, now_ms: int) -> tuple[float, int]:
        """Purges expired samples and sums the others in order: (sum, earliest start),
        remembered with when the earliest last event could expire."""
        # A sample expires once now - last_event >= samples x window (integer ms, so the
        # same test as last_event <= cutoff).
        expire_age = self._expire_age
        cutoff = now_ms - expire_age
        values = self._values
        starts = self._starts
        total = 0.0
        oldest = min_last = now_ms  # a reset sample starts and ends now
        for slot, last in enumerate(self._lasts):
            if last > cutoff:
                total += values[slot]
                start = starts[slot]
                if start < oldest:
                    oldest = start
                if last < min_last:
                    min_last = last
            else:
                self._reset(slot, now_ms)  # adds its 0.0 to Java's sum: no change
        quiet_until = self._quiet_until = min_last + expire_age
        roll_at = self._roll_at
        self._fast_until = roll_at if roll_at < quiet_until else quiet_until
        self._min_start = oldest  # the earliest start of every sample now
        return total, oldest

    def window_size_ms(self, now_ms: int) -> int:
        self.purge_obsolete(now_ms)
        return self._pad(now_ms - self.oldest_start_ms(now_ms))

    def _pad(self, elapsed: int) -> int:
        window = self._window_ms
        full_windows = elapsed // window
        min_full_windows = self._min_full_windows
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * window
        return max(elapsed, 1)  # measured at the very start of a window: at least 1 ms


class QuotaSensor(Rate):
    """Kafka's Sensor as a client quota has it: one Rate, checked against `bound` on a
    quota-checked record (Sensor.record with checkQuotas), the throttle time
    ClientQuotaManager derives from a violation (QuotaUtils.throttleTime, capped at
    `max_throttle_ms` for the request quota, cast to an int).

    The sensor is its Rate (`rate` is itself): a request under quotas records on two
    sensors, and a separate Rate object per sensor, a call per record and another per
    measure cost more than the arithmetic. `record_checked` is Rate.record_and_measure
    with the check, written out once more for that reason (tests/quotas/
    test_quota_sensor_reference.py holds both to Kafka's Java, bit for bit).

    `last_check_ms`, `last_value` and `last_extra` are what the last `record_checked` and
    `record_extra` recorded: the metrics row carries them so that a replay of the rows
    (spark's what-if) feeds the sensors exactly the broker's inputs. Plain stores, read by
    no quota logic."""

    __slots__ = (
        "bound",
        "max_throttle_ms",
        "last_record_ms",
        "last_rate",
        "last_check_ms",
        "last_value",
        "last_extra",
    )

    def __init__(self, config: WindowConfig, bound: float | None, max_throttle_ms: int | None = None) -> None:
        super().__init__(config)
        self.bound = bound
        self.max_throttle_ms = max_throttle_ms
        self.last_record_ms = 0
        self.last_rate: float | None = None  # measured at the last quota check
        self.last_check_ms = 0  # when `record_checked` last recorded
        self.last_value = 0.0  # what it recorded
        self.last_extra = 0.0  # what `record_extra` last recorded (at last_record_ms)

    @property
    def rate(self) -> Rate:
        return self

    def record_checked(self, value: float, now_ms: int) -> int:
        """Records `value` and returns the throttle time (0 within the quota, or without one)."""
        self.last_record_ms = self.last_check_ms = now_ms
        self.last_value = value
        bound = self.bound
        values = self._values
        if now_ms < self._fast_until:
            # Within the current sample and before any sample can expire (what the last
            # full pass found, voided when a sample is created or reset): Rate.record,
            # then Rate.measure's sum over every sample in order (a reset one adds its 0.0,
            # which changes no sum: no sample value is ever -0.0) and the same oldest start.
            current = self._current
            values[current] += value
            self._lasts[current] = now_ms
            if bound is None:
                return 0
            total = ordered_sum(values, 0.0)
            oldest = self._min_start
            if now_ms < oldest:
                oldest = now_ms
        else:
            # Rate.record
            current = self._current if now_ms < self._roll_at else self._roll(now_ms)
            values[current] += value
            self._lasts[current] = now_ms
            if bound is None:
                return 0  # no quota: recorded, not measured (so nothing purged)
            total, oldest = self._sum_and_oldest(now_ms)  # Rate.measure_with_window
        elapsed = now_ms - oldest  # never negative: oldest <= now
        if elapsed < self._min_elapsed:  # fewer than samples - 1 full windows: padded
            window = self._window_ms
            elapsed += (self._min_full_windows - elapsed // window) * window
        window_ms = elapsed if elapsed > 1 else 1
        observed = self.last_rate = total / (window_ms / 1000.0)
        if observed <= bound:
            return 0
        return self._throttle_ms(observed, bound, window_ms)

    def _throttle_ms(self, observed: float, bound: float, window_ms: int) -> int:
        if math.isnan(bound):
            return 0  # Math.round(NaN) is 0 in Kafka
        throttle = throttle_time_ms(observed, bound, window_ms)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return java_int(throttle)  # ClientQuotaManager's (int) cast

    def record_extra(self, value: float, now_ms: int) -> None:
        """A record without a quota check (the request quota's network-thread time)."""
        self.last_record_ms = now_ms
        self.last_extra = value
        # Rate.record
        current = self._current if now_ms < self._roll_at else self._roll(now_ms)
        self._values[current] += value
        self._lasts[current] = now_ms


class TokenBucket:
    """Kafka's TokenBucket (KIP-599): refilled at `rate` per second up to a burst of
    samples x window x rate, full at first use; exhausted when tokens drop below 0.

    Java's Math.min keeps a NaN: a NaN rate (controller_mutation_rate=NaN) makes the
    tokens NaN, which is never below 0, and they stay NaN whatever rate follows."""

    __slots__ = ("config", "tokens", "_last_update_ms")

    def __init__(self, config: WindowConfig) -> None:
        self.config = config
        self.tokens = 0.0
        self._last_update_ms: int | None = None

    def burst(self, rate: float) -> float:
        return self.config.samples * (self.config.window_ms / 1000.0) * rate

    def measure(self, rate: float, now_ms: int) -> float:
        self._refill(rate, now_ms)
        return self.tokens

    def record(self, value: float, rate: float, now_ms: int) -> None:
        self._refill(rate, now_ms)
        self.tokens = java_min(self.burst(rate), self.tokens - value)

    def _refill(self, rate: float, now_ms: int) -> None:
        burst = self.burst(rate)
        if self._last_update_ms is None:  # Kafka starts at time 0: the first refill fills it
            self.tokens = burst
        else:
            self.tokens = java_min(burst, self.tokens + rate * ((now_ms - self._last_update_ms) / 1000.0))
        self._last_update_ms = now_ms


def throttle_time_ms(observed: float, bound: float, window_ms: int) -> int:
    """QuotaUtils.throttleTime: how long until the rate over the same window is back at the
    bound. In doubles, as Java: a bound of 0 (connection_creation_rate=NaN narrowed to an
    int) gives +Infinity, which rounds to Long.MAX_VALUE."""
    return java_round(java_divide(observed - bound, bound) * window_ms)


def token_bucket_throttle_ms(tokens: float, rate: float) -> int:
    """ControllerMutationQuotaManager.throttleTimeMs: time to refill the deficit."""
    return java_round(java_divide(-tokens, rate) * 1000)
