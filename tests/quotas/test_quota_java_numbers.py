"""The Java number semantics behind issue 15's NaN items, on the pure quota code: `(int)`
of a double, Math.min with NaN, double division by zero, and what they do to connection
rates, token buckets and fetch sizes (no clock, no sockets)."""

from __future__ import annotations

import math

from quotas.callback import DefaultQuotaCallback, KafkaPrincipal
from quotas.connections import Admission, ConnectionQuotas, Decision
from quotas.entity import QuotaEntity
from quotas.java import INT_MAX, LONG_MAX, java_d2i, java_divide, java_min
from quotas.manager import QuotaManagers
from quotas.sensor import TokenBucket, WindowConfig, throttle_time_ms, token_bucket_throttle_ms

CONFIG = WindowConfig(samples=11, window_ms=1000)
ALICE = KafkaPrincipal("User", "alice")


def test_double_to_int_as_java_casts() -> None:
    assert java_d2i(math.nan) == 0
    assert java_d2i(5e-7) == 0 and java_d2i(2.9999) == 2 and java_d2i(-2.5) == -2
    assert java_d2i(math.inf) == INT_MAX and java_d2i(1e300) == INT_MAX
    assert java_d2i(-math.inf) == -(2**31)


def test_math_min_and_division_keep_nan_and_infinity() -> None:
    assert math.isnan(java_min(math.nan, 1.0)) and math.isnan(java_min(1.0, math.nan))
    assert java_min(1.0, 2.0) == 1.0
    assert java_divide(1.0, 0.0) == math.inf and java_divide(-1.0, 0.0) == -math.inf
    assert math.isnan(java_divide(0.0, 0.0)) and math.isnan(java_divide(math.nan, 0.0))


def test_throttle_against_a_zero_bound_is_long_max() -> None:
    """QuotaUtils.throttleTime: (observed - 0) / 0 x window = +Infinity; Math.round: Long.MAX."""
    assert throttle_time_ms(0.1, 0.0, 10_000) == LONG_MAX
    assert token_bucket_throttle_ms(-1.0, 0.0) == LONG_MAX


def test_nan_connection_rate_is_zero_and_throttles_the_first_connection() -> None:
    quotas = ConnectionQuotas(CONFIG, max_connections=100, max_connections_per_ip=100)
    quotas.update_ip_rate("10.0.0.1", math.nan)
    assert quotas.rate_limit("10.0.0.1") == 0
    # Capped at one window; nothing counted (it is not admitted).
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.THROTTLE, 1000)
    assert quotas.admit("10.0.0.1", 5) == Decision(Admission.THROTTLE, 1000)
    assert quotas.counts == {}


def test_connection_rate_of_int_max_is_no_quota() -> None:
    """ConnectionQuotas takes Int.MAX_VALUE (IP_CONNECTION_RATE_DEFAULT) for "no quota":
    no sensor is made, so no connection-accept-rate metric either."""
    quotas = ConnectionQuotas(CONFIG, max_connections=100, max_connections_per_ip=100)
    quotas.update_ip_rate(None, 5)
    quotas.update_ip_rate("10.0.0.1", float(INT_MAX))
    assert quotas.rate_limit("10.0.0.1") is None and quotas.rate_limit("10.0.0.2") == 5
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.ACCEPT)
    assert quotas.admit("10.0.0.2", 0) == Decision(Admission.ACCEPT)
    tagged = {m.tags["ip"] for m in quotas.metrics(0) if m.name == "connection-accept-rate"}
    assert tagged == {"10.0.0.2"}


def test_nan_tokens_stay_nan_after_the_rate_changes() -> None:
    bucket = TokenBucket(CONFIG)
    bucket.record(5, math.nan, 0)
    assert math.isnan(bucket.measure(math.nan, 0))
    assert math.isnan(bucket.measure(1.0, 10_000))  # Math.min(11, NaN + 10) is NaN
    bucket.record(100, 1.0, 10_000)
    assert math.isnan(bucket.tokens)


def test_fetch_window_of_a_nan_quota_is_nan() -> None:
    managers = QuotaManagers(
        DefaultQuotaCallback(),
        CONFIG,
        CONFIG,
        ConnectionQuotas(CONFIG, max_connections=9, max_connections_per_ip=9),
    )
    managers.quota_changed(QuotaEntity({"user": "alice"}), "consumer_byte_rate", math.nan)
    window = managers.fetch.max_value_in_quota_window(ALICE, "c")
    assert math.isnan(window) and java_d2i(window) == 0
    managers.quota_changed(QuotaEntity({"user": "alice"}), "consumer_byte_rate", 1000.0)
    assert managers.fetch.max_value_in_quota_window(ALICE, "c") == 10_000  # 1000 x 10 x 1 s
