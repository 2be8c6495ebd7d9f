"""`MockCluster`: N brokers in one process sharing one cluster state.

Usable as an async context manager on the caller's loop, or as a plain context manager
that runs its own event loop (uvloop when installed) in a background thread, for
synchronous tests and scripts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from broker.config.broker_config import (
    SUPPORTED_SECURITY_PROTOCOLS,
    BrokerConfig,
    Endpoint,
    broker_racks,
    parse_endpoints,
)
from broker.config.dynamic import DynamicConfigStore, SqliteConfigStorage
from broker.extras import require
from broker.harness.conformance import ConformanceTracker
from broker.harness.faults import FaultInjector
from broker.harness.metrics_sink import MetricsSink
from broker.harness.recording import RequestRecorder
from broker.quota_admin import QuotaAdmin
from broker.releases import release
from broker.security.acl_admin import SqliteAclStorage
from broker.security.authorizer import Authorizer
from broker.security.credentials import CredentialStore
from broker.security.sasl import enabled_mechanisms
from broker.security.tls import server_context
from broker.server import BrokerServer
from broker.state.cluster import ClusterError, ClusterState, Partition, Topic
from broker.state.features import ELR_VERSION, FeatureControl
from broker.state.groups import GroupCoordinator
from broker.state.replica_selector import REPLICA_SELECTOR_CONFIG, load_replica_selector
from broker.state.transactions import TransactionCoordinator
from broker.telemetry.admin import ClientMetricsAdmin
from quotas.sensor import Metric
from quotas.store import SqliteQuotaStorage

if TYPE_CHECKING:
    from broker.harness.admin_http import AdminServer

T = TypeVar("T")
log = logging.getLogger("broker.cluster")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where available, else asyncio's."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _shift(endpoints: list[Endpoint], offset: int) -> list[Endpoint]:
    """Broker i listens on every configured port + i (port 0 stays 0: a free port each)."""
    return [Endpoint(e.listener, e.host, e.port + offset if e.port else 0) for e in endpoints]


class MockCluster:
    """A Kafka cluster of `brokers` brokers in this process, sharing one cluster state.

    `config` takes Kafka's broker config names (values as strings or Python values);
    without `listeners` each broker listens on `host`, port `port` + its index (0: a free
    port). Use it as a context manager: `with MockCluster() as cluster:` runs it on an
    event loop of its own in a thread (for synchronous tests), `async with MockCluster() as
    cluster:` on the caller's loop. `cluster.bootstrap_servers` is what clients connect to.

    The harness API is in its attributes: `quotas` (client quotas, as
    DescribeClientQuotas/AlterClientQuotas), `configs` (dynamic broker, topic and group
    configs), `acls`, `credentials` (SCRAM users), `client_metrics` (KIP-714
    subscriptions), `faults` (injected errors, delays, disconnects and throttles),
    `requests` (the recording) and `conformance` (the client conformance report).

    `kafka_version="X.Y"` presents the cluster as that Kafka release (3.9, 4.0; 4.4, the
    one modelled, by default): its API versions and a new cluster's features
    (broker/releases.py); an unknown one raises UnknownRelease (a ValueError).
    """

    def __init__(
        self,
        brokers: int = 1,
        config: dict[str, Any] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        kafka_version: str | None = None,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        # The Kafka release the cluster presents itself as (broker/releases.py): its API
        # versions and new-cluster features; None is the modelled one (Kafka 4.4).
        self.release = release(kafka_version)
        self.config = BrokerConfig({k: str(v) for k, v in (config or {}).items()})
        # The optional features that are asked for fail (MissingExtra) before anything opens.
        if self.config.get_int("admin.port") >= 0:
            require("http")
        if self.config.get_str("metrics.dir"):
            require("metrics")
        if self.config.get_bool("telemetry.enabled"):
            require("telemetry")
        listeners = parse_endpoints(self.config.get_str("listeners")) or [Endpoint("PLAINTEXT", host, port)]
        for endpoint in listeners:
            protocol = self.config.security_protocol(endpoint.listener)
            if protocol not in SUPPORTED_SECURITY_PROTOCOLS:
                raise ValueError(f"listener {endpoint}: security protocol {protocol} is not supported")
            if protocol.startswith("SASL_"):
                enabled_mechanisms(self.config, endpoint.listener)  # fails early on an unknown one
            server_context(self.config, endpoint.listener)  # and on missing or bad TLS files
        advertised = parse_endpoints(self.config.get_str("advertised.listeners"))
        # Fail before anything is opened: a misnumbered rack list, an unknown selector class.
        racks = broker_racks(self.config.get_str("broker.rack"), brokers)
        load_replica_selector(self.config.get_str(REPLICA_SELECTOR_CONFIG))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        state_dir = self.config.get_str("state.dir")
        # Dynamic configs (IncrementalAlterConfigs/AlterConfigs and `cluster.configs`): each
        # broker reads its own view; the shared state reads the cluster-wide one.
        self.configs = DynamicConfigStore(
            self.config, SqliteConfigStorage(state_dir) if state_dir else None, run=self._call_from_thread
        )
        self.state = ClusterState(self.configs.cluster_view)
        if not self.release.modelled:
            self.state.features = FeatureControl(self.release)  # a new cluster of that release
        self.configs.cluster = self.state
        # Kafka 4.1+ formats a new cluster with eligible leader replicas on, which writes a
        # cluster-level min.insync.replicas (ConfigurationControlManager); older ones not.
        if self.state.features.finalized.get(ELR_VERSION, 0) >= 1:
            self.configs.bootstrap_elr()
        # New partitions and moved leaders take retention from their leader's config.
        self.state.metadata_listeners.append(lambda: self.configs.apply_retention(self.state.topics.values()))
        self.groups = GroupCoordinator(self.state)
        self.transactions = TransactionCoordinator(self.state, self.groups)
        self.quotas = QuotaAdmin(
            SqliteQuotaStorage(state_dir) if state_dir else None, run=self._call_from_thread
        )
        self.credentials = CredentialStore.from_config(self.config, run=self._call_from_thread)
        self.authorizer = Authorizer.from_config(
            self.config, SqliteAclStorage(state_dir) if state_dir else None, run=self._call_from_thread
        )
        self.acls = self.authorizer.admin  # the Python API: cluster.acls.add(...), .remove(...), .list()
        metrics_dir = self.config.get_str("metrics.dir")
        self.metrics_sink = (
            MetricsSink(
                metrics_dir,
                roll_rows=self.config.get_int("metrics.roll.rows"),
                roll_ms=self.config.get_int("metrics.roll.ms"),
                buffer_rows=self.config.get_int("metrics.buffer.rows"),
            )
            if metrics_dir
            else None
        )
        # The harness's hooks (faults, recording, conformance), shared by every broker.
        self.faults = FaultInjector(self.on_loop, lambda: [broker.node_id for broker in self.brokers])
        self.requests = RequestRecorder(
            self.config.get_int("record.requests.max"),
            self.config.get_str("record.file") or None,
            self.on_loop,
            self.config.get_int("record.requests.max.bytes"),
        )
        self.conformance = ConformanceTracker(self.on_loop, self.release)
        self.admin: AdminServer | None = None
        self._log_tasks: list[asyncio.Task[None]] = []  # retention, log cleaner, transaction timeouts
        first_id = self.config.get_int("node.id")
        self.brokers = [
            BrokerServer(
                first_id + i,
                self.state,
                self.groups,
                self.transactions,
                self.quotas,
                self.credentials,
                self.authorizer,
                self.configs,
                _shift(listeners, i),
                _shift(advertised, i),
                rack=racks[i],
            )
            for i in range(brokers)
        ]
        for broker in self.brokers:
            self._plug_harness(broker)
        # KIP-714 subscriptions from Python: cluster.client_metrics.set("all", ["*"], 1000)
        self.client_metrics = ClientMetricsAdmin(
            self.configs,
            self.state,
            lambda: [broker.telemetry for broker in self.brokers if broker.telemetry is not None],
            self._call_from_thread,
            self.on_loop,
        )

    def _plug_harness(self, broker: BrokerServer) -> None:
        """The harness joins each broker's request pipeline at its seams."""
        pipeline = broker.pipeline
        pipeline.add_interceptor(self.faults)
        if self.metrics_sink is not None:
            pipeline.add_observer(self.metrics_sink)
            self.metrics_sink.backlog_listeners.append(broker.hold_requests)
            if broker.telemetry is not None:
                broker.telemetry.exporters.append(self.metrics_sink.export_client_metrics)
        pipeline.add_observer(self.conformance)
        if self.requests.enabled:
            pipeline.add_observer(self.requests)

    # -- lifecycle -----------------------------------------------------------
    async def start(self) -> MockCluster:
        self._loop = asyncio.get_running_loop()
        try:
            for broker in self.brokers:
                await broker.start()
            loop = asyncio.get_running_loop()
            self._log_tasks = [
                loop.create_task(self._check_retention()),
                loop.create_task(self._clean_logs()),
                loop.create_task(self._abort_timed_out_transactions()),
            ]
            admin_port = self.config.get_int("admin.port")
            if admin_port >= 0:
                from broker.harness.admin_http import AdminServer  # aiohttp only when asked for

                self.admin = AdminServer(self)
                await self.admin.start("127.0.0.1", admin_port)
        except BaseException:
            await self.stop()  # nothing stays bound after a failed start
            raise
        return self

    async def stop(self) -> None:
        for task in self._log_tasks:
            task.cancel()
        self._log_tasks = []
        if self.admin is not None:
            await self.admin.stop()
        # Parked joins and syncs are answered first, so no broker waits out its grace period.
        self.groups.close()
        for broker in self.brokers:
            await broker.stop()
            broker.quota_managers.callback.close()
        if self.metrics_sink is not None:
            await self.metrics_sink.close()  # every answered request's row is on disk
        await self.requests.close()
        report = self.config.get_str("conformance.report.file")
        if report:
            self.conformance.write(report)
        self.quotas.close()
        self.acls.close()
        self.credentials.close()
        self.configs.close()

    async def _check_retention(self) -> None:
        """Kafka's log retention check: every `log.retention.check.interval.ms`, batches
        past their topic's retention.ms go, even from partitions nobody appends to."""
        while True:
            await asyncio.sleep(max(1, self.state.config.get_int("log.retention.check.interval.ms")) / 1000)
            now_ms = int(time.time() * 1000)
            for topic in list(self.state.topics.values()):
                for partition in topic.partitions:
                    partition.log.enforce_retention_ms(now_ms)

    async def _abort_timed_out_transactions(self) -> None:
        """Kafka's transaction coordinator: every
        `transaction.abort.timed.out.transaction.cleanup.interval.ms`, transactions past
        their timeout are aborted with a bumped epoch, fencing their producer."""
        interval = self.state.config.get_int("transaction.abort.timed.out.transaction.cleanup.interval.ms")
        while True:
            await asyncio.sleep(max(1, interval) / 1000)
            try:
                self.transactions.abort_timed_out()
            except Exception:  # one bad pass must not end the task
                log.exception("aborting timed-out transactions failed")

    async def _clean_logs(self) -> None:
        """Kafka's log cleaner: every `log.cleaner.backoff.ms`, each compacted partition
        that is due is cleaned (off the request path; only this decodes records)."""
        while True:
            await asyncio.sleep(max(1, self.state.config.get_int("log.cleaner.backoff.ms")) / 1000)
            now_ms = int(time.time() * 1000)
            for topic in list(self.state.topics.values()):
                for partition in topic.partitions:
                    if partition.log.compaction is not None:
                        try:
                            partition.log.clean(now_ms)
                        except Exception:  # one partition must not stop the cleaner
                            log.exception("cleaning %s-%d failed", topic.name, partition.index)

    async def __aenter__(self) -> MockCluster:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def __enter__(self) -> MockCluster:
        loop = new_event_loop()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # report start failures to the caller
                ready.set_exception(exc)
                loop.close()
                return
            ready.set_result(None)
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name="mock-kafka-cluster", daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._loop is not None and self._thread is not None
        self.call(self.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def _call_from_thread(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._thread is None or threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("on the cluster's own event loop, await the async form of this call")
        return self.call(coro)

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs `coro` on the cluster's loop; from another thread it blocks for the result."""
        assert self._loop is not None, "cluster not started"
        if self._thread is None:
            raise RuntimeError("call() is for the thread-backed cluster; await the coroutine instead")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=60)

    # -- what harnesses use --------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """host:port of every running broker on the first listener."""
        return self.bootstrap_for(self.brokers[0].listeners[0].listener)

    def bootstrap_for(self, listener: str) -> str:
        """host:port of every running broker on `listener` (e.g. "SASL_SSL")."""
        return ",".join(
            f"{e.host}:{e.port}"
            for b in self.brokers
            if b.running
            for e in [b.advertised_endpoint(listener.upper())]
        )

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: dict[str, str] | None = None,
    ) -> Topic:
        """Creates a topic directly in the cluster state (no request, no quotas)."""

        def create() -> Topic:
            topic = self.state.create_topic(name, partitions, replication_factor, config)
            assert topic is not None
            return topic

        return self.on_loop(create)

    def broker(self, node_id: int) -> BrokerServer:
        for broker in self.brokers:
            if broker.node_id == node_id:
                return broker
        raise ClusterError(42, f"Unknown broker {node_id}")

    async def stop_broker_async(self, node_id: int) -> None:
        """Takes a broker down as a crash would: its listeners close, its connections
        drop, Metadata stops listing it and its partitions elect new leaders."""
        broker = self.broker(node_id)
        if broker.running:
            await broker.stop(grace=0)

    async def start_broker_async(self, node_id: int) -> None:
        """Brings a stopped broker back on the ports it had."""
        broker = self.broker(node_id)
        if not broker.running:
            await broker.start()

    def stop_broker(self, node_id: int) -> None:
        """stop_broker_async for the thread-backed cluster."""
        self.call(self.stop_broker_async(node_id))

    def start_broker(self, node_id: int) -> None:
        """start_broker_async for the thread-backed cluster."""
        self.call(self.start_broker_async(node_id))

    def move_leader(self, topic: str, partition: int, node_id: int) -> Partition:
        """Makes `node_id` the partition's leader (ClusterError for an unknown partition
        or broker); clients that produce to the old leader get NOT_LEADER_OR_FOLLOWER."""
        return self.on_loop(lambda: self.state.move_leader(topic, partition, node_id))

    def list_transactions(self) -> list[dict[str, Any]]:
        """Every transactional id the coordinator knows: producer id and epoch, state,
        timeout, start time, partitions and groups of the open transaction."""
        return self.on_loop(lambda: [txn.to_dict() for txn in self.transactions.listed()])

    def list_groups(self) -> list[dict[str, Any]]:
        """Every group, classic and consumer (KIP-848): id, type, protocol type, state."""
        return self.on_loop(
            lambda: [
                {
                    "group_id": g.group_id,
                    "type": g.group_type,
                    "protocol_type": g.protocol_type,
                    "state": g.state,
                }
                for g in self.groups.list_groups()
            ]
        )

    def describe_group(self, group_id: str) -> dict[str, Any] | None:
        """One group: a consumer group's epochs, assignor and each member's subscription,
        assignment and target; a classic group's generation, protocol and members."""
        return self.on_loop(lambda: self.groups.group_details(group_id))

    def describe(self) -> dict[str, Any]:
        """Brokers (id, host, port, up) and topics with their partitions' leaders."""

        def build() -> dict[str, Any]:
            brokers = []
            for broker in self.brokers:
                endpoint = broker.advertised_endpoint(broker.listeners[0].listener)
                brokers.append(
                    {"id": broker.node_id, "host": endpoint.host, "port": endpoint.port, "up": broker.running}
                )
            topics = [
                {
                    "name": topic.name,
                    "topic_id": str(topic.topic_id),
                    "partitions": [
                        {
                            "partition": p.index,
                            "leader": p.leader,
                            "leader_epoch": p.leader_epoch,
                            "replicas": list(p.replicas),
                        }
                        for p in topic.partitions
                    ],
                }
                for topic in self.state.topics.values()
            ]
            return {"cluster_id": self.state.cluster_id, "brokers": brokers, "topics": topics}

        return self.on_loop(build)

    def metrics(self) -> list[Metric]:
        """Every broker's quota metrics (Kafka's names, groups and tags; `broker` says
        whose), e.g. byte-rate and throttle-time in group Produce per user/client-id."""

        def collect() -> list[Metric]:
            found = [m for broker in self.brokers for m in broker.metrics()]
            return found + (self.metrics_sink.metrics() if self.metrics_sink is not None else [])

        return self.on_loop(collect)

    def on_loop(self, fn: Callable[[], T]) -> T:
        """Calls `fn` on the cluster's loop thread (state is only touched there) and returns its result."""
        if self._thread is None or threading.current_thread() is self._thread:
            return fn()
        assert self._loop is not None
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:
                done.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return done.result(timeout=60)
