"""The fuzzers' healthy client (broker/harness/fuzzing.py's HealthyClient) is a real check:
a kafka-python consumer that gets nothing fails it, and its report says why (the
consumer's assignment and generation, the broker's view of the group, its committed
offsets and the topic, the group's story from kafka-python's log)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from broker import MockCluster
from broker.harness.fuzzing import HealthyClient, broker_view
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.conftest import FAST


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(config=FAST) as running:
        running.create_topic("healthy")
        yield running


def healthy(cluster: MockCluster) -> HealthyClient:
    return HealthyClient(
        cluster.bootstrap_servers,
        "healthy",
        "healthy-group",
        "healthy-client",
        describe=broker_view(cluster, "healthy-group", "healthy"),
    )


def test_a_served_client_reports_no_problem(cluster: MockCluster) -> None:
    report = healthy(cluster).start().stop(at_least=20)
    assert not report.problems(), report.problems()
    assert report.received == report.acknowledged and len(report.received) >= 20
    assert "Stable" in report.broker_view and "'healthy-0'" in report.consumer_state


def test_a_consumer_that_gets_nothing_fails_and_says_why(cluster: MockCluster) -> None:
    """Every Fetch of the topic fails with NOT_LEADER_OR_FOLLOWER (kafka-python refreshes
    its metadata and retries, for ever): records are acknowledged, none consumed."""
    cluster.faults.add(api_key=ApiKey.FETCH, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, topic="healthy")
    report = healthy(cluster).start().stop(timeout_s=3, at_least=20)
    problems = "\n".join(report.problems())
    assert report.acknowledged and not report.received
    assert f"{len(report.acknowledged)} acknowledged records never consumed" in problems
    # the consumer had the partition, the broker's group was stable with it as member
    assert "consumer at the end: assignment {'healthy-0'" in problems
    assert "'state': 'Stable'" in problems and "healthy-client-" in problems
    assert "(partition, leader, log start, high watermark, end): [(0, 0, 0," in problems
    assert "Successfully joined group healthy-group" in problems
