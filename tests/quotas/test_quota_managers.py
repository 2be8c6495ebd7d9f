"""quotas.manager and quotas.connections against hand-worked examples of Apache Kafka's
ClientQuotaManager, ClientRequestQuotaManager, ControllerMutationQuotaManager and
SocketServer's ConnectionQuotas (see ../shared/KAFKA-QUOTAS.md §2-§5).

Quotas are configured as the broker does, through QuotaManagers.quota_changed. Windows
are 11 x 1 s unless a test says otherwise, so a new sensor's window is padded to
10 x 1000 = 10,000 ms and throttle = round((rate - bound) / bound x window). The clock is
a plain integer of milliseconds; every expected number is worked out in a comment.
"""

from __future__ import annotations

import math

import pytest

from quotas.callback import ClientQuotaType, DefaultQuotaCallback, KafkaPrincipal
from quotas.connections import Admission, ConnectionQuotas, Decision
from quotas.entity import QuotaEntity
from quotas.manager import (
    UNBOUNDED_MUTATION_QUOTA,
    QuotaManagers,
    ThrottlingQuotaExceeded,
)
from quotas.sensor import Metric, WindowConfig

DEFAULT = WindowConfig(samples=11, window_ms=1000)
PRODUCE = "producer_byte_rate"
FETCH = "consumer_byte_rate"
REQUEST = "request_percentage"
MUTATION = "controller_mutation_rate"
IP_RATE = "connection_creation_rate"

ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")


def make(config: WindowConfig = DEFAULT) -> QuotaManagers:
    connections = ConnectionQuotas(config, max_connections=1000, max_connections_per_ip=1000)
    return QuotaManagers(DefaultQuotaCallback(), config, config, connections)


def entity(**parts: str | None) -> QuotaEntity:
    """entity(user="alice", client_id=None) -> {user: alice, client-id: <default>}."""
    return QuotaEntity({key.replace("_", "-"): name for key, name in parts.items()})


# -- record and throttle -------------------------------------------------------------


def test_produce_throttle_is_not_capped() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    sensors = quotas.produce.sensors_for(ALICE, "c1", 0)
    # 20,000 B / 10 s (padded) = 2000 B/s; round((2000 - 1000) / 1000 x 10,000) = 10,000 ms
    assert quotas.produce.record(sensors, 20_000, 0) == 10_000


def test_produce_first_burst_of_ten_seconds_worth_passes() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    sensors = quotas.produce.sensors_for(ALICE, "c1", 0)
    # 10,000 B / 10 s = 1000 B/s, not > 1000
    assert quotas.produce.record(sensors, 10_000, 0) == 0
    # +1 B: 10,001 / 10 = 1000.1; round(0.1 / 1000 x 10,000) = 1 ms
    assert quotas.produce.record(sensors, 1, 0) == 1


def test_request_throttle_is_capped_at_one_window() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), REQUEST, 10.0)
    sensors = quotas.request.sensors_for(ALICE, "c1", 0)
    # 200 percent-seconds / 10 s = 20 %; round((20 - 10) / 10 x 10,000) = 10,000 -> capped at 1000
    assert quotas.request.record(sensors, 200, 0) == 1000


def test_request_throttle_below_the_cap_is_exact() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), REQUEST, 10.0)
    sensors = quotas.request.sensors_for(ALICE, "c1", 0)
    # 105 / 10 s = 10.5 %; round((10.5 - 10) / 10 x 10,000) = 500 ms < 1000
    assert quotas.request.record(sensors, 105, 0) == 500


def test_request_cap_follows_the_window_size() -> None:
    quotas = make(WindowConfig(samples=11, window_ms=500))
    quotas.quota_changed(entity(user="alice"), REQUEST, 10.0)
    sensors = quotas.request.sensors_for(ALICE, "c1", 0)
    # window padded to 10 x 500 = 5,000 ms: 100 / 5 s = 20 %; round(1 x 5,000) = 5,000 -> cap 500
    assert quotas.request.record(sensors, 100, 0) == 500


def test_unrecord_takes_a_throttled_fetch_back() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), FETCH, 1000.0)
    sensors = quotas.fetch.sensors_for(ALICE, "c1", 0)
    assert quotas.fetch.record(sensors, 20_000, 0) == 10_000  # as for produce above
    quotas.fetch.unrecord(sensors, 20_000, 0)
    # 20,000 - 20,000 = 0 B
    assert sensors.rate.measure(0) == pytest.approx(0.0)
    # 10,000 / 10 s = 1000 B/s: within the quota again
    assert quotas.fetch.record(sensors, 10_000, 0) == 0


def test_record_without_a_limit_never_throttles() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    sensors = quotas.produce.sensors_for(BOB, "c1", 0)  # tags (bob, ""): no user or default-user quota
    assert sensors.bound is None
    assert quotas.produce.record(sensors, 10**9, 0) == 0


# -- max value in a quota window -----------------------------------------------------


def test_max_value_in_quota_window() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), FETCH, 1000.0)
    # 1000 B/s x (11 - 1) x 1 s = 10,000 B
    assert quotas.fetch.max_value_in_quota_window(ALICE, "c1") == pytest.approx(10_000)


def test_max_value_in_quota_window_follows_the_window_config() -> None:
    quotas = make(WindowConfig(samples=5, window_ms=2000))
    quotas.quota_changed(entity(user="alice"), FETCH, 1000.0)
    # 1000 B/s x (5 - 1) x 2 s = 8,000 B
    assert quotas.fetch.max_value_in_quota_window(ALICE, "c1") == pytest.approx(8_000)


def test_max_value_in_quota_window_is_unbounded_without_a_quota() -> None:
    quotas = make()
    assert quotas.fetch.max_value_in_quota_window(ALICE, "c1") == math.inf  # quotas not enabled
    quotas.quota_changed(entity(user="alice"), FETCH, 1000.0)
    assert quotas.fetch.max_value_in_quota_window(BOB, "c1") == math.inf  # no limit for bob


# -- enabled -------------------------------------------------------------------------


def test_enabled_only_once_a_quota_of_that_type_exists() -> None:
    quotas = make()
    assert not quotas.produce.enabled
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    assert quotas.produce.enabled
    assert not quotas.fetch.enabled
    assert not quotas.request.enabled
    assert not quotas.controller_mutation.enabled


def test_enabled_is_false_again_after_the_last_quota_is_removed() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    quotas.quota_changed(entity(client_id=None), PRODUCE, 500.0)
    quotas.quota_changed(entity(user="alice"), PRODUCE, None)
    assert quotas.produce.enabled  # the default client-id quota remains
    quotas.quota_changed(entity(client_id=None), PRODUCE, None)
    assert not quotas.produce.enabled


# -- quota changes reach live sensors ------------------------------------------------


def test_quota_change_applies_to_an_existing_sensor_without_losing_samples() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    sensors = quotas.produce.sensors_for(ALICE, "c1", 0)
    # 15,000 / 10 s = 1500 B/s; round((1500 - 1000) / 1000 x 10,000) = 5,000 ms
    assert quotas.produce.record(sensors, 15_000, 0) == 5_000

    quotas.quota_changed(entity(user="alice"), PRODUCE, 3000.0)
    assert quotas.produce.sensors_for(ALICE, "c1", 0) is sensors
    assert sensors.bound == 3000.0
    # 1500 B/s <= 3000
    assert quotas.produce.record(sensors, 0, 0) == 0

    quotas.quota_changed(entity(user="alice"), PRODUCE, 500.0)
    # the 15,000 B are still there: round((1500 - 500) / 500 x 10,000) = 20,000 ms
    assert quotas.produce.record(sensors, 0, 0) == 20_000


def test_removing_the_quota_unbounds_an_existing_sensor() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    sensors = quotas.produce.sensors_for(ALICE, "c1", 0)
    quotas.quota_changed(entity(user="alice"), PRODUCE, None)
    assert sensors.bound is None
    assert quotas.produce.record(sensors, 50_000, 0) == 0


def test_a_default_quota_change_reaches_every_sensor_it_covers() -> None:
    quotas = make()
    quotas.quota_changed(entity(user=None), PRODUCE, 1000.0)
    alice = quotas.produce.sensors_for(ALICE, "c1", 0)
    bob = quotas.produce.sensors_for(BOB, "c1", 0)
    quotas.quota_changed(entity(user=None), PRODUCE, 2000.0)
    assert (alice.bound, bob.bound) == (2000.0, 2000.0)


# -- who shares one sensor (KAFKA-QUOTAS §2) ------------------------------------------


def test_user_quota_only_client_ids_of_one_user_share_a_sensor() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    c1 = quotas.produce.sensors_for(ALICE, "c1", 0)
    c2 = quotas.produce.sensors_for(ALICE, "c2", 0)
    assert c1 is c2
    assert c1.tags == {"user": "alice", "client-id": ""}
    # 6,000 / 10 s = 600 B/s: fine; then 12,000 / 10 = 1200: round(200 / 1000 x 10,000) = 2,000 ms
    assert quotas.produce.record(c1, 6_000, 0) == 0
    assert quotas.produce.record(c2, 6_000, 0) == 2_000


def test_default_client_id_quota_gives_each_client_id_its_own_sensor() -> None:
    quotas = make()
    quotas.quota_changed(entity(client_id=None), PRODUCE, 1000.0)
    c1 = quotas.produce.sensors_for(ALICE, "c1", 0)
    c2 = quotas.produce.sensors_for(ALICE, "c2", 0)
    assert c1 is not c2
    assert (c1.tags, c2.tags) == ({"user": "", "client-id": "c1"}, {"user": "", "client-id": "c2"})
    assert (c1.bound, c2.bound) == (1000.0, 1000.0)
    # 10,000 / 10 s = 1000 B/s each (shared it would be 2000 B/s, throttled 10,000 ms)
    assert quotas.produce.record(c1, 10_000, 0) == 0
    assert quotas.produce.record(c2, 10_000, 0) == 0


def test_default_user_quota_gives_each_user_its_own_sensor_and_limit() -> None:
    quotas = make()
    quotas.quota_changed(entity(user=None), PRODUCE, 1000.0)
    alice = quotas.produce.sensors_for(ALICE, "c1", 0)
    bob = quotas.produce.sensors_for(BOB, "c1", 0)
    assert alice is not bob
    assert (alice.tags, bob.tags) == ({"user": "alice", "client-id": ""}, {"user": "bob", "client-id": ""})
    assert (alice.bound, bob.bound) == (1000.0, 1000.0)
    # alice: 20,000 / 10 s = 2000 B/s -> 10,000 ms; bob is untouched: 10,000 / 10 = 1000 -> 0
    assert quotas.produce.record(alice, 20_000, 0) == 10_000
    assert quotas.produce.record(bob, 10_000, 0) == 0


def test_user_client_id_quotas_only_give_each_pair_its_own_sensor() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice", client_id="c1"), PRODUCE, 1000.0)
    alice_c1 = quotas.produce.sensors_for(ALICE, "c1", 0)
    alice_c2 = quotas.produce.sensors_for(ALICE, "c2", 0)
    assert alice_c1 is not alice_c2
    assert (alice_c1.tags, alice_c1.bound) == ({"user": "alice", "client-id": "c1"}, 1000.0)
    assert (alice_c2.tags, alice_c2.bound) == ({"user": "alice", "client-id": "c2"}, None)


def test_without_quotas_sensors_are_per_client_id() -> None:
    quotas = make()
    sensors = quotas.produce.sensors_for(ALICE, "c1", 0)
    assert sensors.tags == {"user": "", "client-id": "c1"}
    assert sensors.bound is None


def test_user_tag_is_the_url_sanitized_principal_name() -> None:
    quotas = make()
    quotas.quota_changed(entity(user=None), PRODUCE, 1000.0)
    sensors = quotas.produce.sensors_for(KafkaPrincipal("User", "CN=alice,O=acme"), "c1", 0)
    # Sanitizer.sanitize: '=' -> %3D, ',' -> %2C
    assert sensors.tags == {"user": "CN%3Dalice%2CO%3Dacme", "client-id": ""}


# -- precedence (KAFKA-QUOTAS §2) ------------------------------------------------------

# The 8 levels for (alice, c1), most specific first, with the tags a request gets when
# that level is the most specific one configured (1, 2, 4, 5 -> both; 3, 6 -> user; 7, 8 -> client-id).
LEVELS: list[tuple[QuotaEntity, dict[str, str]]] = [
    (entity(user="alice", client_id="c1"), {"user": "alice", "client-id": "c1"}),
    (entity(user="alice", client_id=None), {"user": "alice", "client-id": "c1"}),
    (entity(user="alice"), {"user": "alice", "client-id": ""}),
    (entity(user=None, client_id="c1"), {"user": "alice", "client-id": "c1"}),
    (entity(user=None, client_id=None), {"user": "alice", "client-id": "c1"}),
    (entity(user=None), {"user": "alice", "client-id": ""}),
    (entity(client_id="c1"), {"user": "", "client-id": "c1"}),
    (entity(client_id=None), {"user": "", "client-id": "c1"}),
]


@pytest.mark.parametrize("level", range(1, 9))
def test_most_specific_configured_level_wins(level: int) -> None:
    quotas = make()
    for n in range(level, 9):  # configure this level and every less specific one: level n -> n x 100
        quotas.quota_changed(LEVELS[n - 1][0], PRODUCE, n * 100.0)
    sensors = quotas.produce.sensors_for(ALICE, "c1", 0)
    assert sensors.tags == LEVELS[level - 1][1]
    assert sensors.bound == level * 100.0


def test_user_client_id_quota_beats_user_quota() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice", client_id="c1"), PRODUCE, 100.0)
    quotas.quota_changed(entity(user="alice"), PRODUCE, 200.0)
    assert quotas.produce.sensors_for(ALICE, "c1", 0).bound == 100.0
    other = quotas.produce.sensors_for(ALICE, "c2", 0)
    assert (other.tags, other.bound) == ({"user": "alice", "client-id": ""}, 200.0)


def test_user_quota_beats_client_id_quota() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 200.0)
    quotas.quota_changed(entity(client_id="c1"), PRODUCE, 300.0)
    alice = quotas.produce.sensors_for(ALICE, "c1", 0)
    assert (alice.tags, alice.bound) == ({"user": "alice", "client-id": ""}, 200.0)
    bob = quotas.produce.sensors_for(BOB, "c1", 0)  # no user level for bob: falls to client-id
    assert (bob.tags, bob.bound) == ({"user": "", "client-id": "c1"}, 300.0)
    nobody = quotas.produce.sensors_for(BOB, "c2", 0)
    assert (nobody.tags, nobody.bound) == ({"user": "", "client-id": "c2"}, None)


def test_default_user_quota_beats_client_id_quota() -> None:
    quotas = make()
    quotas.quota_changed(entity(user=None), PRODUCE, 400.0)
    quotas.quota_changed(entity(client_id="c1"), PRODUCE, 700.0)
    sensors = quotas.produce.sensors_for(BOB, "c1", 0)  # level 6 before level 7
    assert (sensors.tags, sensors.bound) == ({"user": "bob", "client-id": ""}, 400.0)


def test_quota_types_are_independent() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    quotas.quota_changed(entity(client_id="c1"), FETCH, 2000.0)
    assert quotas.produce.sensors_for(ALICE, "c1", 0).tags == {"user": "alice", "client-id": ""}
    assert quotas.fetch.sensors_for(ALICE, "c1", 0).tags == {"user": "", "client-id": "c1"}
    assert quotas.fetch.sensors_for(ALICE, "c1", 0).bound == 2000.0


# -- controller mutation quota (KIP-599) ---------------------------------------------
# rate 2/s, 11 x 1 s windows: burst = 11 x 1 x 2 = 22 tokens, full at first use.


def mutation_quotas() -> QuotaManagers:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), MUTATION, 2.0)
    return quotas


def test_strict_quota_lets_the_first_request_overdraw() -> None:
    quota = mutation_quotas().controller_mutation.new_quota(ALICE, "c1", strict=True, now_ms=0)
    quota.record(30, 0)  # 22 >= 0: accepted; 22 - 30 = -8
    assert quota.throttle_time_ms(0) == 0


def test_strict_quota_refuses_once_the_bucket_is_below_zero() -> None:
    quota = mutation_quotas().controller_mutation.new_quota(ALICE, "c1", strict=True, now_ms=0)
    quota.record(30, 0)  # -8
    with pytest.raises(ThrottlingQuotaExceeded) as refused:
        quota.record(1, 0)
    # round(8 / 2 x 1000) = 4,000 ms
    assert refused.value.throttle_ms == 4_000


def test_strict_throttle_time_decreases_with_elapsed_time() -> None:
    quota = mutation_quotas().controller_mutation.new_quota(ALICE, "c1", strict=True, now_ms=0)
    quota.record(30, 0)
    with pytest.raises(ThrottlingQuotaExceeded):
        quota.record(1, 0)
    assert quota.throttle_time_ms(0) == 4_000
    assert quota.throttle_time_ms(1_500) == 2_500  # 4,000 - 1,500
    assert quota.throttle_time_ms(5_000) == 0  # max(0, 4,000 - 5,000)


def test_strict_bucket_is_shared_by_later_requests_and_refills() -> None:
    manager = mutation_quotas().controller_mutation
    manager.new_quota(ALICE, "c1", strict=True, now_ms=0).record(30, 0)  # -8
    later = manager.new_quota(ALICE, "c1", strict=True, now_ms=1_000)
    with pytest.raises(ThrottlingQuotaExceeded) as refused:
        later.record(1, 1_000)
    # -8 + 2 x 1 s = -6 -> round(6 / 2 x 1000) = 3,000 ms
    assert refused.value.throttle_ms == 3_000
    # t=4,000: -6 + 2 x 3 s = 0, not < 0: accepted -> -1
    manager.new_quota(ALICE, "c1", strict=True, now_ms=4_000).record(1, 4_000)
    with pytest.raises(ThrottlingQuotaExceeded) as again:
        manager.new_quota(ALICE, "c1", strict=True, now_ms=4_000).record(1, 4_000)
    # -1 -> round(1 / 2 x 1000) = 500 ms
    assert again.value.throttle_ms == 500


def test_permissive_quota_records_everything_and_only_throttles() -> None:
    quota = mutation_quotas().controller_mutation.new_quota(ALICE, "c1", strict=False, now_ms=0)
    quota.record(30, 0)  # 22 - 30 = -8 -> round(8 / 2 x 1000) = 4,000 ms
    assert quota.throttle_time_ms(0) == 4_000
    quota.record(5, 0)  # -13 -> round(13 / 2 x 1000) = 6,500 ms
    assert quota.throttle_time_ms(0) == 6_500
    assert quota.throttle_time_ms(1_000) == 5_500  # 6,500 - 1,000


def test_permissive_quota_within_the_burst_is_not_throttled() -> None:
    quota = mutation_quotas().controller_mutation.new_quota(ALICE, "c1", strict=False, now_ms=0)
    quota.record(22, 0)  # 22 - 22 = 0, not < 0
    assert quota.throttle_time_ms(0) == 0


def test_mutation_quota_is_unbounded_until_enabled() -> None:
    quota = make().controller_mutation.new_quota(ALICE, "c1", strict=True, now_ms=0)
    assert quota is UNBOUNDED_MUTATION_QUOTA
    quota.record(1_000_000, 0)
    assert quota.throttle_time_ms(0) == 0


# -- connection quotas ---------------------------------------------------------------


def connections(
    config: WindowConfig = DEFAULT, max_connections: int = 10_000, per_ip: int = 10_000, **overrides: int
) -> ConnectionQuotas:
    return ConnectionQuotas(config, max_connections, per_ip, overrides or None)


def accept_rate(quotas: ConnectionQuotas, ip: str, now_ms: int) -> float:
    (metric,) = [
        m for m in quotas.metrics(now_ms) if m.name == "connection-accept-rate" and m.tags == {"ip": ip}
    ]
    return metric.value


def test_ip_rate_limit_throttles_the_connection_over_the_rate() -> None:
    quotas = connections()
    quotas.update_ip_rate("10.0.0.1", 2)
    # 20 connections / 10 s (padded) = 2.0/s: all accepted
    assert {quotas.admit("10.0.0.1", 0) for _ in range(20)} == {Decision(Admission.ACCEPT)}
    # 21 / 10 = 2.1/s; round((2.1 - 2) / 2 x 10,000) = 500 ms
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.THROTTLE, 500)


def test_throttled_connection_is_not_counted_and_its_record_is_taken_back() -> None:
    quotas = connections()
    quotas.update_ip_rate("10.0.0.1", 2)
    for _ in range(20):
        quotas.admit("10.0.0.1", 0)
    assert quotas.admit("10.0.0.1", 0).admission is Admission.THROTTLE
    assert (quotas.counts["10.0.0.1"], quotas.total) == (20, 20)
    assert accept_rate(quotas, "10.0.0.1", 0) == pytest.approx(2.0)  # 20 / 10 s, not 21 / 10 s
    # the next attempt sees 21 again, not 22: same 500 ms
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.THROTTLE, 500)


def test_ip_throttle_is_capped_at_one_window() -> None:
    quotas = connections(WindowConfig(samples=11, window_ms=500))
    quotas.update_ip_rate("10.0.0.1", 1)
    # window padded to 10 x 500 = 5,000 ms: 5 connections / 5 s = 1.0/s accepted
    for _ in range(5):
        assert quotas.admit("10.0.0.1", 0).admission is Admission.ACCEPT
    # 6 / 5 s = 1.2/s; round((1.2 - 1) / 1 x 5,000) = 1,000 -> capped at 500
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.THROTTLE, 500)


def test_default_ip_rate_applies_to_each_ip_separately() -> None:
    quotas = connections()
    quotas.update_ip_rate(None, 2)
    for _ in range(20):
        quotas.admit("10.0.0.1", 0)
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.THROTTLE, 500)  # 21 / 10 s, as above
    assert quotas.admit("10.0.0.2", 0) == Decision(Admission.ACCEPT)  # its own sensor: 1 / 10 s


def test_specific_ip_rate_beats_the_default() -> None:
    quotas = connections()
    quotas.update_ip_rate(None, 2)
    quotas.update_ip_rate("10.0.0.3", 5)
    # 50 / 10 s = 5.0/s accepted; 51 / 10 = 5.1: round(0.1 / 5 x 10,000) = 200 ms
    assert {quotas.admit("10.0.0.3", 0) for _ in range(50)} == {Decision(Admission.ACCEPT)}
    assert quotas.admit("10.0.0.3", 0) == Decision(Admission.THROTTLE, 200)


def test_ip_rate_set_through_quota_managers() -> None:
    quotas = make()
    quotas.quota_changed(entity(ip=None), IP_RATE, 1.0)
    # 10 / 10 s = 1.0 accepted; 11 / 10 = 1.1: round(0.1 / 1 x 10,000) = 1,000 ms (= the cap)
    for _ in range(10):
        assert quotas.connections.admit("10.0.0.1", 0).admission is Admission.ACCEPT
    assert quotas.connections.admit("10.0.0.1", 0) == Decision(Admission.THROTTLE, 1_000)
    quotas.quota_changed(entity(ip=None), IP_RATE, None)
    assert quotas.connections.admit("10.0.0.1", 0) == Decision(Admission.ACCEPT)


def test_removed_ip_rate_no_longer_throttles() -> None:
    quotas = connections()
    quotas.update_ip_rate("10.0.0.1", 1)
    for _ in range(10):
        quotas.admit("10.0.0.1", 0)
    quotas.update_ip_rate("10.0.0.1", None)
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.ACCEPT)


def test_changing_a_specific_ip_rate_keeps_its_recorded_connections() -> None:
    quotas = connections()
    quotas.update_ip_rate("10.0.0.1", 2)
    for _ in range(20):
        quotas.admit("10.0.0.1", 0)
    quotas.update_ip_rate("10.0.0.1", 3)
    # the 20 earlier connections still count: 10 more reach 30 / 10 s = 3.0/s;
    # the 31st: 3.1/s -> round(0.1 / 3 x 10,000) = round(333.3) = 333 ms
    for _ in range(10):
        assert quotas.admit("10.0.0.1", 0).admission is Admission.ACCEPT
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.THROTTLE, 333)


def test_violation_whose_throttle_rounds_to_zero_is_accepted() -> None:
    quotas = connections(WindowConfig(samples=1, window_ms=1000))
    quotas.update_ip_rate("10.0.0.1", 700)
    # samples = 1: no padding, window max(0, 1) = 1 ms; 1 / 0.001 s = 1000/s > 700
    # throttle = round((1000 - 700) / 700 x 1) = round(0.43) = 0 -> Kafka accepts and keeps the record
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.ACCEPT)


def test_max_connections_per_ip_rejects_but_counts() -> None:
    quotas = connections(per_ip=2)
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.ACCEPT)
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.ACCEPT)
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.REJECT)  # count 2 >= max 2
    assert (quotas.counts["10.0.0.1"], quotas.total) == (3, 3)  # counted until released
    assert quotas.admit("10.0.0.2", 0) == Decision(Admission.ACCEPT)  # per ip


def test_rejected_connection_must_be_released_before_another_is_accepted() -> None:
    quotas = connections(per_ip=2)
    for _ in range(3):
        quotas.admit("10.0.0.1", 0)  # accept, accept, reject
    quotas.release("10.0.0.1")  # the rejected one closes: count 2
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.REJECT)  # 2 >= 2 again: count 3
    quotas.release("10.0.0.1")
    quotas.release("10.0.0.1")  # the rejected one and one accepted: count 1
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.ACCEPT)
    assert quotas.counts["10.0.0.1"] == 2


def test_per_ip_override() -> None:
    quotas = connections(per_ip=1, **{"10.0.0.9": 3})
    assert [quotas.admit("10.0.0.9", 0).admission for _ in range(4)] == [Admission.ACCEPT] * 3 + [
        Admission.REJECT
    ]


def test_max_connections_waits_then_accepts_after_a_release() -> None:
    quotas = connections(max_connections=2)
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.ACCEPT)
    assert quotas.admit("10.0.0.2", 0) == Decision(Admission.ACCEPT)
    assert quotas.admit("10.0.0.3", 0) == Decision(Admission.WAIT)
    assert quotas.total == 2  # a waiting connection is not counted
    assert "10.0.0.3" not in quotas.counts
    quotas.release("10.0.0.1")
    assert quotas.admit("10.0.0.3", 0) == Decision(Admission.ACCEPT)
    assert quotas.total == 2


def test_waiting_connection_is_not_recorded_in_the_ip_rate() -> None:
    quotas = connections(max_connections=1)
    quotas.update_ip_rate("10.0.0.1", 1)
    quotas.admit("10.0.0.1", 0)  # accepted: 1 / 10 s
    assert quotas.admit("10.0.0.1", 0) == Decision(Admission.WAIT)
    assert accept_rate(quotas, "10.0.0.1", 0) == pytest.approx(0.1)  # still 1 / 10 s


def test_ipv6_spellings_share_counts_and_limits() -> None:
    quotas = connections(per_ip=1)
    quotas.update_ip_rate("0:0:0:0:0:0:0:1", 1)
    assert quotas.admit("::1", 0) == Decision(Admission.ACCEPT)
    assert quotas.admit("0:0:0:0:0:0:0:1", 0) == Decision(Admission.REJECT)  # same ip: count 1 >= 1
    assert quotas.counts == {"0:0:0:0:0:0:0:1": 2}  # Java's getHostAddress spelling, Kafka's ip tag
    assert accept_rate(quotas, "0:0:0:0:0:0:0:1", 0) == pytest.approx(0.2)  # 2 / 10 s on one sensor
    quotas.release("0:0:0:0:0:0:0:1")
    quotas.release("::1")
    assert quotas.counts == {}


def test_ipv6_zone_id_is_dropped_and_overrides_are_normalised() -> None:
    quotas = connections(per_ip=1, **{"FE80:0:0:0:0:0:0:1": 2})
    assert quotas.admit("fe80::1%eth0", 0) == Decision(Admission.ACCEPT)
    assert quotas.admit("fe80::1", 0) == Decision(Admission.ACCEPT)  # override 2 applies
    assert quotas.admit("fe80:0::1", 0) == Decision(Admission.REJECT)
    assert quotas.counts == {"fe80:0:0:0:0:0:0:1": 3}


# -- metrics -------------------------------------------------------------------------


def metric(found: list[Metric], name: str, group: str, tags: dict[str, str]) -> float:
    (match,) = [m for m in found if (m.name, m.group, m.tags) == (name, group, tags)]
    return match.value


def test_produce_metrics_names_group_and_tags() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice"), PRODUCE, 1000.0)
    sensors = quotas.produce.sensors_for(ALICE, "c1", 0)
    quotas.produce.record(sensors, 5_000, 0)
    tags = {"user": "alice", "client-id": ""}
    found = quotas.metrics(0)
    assert metric(found, "byte-rate", "Produce", tags) == pytest.approx(500.0)  # 5,000 / 10 s
    assert math.isnan(metric(found, "throttle-time", "Produce", tags))  # Avg of nothing
    quotas.produce.throttle(sensors, 2_000, 0)
    assert metric(quotas.metrics(0), "throttle-time", "Produce", tags) == pytest.approx(2_000.0)


def test_fetch_metrics_are_in_group_fetch() -> None:
    quotas = make()
    quotas.quota_changed(entity(client_id=None), FETCH, 1000.0)
    quotas.fetch.record(quotas.fetch.sensors_for(ALICE, "c1", 0), 1_000, 0)
    # 1,000 / 10 s = 100 B/s
    assert metric(quotas.metrics(0), "byte-rate", "Fetch", {"user": "", "client-id": "c1"}) == pytest.approx(
        100.0
    )


def test_request_metrics_names_group_and_tags() -> None:
    quotas = make()
    quotas.quota_changed(entity(user="alice", client_id="c1"), REQUEST, 10.0)
    quotas.request.record(quotas.request.sensors_for(ALICE, "c1", 0), 50, 0)
    tags = {"user": "alice", "client-id": "c1"}
    found = quotas.metrics(0)
    assert metric(found, "request-time", "Request", tags) == pytest.approx(5.0)  # 50 / 10 s
    assert math.isnan(metric(found, "throttle-time", "Request", tags))


def test_controller_mutation_metrics_names_group_and_tags() -> None:
    quotas = mutation_quotas()
    quotas.controller_mutation.new_quota(ALICE, "c1", strict=True, now_ms=0).record(5, 0)
    tags = {"user": "alice", "client-id": ""}
    found = quotas.metrics(0)
    assert metric(found, "tokens", "ControllerMutation", tags) == pytest.approx(17.0)  # 22 - 5
    # 5 / 30 s: mutation-rate has Kafka's default metric window (2 x 30 s), not the quota's
    assert metric(found, "mutation-rate", "ControllerMutation", tags) == pytest.approx(5 / 30)
    assert math.isnan(metric(found, "throttle-time", "ControllerMutation", tags))


def test_no_client_metrics_before_a_sensor_exists() -> None:
    names = {m.name for m in make().metrics(0)}
    assert not names & {"byte-rate", "request-time", "mutation-rate", "tokens", "throttle-time"}


def test_quota_type_of_each_manager() -> None:
    quotas = make()
    assert [quotas.by_type(t).quota_type for t in ClientQuotaType] == list(ClientQuotaType)
