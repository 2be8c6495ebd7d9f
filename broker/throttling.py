"""Where quotas are applied: what each request records, its throttle time, and which
manager mutes the connection (the quota steps of Kafka's KafkaApis, ControllerApis and
RequestHandlerHelper).

Every handler's response goes through `finish_request` in the pipeline, which records
the request quota unless the handler already did (produce, fetch and the controller
mutation APIs combine it with their own quota, taking the larger throttle, as Kafka).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from broker.config.broker_config import DEFAULTS, BrokerConfig
from broker.state.cluster import Charge
from protocol.headers import chunks_size, encode_body
from quotas.callback import CALLBACK_CONFIG, load_callback
from quotas.connections import ConnectionQuotas
from quotas.java import java_d2i
from quotas.manager import (
    NANOS_TO_PERCENTAGE,
    ClientQuotaManager,
    ClientSensors,
    ControllerMutationQuota,
    QuotaManagers,
    RequestQuotaManager,
)
from quotas.sensor import WindowConfig

if TYPE_CHECKING:
    from broker.context import RequestContext

INT32_MAX = 2**31 - 1


_monotonic_ns = time.monotonic_ns


def now_ms() -> int:
    """The quota clock: monotonic milliseconds."""
    return _monotonic_ns() // 1_000_000


def _window_config(config: BrokerConfig, prefix: str) -> WindowConfig:
    samples = config.get_int(f"{prefix}.window.num")
    seconds = config.get_int(f"{prefix}.window.size.seconds")
    if samples < 1 or seconds < 1:
        raise ValueError(f"{prefix}.window.num and {prefix}.window.size.seconds must be at least 1")
    return WindowConfig(samples, seconds * 1000)


def per_ip_overrides(spec: str) -> dict[str, int]:
    """max.connections.per.ip.overrides: "host:count,host:count"."""
    overrides = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        host, _, count = item.rpartition(":")
        if not host or not count.strip().isdigit():
            raise ValueError(f"max.connections.per.ip.overrides: expected host:count, not {item!r}")
        overrides[host] = int(count)
    return overrides


def callback_configs(values: Mapping[str, str], node_id: int) -> dict[str, str]:
    """What the quota callback's configure() receives: every config of this broker as
    strings, unknown keys (meant for the callback) included, with its own id."""
    return {**values, "node.id": str(node_id), "broker.id": str(node_id)}


def callback_reload_needed(changed: Iterable[str]) -> bool:
    """A new client.quota.callback.class, or a change to a key the broker does not know
    (so possibly the callback's), gives the broker a newly configured callback."""
    return any(
        key == CALLBACK_CONFIG or (key not in DEFAULTS and not key.startswith("listener.name."))
        for key in changed
    )


def build_quota_managers(config: BrokerConfig, node_id: int = 0) -> QuotaManagers:
    """The broker's quota managers over the callback `client.quota.callback.class` names
    (CallbackError when it is unusable)."""
    window = _window_config(config, "quota")
    connections = ConnectionQuotas(
        window,
        config.get_int("max.connections"),
        config.get_int("max.connections.per.ip"),
        per_ip_overrides(config.get_str("max.connections.per.ip.overrides")),
    )
    return QuotaManagers(
        load_callback(config.get_str(CALLBACK_CONFIG), callback_configs(config.values, node_id)),
        window,
        _window_config(config, "controller.quota"),
        connections,
    )


def _sensors(ctx: RequestContext, manager: ClientQuotaManager, now: int) -> ClientSensors:
    """`manager.sensors_for` the request's principal and client id, remembered by the
    connection while the manager's `generation` stays (a quota, the callback or the
    sensors changing bumps it, so the next request asks again): a dict lookup instead of
    a call and a hash of the principal, twice per produce request under quotas. Only
    where the manager itself would answer from its own cache (`memoizable`: the default
    callback); tests/quotas/test_quota_sensor_memo.py checks both give the same sensors."""
    connection = ctx.connection
    principal = connection.principal
    client_id = ctx.client_id or ""
    if not manager.memoizable:
        return manager.sensors_for(principal, client_id, now)
    memo = connection.memo
    found = memo.get(manager)
    if (
        found is not None
        and found[0] == manager.generation
        and found[1] is principal
        and found[2] == client_id
    ):
        sensors: ClientSensors = found[3]
        return sensors
    sensors = manager.sensors_for(principal, client_id, now)
    _remember(memo, manager, (manager.generation, principal, client_id, sensors))
    return sensors


# A connection's memo holds up to 7 entries in use (the four quota managers', the produce
# path's, the conformance tracker's and the metrics sink's); managers rebuilt for a new
# quota callback leave their old entries behind, so past this bound the memo starts over.
MEMO_MAX_ENTRIES = 16


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> None:
    if len(memo) >= MEMO_MAX_ENTRIES and key not in memo:
        memo.clear()
    memo[key] = value


def _throttle(
    ctx: RequestContext, manager: ClientQuotaManager, sensors: ClientSensors, throttle_ms: int
) -> None:
    """The response carries `throttle_ms` and `manager` mutes the connection for it."""
    ctx.throttle_ms = throttle_ms
    ctx.throttled_by = (manager, sensors)


def _record_request(ctx: RequestContext, now: int) -> int:
    """Request quota on the handler's thread time so far; its throttle (0 when disabled)."""
    request = ctx.broker.quota_managers.request
    if not request.enabled:
        return 0
    sensors = ctx.request_sensors = _sensors(ctx, request, now)
    return sensors.record_checked(ctx.thread_ns() * NANOS_TO_PERCENTAGE, now)  # request.record


def finish_request(ctx: RequestContext) -> None:
    """sendResponseMaybeThrottle for every API that does not record quotas itself."""
    if ctx.quota_recorded:
        return
    ctx.quota_recorded = True
    request = ctx.broker.quota_managers.request
    if request.enabled:
        _combine(ctx, request, None, 0, _record_request(ctx, now_ms()))


def exempt_request(ctx: RequestContext) -> None:
    """sendResponseExemptThrottle, for cluster actions (WriteTxnMarkers): the time is
    counted as exempt and the request is never throttled."""
    ctx.quota_recorded = True
    request = ctx.broker.quota_managers.request
    if request.enabled:
        request.record_exempt(ctx.thread_ns(), now_ms())


def record_encoding(ctx: RequestContext, nanos: int) -> None:
    """Network-thread time (here: encoding and writing the response), recorded without a
    quota check, as Kafka records it after the response is sent."""
    sensors = ctx.request_sensors
    if sensors is not None:  # request.record_no_throttle, without the manager between
        sensors.record_extra(nanos * NANOS_TO_PERCENTAGE, _monotonic_ns() // 1_000_000)


def _combine(
    ctx: RequestContext,
    manager: ClientQuotaManager,
    sensors: ClientSensors | None,
    bandwidth_ms: int,
    request_ms: int,
) -> None:
    """Both quotas may be violated: the larger throttle wins and only its manager mutes."""
    if max(bandwidth_ms, request_ms) <= 0:
        return
    if bandwidth_ms > request_ms and sensors is not None:
        _throttle(ctx, manager, sensors, bandwidth_ms)
    elif ctx.request_sensors is not None:
        _throttle(ctx, ctx.broker.quota_managers.request, ctx.request_sensors, request_ms)


def record_produce(ctx: RequestContext, acks: int) -> None:
    """After the append: the whole request's size against producer_byte_rate (acks=0
    included), and the request quota unless acks=0 (exempt, only counted)."""
    ctx.quota_recorded = True
    managers = ctx.broker.quota_managers
    if not managers.produce_quota:
        return  # neither quota set: nothing to record, nothing to throttle
    now_ns = _monotonic_ns()
    now = now_ns // 1_000_000
    connection = ctx.connection
    found = connection.memo.get(managers)
    if (
        found is None
        or not acks
        or found[0] != managers.epoch
        or found[1] is not connection.principal
        or found[2] != (ctx.client_id or "")
    ):
        _record_produce(ctx, acks, managers.produce, managers.request, now)
        return
    # Every produce request under quotas: both sensors from one memo entry (what
    # `_record_produce` found for this principal and client id while no manager's
    # generation moved: the managers' epoch; None for a quota not set), recorded on directly.
    bandwidth_ms = request_ms = 0
    sensors = found[3]
    if sensors is not None:
        ctx.quota_sensors = sensors
        bandwidth_ms = sensors.record_checked(ctx.request_bytes, now)  # produce.record
    request_sensors = found[4]
    if request_sensors is not None:
        ctx.request_sensors = request_sensors
        # ctx.thread_ns() at the clock just read (RequestContext.thread_ns, inlined)
        resumed = ctx.resumed_ns
        thread_ns = ctx.handler_ns if resumed is None else ctx.handler_ns + now_ns - resumed
        request_ms = request_sensors.record_checked(thread_ns * NANOS_TO_PERCENTAGE, now)  # request.record
    if bandwidth_ms > 0 or request_ms > 0:
        _combine(ctx, managers.produce, sensors, bandwidth_ms, request_ms)


def _record_produce(
    ctx: RequestContext, acks: int, produce: ClientQuotaManager, request: RequestQuotaManager, now: int
) -> None:
    """record_produce through `_sensors`, remembering both sensors for the next request of
    the connection when both managers may be memoized (the default callback) and acks != 0."""
    bandwidth_ms, sensors = 0, None
    if produce.enabled:
        sensors = ctx.quota_sensors = _sensors(ctx, produce, now)
        bandwidth_ms = produce.record(sensors, ctx.request_bytes, now)
    request_ms, request_sensors = 0, None
    if request.enabled:
        if acks == 0:
            request.record_exempt(ctx.thread_ns(), now)
        else:
            request_sensors = ctx.request_sensors = _sensors(ctx, request, now)
            request_ms = request.record(request_sensors, ctx.thread_ns() * NANOS_TO_PERCENTAGE, now)
    if acks and produce.memoizable and request.memoizable:
        connection = ctx.connection
        managers = ctx.broker.quota_managers
        _remember(
            connection.memo,
            managers,
            (managers.epoch, connection.principal, ctx.client_id or "", sensors, request_sensors),
        )
    if bandwidth_ms > 0 or request_ms > 0:
        _combine(ctx, produce, sensors, bandwidth_ms, request_ms)


def fetch_max_bytes(ctx: RequestContext, requested: int) -> int:
    """A fetch never asks for more than the client's quota allows in (samples - 1) windows,
    narrowed to an int as KafkaApis does (`maxValueInQuotaWindow(...).toInt`): a NaN
    consumer_byte_rate makes it 0, so each fetch gets one batch (KIP-74) and no more."""
    limit = min(requested, ctx.config.get_int("fetch.max.bytes"), INT32_MAX)
    fetch = ctx.broker.quota_managers.fetch
    if not fetch.enabled:
        return limit
    window_bytes = fetch.max_value_in_quota_window(ctx.connection.principal, ctx.client_id or "")
    return min(limit, java_d2i(window_bytes))


def record_fetch(ctx: RequestContext, response_size: int) -> bool:
    """Records the response size and the request time; True when throttled, in which
    case the bytes are taken back and the client must get an empty response."""
    ctx.quota_recorded = True
    managers = ctx.broker.quota_managers
    now = now_ms()
    request_ms = _record_request(ctx, now)
    bandwidth_ms, sensors = 0, None
    if managers.fetch.enabled:
        sensors = ctx.quota_sensors = _sensors(ctx, managers.fetch, now)
        bandwidth_ms = sensors.record_checked(response_size, now)  # fetch.record
    if max(bandwidth_ms, request_ms) <= 0:
        return False
    if sensors is not None:
        managers.fetch.unrecord(sensors, response_size, now)
    _combine(ctx, managers.fetch, sensors, bandwidth_ms, request_ms)
    return True


def fetch_quota_enabled(ctx: RequestContext) -> bool:
    managers = ctx.broker.quota_managers
    return managers.fetch.enabled or managers.request.enabled


def fetch_answer(ctx: RequestContext, response: Any, throttled: Callable[[], Any]) -> Any:
    """A Fetch or ShareFetch answer under the fetch quota (KafkaApis): its encoded size is
    recorded and it is sent as encoded; a throttled client gets `throttled()` instead (an
    empty answer: the bytes taken back, nothing counted as sent)."""
    if not fetch_quota_enabled(ctx):
        return response
    body = encode_body(response, ctx.api_key, ctx.api_version)
    if record_fetch(ctx, 4 + chunks_size(body)):
        ctx.record_count = ctx.error_code = ctx.error_count = 0  # nothing is sent
        return throttled()
    ctx.encoded = (response, body)
    return response


def mutation_quota(ctx: RequestContext, strict: bool) -> ControllerMutationQuota:
    """The controller mutation quota of one request that creates or deletes partitions."""
    manager = ctx.broker.quota_managers.controller_mutation
    return manager.new_quota(ctx.connection.principal, ctx.client_id or "", strict, now_ms())


def charge_to(quota: ControllerMutationQuota) -> Charge:
    """What the cluster calls with each valid mutation's partition count."""
    return lambda partitions: quota.record(partitions, now_ms())


def finish_mutations(ctx: RequestContext, quota: ControllerMutationQuota) -> None:
    """sendResponseMaybeThrottleWithControllerQuota."""
    ctx.quota_recorded = True
    ctx.quota_sensors = quota.sensors
    now = now_ms()
    if quota.sensors is not None:
        quota.sensors.last_rate = quota.sensors.rate.measure(now)  # over the quota window, for the row
    mutation_ms = quota.throttle_time_ms(now)
    request_ms = _record_request(ctx, now)
    _combine(ctx, ctx.broker.quota_managers.controller_mutation, quota.sensors, mutation_ms, request_ms)
