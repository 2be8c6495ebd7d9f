"""What a handler sees of one request: the request's own facts, and the broker and the
connection it arrived on, typed as the small protocols below rather than as
`BrokerServer` and `Connection`, so that handlers, quota steps and harness observers
depend on what they use and this module imports nothing that imports it back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from broker.config.broker_config import BrokerConfigView
from broker.config.dynamic import DynamicConfigStore
from broker.quota_admin import QuotaAdmin
from broker.security.authorizer import Authorizer
from broker.security.credentials import CredentialStore
from broker.security.sasl import SaslSession
from broker.state.cluster import ClusterState
from broker.state.groups import GroupCoordinator
from broker.state.replica_selector import ReplicaSelector
from broker.state.transactions import TransactionCoordinator
from broker.telemetry.manager import ClientMetricsManager
from messages.registry import response_class
from protocol.structs import new
from quotas.callback import KafkaPrincipal
from quotas.manager import ClientQuotaManager, ClientSensors, QuotaManagers


class CloseConnection(Exception):
    """Raised by a gate, interceptor or handler: close the connection, unanswered."""


class BrokerView(Protocol):
    """What handlers use of the broker a request arrived at."""

    @property
    def node_id(self) -> int: ...
    @property
    def running(self) -> bool: ...
    @property
    def cluster(self) -> ClusterState: ...
    @property
    def groups(self) -> GroupCoordinator: ...
    @property
    def transactions(self) -> TransactionCoordinator: ...
    @property
    def config(self) -> BrokerConfigView:
        """The broker's effective config (dynamic layers included)."""

    @property
    def configs(self) -> DynamicConfigStore: ...
    @property
    def quotas(self) -> QuotaAdmin: ...
    @property
    def quota_managers(self) -> QuotaManagers: ...
    @property
    def credentials(self) -> CredentialStore: ...
    @property
    def authorizer(self) -> Authorizer: ...
    @property
    def replica_selector(self) -> ReplicaSelector | None:
        """replica.selector.class (KIP-392): who picks consumers' preferred read replica;
        None: the leader serves them."""

    @property
    def telemetry(self) -> ClientMetricsManager | None:
        """KIP-714's client instances; None unless telemetry.enabled."""

    @property
    def advertised_apis(self) -> Mapping[int, tuple[int, int]]:
        """API key -> (min, max) version this broker serves: what ApiVersions answers."""

    @property
    def stop_listeners(self) -> set[Callable[[], None]]:
        """Callbacks that end waits early (long-poll fetch, injected latency) when the broker stops."""


class ConnectionView(Protocol):
    """What handlers and observers use of the connection a request arrived on."""

    @property
    def connection_id(self) -> int: ...
    @property
    def listener(self) -> str: ...
    @property
    def peer(self) -> tuple[str, int]: ...
    @property
    def principal(self) -> KafkaPrincipal: ...
    @property
    def client_id(self) -> str | None: ...
    @property
    def transport(self) -> asyncio.Transport | None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def mute_deadline(self) -> float | None:
        """Loop time at which the current mute ends; None while not muted."""

    @property
    def sasl(self) -> SaslSession | None:
        """The authentication in progress on a SASL listener; None once done, and elsewhere."""

    client_software_name: str
    client_software_version: str

    session_lifetime_ms: int
    # What stages and observers remember per connection, keyed by who remembers it (a
    # quota manager: the sensors this connection's requests are measured on; the
    # conformance tracker: its client). Each checks that what it kept still holds.
    memo: dict[Any, Any]

    def authenticated(self, sasl: SaslSession) -> None: ...
    def start_reauthentication(self) -> SaslSession | None: ...
    def fail_authentication(self, response: Any) -> Coroutine[Any, Any, Any]: ...
    def close(self) -> None: ...


@dataclass(slots=True)
class RequestContext:
    broker: BrokerView
    connection: ConnectionView
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request_bytes: int
    received_ns: int
    # Thread time for the request quota: `handler_ns` done, plus the time since
    # `resumed_ns` while the handler runs (None while it waits, e.g. a long poll).
    resumed_ns: int | None = None
    handler_ns: int = 0
    # Set by broker/throttling.py: the throttle time the response carries, and the
    # manager and sensors that mute the connection for it.
    throttle_ms: int = 0
    throttled_by: tuple[ClientQuotaManager, ClientSensors] | None = None
    quota_recorded: bool = False
    request_sensors: ClientSensors | None = None
    quota_sensors: ClientSensors | None = None  # the byte-rate or mutation quota this request met
    # For the metrics row, set by the produce and fetch handlers.
    record_count: int | None = None
    partition_count: int | None = None
    acks: int | None = None
    # Set by handlers that count their errors as they go (else the row walks the response).
    error_code: int | None = None
    error_count: int = 0
    encoded: tuple[Any, list[Any]] | None = None  # (response, body chunks) encoded for its size
    # Set by interceptors: the fault that acted on this request, a throttle it forces
    # on the response (the larger of it and the quota's is sent), and a close without answer.
    fault_id: int | None = None
    forced_throttle_ms: int = 0
    disconnected: bool = False
    header: Any = None  # the decoded request header and body (None: answered before decoding)
    request: Any = None
    # Set when the response is out, for observers: its size without the size prefix,
    # handler plus encoding time, and when it was written.
    response_bytes: int = 0
    busy_ns: int = 0
    done_ns: int = 0

    @property
    def cluster(self) -> ClusterState:
        return self.broker.cluster

    @property
    def config(self) -> BrokerConfigView:
        """The effective config of the broker the request arrived at (dynamic layers included)."""
        return self.broker.config

    @property
    def groups(self) -> GroupCoordinator:
        return self.broker.groups

    @property
    def transactions(self) -> TransactionCoordinator:
        return self.broker.transactions

    @property
    def node_id(self) -> int:
        return self.broker.node_id

    def thread_ns(self) -> int:
        if self.resumed_ns is None:
            return self.handler_ns
        return self.handler_ns + time.monotonic_ns() - self.resumed_ns

    def count_error(self, code: int) -> None:
        self.error_count += 1
        if not self.error_code:
            self.error_code = code

    def response(self, **fields: Any) -> Any:
        """A response of this request's API and version; unset fields take schema defaults."""
        return new(response_class(self.api_key), self.api_version, **fields)
