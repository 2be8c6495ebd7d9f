"""How quotas are measured: Kafka's sampled stats, Rate, TokenBucket and throttle maths.

A line-by-line port of org.apache.kafka.common.metrics.stats (SampledStat, Rate,
WindowedSum, Avg, Max, TokenBucket) and server-common's QuotaUtils, so a client sees the
same throttle times here as against Apache Kafka. Pure: every call takes `now_ms`
(integer milliseconds from any fixed origin), so tests drive time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from quotas.java import java_divide, java_min, java_round


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


class _Sample:
    __slots__ = ("start_ms", "last_event_ms", "event_count", "value")

    def __init__(self, now_ms: int, initial: float) -> None:
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.event_count = 0
        self.value = initial

    def reset(self, now_ms: int, initial: float) -> None:
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.event_count = 0
        self.value = initial


_VOID = -(1 << 62)  # a `_quiet_until` no clock reaches: the next measure takes the full pass


class SampledStat:
    """Samples of `window_ms` each, started by the first event after the previous one
    completes; a sample expires once its last event is `samples` x `window_ms` old.

    `_quiet_until` and `_min_start` are what Rate.record_and_measure's full pass found:
    before `_quiet_until` no sample can expire (the earliest last event plus the expiry
    age; later events only push it back), and `_min_start` is the earliest sample start.
    Creating or resetting a sample voids them."""

    __slots__ = ("config", "combine", "_samples", "_current", "_initial", "_quiet_until", "_min_start")

    def __init__(self, config: WindowConfig, combine: Combine = Combine.SUM) -> None:
        self.config = config
        self.combine = combine
        self._samples: list[_Sample] = []
        self._current = 0
        self._initial = -math.inf if combine is Combine.MAX else 0.0
        self._quiet_until = _VOID
        self._min_start = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.config.window_ms:
            sample = self._advance(now_ms)
        if self.combine is Combine.MAX:
            sample.value = max(sample.value, value)
        else:
            sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        self.purge_obsolete(now_ms)
        samples = self._samples
        if self.combine is Combine.SUM:
            return sum(s.value for s in samples)
        if self.combine is Combine.AVG:
            count = sum(s.event_count for s in samples)
            return math.nan if count == 0 else sum(s.value for s in samples) / count
        if not any(s.event_count for s in samples):
            return math.nan
        return max(s.value for s in samples)

    def oldest_start_ms(self, now_ms: int) -> int:
        if not self._samples:
            self._samples.append(_Sample(now_ms, self._initial))
            self._quiet_until = _VOID
        return min(s.start_ms for s in self._samples)

    def purge_obsolete(self, now_ms: int) -> None:
        self._quiet_until = _VOID
        expire_age = self.config.samples * self.config.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms, self._initial)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, self._initial))
            self._quiet_until = _VOID
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # One slot more than `samples`: a sample overlapping the start of the monitored
        # window is kept until its last event expires (Kafka 3.8+).
        self._quiet_until = _VOID
        self._current = (self._current + 1) % (self.config.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms, self._initial)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms, self._initial)
        return sample


class Rate:
    """Units per second over the retained samples (Kafka's Rate over a WindowedSum).

    The window is measured from the oldest sample's start, padded up to
    (samples - 1) full windows while younger: a new sensor's first burst is divided by
    about 10 s with the defaults, so roughly 10 x the quota passes unthrottled."""

    __slots__ = ("stat",)

    def __init__(self, config: WindowConfig) -> None:
        self.stat = SampledStat(config, Combine.SUM)

    @property
    def config(self) -> WindowConfig:
        return self.stat.config

    def record(self, value: float, now_ms: int) -> None:
        """SampledStat.record for a sum, inlined: it runs on every request under a quota."""
        stat = self.stat
        samples = stat._samples
        sample = samples[stat._current] if samples else stat._current_sample(now_ms)
        if now_ms - sample.start_ms >= stat.config.window_ms:
            sample = stat._advance(now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        return self.measure_with_window(now_ms)[0]

    def measure_with_window(self, now_ms: int) -> tuple[float, int]:
        """(rate, window size): Kafka's measure() and windowSize() at `now_ms`, in one
        pass over the samples (this runs on every quota-checked request)."""
        stat = self.stat
        config = stat.config
        samples = stat._samples
        stat._quiet_until = _VOID  # samples may be created or reset here
        if not samples:  # as SampledStat.oldest() does, measuring creates the first sample
            samples.append(_Sample(now_ms, 0.0))
        expire_age = config.samples * config.window_ms
        total = 0.0
        oldest = now_ms  # a purged sample restarts now
        for sample in samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms, 0.0)
            else:
                total += sample.value
                if sample.start_ms < oldest:
                    oldest = sample.start_ms
        window_ms = self._pad(now_ms - oldest)
        return total / (window_ms / 1000.0), window_ms

    def record_and_measure(self, value: float, now_ms: int) -> tuple[float, int]:
        """`record(value, now_ms)` then `measure_with_window(now_ms)`, in one call: a
        quota-checked record (every request under a quota, twice for a produce) paid for
        three calls. The same steps in the same order (the tests compare them)."""
        stat = self.stat
        config = stat.config
        samples = stat._samples
        sample = samples[stat._current] if samples else stat._current_sample(now_ms)
        window = config.window_ms
        if now_ms - sample.start_ms >= window:
            sample = stat._advance(now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms
        total = 0.0
        if now_ms < stat._quiet_until:
            # No sample can have expired since the last full pass and none was created
            # or reset: the same sum over every sample in the same order, the same
            # oldest start, without the expiry test per sample.
            for sample in samples:
                total += sample.value
            oldest = stat._min_start
            if now_ms < oldest:
                oldest = now_ms
        else:
            # A sample expires once now - last_event >= samples x window (integer ms,
            # so the same test as last_event <= cutoff).
            expire_age = config.samples * window
            cutoff = now_ms - expire_age
            oldest = min_last = now_ms  # a reset sample starts and ends now
            for sample in samples:
                last = sample.last_event_ms
                if last > cutoff:
                    total += sample.value
                    start = sample.start_ms
                    if start < oldest:
                        oldest = start
                    if last < min_last:
                        min_last = last
                else:
                    sample.reset(now_ms, 0.0)
            stat._quiet_until = min_last + expire_age
            stat._min_start = oldest  # the earliest start of every sample now
        elapsed = now_ms - oldest
        # _pad, inlined
        full_windows = elapsed // window
        min_full_windows = config.samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * window
        window_ms = elapsed if elapsed > 1 else 1
        return total / (window_ms / 1000.0), window_ms

    def window_size_ms(self, now_ms: int) -> int:
        self.stat.purge_obsolete(now_ms)
        return self._pad(now_ms - self.stat.oldest_start_ms(now_ms))

    def _pad(self, elapsed: int) -> int:
        config = self.stat.config
        full_windows = elapsed // config.window_ms
        min_full_windows = config.samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * config.window_ms
        return max(elapsed, 1)  # measured at the very start of a window: at least 1 ms


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
