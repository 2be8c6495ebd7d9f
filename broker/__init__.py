"""The asyncio broker: listeners, connections, the request pipeline, cluster state."""

from broker.mock_cluster import MockCluster

__all__ = ["MockCluster"]
