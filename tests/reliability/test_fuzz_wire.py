"""Fuzzing every API key and version the broker advertises, over TCP (issue 22).

The (API key, version) pairs come from the broker itself (`broker.handlers.HANDLERS`,
checked against what the running broker's pipeline advertises), so a new API or version
is fuzzed without touching this file. Requests are generated from the message schemas
by tests/support/fuzzing.py, driven by hypothesis (derandomized: CI runs the same
inputs every time; FUZZ_SEED=random explores), and pipelined on three connections:

- valid-but-odd requests: `EXAMPLES` x `PER_EXAMPLE` requests per pair (20,720 in all),
  each answered with a well-formed response carrying its correlation id (or, where
  Kafka closes the connection, e.g. an acks=0 produce that fails or an ACL filter with
  UNKNOWN elements, closed);
- mutated frames (truncated, flipped, bogus lengths, wrong API keys and versions, bad
  size prefixes): `MUTATION_EXAMPLES` per API, each version mutated once per example
  and followed by a valid request; answered well-formed or closed, never a stall;
- throughout, a kafka-python producer (acks=all) and consumer group on their own topic
  (`HealthyClient`): every acknowledged record is consumed, in order; afterwards the
  broker's state that the fuzzer may not touch is as it was.

Any ERROR record the broker logs is a finding (a handler that raised included: its
UNKNOWN_SERVER_ERROR answer is a bug, not a pass). The fuzzer leaves alone what the
healthy client uses (`PROTECTED`, and quotas at the top of the precedence for the
ANONYMOUS user and 127.0.0.1, which the fuzzer's entity names cannot reach); the long
run is scripts/fuzz.py.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker import MockCluster
from broker.handlers import HANDLERS
from messages.registry import api_name
from tests.conftest import FAST
from tests.support.fuzzing import (
    MUTATIONS,
    ErrorLog,
    Frame,
    HealthyClient,
    Pools,
    RequestGenerator,
    Source,
    WireDriver,
    batches_of,
    broker_view,
    mutate,
)

# The healthy client's threads use the random module while hypothesis draws.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the .random. module inside strategies")

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10"))  # per (API key, version)
PER_EXAMPLE = 8  # requests per example, pipelined over CONNECTIONS
MUTATION_EXAMPLES = int(os.environ.get("FUZZ_MUTATION_EXAMPLES", "8"))  # per API key
CONNECTIONS = 3
PROTECTED = frozenset({"healthy", "healthy-group", "healthy-client", "ANONYMOUS", "alice"})
HIGH_QUOTAS = {
    "producer_byte_rate": 1e15,
    "consumer_byte_rate": 1e15,
    "request_percentage": 1e9,
    "controller_mutation_rate": 1e15,
}
CONFIG = {
    **FAST,
    # every API the broker has is advertised (the KIP-848 and KIP-714 ones are opt-in)
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "telemetry.enabled": "true",
    # the ACL APIs really change ACLs; the fuzzer's principals are super users, so no
    # ACL it creates can refuse anyone
    "authorizer.enabled": "true",
    "super.users": "User:ANONYMOUS",
    "delegation.token.secret.key": "fuzz-secret",
    "group.min.session.timeout.ms": "10",
}
# Every advertised pair, from the broker's own table.
PAIRS = [
    (k, v) for k, spec in sorted(HANDLERS.items()) for v in range(spec.min_version, spec.max_version + 1)
]
KEYS = sorted(HANDLERS)


def fuzz_settings(max_examples: int) -> settings:
    return settings(SETTINGS, max_examples=max_examples)


SETTINGS = settings(
    deadline=None,
    database=None,
    derandomize=os.environ.get("FUZZ_SEED") != "random",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)


class DataSource(Source):
    """The generator's decisions drawn by hypothesis (which shrinks them)."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def integer(self, low: int, high: int) -> int:
        return int(self.data.draw(st.integers(low, high)))

    def binary(self, max_size: int) -> bytes:
        return bytes(self.data.draw(st.binary(max_size=max_size)))


@dataclass
class Fuzzed:
    cluster: MockCluster
    generator: RequestGenerator
    driver: WireDriver
    errors: ErrorLog
    healthy: HealthyClient
    healthy_topic_id: Any
    counts: Counter[tuple[int, int]] = field(default_factory=Counter)
    mutated: Counter[str] = field(default_factory=Counter)
    correlation: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def run(self, frames: list[Frame]) -> None:
        """Sends `frames` and fails with every finding and broker ERROR log."""
        findings = self.driver.run(batches_of(frames, CONNECTIONS))
        logged = self.errors.take()
        problems = [str(f) for f in findings] + logged
        assert not problems, "\n".join(problems[:10])


def protect(cluster: MockCluster, users: tuple[str, ...] = ("ANONYMOUS",)) -> None:
    """Quotas the fuzzer cannot override or reach: <user, default client-id> and <user>
    (an empty client id's limit is the user's, as in Kafka's DefaultQuotaCallback) for
    the users the fuzzer and the healthy client connect as, and 127.0.0.1's connection
    rate. The fuzzer's user and ip names never name these."""
    for user in users:
        cluster.quotas.alter({"user": user, "client-id": None}, set=HIGH_QUOTAS)
        cluster.quotas.alter({"user": user}, set=HIGH_QUOTAS)
    cluster.quotas.alter({"ip": "127.0.0.1"}, set={"connection_creation_rate": 1e9})


def prepare_pools(cluster: MockCluster, pools: Pools) -> None:
    """The fuzzer's own topics (two plain, one compacted); their ids join the pools."""
    for name, config in (("fz-a", {}), ("fz-b", {}), ("fz-compact", {"cleanup.policy": "compact"})):
        pools.topic_ids.append(cluster.create_topic(name, partitions=2, config=config).topic_id)


def address(cluster: MockCluster, listener: str = "PLAINTEXT") -> tuple[str, int]:
    host, port = cluster.bootstrap_for(listener).split(",")[0].rsplit(":", 1)
    return host, int(port)


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[Fuzzed]:
    with ErrorLog() as errors, MockCluster(config=CONFIG) as cluster:
        protect(cluster)
        healthy_topic = cluster.create_topic("healthy")
        pools = Pools(protected=PROTECTED, cluster_id=cluster.config.get_str("cluster.id"))
        prepare_pools(cluster, pools)
        served = cluster.brokers[0].pipeline.served_apis  # Produce v0-2 advertised, not served
        generator = RequestGenerator(served, pools)
        driver = WireDriver(address(cluster), served, connections=CONNECTIONS, timeout=30)
        healthy = HealthyClient(
            cluster.bootstrap_servers,
            "healthy",
            "healthy-group",
            "healthy-client",
            describe=broker_view(cluster, "healthy-group", "healthy"),
        ).start()
        try:
            yield Fuzzed(cluster, generator, driver, errors, healthy, healthy_topic.topic_id)
        finally:
            driver.close()


def test_the_fuzzer_covers_what_the_broker_serves(fuzzed: Fuzzed) -> None:
    """Nothing the broker serves escapes the fuzzer: its table is the broker's (versions
    advertised but not served, Produce v0-2, are fuzzed as unsupported ones: closed)."""
    pipeline = fuzzed.cluster.brokers[0].pipeline
    assert pipeline.served_apis == {k: (s.min_version, s.max_version) for k, s in HANDLERS.items()}
    assert pipeline.advertised_apis == {k: s.advertised for k, s in HANDLERS.items()}
    assert fuzzed.generator.pairs() == PAIRS
    assert len(PAIRS) * EXAMPLES * PER_EXAMPLE >= 20_000 or EXAMPLES < 10


@pytest.mark.parametrize(("api_key", "version"), PAIRS, ids=[f"{api_name(k)}-v{v}" for k, v in PAIRS])
@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_valid_but_odd_requests_are_answered(fuzzed: Fuzzed, api_key: int, version: int, data: Any) -> None:
    src = DataSource(data)
    frames = [
        fuzzed.generator.request(src, api_key, version, next(fuzzed.correlation)) for _ in range(PER_EXAMPLE)
    ]
    fuzzed.run(frames)
    fuzzed.counts[(api_key, version)] += len(frames)


@pytest.mark.parametrize("api_key", KEYS, ids=[api_name(k) for k in KEYS])
@fuzz_settings(MUTATION_EXAMPLES)
@given(data=st.data())
def test_mutated_frames_are_answered_or_closed(fuzzed: Fuzzed, api_key: int, data: Any) -> None:
    """Each version once per example, mutated one way, then a valid request on the same
    connection (answered, unless the mutated frame closed the connection)."""
    src = DataSource(data)
    spec = HANDLERS[api_key]
    frames = []
    for version in range(spec.min_version, spec.max_version + 1):
        valid = fuzzed.generator.request(src, api_key, version, next(fuzzed.correlation))
        how = src.choice(MUTATIONS)
        frames.append(mutate(src, valid, fuzzed.generator.advertised, how))
        frames.append(fuzzed.generator.request(src, api_key, version, next(fuzzed.correlation)))
        fuzzed.mutated[how] += 1
    # each (mutated, valid) pair on a connection of its own: a close takes only that pair
    findings = []
    for start in range(0, len(frames), 2 * CONNECTIONS):
        chunk = frames[start : start + 2 * CONNECTIONS]
        round_ = [chunk[i : i + 2] for i in range(0, len(chunk), 2)]
        findings += fuzzed.driver.run(round_)
    logged = fuzzed.errors.take()
    problems = [str(f) for f in findings] + logged
    assert not problems, "\n".join(problems[:10])


def test_the_broker_is_intact_after_fuzzing(fuzzed: Fuzzed) -> None:
    """The healthy client was served throughout, the state the fuzzer may not touch is
    as it was, and (when every pair was fuzzed) at least 20,000 requests went out."""
    report = fuzzed.healthy.stop()
    assert not report.problems(), "\n".join(report.problems())
    cluster = fuzzed.cluster
    topic = cluster.on_loop(lambda: cluster.state.topics.get("healthy"))
    assert topic is not None and topic.topic_id == fuzzed.healthy_topic_id and len(topic.partitions) == 1
    group = cluster.describe_group("healthy-group")
    assert group is not None
    quotas = cluster.quotas.describe(user="ANONYMOUS", client_id=None)
    assert list(quotas.values()) == [HIGH_QUOTAS]
    assert not fuzzed.errors.take()
    if set(fuzzed.counts) == set(PAIRS):
        total = sum(fuzzed.counts.values())
        print(f"fuzzed {total} valid-but-odd requests, {sum(fuzzed.mutated.values())} mutated frames")
        assert total >= 20_000 or EXAMPLES < 10
