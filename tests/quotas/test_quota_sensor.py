"""quotas.sensor against hand-worked examples from Apache Kafka's formulas.

Kafka (clients/.../metrics/stats, server-common QuotaUtils), with quota.window.num = 11
and quota.window.size.seconds = 1 unless a test says otherwise:
- SampledStat keeps samples + 1 = 12 slots; a sample is complete when now - start >= window;
  a sample is reset when now - lastEventMs >= samples x window (11 s).
- Rate = sum of samples / windowSize, windowSize = now - oldest.start, padded up to
  (samples - 1) = 10 full windows while fewer are complete, at least 1 ms.
- Sensor: record first, then violated when rate > bound; throttle =
  Math.round((rate - bound) / bound x windowSize).
- TokenBucket: burst = samples x window_s x rate, full at first use, record subtracts.
Every expected number below is worked out by hand in the comment beside it; the fake
clock is a plain integer of milliseconds.
"""

from __future__ import annotations

import math

import pytest

from quotas.sensor import (
    Combine,
    Rate,
    SampledStat,
    TokenBucket,
    WindowConfig,
    java_round,
    throttle_time_ms,
    token_bucket_throttle_ms,
)

DEFAULT = WindowConfig(samples=11, window_ms=1000)


def record_and_throttle(rate: Rate, value: float, now_ms: int, bound: float) -> int:
    """Kafka's Sensor.record + ClientQuotaManager: record, check, throttle (0 within the bound)."""
    rate.record(value, now_ms)
    observed = rate.measure(now_ms)
    if observed <= bound:
        return 0
    return throttle_time_ms(observed, bound, rate.window_size_ms(now_ms))


# -- first burst ---------------------------------------------------------------------


def test_first_burst_of_ten_windows_worth_passes() -> None:
    rate = Rate(DEFAULT)
    # window at t=0: elapsed 0, 0 full windows < 10 -> 0 + 10 x 1000 = 10,000 ms
    # rate = 10,000 B / 10 s = 1000 B/s, not > 1000: no throttle
    assert record_and_throttle(rate, 10_000, 0, bound=1000) == 0
    assert rate.measure(0) == pytest.approx(1000.0)


def test_first_burst_one_byte_over_is_throttled_one_ms() -> None:
    rate = Rate(DEFAULT)
    # rate = 10,001 / 10 s = 1000.1 B/s
    # throttle = round((1000.1 - 1000) / 1000 x 10,000) = round(1.0) = 1 ms
    assert record_and_throttle(rate, 10_001, 0, bound=1000) == 1


def test_first_burst_of_twice_the_allowance_is_throttled_ten_seconds() -> None:
    rate = Rate(DEFAULT)
    # rate = 20,000 / 10 s = 2000 B/s; throttle = round((2000 - 1000) / 1000 x 10,000) = 10,000 ms
    assert record_and_throttle(rate, 20_000, 0, bound=1000) == 10_000


# -- steady state --------------------------------------------------------------------


def test_steady_just_below_the_bound_is_never_throttled() -> None:
    # 99 B every 100 ms (990 B/s). The highest measurement is at t=10,000, the first
    # moment the window is no longer padded: 101 records (t=0..10,000) = 9999 B over
    # elapsed 10,000 ms (10 full windows, no padding) -> 999.9 B/s <= 1000.
    rate = Rate(DEFAULT)
    worst = (0.0, -1)
    for now in range(0, 30_000, 100):
        assert record_and_throttle(rate, 99, now, bound=1000) == 0
        worst = max(worst, (rate.measure(now), now))
    assert worst[0] == pytest.approx(999.9)
    assert worst[1] == 10_000


def test_steady_exactly_at_the_bound_is_throttled_one_record_once_unpadded() -> None:
    # Kafka's fencepost: 100 B every 100 ms (exactly 1000 B/s).
    # t=9,900: 100 records = 10,000 B; elapsed 9,900 (9 full windows < 10) -> +1000 = 10,900 ms
    #          -> 917.4 B/s, fine.
    # t=10,000: 101 records = 10,100 B; elapsed 10,000 (10 full windows) -> 10,000 ms
    #          -> 1010 B/s; throttle = round((1010 - 1000) / 1000 x 10,000) = 100 ms
    rate = Rate(DEFAULT)
    for now in range(0, 10_000, 100):
        assert record_and_throttle(rate, 100, now, bound=1000) == 0
    assert record_and_throttle(rate, 100, 10_000, bound=1000) == 100


def test_twice_the_bound_for_twenty_seconds() -> None:
    # 200 B every 100 ms from t=0 to t=19,900 (200 records, 2000 B/s).
    # Samples start at k x 1000 and hold 10 records = 2000 B each. At t=19,900 the 12 slots
    # hold samples 8..19; sample 8's last event (8,900) is 11,000 ms old -> reset.
    # Retained: samples 9..19 = 11 x 2000 = 22,000 B; oldest start 9,000 -> window 10,900 ms
    # (10 full windows: no padding). rate = 22,000 / 10.9 = 2018.35 B/s
    # throttle = round((22,000 / 10.9 - 1000) / 1000 x 10,900) = round(22,000 - 10,900) = 11,100 ms
    rate = Rate(DEFAULT)
    throttle = 0
    for now in range(0, 20_000, 100):
        throttle = record_and_throttle(rate, 200, now, bound=1000)
    assert rate.window_size_ms(19_900) == 10_900
    assert rate.measure(19_900) == pytest.approx(22_000 / 10.9)
    assert throttle == 11_100


# -- sample expiry -------------------------------------------------------------------


def test_burst_just_before_expiry_is_measured_with_the_old_sample() -> None:
    rate = Rate(DEFAULT)
    rate.record(10_000, 0)
    # t=10,999: sample 0's last event is 10,999 ms old < 11,000: kept.
    # total 20,000 B; elapsed 10,999 (10 full windows) -> 10,999 ms
    # throttle = round((20,000 / 10.999 - 1000) / 1000 x 10,999) = round(20,000 - 10,999) = 9,001 ms
    assert record_and_throttle(rate, 10_000, 10_999, bound=1000) == 9_001


def test_after_eleven_idle_seconds_a_burst_is_measured_over_a_padded_window_again() -> None:
    rate = Rate(DEFAULT)
    rate.record(10_000, 0)
    # t=11,000: sample 0's last event is 11,000 ms old >= 11 x 1000: reset to start 11,000.
    # total 10,000 B; elapsed 0 -> padded to 10,000 ms -> 1000 B/s: no throttle
    assert record_and_throttle(rate, 10_000, 11_000, bound=1000) == 0
    assert rate.window_size_ms(11_000) == 10_000


def test_expired_samples_no_longer_count() -> None:
    rate = Rate(DEFAULT)
    rate.record(5_000, 0)
    rate.record(3_000, 2_000)
    # t=11,000: the t=0 sample is 11,000 ms old (reset, start 11,000), the t=2,000 one 9,000 ms (kept)
    # total 3,000 B; oldest start 2,000 -> elapsed 9,000, 9 full windows -> +1000 = 10,000 ms
    # rate = 3,000 / 10 = 300 B/s
    assert rate.stat.measure(11_000) == 3_000
    assert rate.window_size_ms(11_000) == 10_000
    assert rate.measure(11_000) == pytest.approx(300.0)


# -- padded window -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (0, 10_000),  # elapsed 0, 0 full windows -> 0 + 10 x 1000
        (500, 10_500),  # elapsed 500, 0 full -> 500 + 10 x 1000
        (9_999, 10_999),  # elapsed 9,999, 9 full -> 9,999 + 1 x 1000
        (10_000, 10_000),  # elapsed 10,000, 10 full -> no padding
        (10_500, 10_500),  # elapsed 10,500, 10 full -> no padding
        (10_999, 10_999),  # last event 10,999 ms old < 11,000: still the oldest
        (12_000, 10_000),  # last event 12,000 ms old >= 11,000: reset to start 12,000 -> 0 + 10,000
    ],
)
def test_window_size_after_a_single_record_at_zero(now: int, expected: int) -> None:
    rate = Rate(DEFAULT)
    rate.record(1, 0)
    assert rate.window_size_ms(now) == expected


def test_window_size_of_an_unused_rate_is_the_padding() -> None:
    # No samples: oldest() creates one starting now -> elapsed 0 -> 10 x 1000
    assert Rate(DEFAULT).window_size_ms(42_000) == 10_000


def test_window_is_at_least_one_ms_with_a_single_sample() -> None:
    rate = Rate(WindowConfig(samples=1, window_ms=1000))
    rate.record(5, 0)
    # samples - 1 = 0 full windows required: no padding; elapsed 0 -> max(0, 1) = 1 ms
    assert rate.window_size_ms(0) == 1
    # rate = 5 / 0.001 s = 5000/s; throttle at bound 1000 = round((5000 - 1000) / 1000 x 1) = 4 ms
    assert rate.measure(0) == pytest.approx(5000.0)
    assert throttle_time_ms(rate.measure(0), 1000, rate.window_size_ms(0)) == 4
    # t=250: elapsed 250 -> 250 ms; 5 / 0.25 s = 20/s
    assert rate.window_size_ms(250) == 250
    assert rate.measure(250) == pytest.approx(20.0)


def test_single_sample_expires_after_one_window() -> None:
    rate = Rate(WindowConfig(samples=1, window_ms=1000))
    rate.record(5, 0)
    # expire age = 1 x 1000: at t=1000 the sample (last event 0) is reset to start 1000
    assert rate.stat.measure(1000) == 0
    assert rate.window_size_ms(1000) == 1


# -- the overlapping twelfth sample ---------------------------------------------------


def half_second_records(until: int) -> Rate:
    """1.0 at every 500 ms from 0 to `until` inclusive: sample k holds k x 1000 and k x 1000 + 500."""
    rate = Rate(DEFAULT)
    for now in range(0, until + 1, 500):
        rate.record(1.0, now)
    return rate


def test_twelve_samples_are_kept_while_the_oldest_overlaps_the_window() -> None:
    rate = half_second_records(11_000)
    # t=11,000: samples 0..11 fill the 12 slots; sample 0's last event (500) is 10,500 ms old: kept.
    # total = 23 records; window = 11,000 - 0 = 11,000 ms; rate = 23 / 11 = 2.0909/s
    assert rate.stat.measure(11_000) == 23
    assert rate.window_size_ms(11_000) == 11_000
    assert rate.measure(11_000) == pytest.approx(23 / 11)


def test_overlapping_sample_goes_once_its_last_event_expires() -> None:
    rate = half_second_records(11_000)
    # t=11,500: sample 0's last event (500) is 11,000 ms old: reset (start 11,500).
    # total = 23 - 2 = 21; oldest start 1,000 -> 10,500 ms; rate = 21 / 10.5 = 2.0/s
    assert rate.stat.measure(11_500) == 21
    assert rate.window_size_ms(11_500) == 10_500
    assert rate.measure(11_500) == pytest.approx(2.0)


def test_thirteenth_sample_reuses_the_oldest_slot() -> None:
    rate = half_second_records(12_000)
    # t=12,000 completes sample 11 (start 11,000) and starts sample 12 in slot 12 mod 12 = 0,
    # recycling sample 0. Samples 1..12 remain; sample 1's last event (1,500) is 10,500 ms old:
    # kept. total = 11 samples x 2 + 1 = 23; window = 12,000 - 1,000 = 11,000 ms
    assert rate.stat.measure(12_000) == 23
    assert rate.window_size_ms(12_000) == 11_000


def test_a_sample_starts_at_the_first_record_after_the_previous_one_completes() -> None:
    rate = Rate(DEFAULT)
    rate.record(1, 0)
    rate.record(1, 999)  # 999 - 0 < 1000: same sample
    rate.record(1, 1_999)  # 1,999 - 0 >= 1000: a new sample starting at 1,999 (not at 1,000)
    assert rate.stat.measure(1_999) == 3
    # t=11,000: sample 0 (last event 999) is 10,001 ms old: kept -> window 11,000 - 0 = 11,000
    assert rate.window_size_ms(11_000) == 11_000
    # t=11,999: sample 0 is 11,000 ms old: reset. Oldest start 1,999 -> elapsed 10,000 ms
    # (10 full windows, no padding); a sample aligned on 1,000 would give 10,999 instead.
    assert rate.window_size_ms(11_999) == 10_000
    assert rate.stat.measure(11_999) == 1


# -- Java rounding -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2.5, 3),  # Math.round: floor(2.5 + 0.5) = 3 (Python's round(2.5) is 2)
        (0.5, 1),  # Python's round(0.5) is 0
        (1.5, 2),
        (-2.5, -2),  # floor(-2.5 + 0.5) = -2
        (-2.6, -3),
        (2.4999, 2),
        (0.0, 0),
    ],
)
def test_java_round_rounds_halves_up(value: float, expected: int) -> None:
    assert java_round(value) == expected


def test_java_round_of_largest_double_below_a_half() -> None:
    assert java_round(0.49999999999999994) == 0


def test_throttle_time_rounds_a_half_up() -> None:
    # (1500 - 1000) / 1000 x 5 = 0.5 x 5 = 2.5 -> Math.round = 3
    assert throttle_time_ms(1500.0, 1000.0, 5) == 3
    # (1250 - 1000) / 1000 x 10 = 0.25 x 10 = 2.5 -> 3
    assert throttle_time_ms(1250.0, 1000.0, 10) == 3


def test_throttle_time_formula() -> None:
    # (3000 - 1000) / 1000 x 10,500 = 2 x 10,500 = 21,000
    assert throttle_time_ms(3000.0, 1000.0, 10_500) == 21_000
    # (101 - 100) / 100 x 10,000 = 0.01 x 10,000 = 100
    assert throttle_time_ms(101.0, 100.0, 10_000) == 100


# -- Avg and Max ---------------------------------------------------------------------


def test_avg_is_total_over_event_count_across_samples() -> None:
    stat = SampledStat(DEFAULT, Combine.AVG)
    stat.record(10, 0)
    stat.record(20, 500)
    stat.record(60, 1_000)  # a second sample
    # (10 + 20 + 60) / 3 events = 30
    assert stat.measure(1_000) == pytest.approx(30.0)


def test_avg_drops_expired_samples_and_is_nan_when_empty() -> None:
    stat = SampledStat(DEFAULT, Combine.AVG)
    assert math.isnan(stat.measure(0))  # Avg.combine: count == 0 -> NaN
    stat.record(10, 0)
    stat.record(20, 500)
    stat.record(60, 1_000)
    # t=11,500: sample 0 (last event 500) is 11,000 ms old -> reset; sample 1 (last 1,000) kept
    # 60 / 1 = 60
    assert stat.measure(11_500) == pytest.approx(60.0)
    # t=12,000: sample 1 is 11,000 ms old too -> no events -> NaN
    assert math.isnan(stat.measure(12_000))


def test_max_over_samples_and_after_expiry() -> None:
    stat = SampledStat(DEFAULT, Combine.MAX)
    assert math.isnan(stat.measure(0))  # Max.combine: count == 0 -> NaN
    stat.record(5, 0)
    stat.record(40, 500)
    stat.record(7, 1_500)
    assert stat.measure(1_500) == 40  # max(5, 40, 7)
    # t=11,500: sample 0 (5, 40; last event 500) is 11,000 ms old -> reset; max of the rest = 7
    assert stat.measure(11_500) == 7


def test_max_of_negative_values_is_not_the_initial_value() -> None:
    stat = SampledStat(DEFAULT, Combine.MAX)
    stat.record(-3, 0)
    # Max starts samples at -Infinity, so max(-inf, -3) = -3 (not 0)
    assert stat.measure(0) == -3


# -- TokenBucket ---------------------------------------------------------------------


def test_token_bucket_is_full_at_first_use() -> None:
    bucket = TokenBucket(DEFAULT)
    # burst = 11 samples x 1 s x 2/s = 22
    assert bucket.burst(2.0) == pytest.approx(22.0)
    assert bucket.measure(2.0, 5_000) == pytest.approx(22.0)


def test_token_bucket_record_overdraws_and_refills_at_the_rate() -> None:
    bucket = TokenBucket(DEFAULT)
    bucket.record(30, 2.0, 5_000)
    # full (22) - 30 = -8
    assert bucket.measure(2.0, 5_000) == pytest.approx(-8.0)
    # +2/s x 2 s = -8 + 4 = -4
    assert bucket.measure(2.0, 7_000) == pytest.approx(-4.0)
    # +2/s x 2 s = -4 + 4 = 0
    assert bucket.measure(2.0, 9_000) == pytest.approx(0.0)


def test_token_bucket_refill_is_capped_at_the_burst() -> None:
    bucket = TokenBucket(DEFAULT)
    bucket.record(30, 2.0, 0)  # 22 - 30 = -8
    # 100 s later: min(22, -8 + 2 x 100) = 22
    assert bucket.measure(2.0, 100_000) == pytest.approx(22.0)


def test_token_bucket_throttle_is_time_to_refill_the_deficit() -> None:
    bucket = TokenBucket(DEFAULT)
    bucket.record(30, 2.0, 0)
    # tokens -8 at 2/s: round(8 / 2 x 1000) = 4000 ms
    assert token_bucket_throttle_ms(bucket.measure(2.0, 0), 2.0) == 4_000
    # t=1,500: -8 + 3 = -5 -> round(5 / 2 x 1000) = 2500 ms
    assert token_bucket_throttle_ms(bucket.measure(2.0, 1_500), 2.0) == 2_500


def test_token_bucket_throttle_rounds_a_half_up() -> None:
    # -(-0.0025) / 1 x 1000 = 2.5 -> 3  (0.0025 x 1000 is 2.5 in binary64)
    assert token_bucket_throttle_ms(-0.0025, 1.0) == 3
    # 1 token at 400/s: 1 / 400 x 1000 = 2.5 -> 3
    assert token_bucket_throttle_ms(-1.0, 400.0) == 3


def test_token_bucket_burst_follows_the_window_config() -> None:
    # 5 samples x 2 s x 3/s = 30
    assert TokenBucket(WindowConfig(samples=5, window_ms=2000)).burst(3.0) == pytest.approx(30.0)
