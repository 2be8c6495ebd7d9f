"""One broker's client instances (Kafka's ClientMetricsManager): what each client was told
to push, when it last asked and pushed, and the checks GetTelemetrySubscriptions (71)
and PushTelemetry (72) answer with, in Kafka's order.

Accepted pushes go to the exporters (Kafka's ClientTelemetryExporter plugins): the
metrics sink's second table, and a bounded in-memory list of recent pushes for tests.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from broker.extras import require
from broker.telemetry.otlp import (
    ACCEPTED_COMPRESSION,
    ZSTD,
    MetricPoint,
    PayloadTooLarge,
    decompress,
    metric_points,
)
from broker.telemetry.subscriptions import ClientSubscription, Subscriptions
from protocol.errors import ErrorCode
from protocol.uuids import uuid_string

log = logging.getLogger("broker.telemetry")

CACHE_SIZE = 16384  # ClientMetricsManager.CACHE_MAX_SIZE
MIN_EXPIRY_MS = 60_000
RECENT_PUSHES = 1000
_RESERVED = (uuid.UUID(int=0), uuid.UUID(int=1))  # Uuid.ZERO_UUID, Uuid.ONE_UUID
# After these a client may ask for its subscription again at once (it must, to recover).
_GET_AGAIN = (ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)


@dataclass(slots=True)
class ClientInstance:
    instance_id: uuid.UUID
    version: int  # of the subscriptions it was built from
    subscription: ClientSubscription
    subscription_id: int
    connection_id: int
    last_get_ms: float | None = None
    last_push_ms: float | None = None
    terminating: bool = False
    last_error: int = ErrorCode.NONE
    last_used_ms: float = 0.0

    @property
    def expiry_ms(self) -> float:
        return max(MIN_EXPIRY_MS, 3 * self.subscription.interval_ms)


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """Who is asking or pushing: the matching attributes and the metrics rows' columns."""

    broker_id: int
    connection_id: int
    client_id: str | None
    software_name: str | None
    software_version: str | None
    address: str
    port: int
    principal: str

    def attributes(self, instance_id: uuid.UUID) -> dict[str, str | None]:
        return {
            "client_instance_id": uuid_string(instance_id),  # Kafka matches its text form
            "client_id": self.client_id,
            "client_software_name": self.software_name,
            "client_software_version": self.software_version,
            "client_source_address": self.address,
            "client_source_port": str(self.port),
        }


@dataclass(frozen=True, slots=True)
class SubscriptionAnswer:
    error: int
    instance_id: uuid.UUID | None = None
    subscription_id: int = 0
    accepted_compression: list[int] = field(default_factory=list)
    push_interval_ms: int = 0
    max_bytes: int = 0
    metrics: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TelemetryPush:
    """An accepted push, decoded, as the exporters receive it."""

    instance_id: uuid.UUID
    client: ClientInfo
    received_ms: float
    compression: int
    points: list[MetricPoint]


Exporter = Callable[[TelemetryPush], None]


class ClientMetricsManager:
    def __init__(
        self,
        subscriptions: Subscriptions,
        max_bytes: Callable[[], int],
        clock: Callable[[], float] = lambda: time.time() * 1000,
    ) -> None:
        # Pushed metrics are read with OpenTelemetry's classes: without them the broker
        # would accept every push and read none, so telemetry.enabled fails at start instead.
        require("telemetry")
        self.subscriptions = subscriptions
        self.max_bytes = max_bytes  # telemetry.max.bytes, read when used (it is dynamic)
        self.clock = clock
        self.instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        self.exporters: list[Exporter] = []
        self.recent: deque[TelemetryPush] = deque(maxlen=RECENT_PUSHES)
        self.undecodable = 0  # pushes accepted (as Kafka does) whose bytes are no MetricsData
        self._by_connection: dict[int, set[uuid.UUID]] = {}

    # -- the two APIs ------------------------------------------------------------
    def get_subscriptions(self, instance_id: uuid.UUID | None, client: ClientInfo) -> SubscriptionAnswer:
        now = self.clock()
        if instance_id is None or instance_id in _RESERVED:
            instance_id = self._new_instance_id()
        instance = self._instance(instance_id, client, now)
        if (
            self._elapsed(now, instance.last_get_ms, instance.last_push_ms)
            >= instance.subscription.interval_ms
        ):
            instance.last_get_ms = now
        elif instance.last_error not in _GET_AGAIN:
            log.debug("Request from the client [%s] arrived before the next push interval time", instance_id)
            return SubscriptionAnswer(ErrorCode.THROTTLING_QUOTA_EXCEEDED)
        instance.last_error = ErrorCode.NONE
        return SubscriptionAnswer(
            ErrorCode.NONE,
            instance_id,
            instance.subscription_id,
            list(ACCEPTED_COMPRESSION),
            instance.subscription.interval_ms,
            self.max_bytes(),
            list(instance.subscription.metrics),
        )

    def push(
        self,
        instance_id: uuid.UUID | None,
        subscription_id: int,
        terminating: bool,
        compression: int,
        metrics: bytes,
        client: ClientInfo,
    ) -> int:
        """The error code PushTelemetry answers; the accepted metrics are exported."""
        if instance_id is None or instance_id in _RESERVED:
            log.debug("Invalid request from the client [%s], invalid client instance id", instance_id)
            return ErrorCode.INVALID_REQUEST
        now = self.clock()
        instance = self._instance(instance_id, client, now)
        try:
            error = self._check_push(instance, subscription_id, terminating, compression, metrics, now)
            if error == ErrorCode.NONE and metrics:
                error = self._export(instance_id, client, compression, metrics, now)
            instance.last_error = error
            return error
        finally:
            instance.terminating = terminating  # even when refused, as Kafka's finally does

    def _check_push(
        self,
        instance: ClientInstance,
        subscription_id: int,
        terminating: bool,
        compression: int,
        metrics: bytes,
        now: float,
    ) -> int:
        if instance.terminating:
            log.debug("Client [%s] sent the previous request with state terminating", instance.instance_id)
            return ErrorCode.INVALID_REQUEST
        if not terminating:
            first_since_get = instance.last_get_ms is not None and (
                instance.last_push_ms is None or instance.last_get_ms > instance.last_push_ms
            )
            if (
                not first_since_get
                and self._elapsed(now, instance.last_push_ms) < instance.subscription.interval_ms
            ):
                return ErrorCode.THROTTLING_QUOTA_EXCEEDED
            instance.last_push_ms = now
        if subscription_id != instance.subscription_id:
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        if not 0 <= compression <= ZSTD:
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        if len(metrics) > self.max_bytes():
            return ErrorCode.TELEMETRY_TOO_LARGE
        return ErrorCode.NONE

    def _export(
        self, instance_id: uuid.UUID, client: ClientInfo, compression: int, metrics: bytes, now: float
    ) -> int:
        try:
            payload = decompress(compression, metrics, self.max_bytes())
        except PayloadTooLarge:
            return ErrorCode.TELEMETRY_TOO_LARGE
        except Exception:
            return ErrorCode.INVALID_RECORD
        try:
            points = metric_points(payload)
        except Exception:
            # Kafka hands the bytes to its exporters without reading them: still accepted.
            self.undecodable += 1
            log.warning("client %s pushed metrics that are not OTLP MetricsData", instance_id)
            return ErrorCode.NONE
        push = TelemetryPush(instance_id, client, now, compression, points)
        self.recent.append(push)
        for exporter in self.exporters:
            try:
                exporter(push)
            except Exception:  # an exporter's failure is not the client's
                log.exception("client telemetry exporter failed")
        return ErrorCode.NONE

    # -- the instance cache ---------------------------------------------------------
    def _instance(self, instance_id: uuid.UUID, client: ClientInfo, now: float) -> ClientInstance:
        """The cached instance, else a new one; rebuilt when the subscriptions changed
        since it was built or it expired."""
        instance = self.instances.get(instance_id)
        if (
            instance is None
            or instance.version != self.subscriptions.version
            or now - instance.last_used_ms > instance.expiry_ms
        ):
            subscription = self.subscriptions.for_client(client.attributes(instance_id))
            instance = ClientInstance(
                instance_id,
                self.subscriptions.version,
                subscription,
                subscription.subscription_id(instance_id),
                client.connection_id,
            )
            self.instances[instance_id] = instance
            self._by_connection.setdefault(client.connection_id, set()).add(instance_id)
            while len(self.instances) > CACHE_SIZE:
                self.instances.popitem(last=False)
        self.instances.move_to_end(instance_id)
        instance.last_used_ms = now
        return instance

    def _new_instance_id(self) -> uuid.UUID:
        while True:  # Uuid.randomUuid: never a reserved value, never one in use
            candidate = uuid.uuid4()
            if candidate not in _RESERVED and candidate not in self.instances:
                return candidate

    @staticmethod
    def _elapsed(now: float, *times: float | None) -> float:
        known = [t for t in times if t is not None]
        return now - max(known) if known else float("inf")

    def connection_closed(self, connection_id: int) -> None:
        """Kafka drops a client's instance when its connection closes."""
        for instance_id in self._by_connection.pop(connection_id, ()):
            instance = self.instances.get(instance_id)
            if instance is not None and instance.connection_id == connection_id:
                del self.instances[instance_id]

    def describe(self) -> list[Mapping[str, object]]:
        """The cached instances, for the Python API and the HTTP control plane."""
        return [
            {
                "client_instance_id": str(inst.instance_id),
                "subscription_id": inst.subscription_id,
                "metrics": list(inst.subscription.metrics),
                "push_interval_ms": inst.subscription.interval_ms,
                "last_error": int(inst.last_error),
                "terminating": inst.terminating,
            }
            for inst in self.instances.values()
        ]
