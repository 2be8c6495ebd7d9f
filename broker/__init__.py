"""The asyncio broker: listeners, connections, the request pipeline, cluster state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.mock_cluster import MockCluster

__all__ = ["MockCluster"]


def __getattr__(name: str) -> Any:
    """`MockCluster` is imported on first use, so that loading the pytest plugin (a
    submodule, imported in every pytest run of a project that installs this package)
    does not pay for the whole broker and aiohttp."""
    if name == "MockCluster":
        from broker.mock_cluster import MockCluster

        return MockCluster
    raise AttributeError(f"module 'broker' has no attribute {name!r}")
