"""Shared fixtures: clusters on free 127.0.0.1 ports that stop with the test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from broker import MockCluster

pytest_plugins = ["pytester"]  # tests/test_pytest_plugin.py runs projects in a subprocess

# No initial rebalance delay: tests form groups in milliseconds, not Kafka's 3 s.
FAST = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture
def sync_cluster() -> Iterator[MockCluster]:
    """A one-broker cluster on its own loop thread, for blocking clients."""
    with MockCluster(brokers=1, config=FAST) as cluster:
        yield cluster


@pytest.fixture
def sync_cluster3() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config=FAST) as cluster:
        yield cluster


@pytest.fixture
async def cluster() -> AsyncIterator[MockCluster]:
    """A one-broker cluster on the test's own event loop, for asyncio clients."""
    async with MockCluster(brokers=1, config=FAST) as running:
        yield running
