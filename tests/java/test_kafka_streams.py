"""Kafka Streams 4.x (org.apache.kafka:kafka-streams, the version tests/java/pom.xml pins)
with processing.guarantee=exactly_once_v2 on a three-broker cluster: a repartition topic, a
windowed and an all-time aggregation in persistent stores with their changelog topics, and
every update of the output, read with read_committed, exactly what the test computes from
the input (none missing, none twice), also when the application is killed in the middle of
its transactions, restores its stores from their compacted changelogs, or has a broker
stopped and started under it (transaction.version 1 and 2)."""

from __future__ import annotations

import json
import os
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
from tests.java.runner import assert_java_sent, run_java

APP = "streams-totals"
ADMIN = "mockbroker.StreamsGroupAdmin"
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
    """`count` payments with event times shuffled over a minute after `start`: out of order
    by up to a minute, and so within the grace period of every window.

    No payment is later than that: whether Streams drops one depends on the stream time its
    window processor has seen, which is in memory only and starts again whenever a task is
    created (a restart, a rebalance, a task Streams reopens after an error), so which ones
    would be dropped is not determined by the input."""
    rng = random.Random(seed)
    return [(rng.choice(USERS), rng.randint(1, 99), start + rng.randrange(60_000)) for _ in range(count)]


def expected(sent: list[Payment]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Every update of each aggregate, in order: each payment updates its user's window and
    its user's total."""
    windows: dict[str, list[str]] = defaultdict(list)
    totals: dict[str, list[str]] = defaultdict(list)
    for user, amount, moment in sent:
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

    def __init__(
        self,
        classpath: str,
        cluster: MockCluster,
        state_dir: Path,
        logs: Path,
        pace_ms: int,
        group_protocol: str = "classic",
    ) -> None:
        """Its standard output and error go to `logs`.out and `logs`.err; each input record
        takes `pace_ms` more to process; `group_protocol` is Streams' group.protocol."""
        self.out = logs.with_suffix(".out")
        self.err = logs.with_suffix(".err")
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(
                [
                    "java",
                    # STREAMS_LOG_LEVEL=warn (or info) shows what Streams did, in streams.err
                    f"-Dorg.slf4j.simpleLogger.defaultLogLevel={os.environ.get('STREAMS_LOG_LEVEL', 'error')}",
                    "-cp",
                    classpath,
                    "mockbroker.StreamsApp",
                    "run",
                    cluster.bootstrap_servers,
                    APP,
                    INPUT,
                    WINDOWED,
                    TOTALS,
                    str(state_dir),
                    str(pace_ms),
                    group_protocol,
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
    # The log cleaner looks often: the application's changelogs (rolled every 100 ms of
    # record time, topic.segment.ms) are compacted while it runs.
    # No wait for more members before a group's first rebalance, as in Kafka's own tests.
    config = {
        "log.cleaner.backoff.ms": 100,
        "group.initial.rebalance.delay.ms": 0,
        "record.requests.max": 100_000,
        # the same for streams groups (KIP-1071), whose members heartbeat every second
        "group.streams.initial.rebalance.delay.ms": 0,
        "group.streams.heartbeat.interval.ms": 1000,
    }
    with MockCluster(brokers=3, config=config) as cluster:
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
        internal = (REPARTITION, WINDOW_CHANGELOG, TOTALS_CHANGELOG)
        # Created by Streams (CreateTopics) as it asked: three partitions, three replicas.
        replicas = {
            t["name"]: sorted(len(p["replica_nodes"]) for p in t["partitions"])
            for t in admin.describe_topics()
        }
        assert {name: replicas.get(name) for name in internal} == {name: [3, 3, 3] for name in internal}
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


class Run:
    """The application and a reader of its output."""

    def __init__(
        self, classpath: str, cluster: MockCluster, tmp_path: Path, pace_ms: int, group_protocol: str
    ) -> None:
        self.classpath, self.cluster, self.tmp_path, self.pace_ms = classpath, cluster, tmp_path, pace_ms
        self.group_protocol = group_protocol
        self.launches = 0
        self.state_dir = tmp_path / "state-1"
        self.streams = self.launch()
        self.reader = OutputReader(cluster)

    def launch(self) -> StreamsProcess:
        self.launches += 1
        logs = self.tmp_path / f"streams-{self.launches}"
        return StreamsProcess(
            self.classpath, self.cluster, self.state_dir, logs, self.pace_ms, self.group_protocol
        )

    def stop(self) -> None:
        result = self.streams.close()
        assert result["uncaught"] == []
        assert result["closed"]
        assert "ERROR" not in result["states"]

    def restart(self) -> None:
        """A new instance with an empty state directory replaces this one: it restores its
        stores from their changelogs."""
        self.stop()
        self.state_dir = self.tmp_path / f"state-{self.launches + 1}"
        self.streams = self.launch()

    def crash(self, fresh_state: bool = False) -> None:
        """The process is killed (its open transactions stay open) and started again. On
        its state directory it has the same process id, so the same transactional ids,
        whose InitProducerId fences the old producers and aborts their transactions; on an
        empty one (`fresh_state`) the old transactions stay open until the coordinator
        aborts them after transaction.timeout.ms, holding back the read_committed
        restoration of the changelogs until then."""
        self.streams.kill()
        if fresh_state:
            self.state_dir = self.tmp_path / f"state-{self.launches + 1}"
        self.streams = self.launch()


Hook = Callable[[int, Run], None]


def nothing(n: int, run: Run) -> None:
    pass


def run_application(
    classpath: str,
    cluster: MockCluster,
    tmp_path: Path,
    *,
    before: Hook = nothing,
    after_producing: Hook = nothing,
    batches: int = 3,
    pace_ms: int = 0,
    group_protocol: str = "classic",
) -> None:
    """Produces `batches` batches of 100 payments, each after the application has processed
    the one before (`before(n)` runs before batch n, `after_producing(n)` after it is
    produced), then checks every update of the output and the internal topics."""
    start = (int(time.time() * 1000) // WINDOW_MS - 6) * WINDOW_MS
    sent = payments(100 * batches, seed=batches, start=start)
    run = Run(classpath, cluster, tmp_path, pace_ms, group_protocol)
    try:
        for n in range(batches):
            before(n, run)
            produce(cluster, sent[100 * n : 100 * (n + 1)], 100 * n)
            after_producing(n, run)
            windows, totals = expected(sent[: 100 * (n + 1)])
            run.reader.read_until(count_updates(windows, totals), run.streams)
        repartition_purged(cluster, run.reader, run.streams)
        run.stop()
        check_internal_topics(cluster)
    finally:
        run.streams.kill()
        run.reader.close()
    # Exactly once: every update once, in order, none missing, none twice.
    assert dict(run.reader.windows) == windows
    assert dict(run.reader.totals) == totals


def test_exactly_once_through_crashes_and_a_restart(
    java_classpath: str, cluster: MockCluster, tmp_path: Path
) -> None:
    """The application is killed while it processes the second batch and started again on
    its state directory; a new instance with an empty state directory replaces it before
    the third batch (it restores both stores from their compacted changelogs), and is
    killed while it processes that batch and replaced by one with an empty state
    directory again."""

    def after_producing(n: int, run: Run) -> None:
        if n > 0:
            run.reader.read_until(run.reader.read() + 1, run.streams)  # it is processing the batch
            run.crash(fresh_state=n == 2)

    def before(n: int, run: Run) -> None:
        if n == 2:
            run.restart()

    # 10 ms a payment: a batch takes a second, the transactions are open most of the time.
    run_application(
        java_classpath, cluster, tmp_path, before=before, after_producing=after_producing, pace_ms=10
    )


@pytest.mark.parametrize("transaction_version", [1, 2])
def test_exactly_once_while_a_broker_stops_and_starts(
    java_classpath: str, cluster: MockCluster, tmp_path: Path, transaction_version: int
) -> None:
    """The broker that coordinates the transactions of one of the application's producers
    (and leads a third of the partitions) stops while the second batch is processed (in
    open transactions: 10 ms a payment) and starts again before the third. transaction.version 2 (KIP-890, a new 4.x cluster) adds
    partitions and offsets to a transaction implicitly; 1 (a cluster upgraded from 3.x)
    has the producer send AddPartitionsToTxn and AddOffsetsToTxn."""
    if transaction_version != 2:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", transaction_version)})
        finally:
            admin.close()
    stopped: list[int] = []

    def after_producing(n: int, run: Run) -> None:
        if n == 1:
            run.reader.read_until(run.reader.read() + 1, run.streams)  # it is processing the batch
            transactional_ids = sorted(t["transactional_id"] for t in cluster.list_transactions())
            stopped.append(
                cluster.on_loop(lambda: cluster.transactions.coordinator_for(transactional_ids[0]))
            )
            cluster.stop_broker(stopped[0])

    def before(n: int, run: Run) -> None:
        if n == 2:
            cluster.start_broker(stopped[0])

    run_application(
        java_classpath, cluster, tmp_path, before=before, after_producing=after_producing, pace_ms=10
    )
    sent = {request["api"] for request in cluster.requests.list() if request["client_id"].startswith(APP)}
    assert ("AddOffsetsToTxn" in sent) == (transaction_version == 1)


def test_exactly_once_with_the_streams_rebalance_protocol(
    java_classpath: str, cluster: MockCluster, tmp_path: Path
) -> None:
    """group.protocol=streams (KIP-1071): the broker creates the internal topics the
    topology declares and assigns the tasks. A second instance joins while the second
    batch is processed (tasks move to it, revoked before they are reassigned) and leaves
    before the third; the first then leaves and rejoins with an empty state directory."""
    second: list[StreamsProcess] = []

    def after_producing(n: int, run: Run) -> None:
        if n == 1:
            run.reader.read_until(run.reader.read() + 1, run.streams)  # it is processing the batch
            second.append(
                StreamsProcess(
                    java_classpath, cluster, tmp_path / "state-b", tmp_path / "streams-b", 10, "streams"
                )
            )

    def before(n: int, run: Run) -> None:
        if n == 2:
            joined = second[0]
            result = joined.close()
            assert result["uncaught"] == [] and result["closed"]
            assert "RUNNING" in result["states"]  # it was given tasks and ran them
            run.restart()

    try:
        run_application(
            java_classpath,
            cluster,
            tmp_path,
            before=before,
            after_producing=after_producing,
            pace_ms=10,
            group_protocol="streams",
        )
    finally:
        for process in second:
            process.kill()
    sent = {request["api"] for request in cluster.requests.list() if request["client_id"].startswith(APP)}
    # Members heartbeat the streams protocol; the internal topics were the broker's to create.
    assert "StreamsGroupHeartbeat" in sent
    assert not sent & {"JoinGroup", "SyncGroup", "CreateTopics"}
    group = cluster.describe_group(APP)
    assert group is not None and group["type"] == "streams"


def test_the_admin_clients_streams_group_calls(
    java_classpath: str, cluster: MockCluster, tmp_path: Path
) -> None:
    """Java's Admin on a streams group: described while the application runs (its two
    stream threads are the members, every task assigned once), listed as a streams group;
    once it has stopped, its committed offsets listed, altered and deleted, and the group
    deleted."""
    start = (int(time.time() * 1000) // WINDOW_MS - 6) * WINDOW_MS
    sent = payments(100, seed=7, start=start)
    run = Run(java_classpath, cluster, tmp_path, pace_ms=0, group_protocol="streams")
    try:
        produce(cluster, sent, 0)
        run.reader.read_until(count_updates(*expected(sent)), run.streams)
        described = run_java(java_classpath, "describe", cluster.bootstrap_servers, APP, main=ADMIN)
        run.stop()
        assert_java_sent(cluster, "streams-admin")
    finally:
        run.streams.kill()
        run.reader.close()
    assert described["state"] == "Stable" and described["members"] == 2 and described["epochs_match"]
    assert described["assignor"] == "sticky"
    assert described["active_tasks"] == ["0_0", "0_1", "0_2", "1_0", "1_1", "1_2"]
    assert described["subtopologies"]["0"]["source"] == [INPUT]
    assert described["subtopologies"]["1"]["changelogs"] == sorted([TOTALS_CHANGELOG, WINDOW_CHANGELOG])
    assert described["listed"] == [f"{APP}:Streams"]
    topic = cluster.state.topics[INPUT]
    ends = {str(p): cluster.on_loop(lambda p=p: topic.partitions[p].log.log_end_offset) for p in range(3)}
    offsets = run_java(java_classpath, "offsets", cluster.bootstrap_servers, APP, INPUT, main=ADMIN)
    assert offsets["committed"] == ends  # everything read was committed
    assert offsets["altered"] == {**ends, "0": 0}
    assert offsets["after_delete"] == {"0": 0, "2": ends["2"]}
    assert offsets["listed_after_delete"] == []
