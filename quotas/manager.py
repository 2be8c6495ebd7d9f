"""The quota managers of one broker: sensors per metric tags, record, throttle time.

Ports of Apache Kafka's ClientQuotaManager, ClientRequestQuotaManager and
ControllerMutationQuotaManager. The callback decides tags and limits; sensors
(quotas/sensor.py) measure; the broker's request pipeline decides when to record and
mutes connections. Pure: no sockets, no clocks (every call takes `now_ms`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator

from quotas.callback import (
    QUOTA_TYPE_OF_KEY,
    ClientQuotaCallback,
    ClientQuotaEntity,
    ClientQuotaType,
    Cluster,
    DefaultQuotaCallback,
    KafkaPrincipal,
)
from quotas.connections import ConnectionQuotas
from quotas.entity import IP, QuotaEntity
from quotas.java import LONG_MAX, java_int
from quotas.sensor import (
    DEFAULT_METRIC_CONFIG,
    Combine,
    Metric,
    QuotaSensor,
    Rate,
    SampledStat,
    TokenBucket,
    WindowConfig,
    token_bucket_throttle_ms,
)

log = logging.getLogger("quotas.manager")

INACTIVE_SENSOR_EXPIRY_MS = 3600 * 1000  # ClientQuotaManager.InactiveSensorExpirationTimeSeconds
NANOS_TO_PERCENTAGE = 100.0 / 1e9  # request time: ns of thread time -> percent-seconds
# The bound of a sensor the callback gives no limit (ClientQuotaManager.quotaLimit):
# Long.MAX_VALUE as a double. Only the token bucket shows it (its `tokens` metric).
NO_LIMIT = float(LONG_MAX)

GROUPS = {
    ClientQuotaType.PRODUCE: "Produce",
    ClientQuotaType.FETCH: "Fetch",
    ClientQuotaType.REQUEST: "Request",
    ClientQuotaType.CONTROLLER_MUTATION: "ControllerMutation",
}
RATE_METRIC = {
    ClientQuotaType.PRODUCE: "byte-rate",
    ClientQuotaType.FETCH: "byte-rate",
    ClientQuotaType.REQUEST: "request-time",
    ClientQuotaType.CONTROLLER_MUTATION: "mutation-rate",
}


class ClientSensors(QuotaSensor):
    """The sensors of one set of metric tags: what is measured against the quota (the
    QuotaSensor this is: its Rate, bound and throttle), and the throttle times given out
    (Kafka's ClientSensors).

    With a token bucket (controller mutations) the bucket is the quota, over the quota
    window, and the `mutation-rate` metric is a Rate registered without a config: the
    broker's default metric window (2 x 30 s), as ControllerMutationQuotaManager's
    registerQuotaMetrics has it (`metric_rate`). `rate` is then the same count over the
    quota window, for the metrics row only (a rate comparable with the limit)."""

    __slots__ = ("tags", "tokens", "metric_rate", "throttle_time")

    def __init__(
        self,
        tags: dict[str, str],
        bound: float | None,
        config: WindowConfig,
        token_bucket: bool,
        max_throttle_ms: int | None = None,
    ) -> None:
        super().__init__(config, bound, max_throttle_ms)
        self.tags = tags
        self.tokens = TokenBucket(config) if token_bucket else None
        self.metric_rate = Rate(DEFAULT_METRIC_CONFIG) if token_bucket else None
        self.throttle_time = SampledStat(DEFAULT_METRIC_CONFIG, Combine.AVG)


class ClientQuotaManager:
    """Produce and fetch byte-rate quotas: record, then throttle when over the bound."""

    token_bucket = False

    def __init__(
        self,
        quota_type: ClientQuotaType,
        callback: ClientQuotaCallback,
        config: WindowConfig,
        max_throttle_ms: int | None = None,
    ) -> None:
        self.quota_type = quota_type
        self.config = config
        self.max_throttle_ms = max_throttle_ms
        self.sensors: dict[tuple[tuple[str, str], ...], ClientSensors] = {}
        self.throttled_channels = 0  # connections muted by this manager now (queue-size)
        # DefaultQuotaCallback only (its tags are a pure function of the principal, the
        # client id and the quotas, which notify it): the sensors of each (principal,
        # client id) seen, until a quota changes. Any other callback is asked its tags on
        # every request, as Kafka's getOrCreateQuotaSensors does.
        self._resolved: dict[tuple[KafkaPrincipal, str], ClientSensors] = {}
        self._created_since_expiry = 0
        # Bumped whenever who shares which sensor may change (a quota or the callback
        # changed, sensors expired): a caller's memo of `sensors_for` (the broker keeps one
        # per connection) holds while it stays. `memoizable`: whether such a memo may be
        # kept at all (only when `_resolved` could be: the default callback).
        self.generation = 0
        self.memoizable = False
        self.owner: QuotaManagers | None = None  # told of every generation (QuotaManagers.epoch)
        self.set_callback(callback)

    def set_callback(self, callback: ClientQuotaCallback) -> None:
        """Uses `callback` from the next request on. Sensors whose tags it gives again
        keep their history, so a new limit applies at once."""
        self.callback = callback
        # Only callbacks that override quota_reset_required are asked it per request.
        self._may_reset = type(callback).quota_reset_required is not ClientQuotaCallback.quota_reset_required
        self._cache_tags = type(callback) is DefaultQuotaCallback
        self.memoizable = self._cache_tags and not self._may_reset
        self.refresh_limits()

    def _quotas_enabled(self) -> bool:
        """Kafka's quotasEnabled: a custom callback always, the default once a quota of
        this type exists (kept current by `refresh_limits`)."""
        callback = self.callback
        if type(callback) is DefaultQuotaCallback:
            return callback.has_quotas(self.quota_type)
        return True

    def sensors_for(self, principal: KafkaPrincipal, client_id: str, now_ms: int) -> ClientSensors:
        """The sensors this request is measured on (getOrCreateQuotaSensors). A callback
        that raises fails the request, as in Kafka."""
        if self._may_reset and self.callback.quota_reset_required(self.quota_type):
            self.refresh_limits()
        if self._cache_tags:
            sensors = self._resolved.get((principal, client_id))
            if sensors is not None:
                return sensors
        tags = self.callback.quota_metric_tags(self.quota_type, principal, client_id)
        key = tuple(tags.items())
        sensors = self.sensors.get(key)
        if sensors is None:
            bound = self.callback.quota_limit(self.quota_type, tags)
            self._created_since_expiry += 1
            if self._created_since_expiry >= 1000:
                self._expire_inactive(now_ms)
            sensors = self.sensors[key] = ClientSensors(
                tags, bound, self.config, self.token_bucket, self.max_throttle_ms
            )
        if self._cache_tags:
            self._resolved[(principal, client_id)] = sensors
        return sensors

    def record(self, sensors: ClientSensors, value: float, now_ms: int) -> int:
        """Records `value` and returns the throttle time (0 within the quota)."""
        return sensors.record_checked(value, now_ms)

    def record_no_throttle(self, sensors: ClientSensors, value: float, now_ms: int) -> None:
        sensors.record_extra(value, now_ms)

    def unrecord(self, sensors: ClientSensors, value: float, now_ms: int) -> None:
        """Takes back a recorded value (a throttled fetch sends no data)."""
        sensors.rate.record(-value, now_ms)

    def throttle(self, sensors: ClientSensors, throttle_ms: int, now_ms: int) -> None:
        """This manager mutes a channel for `throttle_ms`: count it in throttle-time;
        call `throttle_ended` when the channel is unmuted."""
        sensors.throttle_time.record(throttle_ms, now_ms)
        self.throttled_channels += 1

    def throttle_ended(self) -> None:
        self.throttled_channels -= 1

    def max_value_in_quota_window(self, principal: KafkaPrincipal, client_id: str) -> float:
        """The most a single response may carry: quota x (samples - 1) x window seconds,
        in doubles as Kafka's maxValueInQuotaWindow (NaN for a NaN quota; the caller
        narrows it to an int)."""
        if not self.enabled:
            return math.inf
        tags = self.callback.quota_metric_tags(self.quota_type, principal, client_id)
        limit = self.callback.quota_limit(self.quota_type, tags)
        if limit is None:
            return math.inf
        window_ms = self.config.window_ms
        seconds = window_ms // 1000 if window_ms % 1000 == 0 else window_ms / 1000.0  # an int in Kafka
        return limit * (self.config.samples - 1) * seconds

    def refresh_limits(self) -> None:
        """Applies changed limits to live sensors at once (updateQuotaMetricConfigs);
        who shares which sensor is asked again on the next request."""
        self.enabled = self._quotas_enabled()
        self._resolved.clear()
        self.generation += 1
        if self.owner is not None:
            self.owner.manager_changed()
        for sensors in self.sensors.values():
            try:
                sensors.bound = self.callback.quota_limit(self.quota_type, sensors.tags)
            except Exception:
                log.exception("%s quota callback failed for %s: no quota", self.quota_type.name, sensors.tags)
                sensors.bound = None

    def _expire_inactive(self, now_ms: int) -> None:
        self._created_since_expiry = 0
        self._resolved.clear()
        self.generation += 1
        if self.owner is not None:
            self.owner.manager_changed()
        for key in [
            k for k, s in self.sensors.items() if now_ms - s.last_record_ms >= INACTIVE_SENSOR_EXPIRY_MS
        ]:
            del self.sensors[key]

    def metrics(self, now_ms: int) -> Iterator[Metric]:
        group = GROUPS[self.quota_type]
        for sensors in self.sensors.values():
            rate = sensors.rate if sensors.metric_rate is None else sensors.metric_rate
            yield Metric(RATE_METRIC[self.quota_type], group, dict(sensors.tags), rate.measure(now_ms))
            yield Metric("throttle-time", group, dict(sensors.tags), sensors.throttle_time.measure(now_ms))
        yield Metric("queue-size", group, {}, float(self.throttled_channels))


class RequestQuotaManager(ClientQuotaManager):
    """request_percentage: thread time as percent of one thread, throttle capped at one
    window (ClientRequestQuotaManager); exempt requests are only counted, on a Rate
    registered without a config: the default metric window (2 x 30 s), not the quota's."""

    def __init__(self, callback: ClientQuotaCallback, config: WindowConfig) -> None:
        super().__init__(ClientQuotaType.REQUEST, callback, config, max_throttle_ms=config.window_ms)
        self.exempt = Rate(DEFAULT_METRIC_CONFIG)

    def record_exempt(self, nanos: int, now_ms: int) -> None:
        self.exempt.record(nanos * NANOS_TO_PERCENTAGE, now_ms)

    def metrics(self, now_ms: int) -> Iterator[Metric]:
        yield from super().metrics(now_ms)
        yield Metric("exempt-request-time", "Request", {}, self.exempt.measure(now_ms))


class ThrottlingQuotaExceeded(Exception):
    def __init__(self, throttle_ms: int) -> None:
        super().__init__("The throttling quota has been exceeded.")
        self.throttle_ms = throttle_ms


class ControllerMutationQuota:
    """One request's view of the controller mutation quota (KIP-599).

    Strict (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+): the bucket is
    checked before recording, so one request may overdraw it, and once it is below 0
    further mutations raise ThrottlingQuotaExceeded. Permissive (older versions,
    auto-creation): everything is recorded and only a throttle time results."""

    def __init__(
        self, manager: ControllerMutationQuotaManager | None, sensors: ClientSensors | None, strict: bool
    ):
        self.manager = manager
        self.sensors = sensors
        self.strict = strict
        self._throttle_ms = 0
        self._recorded_ms = 0

    def record(self, permits: float, now_ms: int) -> None:
        sensors = self.sensors
        if sensors is None:
            return
        bucket, metric_rate = sensors.tokens, sensors.metric_rate
        assert bucket is not None and metric_rate is not None
        bound = sensors.bound
        sensors.last_record_ms = now_ms
        if bound is None:  # Kafka's bound is then Long.MAX_VALUE: never exhausted
            bucket.record(permits, NO_LIMIT, now_ms)
            metric_rate.record(permits, now_ms)
            sensors.rate.record(permits, now_ms)
            return
        if self.strict:
            tokens = bucket.measure(bound, now_ms)
            if tokens < 0:
                self._update_throttle(tokens, bound, now_ms)
                raise ThrottlingQuotaExceeded(self._throttle_ms)
            bucket.record(permits, bound, now_ms)
            metric_rate.record(permits, now_ms)
            sensors.rate.record(permits, now_ms)
            return
        bucket.record(permits, bound, now_ms)
        metric_rate.record(permits, now_ms)
        sensors.rate.record(permits, now_ms)
        tokens = bucket.measure(bound, now_ms)
        if tokens < 0:
            self._update_throttle(tokens, bound, now_ms)

    def throttle_time_ms(self, now_ms: int) -> int:
        """The recorded throttle less the time since it was recorded."""
        if self._throttle_ms > 0:
            return java_int(max(0, self._throttle_ms - (now_ms - self._recorded_ms)))  # .toInt
        return 0

    def _update_throttle(self, tokens: float, rate: float, now_ms: int) -> None:
        self._throttle_ms = token_bucket_throttle_ms(tokens, rate)
        self._recorded_ms = now_ms


UNBOUNDED_MUTATION_QUOTA = ControllerMutationQuota(None, None, strict=False)


class ControllerMutationQuotaManager(ClientQuotaManager):
    token_bucket = True

    def __init__(self, callback: ClientQuotaCallback, config: WindowConfig) -> None:
        super().__init__(ClientQuotaType.CONTROLLER_MUTATION, callback, config)

    def new_quota(
        self, principal: KafkaPrincipal, client_id: str, strict: bool, now_ms: int
    ) -> ControllerMutationQuota:
        if not self.enabled:
            return UNBOUNDED_MUTATION_QUOTA
        return ControllerMutationQuota(self, self.sensors_for(principal, client_id, now_ms), strict)

    def metrics(self, now_ms: int) -> Iterator[Metric]:
        """`tokens` is registered with the sensor, whatever its limit (Long.MAX_VALUE when
        the callback gives none), as ControllerMutationQuotaManager.registerQuotaMetrics does."""
        yield from super().metrics(now_ms)
        for sensors in self.sensors.values():
            if sensors.tokens is not None:
                bound = NO_LIMIT if sensors.bound is None else sensors.bound
                tokens = sensors.tokens.measure(bound, now_ms)
                yield Metric("tokens", "ControllerMutation", dict(sensors.tags), tokens)


class QuotaManagers:
    """One broker's quota managers over its callback (Kafka's QuotaFactory), kept
    current by the quota store: a change applies to live sensors at once."""

    def __init__(
        self,
        callback: ClientQuotaCallback,
        config: WindowConfig,
        controller_config: WindowConfig,
        connections: ConnectionQuotas,
    ) -> None:
        self.callback = callback
        self.produce = ClientQuotaManager(ClientQuotaType.PRODUCE, callback, config)
        self.fetch = ClientQuotaManager(ClientQuotaType.FETCH, callback, config)
        self.request = RequestQuotaManager(callback, config)
        self.controller_mutation = ControllerMutationQuotaManager(callback, controller_config)
        self.connections = connections
        # Bumped with any manager's generation, with `produce_quota` (whether a produce
        # request records anything) kept beside it: what the broker's per-connection memo
        # of a produce request's two sensors checks, in one object.
        self.epoch = 0
        self.produce_quota = self.produce.enabled or self.request.enabled
        for manager in self.managers:
            manager.owner = self

    def manager_changed(self) -> None:
        """A manager's limits, callback or sensors changed (its generation moved)."""
        self.epoch += 1
        self.produce_quota = self.produce.enabled or self.request.enabled

    def by_type(self, quota_type: ClientQuotaType) -> ClientQuotaManager:
        return {
            ClientQuotaType.PRODUCE: self.produce,
            ClientQuotaType.FETCH: self.fetch,
            ClientQuotaType.REQUEST: self.request,
            ClientQuotaType.CONTROLLER_MUTATION: self.controller_mutation,
        }[quota_type]

    @property
    def wants_cluster_metadata(self) -> bool:
        """Only callbacks that override update_cluster_metadata need a Cluster built."""
        return type(self.callback).update_cluster_metadata is not ClientQuotaCallback.update_cluster_metadata

    @property
    def managers(self) -> tuple[ClientQuotaManager, ...]:
        return (self.produce, self.fetch, self.request, self.controller_mutation)

    def quota_changed(self, entity: QuotaEntity, key: str, value: float | None) -> None:
        """QuotaListener: forwards an applied AlterClientQuotas change."""
        if IP in entity:
            self.connections.update_ip_rate(entity[IP], value)
            return
        quota_type = QUOTA_TYPE_OF_KEY.get(key)
        if quota_type is None:
            return
        _notify(self.callback, quota_type, entity, value)
        self.by_type(quota_type).refresh_limits()

    def cluster_changed(self, cluster: Cluster) -> None:
        """Topics, partitions or leaders changed: the callback may change its limits."""
        try:
            refresh = self.callback.update_cluster_metadata(cluster)
        except Exception:
            log.exception("quota callback failed on a metadata update")
            return
        if refresh:
            for manager in self.managers:
                manager.refresh_limits()

    def replace_callback(
        self,
        callback: ClientQuotaCallback,
        quotas: Iterable[tuple[QuotaEntity, str, float]],
        cluster: Cluster,
    ) -> ClientQuotaCallback:
        """Switches to `callback` (a dynamic client.quota.callback.class): it first hears
        of every configured quota and of the cluster, as at start. Returns the old one,
        for the caller to close."""
        for entity, key, value in quotas:
            quota_type = QUOTA_TYPE_OF_KEY.get(key)
            if quota_type is not None and IP not in entity:
                _notify(callback, quota_type, entity, value)
        try:
            callback.update_cluster_metadata(cluster)
        except Exception:
            log.exception("quota callback failed on a metadata update")
        old, self.callback = self.callback, callback
        for manager in self.managers:
            manager.set_callback(callback)
        return old

    def metrics(self, now_ms: int) -> list[Metric]:
        found: list[Metric] = []
        for manager in self.managers:
            found.extend(manager.metrics(now_ms))
        found.extend(self.connections.metrics(now_ms))
        return found


def _notify(
    callback: ClientQuotaCallback, quota_type: ClientQuotaType, entity: QuotaEntity, value: float | None
) -> None:
    """update_quota or remove_quota; a callback that raises is logged, not fatal."""
    try:
        if value is None:
            callback.remove_quota(quota_type, ClientQuotaEntity.of(entity))
        else:
            callback.update_quota(quota_type, ClientQuotaEntity.of(entity), value)
    except Exception:
        log.exception("quota callback failed on %s %s", "removing" if value is None else "updating", entity)
