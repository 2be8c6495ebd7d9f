"""What a handler sees of one request: the broker it arrived at and the connection."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from messages.registry import response_class

if TYPE_CHECKING:
    from broker.config.broker_config import BrokerConfig
    from broker.connection import Connection
    from broker.server import BrokerServer
    from broker.state.cluster import ClusterState
    from broker.state.groups import GroupCoordinator
    from quotas.manager import ClientQuotaManager, ClientSensors


@dataclass(slots=True)
class RequestContext:
    broker: BrokerServer
    connection: Connection
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
    encoded: tuple[Any, bytes] | None = None  # (response, body) already encoded for its size
    fault_id: int | None = None  # the injected fault that acted on this request
    header: Any = None  # the decoded request header and body, for the recording
    request: Any = None

    @property
    def cluster(self) -> ClusterState:
        return self.broker.cluster

    @property
    def config(self) -> BrokerConfig:
        """The effective config of the broker the request arrived at (dynamic layers included)."""
        return self.broker.config

    @property
    def groups(self) -> GroupCoordinator:
        return self.broker.groups

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
        return response_class(self.api_key)(version=self.api_version, **fields)
