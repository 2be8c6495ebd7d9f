"""Kafka Streams 4.x (org.apache.kafka:kafka-streams, the version tests/java/pom.xml pins)
with processing.guarantee=exactly_once_v2 on a three-broker cluster: a repartition topic, a
windowed and an all-time aggregation in persistent stores with their changelog topics, and
output read with read_committed that is exactly what the test computes from the input, also
when a broker is stopped and started under the application."""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from broker import MockCluster

APP = "streams-totals"
INPUT, WINDOWED, TOTALS = "payments", "window-totals-out", "user-totals-out"
REPARTITION = f"{APP}-by-user-repartition"
WINDOW_CHANGELOG = f"{APP}-window-totals-changelog"
TOTALS_CHANGELOG = f"{APP}-user-totals-changelog"
USERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace"]
WINDOW_MS = 10_000
GRACE_MS = 600_000
# Waits are for progress, never a bound on speed: generous, only to fail rather than hang.
PATIENCE_S = 240


Payment = tuple[str, int, int]  # user, amount, event time (ms)


def payments(count: int, seed: int, start: int) -> list[Payment]:
    """`count` payments with event times shuffled over a minute after `start` (all within the
    grace period of any window of that minute), and every 17th one an hour before `start`:
    later than its window's grace period by any stream time the application has seen, as
    each user's first payment comes first."""
    rng = random.Random(seed)
    made: list[Payment] = [(user, rng.randint(1, 99), start + rng.randrange(60_000)) for user in USERS]
    for i in range(len(made), count):
        late = i % 17 == 0
        moment = start - 3_600_000 + rng.randrange(60_000) if late else start + rng.randrange(60_000)
        made.append((rng.choice(USERS), rng.randint(1, 99), moment))
    return made


def expected(sent: list[Payment], start: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Every update of each aggregate, in order: each on-time payment updates its user's
    window, late ones (before `start`) none; each payment updates its user's total."""
    windows: dict[str, list[str]] = defaultdict(list)
    totals: dict[str, list[str]] = defaultdict(list)
    for user, amount, moment in sent:
        if moment >= start:
            key = f"{user}@{moment - moment % WINDOW_MS}"
            windows[key].append(_add(windows[key][-1] if windows[key] else "0:0", amount))
        totals[user].append(_add(totals[user][-1] if totals[user] else "0:0", amount))
    return dict(windows), dict(totals)


def _add(aggregate: str, amount: int) -> str:
    count, total = aggregate.split(":")
    return f"{int(count) + 1}:{int(total) + amount}"


def produce(cluster: MockCluster, sent: list[Payment], first: int) -> None:
    """Each payment keyed by its transaction id, on the partition of its user (one partition
    per user keeps each user's payments in order, so the updates are deterministic)."""
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=10)
    try:
        for i, (user, amount, moment) in enumerate(sent):
            producer.send(
                INPUT,
                key=f"txn-{first + i}".encode(),
                value=f"{user}:{amount}".encode(),
                partition=USERS.index(user) % 3,
                timestamp_ms=moment,
            )
        producer.flush()
    finally:
        producer.close()


class StreamsProcess:
    """The Java application (mockbroker.StreamsApp) in a process of its own."""

    def __init__(self, classpath: str, cluster: MockCluster, tmp_path: Path) -> None:
        self.out = tmp_path / "streams.out"
        self.err = tmp_path / "streams.err"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(
                [
                    "java",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
                    "-cp",
                    classpath,
                    "mockbroker.StreamsApp",
                    "run",
                    cluster.bootstrap_servers,
                    APP,
                    INPUT,
                    WINDOWED,
                    TOTALS,
                    str(tmp_path / "state"),
                ],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                text=True,
            )

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"the Streams application exited: {self.err.read_text()[-4000:]}", pytrace=False)

    def close(self) -> dict[str, Any]:
        """Closes standard input: the application closes Streams and prints its result."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)
        assert self.process.returncode == 0, self.err.read_text()[-4000:]
        result: dict[str, Any] = json.loads(self.out.read_text().strip().splitlines()[-1])
        return result

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic(INPUT, partitions=3, replication_factor=3)
        cluster.create_topic(WINDOWED, partitions=3, replication_factor=3)
        cluster.create_topic(TOTALS, partitions=3, replication_factor=3)
        yield cluster


class OutputReader:
    """A read_committed consumer of both output topics, from their beginning."""

    def __init__(self, cluster: MockCluster) -> None:
        self.consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        self.consumer.assign([TopicPartition(topic, p) for topic in (WINDOWED, TOTALS) for p in range(3)])
        self.windows: dict[str, list[str]] = defaultdict(list)
        self.totals: dict[str, list[str]] = defaultdict(list)

    def read_until(self, count: int, streams: StreamsProcess) -> None:
        """Reads until `count` updates have been read in all."""
        deadline = time.monotonic() + PATIENCE_S
        while self.read() < count:
            streams.check_alive()
            assert time.monotonic() < deadline, f"read {self.read()} of {count} updates"
            for records in self.consumer.poll(timeout_ms=500).values():
                for record in records:
                    into = self.windows if record.topic == WINDOWED else self.totals
                    into[record.key.decode()].append(record.value.decode())

    def read(self) -> int:
        return sum(map(len, self.windows.values())) + sum(map(len, self.totals.values()))

    def close(self) -> None:
        self.consumer.close()


def count_updates(windows: dict[str, list[str]], totals: dict[str, list[str]]) -> int:
    return sum(map(len, windows.values())) + sum(map(len, totals.values()))


def check_internal_topics(cluster: MockCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        topics = set(admin.list_topics())
        assert {REPARTITION, WINDOW_CHANGELOG, TOTALS_CHANGELOG} <= topics
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name) for name in (TOTALS_CHANGELOG, WINDOW_CHANGELOG)]
        )
        configs = {
            name: {key: c["value"] for key, c in cs.items()} for name, cs in described["topic"].items()
        }
    finally:
        admin.close()
    # A key-value store's changelog is compacted; a window store's also deletes old windows.
    assert configs[TOTALS_CHANGELOG]["cleanup.policy"] == "compact"
    assert configs[WINDOW_CHANGELOG]["cleanup.policy"] == "compact,delete"


def repartition_purged(cluster: MockCluster, reader: OutputReader, streams: StreamsProcess) -> None:
    """Waits until Streams has deleted (DeleteRecords) the records it consumed and committed
    from each partition of the repartition topic that has any."""
    partitions = [TopicPartition(REPARTITION, p) for p in range(3)]
    deadline = time.monotonic() + PATIENCE_S
    while True:
        ends = reader.consumer.end_offsets(partitions)
        starts = reader.consumer.beginning_offsets(partitions)
        if all(starts[tp] > 0 for tp in partitions if ends[tp] > 0):
            break
        streams.check_alive()
        assert time.monotonic() < deadline, f"repartition records not purged: {starts} of {ends}"
        time.sleep(0.2)
    assert cluster.requests.list(api_key=21)  # DeleteRecords


def run_application(
    classpath: str, cluster: MockCluster, tmp_path: Path, batches: int, between: Callable[[int], None]
) -> None:
    """Produces `batches` batches of 100 payments, each after the application has processed
    the one before (`between(n)` is called before batch n > 0), then checks every update of
    the output and the internal topics."""
    start = (int(time.time() * 1000) // WINDOW_MS - 6) * WINDOW_MS
    sent = payments(100 * batches, seed=batches, start=start)
    streams = StreamsProcess(classpath, cluster, tmp_path)
    reader = OutputReader(cluster)
    try:
        for n in range(batches):
            if n > 0:
                between(n)
            produce(cluster, sent[100 * n : 100 * (n + 1)], 100 * n)
            windows, totals = expected(sent[: 100 * (n + 1)], start)
            reader.read_until(count_updates(windows, totals), streams)
        repartition_purged(cluster, reader, streams)
        result = streams.close()
        check_internal_topics(cluster)
    finally:
        streams.kill()
        reader.close()
    assert result["uncaught"] == []
    assert result["closed"]
    assert "ERROR" not in result["states"]
    # Exactly once: every update once, in order, none missing, none twice.
    assert dict(reader.windows) == windows
    assert dict(reader.totals) == totals


def test_exactly_once_windowed_aggregation(java_classpath: str, cluster: MockCluster, tmp_path: Path) -> None:
    run_application(java_classpath, cluster, tmp_path, 3, lambda n: None)


def test_exactly_once_while_a_broker_stops_and_starts(
    java_classpath: str, cluster: MockCluster, tmp_path: Path
) -> None:
    """The broker that coordinates the application's group (and leads a third of the
    partitions) stops after the first batch and starts again after the second."""
    coordinator = cluster.on_loop(lambda: cluster.groups.coordinator_for(APP))

    def between(n: int) -> None:
        if n == 1:
            cluster.stop_broker(coordinator)
        else:
            cluster.start_broker(coordinator)

    run_application(java_classpath, cluster, tmp_path, 3, between)
