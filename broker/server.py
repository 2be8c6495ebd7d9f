"""One broker: its listeners and connections, over the cluster state it shares."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from broker.config.broker_config import BrokerConfig, Endpoint
from broker.config.dynamic import ConfigListener, ConfigValidator
from broker.connection import CLOSE_LINGER_S, Connection
from broker.handlers import enabled_handlers, pipeline_checks
from broker.handlers.spec import HandlerSpec
from broker.pipeline import RequestPipeline, sasl_state_gate
from broker.releases import Release, served_range
from broker.request_metrics import ThrottleTimeStats
from broker.security.authorization import AuthorizationStage
from broker.security.sasl import enabled_mechanisms
from broker.security.tls import server_context
from broker.state.cluster import BrokerNode, ClusterState
from broker.state.replica_selector import REPLICA_SELECTOR_CONFIG, ReplicaSelector, load_replica_selector
from broker.telemetry.manager import ClientMetricsManager
from broker.throttling import (
    build_quota_managers,
    callback_configs,
    callback_reload_needed,
    now_ms,
    per_ip_overrides,
)
from messages.registry import api_name
from quotas.callback import CALLBACK_CONFIG, CallbackError, load_callback
from quotas.connections import normalize_ip
from quotas.sensor import Metric

if TYPE_CHECKING:
    from broker.config.dynamic import DynamicConfigStore
    from broker.quota_admin import QuotaAdmin
    from broker.security.authorizer import Authorizer
    from broker.security.credentials import CredentialStore
    from broker.state.groups import GroupCoordinator
    from broker.state.transactions import TransactionCoordinator

log = logging.getLogger("broker.server")
CONNECTION_LIMITS = frozenset(
    {"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides"}
)
# How often idle connections are looked for: a tenth of connections.max.idle.ms, within
# these bounds (Kafka's processors look on every poll, at least every 300 ms).
IDLE_SWEEP_MIN_S = 0.01
IDLE_SWEEP_MAX_S = 1.0


class BrokerServer:
    def __init__(
        self,
        node_id: int,
        cluster: ClusterState,
        groups: GroupCoordinator,
        transactions: TransactionCoordinator,
        quotas: QuotaAdmin,
        credentials: CredentialStore,
        authorizer: Authorizer,
        configs: DynamicConfigStore,
        listeners: list[Endpoint],
        advertised: list[Endpoint] | None = None,
        rack: str | None = None,
    ) -> None:
        self.node_id = node_id
        # broker.rack: shown by Metadata and DescribeCluster, matched by RackAwareReplicaSelector
        self.rack = rack
        self.cluster = cluster
        self.groups = groups
        self.transactions = transactions
        self.quotas = quotas
        self.credentials = credentials
        self.authorizer = authorizer
        self.configs = configs
        # Hooks for components that react to dynamic configs (see broker/dynamic_config.py):
        # validators get the would-be effective config and return a reason to refuse it,
        # listeners get the keys whose effective value changed once it is applied.
        self.config_validators: list[ConfigValidator] = [self._refuse_unusable]
        self.config_listeners: list[ConfigListener] = [self._reconfigure]
        self.config = configs.attach(self)  # this broker's effective view
        # KIP-392: None (the default) keeps consumers on the leader at no cost per fetch.
        self.replica_selector: ReplicaSelector | None = load_replica_selector(
            self.config.get_str(REPLICA_SELECTOR_CONFIG)
        )
        self.listeners = listeners
        self._advertised = advertised or []
        self.bound: dict[str, Endpoint] = {}
        self.connections: set[Connection] = set()
        # Quotas are enforced per broker, as in Kafka: each has its own sensors.
        try:
            self.quota_managers = build_quota_managers(self.config, node_id)
        except CallbackError:
            static = configs.static
            if self.config.get_str(CALLBACK_CONFIG) == static.get_str(CALLBACK_CONFIG):
                raise  # the configured class itself: refuse to start
            # A persisted dynamic class that no longer loads is skipped, as Kafka skips
            # invalid persisted dynamic configs at start.
            log.exception(
                "broker %d: the dynamic %s is unusable; using the static one", node_id, CALLBACK_CONFIG
            )
            self.quota_managers = build_quota_managers(static, node_id)
        self.quota_managers.connections.address_of = quotas.address_of
        self.quota_managers.connections.listener_max = self._listener_limits()
        for entity, values in quotas.store.configs.items():
            for key, value in values.items():
                self.quota_managers.quota_changed(entity, key, value)
        cluster.metadata_listeners.append(self._cluster_metadata_changed)
        quotas.store.listeners.append(self.quota_managers)
        self.waiting_connections: deque[Connection] = deque()  # for a slot under max.connections
        # Every request goes through the pipeline; harnesses add their interceptors and
        # observers to it (see MockCluster).
        # KIP-714: client instances exist only when telemetry is on (off costs nothing).
        self.telemetry: ClientMetricsManager | None = None
        if self.config.get_bool("telemetry.enabled"):
            self.telemetry = ClientMetricsManager(
                cluster.client_metrics, lambda: self.config.get_int("telemetry.max.bytes")
            )
        handlers = _as_release(enabled_handlers(self.config), cluster.features.release)
        self.pipeline = RequestPipeline(self, handlers)
        if authorizer.enabled:  # first in line, before any harness interceptor
            self.pipeline.add_interceptor(AuthorizationStage(authorizer, pipeline_checks(handlers)))
        self.advertised_apis = self.pipeline.advertised_apis
        if any(self.config.security_protocol(e.listener).startswith("SASL_") for e in listeners):
            self.pipeline.add_gate(sasl_state_gate)
        self.throttle_stats = ThrottleTimeStats()
        self.pipeline.add_observer(self.throttle_stats)
        # Callbacks that end long-poll waits early (fetch), called when the broker stops.
        self.stop_listeners: set[Callable[[], None]] = set()
        self._servers: list[asyncio.Server] = []
        self._idle_sweep: asyncio.TimerHandle | None = None
        self.idle_closed = 0  # connections closed by connections.max.idle.ms

    @property
    def running(self) -> bool:
        return bool(self._servers)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for endpoint in self.listeners:
            # A restarted broker takes back the ports it had, where its clients look for it.
            bound = self.bound.get(endpoint.listener)
            # TLS is started by each connection once admitted (Connection._start_tls), so a
            # handshake counts against the connection limits and the idle sweep, as in Kafka.
            tls = server_context(self.config, endpoint.listener)
            try:
                server = await loop.create_server(
                    lambda listener=endpoint.listener, tls=tls: Connection(self, listener, tls),
                    endpoint.host or None,
                    bound.port if bound is not None else endpoint.port,
                    reuse_address=True,
                )
            except BaseException:
                for opened in self._servers:  # all listeners or none
                    opened.close()
                self._servers.clear()
                raise
            port = server.sockets[0].getsockname()[1]
            self.bound[endpoint.listener] = Endpoint(endpoint.listener, endpoint.host, port)
            self._servers.append(server)
        endpoints = {}
        for endpoint in self.listeners:
            advertised = self.advertised_endpoint(endpoint.listener)
            endpoints[endpoint.listener] = (advertised.host, advertised.port)
        node = self.cluster.brokers.get(self.node_id)
        if node is None:
            self.cluster.register_broker(BrokerNode(self.node_id, endpoints, self.rack))
        else:
            node.endpoints = endpoints
            self.cluster.broker_up(self.node_id)
        self._schedule_idle_sweep()

    def _schedule_idle_sweep(self) -> None:
        interval = IDLE_SWEEP_MAX_S
        for key in ("connections.max.idle.ms", "socket.request.receive.timeout.ms"):
            limit_ms = self.config.get_int(key)
            if limit_ms > 0:
                interval = min(interval, max(IDLE_SWEEP_MIN_S, limit_ms / 10_000))
        self._idle_sweep = asyncio.get_running_loop().call_later(interval, self._close_idle)

    def _close_idle(self) -> None:
        """Closes the admitted connections nothing was read from or written to for
        connections.max.idle.ms (Kafka's Selector idle expiry: activity of any kind,
        even one byte, keeps a connection), and those whose request has been arriving
        for longer than socket.request.receive.timeout.ms (this broker's own bound on a
        request that never completes; off by default, as Kafka has none)."""
        if not self._servers:
            return
        idle_ms = self.config.get_int("connections.max.idle.ms")
        receive_ms = self.config.get_int("socket.request.receive.timeout.ms")
        if idle_ms > 0 or receive_ms > 0:
            now = time.monotonic()
            idle_since = now - idle_ms / 1000 if idle_ms > 0 else -1.0
            receive_since = now - receive_ms / 1000 if receive_ms > 0 else -1.0
            for connection in [
                c
                for c in self.connections
                if c.admitted
                and not c.closed
                and (
                    c.last_active < idle_since
                    or (c.receive_started is not None and c.receive_started < receive_since)
                )
            ]:
                if connection.last_active < idle_since:
                    log.debug("closing %s: idle for connections.max.idle.ms", connection.describe())
                    self.idle_closed += 1
                else:
                    log.info(
                        "closing %s: a request incomplete for socket.request.receive.timeout.ms",
                        connection.describe(),
                    )
                connection.close()
        self._schedule_idle_sweep()

    def _cluster_metadata_changed(self) -> None:
        """KIP-257: the quota callback hears of topic, partition and leader changes."""
        if self.quota_managers.wants_cluster_metadata:
            self.quota_managers.cluster_changed(self.cluster.snapshot())

    def advertised_endpoint(self, listener: str) -> Endpoint:
        """Where clients that came in on `listener` reach this broker."""
        for endpoint in self._advertised:
            if endpoint.listener == listener:
                return endpoint
        bound = self.bound[listener]
        host = bound.host if bound.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        return Endpoint(listener, host, bound.port)

    def hold_requests(self, held: bool) -> None:
        """Stops (True) or resumes (False) reading requests on every connection: an
        observer that cannot keep up (the metrics sink's backlog) holds the broker."""
        self.pipeline.held = held
        if not held:
            for connection in list(self.connections):
                connection.resume()

    def connection_closed(self, connection: Connection) -> None:
        """Frees the connection's slot and admits connections waiting for one."""
        if connection.admitted:
            connection.admitted = False
            self.quota_managers.connections.release(connection.peer[0], connection.listener)
        elif connection in self.waiting_connections:
            self.waiting_connections.remove(connection)
        if self.telemetry is not None:
            self.telemetry.connection_closed(connection.connection_id)
        if self.groups.share.sessions:  # a share session ends with its connection
            self.groups.share.connection_closed(self.node_id, connection.connection_id)
        self._admit_waiting()

    def _admit_waiting(self) -> None:
        """Admits waiting connections, in arrival order, whose listener has a slot (each
        listener's acceptor waits for its own, as in Kafka)."""
        connections = self.quota_managers.connections
        if not self.waiting_connections or not connections.slot_available():
            return
        for waiting in list(self.waiting_connections):
            if not connections.slot_available():
                break  # the broker-wide limit: nobody gets in
            if waiting.closed or connections.slot_available(waiting.listener):
                self.waiting_connections.remove(waiting)
                if not waiting.closed:
                    waiting.admit()

    def _listener_limits(self) -> dict[str, int]:
        """KIP-402: `listener.name.<name>.max.connections` of this broker's listeners."""
        limits = {}
        for endpoint in self.listeners:
            value = self.config.get(f"listener.name.{endpoint.listener.lower()}.max.connections")
            if value:
                limits[endpoint.listener] = int(value)
        return limits

    def _refuse_unusable(self, values: dict[str, str]) -> str | None:
        """Refuses dynamic values this broker could not use: SASL mechanisms it lacks on
        one of its SASL listeners, per-ip connection overrides it cannot parse, a quota
        callback class that does not import, is no ClientQuotaCallback or fails in
        configure() (the old callback stays in force)."""
        config = BrokerConfig(values)
        current = self.config.values
        changed = {key for key in values.keys() | current.keys() if values.get(key) != current.get(key)}
        try:
            for endpoint in self.listeners:
                if config.security_protocol(endpoint.listener).startswith("SASL_"):
                    enabled_mechanisms(config, endpoint.listener)
            per_ip_overrides(config.get_str("max.connections.per.ip.overrides"))
            if callback_reload_needed(changed):
                load_callback(values.get(CALLBACK_CONFIG, ""), callback_configs(values, self.node_id)).close()
        except ValueError as exc:  # CallbackError included
            return str(exc)
        return None

    def _reconfigure(self, changed: set[str]) -> None:
        """Connection limits apply at once, as Kafka's ConnectionQuotas reconfigure; a
        raised max.connections admits connections waiting for a slot. (Other configs are
        read where used, so they need nothing here.)"""
        if callback_reload_needed(changed):
            self._replace_quota_callback()
        if changed.isdisjoint(CONNECTION_LIMITS) and not any(
            key.endswith(".max.connections") for key in changed
        ):
            return
        connections = self.quota_managers.connections
        connections.max_connections = self.config.get_int("max.connections")
        connections.listener_max = self._listener_limits()
        connections.max_connections_per_ip = self.config.get_int("max.connections.per.ip")
        overrides = per_ip_overrides(self.config.get_str("max.connections.per.ip.overrides"))
        connections.per_ip_overrides = {normalize_ip(ip): count for ip, count in overrides.items()}
        self._admit_waiting()

    def _replace_quota_callback(self) -> None:
        """A newly configured callback from the next request on; it first hears of every
        configured quota and of the cluster, and the old one is closed."""
        try:
            callback = load_callback(
                self.config.get_str(CALLBACK_CONFIG), callback_configs(self.config.values, self.node_id)
            )
        except CallbackError:
            log.exception("broker %d keeps its quota callback", self.node_id)
            return
        configured = [
            (e, key, value)
            for e, values in self.quotas.store.configs.items()
            for key, value in values.items()
        ]
        old = self.quota_managers.replace_callback(callback, configured, self.cluster.snapshot())
        try:
            old.close()
        except Exception:
            log.exception("broker %d: closing the replaced quota callback failed", self.node_id)

    def metrics(self) -> list[Metric]:
        """This broker's quota metrics, named and tagged as Apache Kafka's."""
        found = self.quota_managers.metrics(now_ms())
        for api_key, (count, total, most) in sorted(self.throttle_stats.by_api.items()):
            tags = {"request": api_name(api_key)}
            found.append(Metric("ThrottleTimeMs", "RequestMetrics", {**tags, "stat": "Mean"}, total / count))
            found.append(Metric("ThrottleTimeMs", "RequestMetrics", {**tags, "stat": "Max"}, float(most)))
        return [replace(m, broker=self.node_id) for m in found]

    async def stop(self, grace: float = 5.0) -> None:
        """Stops accepting, lets in-flight requests finish (up to `grace` s), closes."""
        for server in self._servers:
            server.close()
        self._servers.clear()
        if self._idle_sweep is not None:
            self._idle_sweep.cancel()
            self._idle_sweep = None
        if self.node_id in self.cluster.brokers:
            self.cluster.broker_down(self.node_id)
        else:
            self.cluster.unregistered_broker_stopped(self.node_id)
        for wake in list(self.stop_listeners):
            wake()
        busy = [conn.idle.wait() for conn in self.connections if not conn.idle.is_set()]
        if busy:
            await asyncio.wait([asyncio.ensure_future(b) for b in busy], timeout=grace)
        if grace > 0 and self.connections:
            # A shutdown, not a simulated crash: reading stops (requests not yet started
            # are dropped with their connection) and the answers just written reach the
            # clients before the FIN (kafka-python 3 drops data that arrives with it).
            for conn in list(self.connections):
                conn.close_soon(CLOSE_LINGER_S)
            await asyncio.sleep(CLOSE_LINGER_S)
        for conn in list(self.connections):
            conn.close()
        self.connections.clear()
        await asyncio.sleep(0)  # let cancelled request tasks unwind


def _as_release(handlers: dict[int, HandlerSpec], release: Release) -> dict[int, HandlerSpec]:
    """The handlers as a broker of `release` serves them (--kafka-version): each API's
    versions capped at the release's, the APIs it lacks left out (broker/releases.py)."""
    if release.modelled:
        return handlers
    capped: dict[int, HandlerSpec] = {}
    for key, spec in handlers.items():
        ranges = served_range(release, key, (spec.min_version, spec.max_version), spec.advertised)
        if ranges is not None:
            (low, high), advertised = ranges
            capped[key] = replace(spec, min_version=low, max_version=high, advertised=advertised)
    return capped
