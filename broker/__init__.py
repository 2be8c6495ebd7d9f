"""The asyncio broker: listeners, connections, the request pipeline, cluster state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker import kafka_warnings
from broker.extras import MissingExtra

if TYPE_CHECKING:
    from broker.mock_cluster import MockCluster

# The one version of the distribution (pyproject.toml reads it from here).
__version__ = "0.1.0"

__all__ = ["MissingExtra", "MockCluster", "__version__"]

# kafka-python's modules load their schemas without DeprecationWarnings, whoever imports them.
kafka_warnings.install()


def __getattr__(name: str) -> Any:
    """`MockCluster` is imported on first use, so that loading the pytest plugin (a
    submodule, imported in every pytest run of a project that installs this package)
    does not pay for the whole broker."""
    if name == "MockCluster":
        from broker.mock_cluster import MockCluster

        return MockCluster
    raise AttributeError(f"module 'broker' has no attribute {name!r}")
