"""The quota path's shortcuts give what the plain path gives:

- `Rate.record_and_measure` (one call per quota-checked record) against `record` then
  `measure_with_window`: the same rate, window and samples, bit for bit, over random
  values and clocks with gaps that expire samples;
- the broker's per-connection memo of the sensors a request is measured on
  (throttling._sensors) against `ClientQuotaManager.sensors_for`: the same sensors object
  after every kind of change (quotas set and removed, a new principal or client id, sensors
  expired, a new callback), and a change applies to the next request.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from broker import throttling
from quotas.callback import DefaultQuotaCallback, KafkaPrincipal
from quotas.connections import ConnectionQuotas
from quotas.entity import QuotaEntity
from quotas.manager import INACTIVE_SENSOR_EXPIRY_MS, NANOS_TO_PERCENTAGE, ClientQuotaManager, QuotaManagers
from quotas.sensor import Rate, WindowConfig


def _state(rate: Rate) -> list[tuple[int, int, int, float]]:
    return [*rate.sample_rows(), (rate._current, 0, 0, 0.0)]


def test_record_and_measure_is_record_then_measure() -> None:
    """Also between plain records (the encoding time), measures (metrics reads) and
    purges, which create and reset samples behind the fused path's back."""
    rng = random.Random(20)
    steps = (0, 0, 0, 1, 3, 50, 400, 999, 1000, 1001, 60_000)
    for config in (WindowConfig(11, 1000), WindowConfig(2, 30_000), WindowConfig(1, 1), WindowConfig(3, 7)):
        plain, fused = Rate(config), Rate(config)
        now = rng.randrange(1_000_000)
        for _ in range(6000):
            now += rng.choice((*steps, config.window_ms * config.samples))
            value = rng.choice((0.0, 1.0, 123.0, rng.random() * 1e6, rng.random() * 1e-3, -5.5))
            roll = rng.random()
            if roll < 0.1:
                plain.record(value, now)
                fused.record(value, now)
            elif roll < 0.15:
                assert fused.measure(now) == plain.measure(now)
            elif roll < 0.18:
                fused.stat.purge_obsolete(now)
                plain.stat.purge_obsolete(now)
            elif roll < 0.2:
                assert fused.window_size_ms(now) == plain.window_size_ms(now)
            else:
                plain.record(value, now)
                expected = plain.measure_with_window(now)
                assert fused.record_and_measure(value, now) == expected
            assert _state(fused) == _state(plain)


def _managers() -> QuotaManagers:
    window = WindowConfig(11, 1000)
    return QuotaManagers(DefaultQuotaCallback(), window, window, ConnectionQuotas(window, 1000, 1000))


def _ctx(managers: QuotaManagers, principal: KafkaPrincipal, client_id: str, memo: dict[Any, Any]) -> Any:
    connection = SimpleNamespace(principal=principal, memo=memo)
    return SimpleNamespace(
        connection=connection, client_id=client_id, broker=SimpleNamespace(quota_managers=managers)
    )


def test_the_per_connection_memo_gives_the_managers_sensors() -> None:
    rng = random.Random(21)
    managers = _managers()
    principals = [KafkaPrincipal("User", name) for name in ("alice", "bob", "ANONYMOUS")]
    client_ids = ["app", "other", ""]
    memos: list[dict[Any, Any]] = [{} for _ in range(3)]
    now = 0
    for step in range(4000):
        now += rng.choice((0, 1, 10, 1000))
        roll = rng.random()
        if roll < 0.05:
            key = rng.choice(("producer_byte_rate", "request_percentage", "consumer_byte_rate"))
            parts = rng.choice(
                ({"user": "alice"}, {"client-id": "app"}, {"user": None}, {"user": "bob", "client-id": None})
            )
            managers.quota_changed(QuotaEntity(parts), key, rng.choice((None, 1000.0, 5e6)))
        elif roll < 0.06:
            now += INACTIVE_SENSOR_EXPIRY_MS
            managers.produce._created_since_expiry = 999  # the next new sensor expires the idle ones
        elif roll < 0.07:
            managers.replace_callback(DefaultQuotaCallback(), [], None)  # type: ignore[arg-type]
        manager: ClientQuotaManager = rng.choice((managers.produce, managers.request, managers.fetch))
        principal, client_id = rng.choice(principals), rng.choice(client_ids)
        memo = rng.choice(memos)
        got = throttling._sensors(_ctx(managers, principal, client_id, memo), manager, now)
        assert got is manager.sensors_for(principal, client_id, now), step
        assert got.bound == manager.callback.quota_limit(manager.quota_type, got.tags), step


def test_a_quota_change_applies_to_the_next_request() -> None:
    managers = _managers()
    alice = KafkaPrincipal("User", "alice")
    memo: dict[Any, Any] = {}
    ctx = _ctx(managers, alice, "app", memo)
    managers.quota_changed(QuotaEntity({"client-id": "app"}), "producer_byte_rate", 1000.0)
    first = throttling._sensors(ctx, managers.produce, 0)
    assert first.bound == 1000.0 and first.tags == {"user": "", "client-id": "app"}
    assert throttling._sensors(ctx, managers.produce, 0) is first  # remembered
    # A more specific quota: alice's own sensor from the next request on.
    managers.quota_changed(QuotaEntity({"user": "alice"}), "producer_byte_rate", 50.0)
    second = throttling._sensors(ctx, managers.produce, 1)
    assert second is not first and second.bound == 50.0 and second.tags == {"user": "alice", "client-id": ""}
    # The same connection authenticated as someone else.
    ctx.connection.principal = KafkaPrincipal("User", "bob")
    third = throttling._sensors(ctx, managers.produce, 2)
    assert third.tags == {"user": "", "client-id": "app"}


def test_a_custom_callback_is_asked_every_time() -> None:
    class Counting(DefaultQuotaCallback):
        asked = 0

        def quota_metric_tags(self, quota_type: Any, principal: Any, client_id: str) -> dict[str, str]:
            Counting.asked += 1
            return super().quota_metric_tags(quota_type, principal, client_id)

    managers = _managers()
    managers.replace_callback(Counting(), [], None)  # type: ignore[arg-type]
    assert not managers.produce.memoizable
    ctx = _ctx(managers, KafkaPrincipal("User", "alice"), "app", {})
    for now in range(5):
        throttling._sensors(ctx, managers.produce, now)
    assert Counting.asked == 5


def _produce_ctx(managers: QuotaManagers, connection: Any, client_id: str) -> Any:
    return SimpleNamespace(
        connection=connection,
        client_id=client_id,
        broker=SimpleNamespace(quota_managers=managers),
        request_bytes=26_000,
        resumed_ns=None,
        handler_ns=40_000,
        thread_ns=lambda: 40_000,
        quota_recorded=False,
        quota_sensors=None,
        request_sensors=None,
        throttle_ms=0,
        throttled_by=None,
    )


def test_record_produce_records_on_the_managers_sensors(monkeypatch: Any) -> None:
    """record_produce remembers both sensors of a connection in one memo entry: after every
    kind of change it records on what sensors_for gives, for both quotas, and on nothing
    for a quota not set (acks=0: the request quota's exempt rate only)."""
    clock = [10**12]
    monkeypatch.setattr(throttling, "_monotonic_ns", lambda: clock[0])
    rng = random.Random(22)
    managers = _managers()
    principals = [KafkaPrincipal("User", name) for name in ("alice", "bob", "ANONYMOUS")]
    client_ids = ["app", "other", ""]
    connections = [SimpleNamespace(principal=rng.choice(principals), memo={}) for _ in range(3)]
    client_of = {id(connection): rng.choice(client_ids) for connection in connections}
    slow = [0]
    full_path = throttling._record_produce

    def counted(*args: Any) -> None:
        slow[0] += 1
        full_path(*args)

    monkeypatch.setattr(throttling, "_record_produce", counted)
    for step in range(4000):
        clock[0] += rng.choice((0, 1, 10, 1000)) * 1_000_000
        now = clock[0] // 1_000_000
        roll = rng.random()
        if roll < 0.08:
            key = rng.choice(("producer_byte_rate", "request_percentage", "consumer_byte_rate"))
            parts = rng.choice(
                ({"user": "alice"}, {"client-id": "app"}, {"user": None}, {"user": "bob", "client-id": None})
            )
            managers.quota_changed(QuotaEntity(parts), key, rng.choice((None, 1000.0, 5e6, 1e12)))
        elif roll < 0.09:
            clock[0] += INACTIVE_SENSOR_EXPIRY_MS * 1_000_000
            now = clock[0] // 1_000_000
            managers.produce._created_since_expiry = 999  # the next new sensor expires the idle ones
            managers.request._created_since_expiry = 999
        elif roll < 0.1:
            managers.replace_callback(DefaultQuotaCallback(), [], None)  # type: ignore[arg-type]
        elif roll < 0.11:
            rng.choice(connections).principal = rng.choice(principals)  # re-authenticated
        elif roll < 0.12:
            client_of[id(rng.choice(connections))] = rng.choice(client_ids)  # another client id
        connection = rng.choice(connections)
        ctx = _produce_ctx(managers, connection, client_of[id(connection)])
        acks = rng.choice((1, 1, 1, -1, 0))
        exempt_before = managers.request.exempt.measure(now)
        throttling.record_produce(ctx, acks)
        produce, request = managers.produce, managers.request
        assert managers.produce_quota == (produce.enabled or request.enabled), step
        if produce.enabled:
            expected = produce.sensors_for(connection.principal, ctx.client_id, now)
            assert ctx.quota_sensors is expected, step
            assert expected.last_check_ms == now and expected.last_value == 26_000, step
            assert expected.bound == produce.callback.quota_limit(produce.quota_type, expected.tags), step
        else:
            assert ctx.quota_sensors is None, step
        if request.enabled and acks != 0:
            expected = request.sensors_for(connection.principal, ctx.client_id, now)
            assert ctx.request_sensors is expected, step
            assert expected.last_check_ms == now and expected.last_value == 40_000 * NANOS_TO_PERCENTAGE, step
            assert expected.bound == request.callback.quota_limit(request.quota_type, expected.tags), step
        else:
            assert ctx.request_sensors is None, step
            if request.enabled:
                assert request.exempt.measure(now) > exempt_before, step
    assert slow[0] < 2000  # most requests took the memo's way
