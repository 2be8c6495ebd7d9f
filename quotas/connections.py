"""Connection quotas at accept time: ip connection_creation_rate, max.connections (broker
wide and per listener, `listener.name.<name>.max.connections`) and max.connections.per.ip,
as Apache Kafka's SocketServer ConnectionQuotas applies them.

Pure bookkeeping; the broker asks `admit` when a connection is accepted and calls
`release` when an admitted one closes.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from quotas.java import INT_MAX, java_d2i
from quotas.sensor import (
    DEFAULT_METRIC_CONFIG,
    Combine,
    Metric,
    Rate,
    SampledStat,
    WindowConfig,
    throttle_time_ms,
)

INACTIVE_SENSOR_EXPIRY_MS = 3600 * 1000


class Admission(enum.Enum):
    ACCEPT = "accept"
    WAIT = "wait"  # max.connections (broker or listener) reached: wait, unread, for a slot
    THROTTLE = "throttle"  # over connection_creation_rate: close after the throttle time
    REJECT = "reject"  # max.connections.per.ip reached: close at once


@dataclass(frozen=True, slots=True)
class Decision:
    admission: Admission
    throttle_ms: int = 0


def normalize_ip(address: str) -> str:
    """One spelling per address, Java's InetAddress.getHostAddress (Kafka's ip tag):
    "::1" and "0:0:0:0:0:0:0:1" share a sensor, spelled the latter way."""
    try:
        parsed = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        return ":".join(f"{int(group, 16):x}" for group in parsed.exploded.split(":"))
    return str(parsed)


class ConnectionQuotas:
    def __init__(
        self,
        config: WindowConfig,
        max_connections: int,
        max_connections_per_ip: int,
        per_ip_overrides: Mapping[str, int] | None = None,
    ) -> None:
        self.config = config
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self.per_ip_overrides = {normalize_ip(ip): n for ip, n in (per_ip_overrides or {}).items()}
        self.counts: dict[str, int] = {}
        self.total = 0
        # KIP-402 listener limits (listener -> max.connections; absent: only the broker's)
        self.listener_max: dict[str, int] = {}
        self.listener_counts: dict[str, int] = {}
        self._rates: dict[str | None, int] = {}  # ip (None: default ip entity) -> connections/s
        self._sensors: dict[str, _IpSensors] = {}
        self._throttle_times: dict[str, SampledStat] = {}  # listener -> ip throttle times
        # The address an ip entity's name stands for: a host name (ip=localhost) is
        # enforced on the address it resolves to, as Kafka resolves it (InetAddress.getByName).
        # The broker, which resolves names off the event loop, sets this.
        self.address_of: Callable[[str], str] = lambda name: name

    def update_ip_rate(self, ip: str | None, value: float | None) -> None:
        """An ip entity's connection_creation_rate changed (None: removed). Kafka's broker
        narrows the value to an int (ClientQuotaMetadataManager: `.toInt`), so NaN, or a
        fraction below 1, is a quota of 0 connections/s, which throttles every connection."""
        key = None if ip is None else normalize_ip(self.address_of(ip))
        if value is None:
            self._rates.pop(key, None)
        else:
            self._rates[key] = java_d2i(value)  # live sensors keep their samples: only the bound changes

    def rate_limit(self, ip: str) -> int | None:
        """The quota of `ip` (its own, else the default ip entity's); None when there is
        none, or when it is Int.MAX_VALUE, which Kafka takes for no quota
        (recordIpConnectionMaybeThrottle: `connectionRateQuota != IP_CONNECTION_RATE_DEFAULT`)."""
        limit = self._rates.get(ip, self._rates.get(None))
        return None if limit == INT_MAX else limit

    def slot_available(self, listener: str = "") -> bool:
        """connectionSlotAvailable: under the listener's max.connections and the broker's."""
        limit = self.listener_max.get(listener)
        if limit is not None and self.listener_counts.get(listener, 0) >= limit:
            return False
        return self.total < self.max_connections

    def admit(self, ip: str, now_ms: int, listener: str = "") -> Decision:
        """ConnectionQuotas.inc: the listener's and the broker's slot, then the ip's
        creation rate, then its connection count. An accepted or rejected connection is
        counted (release it when it closes); a throttled or waiting one is not."""
        ip = normalize_ip(ip)
        if not self.slot_available(listener):
            return Decision(Admission.WAIT)
        limit = self.rate_limit(ip)
        if limit is not None:
            sensors = self._sensors.get(ip) or self._new_sensors(ip, now_ms)
            sensors.last_record_ms = now_ms
            rate = sensors.rate
            rate.record(1.0, now_ms)
            observed, window = rate.measure_with_window(now_ms)
            throttle = 0
            if observed > limit:  # a limit of 0: +Infinity, capped at one window
                throttle = min(throttle_time_ms(observed, limit, window), self.config.window_ms)
            if throttle > 0:  # a violation that rounds to 0 ms is accepted, as in Kafka
                rate.record(-1.0, now_ms)  # a refused connection does not count towards the rate
                self._throttle_time(listener).record(throttle, now_ms)
                return Decision(Admission.THROTTLE, throttle)
        count = self.counts.get(ip, 0)
        self.counts[ip] = count + 1
        self.total += 1
        self.listener_counts[listener] = self.listener_counts.get(listener, 0) + 1
        if count >= self.per_ip_overrides.get(ip, self.max_connections_per_ip):
            return Decision(Admission.REJECT)
        return Decision(Admission.ACCEPT)

    def release(self, ip: str, listener: str = "") -> None:
        ip = normalize_ip(ip)
        count = self.counts.get(ip, 0) - 1
        if count <= 0:
            self.counts.pop(ip, None)
        else:
            self.counts[ip] = count
        self.total = max(0, self.total - 1)
        count = self.listener_counts.get(listener, 0) - 1
        if count <= 0:
            self.listener_counts.pop(listener, None)
        else:
            self.listener_counts[listener] = count

    def _throttle_time(self, listener: str) -> SampledStat:
        stat = self._throttle_times.get(listener)
        if stat is None:
            stat = self._throttle_times[listener] = SampledStat(DEFAULT_METRIC_CONFIG, Combine.AVG)
        return stat

    def _new_sensors(self, ip: str, now_ms: int) -> _IpSensors:
        if len(self._sensors) >= 1000:
            cutoff = now_ms - INACTIVE_SENSOR_EXPIRY_MS
            self._sensors = {k: v for k, v in self._sensors.items() if v.last_record_ms > cutoff}
        sensors = self._sensors[ip] = _IpSensors(self.config)
        return sensors

    def metrics(self, now_ms: int) -> Iterator[Metric]:
        group = "socket-server-metrics"
        for ip, sensors in self._sensors.items():
            yield Metric("connection-accept-rate", group, {"ip": ip}, sensors.rate.measure(now_ms))
        for listener, stat in self._throttle_times.items():
            yield Metric(
                "ip-connection-accept-throttle-time", group, {"listener": listener}, stat.measure(now_ms)
            )
        yield Metric("connection-count", group, {}, float(self.total))


class _IpSensors:
    __slots__ = ("rate", "last_record_ms")

    def __init__(self, config: WindowConfig) -> None:
        self.rate = Rate(config)
        self.last_record_ms = 0
