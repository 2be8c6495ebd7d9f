"""The fuzzers' healthy client (tests/support/fuzzing.py's HealthyClient) is a real check:
a kafka-python consumer that gets nothing fails it, and its report says why (the
consumer's assignment and generation, the broker's view of the group, its committed
offsets and the topic, the group's story from kafka-python's log)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest

from broker import MockCluster
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.conftest import FAST
from tests.support.fuzzing import HealthyClient, Numbers, broker_view


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
    assert not report.problems(), "\n".join(report.problems())
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


# -- kafka-python 3.0.12 abandons a join in flight -------------------------------------------
# The consumer's first generation is assigned before its metadata names the topic (an empty
# assignment, "No partition metadata"): kafka-python rejoins once the metadata arrives, and
# that rejoin's leader assignment refreshes the snapshot that asked for it. A SyncGroup
# answered after poll()'s timeout (here 600 ms late, against polls of 100-200 ms; under CPU
# load it was the scheduler) then leaves the join to nobody. Metadata 500 ms late makes the
# first assignment empty every time.
LATE = ({"api_key": ApiKey.METADATA, "latency_ms": 500}, {"api_key": ApiKey.SYNC_GROUP, "latency_ms": 600})


def test_kafka_pythons_consumer_abandons_a_join_whose_sync_group_is_late(cluster: MockCluster) -> None:
    """The bug the healthy client works around (await_pending_joins): should this fail,
    kafka-python no longer has it and the workaround can go."""
    from kafka import KafkaConsumer, KafkaProducer

    for fault in LATE:
        cluster.faults.add(**fault)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    producer.send("healthy", b"0").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(
        "healthy", bootstrap_servers=cluster.bootstrap_servers, group_id="g", auto_offset_reset="earliest"
    )
    try:
        got = []
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and not got:
            got += [r for records in consumer.poll(timeout_ms=100).values() for r in records]
        coordinator = consumer._coordinator
        assert not got and not consumer.assignment()
        assert coordinator._join_task is not None and not coordinator.need_rejoin()
    finally:
        consumer.close()


def test_the_healthy_client_completes_a_join_whose_sync_group_is_late(cluster: MockCluster) -> None:
    for fault in LATE:
        cluster.faults.add(**fault)
    report = healthy(cluster).start().stop(timeout_s=30, at_least=20)
    assert not report.problems(), "\n".join(report.problems())
    assert "No partition metadata for topic healthy" in "\n".join(report.events)


def test_numbers_are_a_set_of_runs() -> None:
    """The healthy client's record numbers (Numbers): a set, whatever the order, in a
    few runs when nearly in order."""
    rng = random.Random(22)
    for _ in range(200):
        values = [rng.randrange(60) for _ in range(rng.randrange(80))]
        other = [rng.randrange(60) for _ in range(rng.randrange(80))]
        numbers, theirs = Numbers(), Numbers(other)
        assert [numbers.add(v) for v in values] == [v not in values[:i] for i, v in enumerate(values)]
        assert list(numbers) == sorted(set(values)) and len(numbers) == len(set(values))
        lacking = sorted(set(values) - set(other))
        assert numbers.missing_from(theirs, show=5) == (len(lacking), lacking[:5])
    swapped_pairs = Numbers(i + 1 if i % 2 else i - 1 for i in range(1, 100_001))  # 2, 1, 4, 3, ...
    assert len(swapped_pairs) == 100_000 and swapped_pairs.runs() == [(1, 100_001)]
