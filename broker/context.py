"""What a handler sees of one request: the broker it arrived at and the connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from messages.registry import response_class

if TYPE_CHECKING:
    from broker.cluster import ClusterState
    from broker.config import BrokerConfig
    from broker.connection import Connection
    from broker.groups import GroupCoordinator
    from broker.server import BrokerServer


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

    @property
    def cluster(self) -> ClusterState:
        return self.broker.cluster

    @property
    def config(self) -> BrokerConfig:
        return self.broker.cluster.config

    @property
    def groups(self) -> GroupCoordinator:
        return self.broker.groups

    @property
    def node_id(self) -> int:
        return self.broker.node_id

    def response(self, **fields: Any) -> Any:
        """A response of this request's API and version; unset fields take schema defaults."""
        return response_class(self.api_key)(version=self.api_version, **fields)
