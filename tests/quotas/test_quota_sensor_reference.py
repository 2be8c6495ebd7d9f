"""The sensors against a plain transcription of Apache Kafka's code, bit for bit.

quotas/sensor.py keeps a stat's samples as columns (an array of doubles, lists of times and
counts) and takes shortcuts on the quota path (records and measures in one call, sums
without the expiry test between full passes). The reference below is Kafka's
SampledStat / WindowedSum / Avg / Max / Rate as written in Java (clients/.../metrics/stats):
a list of Sample objects, `current` cycling over samples + 1 slots, purge then combine on
every measure, windowSize from the oldest start; and Sensor.checkQuotas with
ClientQuotaManager's throttle (QuotaUtils.throttleTime, the request quota's cap, the int
cast). Random records, unrecords, measures and quota changes over clocks with window rolls
and gaps that expire samples must give the same doubles, window sizes, throttle times and
samples.
"""

from __future__ import annotations

import math
import random

import pytest

from quotas.callback import ClientQuotaType, DefaultQuotaCallback
from quotas.java import java_int, java_round
from quotas.manager import ClientQuotaManager, ClientSensors, RequestQuotaManager
from quotas.sensor import Combine, Rate, SampledStat, WindowConfig, ordered_sum


class _Sample:
    def __init__(self, initial: float, now: int) -> None:
        self.initial = initial
        self.event_count = 0
        self.start_ms = now
        self.last_event_ms = now
        self.value = initial

    def reset(self, now: int) -> None:
        self.event_count = 0
        self.start_ms = now
        self.last_event_ms = now
        self.value = self.initial


class _JavaSampledStat:
    """SampledStat with WindowedSum's, Avg's or Max's update and combine."""

    def __init__(self, config: WindowConfig, combine: Combine) -> None:
        self.config = config
        self.combine_kind = combine
        self.initial = -math.inf if combine is Combine.MAX else 0.0
        self.current = 0
        self.samples: list[_Sample] = []

    def record(self, value: float, now: int) -> None:
        sample = self.current_sample(now)
        if now - sample.start_ms >= self.config.window_ms:  # Sample.isComplete
            sample = self.advance(now)
        if self.combine_kind is Combine.MAX:
            sample.value = max(sample.value, value)
        else:
            sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now

    def advance(self, now: int) -> _Sample:
        self.current = (self.current + 1) % (self.config.samples + 1)
        if self.current >= len(self.samples):
            sample = _Sample(self.initial, now)
            self.samples.append(sample)
            return sample
        sample = self.current_sample(now)
        sample.reset(now)
        return sample

    def current_sample(self, now: int) -> _Sample:
        if not self.samples:
            self.samples.append(_Sample(self.initial, now))
        return self.samples[self.current]

    def oldest(self, now: int) -> _Sample:
        if not self.samples:
            self.samples.append(_Sample(self.initial, now))
        oldest = self.samples[0]
        for sample in self.samples[1:]:
            if sample.start_ms < oldest.start_ms:
                oldest = sample
        return oldest

    def purge_obsolete_samples(self, now: int) -> None:
        expire_age = self.config.samples * self.config.window_ms
        for sample in self.samples:
            if now - sample.last_event_ms >= expire_age:
                sample.reset(now)

    def measure(self, now: int) -> float:
        self.purge_obsolete_samples(now)
        if self.combine_kind is Combine.SUM:
            total = 0.0
            for sample in self.samples:
                total += sample.value
            return total
        if self.combine_kind is Combine.AVG:
            total, count = 0.0, 0
            for sample in self.samples:
                total += sample.value
                count += sample.event_count
            return math.nan if count == 0 else total / count
        if not any(sample.event_count for sample in self.samples):
            return math.nan
        return max(sample.value for sample in self.samples)  # as quotas/sensor.py's Max

    def state(self) -> list[tuple[int, int, int, float]]:
        return [(s.start_ms, s.last_event_ms, s.event_count, s.value) for s in self.samples]


class _JavaRate:
    def __init__(self, config: WindowConfig) -> None:
        self.config = config
        self.stat = _JavaSampledStat(config, Combine.SUM)

    def measure(self, now: int) -> float:
        value = self.stat.measure(now)
        return value / (self.window_size(now) / 1000.0)

    def window_size(self, now: int) -> int:
        self.stat.purge_obsolete_samples(now)
        elapsed = now - self.stat.oldest(now).start_ms
        full_windows = elapsed // self.config.window_ms  # elapsed >= 0: Java's truncation
        min_full_windows = self.config.samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self.config.window_ms
        return max(elapsed, 1)  # as quotas/sensor.py: never a window of 0 ms


def _java_record(rate: _JavaRate, value: float, now: int, bound: float | None, cap: int | None) -> int:
    """Sensor.record with checkQuotas, then ClientQuotaManager's throttle time."""
    rate.stat.record(value, now)
    if bound is None:
        return 0
    observed = rate.measure(now)
    if observed <= bound:  # Quota.acceptable for an upper bound
        return 0
    throttle = java_round((observed - bound) / bound * rate.window_size(now))  # QuotaUtils.throttleTime
    if cap is not None:
        throttle = min(throttle, cap)  # ClientRequestQuotaManager.throttleTime
    return java_int(throttle)


CONFIGS = (
    WindowConfig(11, 1000),
    WindowConfig(2, 30_000),
    WindowConfig(1, 1),
    WindowConfig(3, 7),
    WindowConfig(5, 100),
)


def _value(rng: random.Random) -> float:
    """Magnitudes far apart, so that a sum in another order rounds differently."""
    return rng.choice(
        (0.0, 1.0, 0.1, 26_000.0, 1e16, 3.0e-5, rng.random() * 1e6, rng.random(), float(rng.randrange(10**9)))
    )


def _step(rng: random.Random, config: WindowConfig) -> int:
    expire = config.samples * config.window_ms
    return rng.choice(
        (
            0,
            0,
            0,
            1,
            3,
            config.window_ms - 1,
            config.window_ms,
            config.window_ms + 1,
            expire,
            rng.randrange(2 * expire + 2),
        )
    )


def _bound(rng: random.Random) -> float | None:
    return rng.choice((None, math.nan, 1.0, 50.0, 1000.0, 1e5, 1e7, 1e12, rng.random() * 1e6))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.samples}x{c.window_ms}")
@pytest.mark.parametrize("request_quota", [False, True], ids=["bytes", "request"])
def test_sensors_give_kafkas_rates_windows_and_throttles(config: WindowConfig, request_quota: bool) -> None:
    rng = random.Random(hash((config.samples, config.window_ms, request_quota)) & 0xFFFF)
    callback = DefaultQuotaCallback()
    manager = (
        RequestQuotaManager(callback, config)
        if request_quota
        else ClientQuotaManager(ClientQuotaType.PRODUCE, callback, config)
    )
    cap = config.window_ms if request_quota else None  # the request quota's throttle is capped at one window
    for _ in range(12):
        sensors = ClientSensors(
            {"user": "", "client-id": "app"},
            _bound(rng),
            config,
            token_bucket=False,
            max_throttle_ms=manager.max_throttle_ms,
        )
        reference = _JavaRate(config)
        now = rng.randrange(10**12)
        for step in range(1500):
            now += _step(rng, config)
            value = _value(rng)
            roll = rng.random()
            if roll < 0.5:  # a quota-checked record (every produce, fetch or request)
                expected = _java_record(reference, value, now, sensors.bound, cap)
                assert manager.record(sensors, value, now) == expected, step
                if sensors.bound is not None:
                    assert sensors.last_rate == reference.measure(now), step
            elif roll < 0.65:  # the encoding time, recorded without a check
                reference.stat.record(value, now)
                manager.record_no_throttle(sensors, value, now)
            elif roll < 0.7:  # a throttled fetch's bytes taken back
                reference.stat.record(-value, now)
                manager.unrecord(sensors, value, now)
            elif roll < 0.8:  # the metrics read the rate
                assert sensors.rate.measure(now) == reference.measure(now), step
            elif roll < 0.85:
                assert sensors.rate.measure_with_window(now) == (
                    reference.measure(now),
                    reference.window_size(now),
                )
            elif roll < 0.88:
                assert sensors.rate.window_size_ms(now) == reference.window_size(now), step
            elif roll < 0.9:
                assert sensors.rate.stat.measure(now) == reference.stat.measure(now), step
            elif roll < 0.93:
                sensors.rate.stat.purge_obsolete(now)
                reference.stat.purge_obsolete_samples(now)
            else:  # a quota change: live sensors keep their samples, the bound changes
                sensors.bound = _bound(rng)
            # A Rate counts no events (nothing reads a WindowedSum's counts): the rest is Java's.
            assert [(start, last, value) for start, last, _, value in sensors.rate.sample_rows()] == [
                (start, last, value) for start, last, _, value in reference.stat.state()
            ], step
            assert sensors.rate._current == reference.stat.current, step


@pytest.mark.parametrize("combine", [Combine.SUM, Combine.AVG, Combine.MAX])
def test_sampled_stats_give_kafkas_values(combine: Combine) -> None:
    """throttle-time (Avg) and the connection quotas' stats."""
    rng = random.Random(combine.value)
    for config in CONFIGS:
        stat, reference = SampledStat(config, combine), _JavaSampledStat(config, combine)
        now = rng.randrange(10**9)
        for step in range(3000):
            now += _step(rng, config)
            if rng.random() < 0.6:
                value = _value(rng) * rng.choice((1, -1))
                stat.record(value, now)
                reference.record(value, now)
            elif rng.random() < 0.1:
                assert stat.oldest_start_ms(now) == reference.oldest(now).start_ms
            else:
                got, expected = stat.measure(now), reference.measure(now)
                assert got == expected or (math.isnan(got) and math.isnan(expected)), step
            assert stat.sample_rows() == reference.state(), step


def test_the_sum_is_left_to_right_in_doubles() -> None:
    """Not compensated (Python 3.12's sum() of floats is; Java's loop is not)."""
    values = [1e16, 1.0, 1.0, -1e16]
    assert ordered_sum(values, 0.0) == 0.0  # 1e16 + 1 rounds back to 1e16, twice
    rng = random.Random(5)
    for _ in range(1000):
        values = [_value(rng) * rng.choice((1, -1)) for _ in range(rng.randrange(13))]
        total = 0.0
        for value in values:
            total += value
        assert ordered_sum(values, 0.0) == total


def test_a_rate_measures_like_kafkas_from_its_first_record() -> None:
    rate, reference = Rate(WindowConfig(11, 1000)), _JavaRate(WindowConfig(11, 1000))
    assert rate.measure(5) == reference.measure(5)  # measuring creates the first sample
    rate.record(26_000, 5)
    reference.stat.record(26_000, 5)
    reference.stat.record(1.5, 1_005)
    assert rate.record_and_measure(1.5, 1_005) == (reference.measure(1_005), reference.window_size(1_005))
    assert [row[::3] + row[1:2] for row in rate.sample_rows()] == [
        row[::3] + row[1:2] for row in reference.stat.state()
    ]
