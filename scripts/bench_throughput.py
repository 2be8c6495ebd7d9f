#!/usr/bin/env python3
"""Throughput and broker CPU per message of this broker against librdkafka's built-in mock cluster, same client, same run.

confluent-kafka produces N messages of B bytes (acks=1, linger.ms=5) and a consumer reads
them all back, first against this broker (a `python -m broker` subprocess, so client and
broker do not share a GIL), then against librdkafka's mock cluster
(`test.mock.num.brokers=1`, which runs in its own C thread, in a child process of its own:
this script run with `--librdkafka-mock-child`, where an idle producer owns the mock and
waits on its stdin). Prints both rates and the ratios ours/theirs; the target is >= 0.5
for produce and for consume. It also prints each broker's CPU time per message and their
ratio ours/mock for produce and for consume (target <= 1.0: this broker costs no more
CPU per message than the C mock).

Broker CPU is read from /proc at the edges of each phase's clock, the same way for both
processes: the sum over the process's threads of /proc/<pid>/task/<tid>/schedstat's run
time (nanoseconds), or utime + stime from /proc/<pid>/stat (clock ticks, 10 ms) when a
thread that was there at the start had ended by the end. The least of the rounds is
printed. The mock's process holds, besides the mock's thread (`rdk:mock`), the idle
owner producer's threads and the Python thread blocked on stdin; `--cpu-threads` prints
each phase's CPU per thread name for both brokers. On a small machine where client and
broker compete for the cores, CPU per message shows a broker's cost more steadily than
the wall-clock rates (and how far the broker is from being the bottleneck).

Each round also runs this broker with one feature changed at a time, and prints for each
the ratio of the rates on/off and of the CPU per message on/off (target: each feature
costs <= 5 %, i.e. rates on/off >= 0.95 and CPU per message on/off <= 1.05):

- quotas configured but not binding (ratio quotas/no quotas, target >= 0.95): the cost
  of quota enforcement on the request path. Before that run the benchmark's client-id
  (`bench-throughput`, used by its producer and consumer in every run) gets
  producer_byte_rate and consumer_byte_rate of 10^12 bytes/s and request_percentage of
  10^6 %, far above what one broker process can serve, and `--quota-entities` other
  entities (default 300: a third users, a third client-ids, a third user + client-id
  pairs, with ordinary values) are set, all over the wire with AlterClientQuotas. So
  every produce and fetch is measured against its sensors (request size, response size,
  request thread time) with the resolution walking a precedence list that has several
  families configured, and nothing is ever throttled;
- the metrics sink on (`--metrics-dir`, one Parquet row per request);
- StandardAuthorizer with 1,000 ACLs (the benchmark principal's among them);
- the recording ring off (`--override record.requests.max=0`): the ring is on by default
  (256 entries), so for it "on" is the plain run and "off" the extra one.

The runs of this broker rotate which goes first from round to round; use `--repeat 3`
(best of each) for figures to quote.

With `--matrix` only this broker plain and the mock run, over 8 cells: 100 B and 1 KiB
records x acks=1 and acks=all x no compression and lz4 (librdkafka's mock accepts lz4
batches; this broker keeps batches opaque, any codec is the same to it). The 100 B cells
produce `--messages` messages (default 300,000; 30,000 with `--quick`), the 1 KiB cells
100/1024 as many, so every cell moves about as many bytes and takes a few seconds; each
cell runs on a fresh broker and a fresh mock, which goes first alternating per round.
Per cell it prints both brokers' rates, CPU per message and the CPU ratios ours/mock
(target <= 1.0 in every cell), then the worst cell. Every message carries the same value
(random bytes, drawn once per run), so lz4 batches shrink to a small fraction of their
size: the compressed cells weigh each broker's per-request costs more than its per-byte
ones.

Run it with the project's Python (the broker's dependencies and confluent-kafka must be
importable):

    .venv/bin/python scripts/bench_throughput.py                 # 1,000,000 x 100 B
    .venv/bin/python scripts/bench_throughput.py --repeat 3      # figures to quote
    .venv/bin/python scripts/bench_throughput.py --quick         # 100,000 x 100 B smoke run
    .venv/bin/python scripts/bench_throughput.py --messages 20000 --size 100 --topics 4
    .venv/bin/python scripts/bench_throughput.py --quota-entities 3000  # more quota entities
    .venv/bin/python scripts/bench_throughput.py --transactional 1000  # transactions, read_committed
    .venv/bin/python scripts/bench_throughput.py --matrix --repeat 3   # CPU per message, 8 cells
    .venv/bin/python scripts/bench_throughput.py --matrix --quick      # 30,000 x 100 B per cell
    .venv/bin/python scripts/bench_throughput.py --quick --cpu-threads # where each broker's CPU goes

or as `scripts/bench_throughput.py ...` with the virtualenv activated (the shebang is
`/usr/bin/env python3`). `--repeat 3` runs three rounds, each on a fresh broker and a fresh
mock, and compares the best rates: single runs are noisy on small shared machines.

How it is made comparable:

- Same topics on both sides, `bench-0` .. `bench-<T-1>`, auto-created by the producer's
  Metadata request before the clock starts. librdkafka's mock does not implement
  CreateTopics, and auto-creates topics with its own default partition count (4 in
  librdkafka 2.x); that count is probed first and our broker is started with the same
  `num.partitions`, so both serve the same partition layout.
- librdkafka's mock keeps only 5 MiB (and 100,000 batches) per partition, so without
  `--topics` the data is spread over enough topics to stay well under that. After the
  produce phase every partition's low watermark is checked to be 0 on both sides (outside
  the timings): nothing may have been dropped. Our broker runs with
  `log.retention.bytes=-1`.
- Before each phase's clock starts, its client sends (producer) or reads back (consumer)
  `--warmup` messages (default 2,000) of a topic of their own, `bench-warmup`, with the
  same settings: connection set-up and each broker's first-request costs (this broker's
  kafka-python protocol code generation) stay out of the rates and CPU figures.
- Messages go round-robin over every (topic, partition) with an explicit partition, so
  both brokers see the same batches. No per-message delivery callback (its Python cost
  would be the same on both sides and only hide the brokers' difference); delivery
  failures are caught by `flush()` leaving messages behind, by the error callback, and by
  the consumer having to read back exactly N messages.
- Produce rate: first `produce()` to `flush()` returning. Consume rate: `assign()` of every
  partition at offset 0 to the N-th message (a `group.id` is set, nothing is committed;
  the consumer has fetched the topics' metadata before, or the assignment would wait for
  librdkafka's once-a-second scan of unknown topics).
  The consumer sets `fetch.queue.backoff.ms=10`: the Python loop drains slower than
  either broker fills librdkafka's prefetch queue, and with the default 1 s backoff on a
  full queue those pauses, not the brokers, set both rates (about 250k msg/s either way).
- MB/s counts payload bytes only (N x B), in 10^6 bytes.

With `--transactional N` the producer is transactional (acks=all, idempotent), commits
every N messages, and the consumer reads read_committed; only this broker plain and the
mock run, and the stored-offsets check counts each transaction's markers.

Exit status: 0 when every run completed (whatever the ratios, unless `--min-ratio`,
`--min-quota-ratio` or `--max-cpu-ratio` is given and not met: 3), 1 when a run failed
(timeout, lost messages, broker or mock did not start, quotas refused).
"""

from __future__ import annotations

import argparse
import functools
import logging
import math
import os
import re
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.acl import CreateAclsRequest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support (not installed)
from tests.support.clients import ClientLog, client_logger, wait_for_topic  # noqa: E402
from tests.support.process import BrokerProcess, BrokerProcessError  # noqa: E402
from tests.support.wire import quota_alteration, round_trip  # noqa: E402

MOCK_PARTITION_MAX_BYTES = 5 * 1024 * 1024  # librdkafka rd_kafka_mock_partition_init(): max_size
RETENTION_BUDGET = 0.6  # fill at most this share of it
RECORD_OVERHEAD = 20  # bytes a keyless record adds to its value in a v2 batch, rounded up
STALL_SECONDS = 30.0  # a phase fails when no progress is made for this long
CLIENT_ID = "bench-throughput"  # the producer's and the consumer's, in every run
UNREACHABLE_BYTE_RATE = 1e12  # bytes/s: quotas that are set but never bind
UNREACHABLE_REQUEST_PERCENTAGE = 1e6  # % of one request thread
QUOTA_SETUP_CLIENT_ID = "bench-quota-setup"  # the client-id of the AlterClientQuotas requests
WARMUP_TOPIC = "bench-warmup"  # written and read before each phase's clock starts
MOCK_CHILD_FLAG = "--librdkafka-mock-child"  # this script as the process owning the mock
FEATURE_COST_TARGET = 0.05  # each feature costs at most this share of throughput and CPU
MATRIX_SIZES = (100, 1024)  # bytes per value in --matrix
MATRIX_ACKS = ("1", "all")
MATRIX_COMPRESSION = ("none", "lz4")


class BenchError(RuntimeError):
    pass


# -- CPU time of a process, from /proc ----------------------------------------------------


@dataclass(frozen=True)
class CpuSample:
    """A process's CPU time so far: each live thread's (name, run time in ns) by thread id
    from /proc/<pid>/task/<tid>/schedstat and comm, and the process's utime + stime in
    clock ticks from /proc/<pid>/stat (coarse, but it keeps the time of ended threads)."""

    threads: dict[int, tuple[str, int]]
    ticks: int


def cpu_sample(pid: int) -> CpuSample | None:
    """`pid`'s CPU time so far; None when /proc cannot tell (not Linux, process gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
        tids = os.listdir(f"/proc/{pid}/task")
    except (OSError, IndexError, ValueError):
        return None
    threads: dict[int, tuple[str, int]] = {}
    for tid in tids:
        try:
            ran_ns = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
        except (OSError, IndexError, ValueError):  # ended meanwhile
            continue
        threads[int(tid)] = (name, ran_ns)
    return CpuSample(threads, ticks)


def _threads_lasted(before: CpuSample, after: CpuSample) -> bool:
    """Every thread of `before` is still there in `after` (threads started in between
    count from 0: all their time is in the interval)."""
    return bool(after.threads) and before.threads.keys() <= after.threads.keys()


def cpu_seconds_between(before: CpuSample, after: CpuSample) -> float:
    """CPU seconds the process used from `before` to `after`: to the nanosecond from the
    threads' schedstat when they all lasted, else from the process's clock ticks."""
    if _threads_lasted(before, after):
        return sum(ran - before.threads.get(tid, ("", 0))[1] for tid, (_, ran) in after.threads.items()) / 1e9
    return (after.ticks - before.ticks) / os.sysconf("SC_CLK_TCK")


def cpu_by_thread(before: CpuSample, after: CpuSample) -> dict[str, float]:
    """CPU seconds from `before` to `after` per thread name (threads of one name summed);
    empty when a thread ended in between."""
    if not _threads_lasted(before, after):
        return {}
    spent: dict[str, float] = {}
    for tid, (name, ran) in after.threads.items():
        spent[name] = spent.get(name, 0.0) + (ran - before.threads.get(tid, ("", 0))[1]) / 1e9
    return spent


@dataclass
class Rates:
    produce_s: float
    consume_s: float
    messages: int
    size: int
    # CPU seconds the broker's process (this broker's or the mock's) used in each phase.
    produce_cpu: float | None = None
    consume_cpu: float | None = None
    # The same per thread name (for --cpu-threads); empty when not known.
    produce_threads: dict[str, float] | None = None
    consume_threads: dict[str, float] | None = None

    def produce_msgs(self) -> float:
        return self.messages / self.produce_s

    def consume_msgs(self) -> float:
        return self.messages / self.consume_s

    def produce_mb(self) -> float:
        return self.messages * self.size / self.produce_s / 1e6

    def consume_mb(self) -> float:
        return self.messages * self.size / self.consume_s / 1e6

    def produce_us(self) -> float | None:
        """Broker CPU microseconds per produced message."""
        return None if self.produce_cpu is None else self.produce_cpu / self.messages * 1e6

    def consume_us(self) -> float | None:
        """Broker CPU microseconds per consumed message."""
        return None if self.consume_cpu is None else self.consume_cpu / self.messages * 1e6

    def phase_us(self, phase: str) -> float | None:
        """Broker CPU microseconds per message in `phase` ("produce" or "consume")."""
        return self.produce_us() if phase == "produce" else self.consume_us()


def _client_logger(name: str) -> tuple[logging.Logger, ClientLog]:
    """librdkafka's log lines, kept instead of reaching stderr."""
    return client_logger(name, logging.DEBUG)


# -- librdkafka's mock cluster, in a process of its own -----------------------------------


class LibrdkafkaMock:
    """librdkafka's mock cluster in a child process (this script run with
    `--librdkafka-mock-child`), so that its CPU time can be read like this broker's.

    confluent-kafka has no API for the mock cluster; the child's idle producer handle,
    created with `test.mock.num.brokers`, logs the address it listens on, the child prints
    it, and other clients connect to it through plain `bootstrap.servers`. The mock lives
    until the child's stdin is closed.
    """

    def __init__(self) -> None:
        self._process = BrokerProcess(
            MOCK_CHILD_FLAG, command=[sys.executable, str(Path(__file__).resolve())], control=True
        )
        try:
            line = self._process.read_line()
            if not line.startswith("bootstrap "):
                code = self._process.wait(10)
                raise BenchError(f"librdkafka's mock cluster did not start ({code}):\n{self._process.stderr}")
        except BaseException:
            self._process.kill()
            raise
        self.bootstrap_servers = line.split()[1]

    @property
    def pid(self) -> int:
        return self._process.pid

    def cpu(self) -> CpuSample | None:
        return cpu_sample(self._process.pid)

    def close(self) -> None:
        self._process.stop()


def librdkafka_mock_child() -> int:
    """The child side: an idle producer owning librdkafka's mock cluster, its address on
    stdout ("bootstrap host:port"), then nothing until stdin closes. The handle is never
    polled after that, so this process's CPU is the mock's (and the idle handle's threads)."""
    logger, log = _client_logger("mock-owner")
    owner = Producer({"test.mock.num.brokers": 1, "logger": logger})
    deadline = time.monotonic() + 10
    address = None
    while address is None:
        if time.monotonic() > deadline:
            print("librdkafka's mock cluster did not log its address", file=sys.stderr, flush=True)
            return 1
        owner.poll(0.05)
        for line in log.lines:
            match = re.search(r"replaced with (\S+)", line)
            if match:
                address = match.group(1).rstrip(",")
                break
    print(f"bootstrap {address}", flush=True)
    sys.stdin.read()  # until the parent closes it
    owner.flush(1)
    return 0


# -- this broker ----------------------------------------------------------------------------


@contextmanager
def start_broker(
    partitions: int, metrics: bool = False, authorizer: bool = False, ring: bool = True
) -> Iterator[BrokerProcess]:
    """`python -m broker` on a free port, with `partitions` per auto-created topic; with
    `metrics`, the metrics sink writing to a temporary directory; with `authorizer`,
    StandardAuthorizer (its ACLs set by `configure_acls`); without `ring`, no recording
    ring (`record.requests.max=0`; it keeps 256 requests by default)."""
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as metrics_dir:
        args = [
            "--port",
            "0",
            "--override",
            "log.retention.bytes=-1",
            "--override",
            f"num.partitions={partitions}",
        ]
        if metrics:
            args += ["--metrics-dir", metrics_dir]
        if authorizer:
            args += [
                "--override",
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                # lets the (anonymous) benchmark create its ACLs: no ACL names the cluster
                "--override",
                "allow.everyone.if.no.acl.found=true",
            ]
        if not ring:
            args += ["--override", "record.requests.max=0"]
        with BrokerProcess(*args) as broker:
            broker.wait_listening(timeout=30)
            yield broker


def probe_mock_partitions(bootstrap: str) -> int:
    """Partition count the mock gives an auto-created topic (its `defaults.partition_cnt`)."""
    producer = Producer({"bootstrap.servers": bootstrap, "logger": _client_logger("probe")[0]})
    try:
        return len(wait_for_topic(producer, "bench-probe", time.monotonic() + 30))
    finally:
        producer.flush(1)


def _create_topics(producer: Producer, topics: list[str]) -> dict[str, list[int]]:
    """Auto-creates `topics` through Metadata requests; returns each topic's partitions."""
    deadline = time.monotonic() + 30
    return {topic: wait_for_topic(producer, topic, deadline) for topic in topics}


def run(
    bootstrap: str,
    topics: list[str],
    messages: int,
    size: int,
    cpu: Callable[[], CpuSample | None] | None = None,
    per_transaction: int = 0,
    *,
    acks: str = "1",
    compression: str = "none",
    warmup: int = 0,
) -> Rates:
    """Produces then consumes `messages` messages of `size` bytes over `topics` at `bootstrap`;
    `cpu` samples the broker process's CPU time so far. With `per_transaction`, a
    transactional producer commits every that many messages and the consumer reads
    read_committed. `warmup` messages go through `WARMUP_TOPIC` before each phase's clock."""
    produce_cpu: list[CpuSample | None] = []
    consume_cpu: list[CpuSample | None] = []
    targets, produce_s = produce_phase(
        bootstrap,
        topics,
        messages,
        size,
        _reader(cpu, produce_cpu),
        per_transaction,
        acks=acks,
        compression=compression,
        warmup=warmup,
    )
    transactions = math.ceil(messages / per_transaction) if per_transaction else 0
    _check_stored(bootstrap, targets, messages, transactions * min(len(targets), per_transaction))
    consume_s = consume_phase(
        bootstrap,
        targets,
        messages,
        _reader(cpu, consume_cpu),
        committed_only=per_transaction > 0,
        warmup=warmup,
    )
    produce_seconds, produce_threads = _spent(produce_cpu)
    consume_seconds, consume_threads = _spent(consume_cpu)
    return Rates(
        produce_s,
        consume_s,
        messages,
        size,
        produce_seconds,
        consume_seconds,
        produce_threads,
        consume_threads,
    )


def _reader(cpu: Callable[[], CpuSample | None] | None, into: list[CpuSample | None]) -> Callable[[], None]:
    """Called when a phase's clock starts and when it stops."""
    return lambda: into.append(cpu() if cpu is not None else None)


def _spent(readings: list[CpuSample | None]) -> tuple[float | None, dict[str, float] | None]:
    """CPU seconds between a phase's two readings, in all and per thread name."""
    if len(readings) != 2 or readings[0] is None or readings[1] is None:
        return None, None
    return cpu_seconds_between(readings[0], readings[1]), cpu_by_thread(readings[0], readings[1])


def produce_phase(
    bootstrap: str,
    topics: list[str],
    messages: int,
    size: int,
    clock_edge: Callable[[], None] = lambda: None,
    per_transaction: int = 0,
    *,
    acks: str = "1",
    compression: str = "none",
    warmup: int = 0,
    client_id: str = CLIENT_ID,
) -> tuple[list[tuple[str, int]], float]:
    errors: list[str] = []
    plog, plines = _client_logger("producer")
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "acks": acks,
        "compression.type": compression,
        "linger.ms": 5,
        "logger": plog,
        "error_cb": lambda err: errors.append(str(err)),
    }
    if per_transaction:  # transactions need acks=all (idempotence)
        config.update({"acks": "all", "transactional.id": f"bench-{os.getpid()}-{time.monotonic_ns()}"})
    producer = Producer(config)
    layout = _create_topics(producer, topics + ([WARMUP_TOPIC] if warmup else []))
    if per_transaction:
        producer.init_transactions(30)
    targets = [(topic, partition) for topic in topics for partition in layout[topic]]
    value = os.urandom(size)

    produce = producer.produce
    poll = producer.poll
    if warmup:
        partitions = layout[WARMUP_TOPIC]
        if per_transaction:
            producer.begin_transaction()
        for i in range(warmup):
            produce(WARMUP_TOPIC, value, partition=partitions[i % len(partitions)])
        if per_transaction:
            producer.commit_transaction(STALL_SECONDS * 4)
        if producer.flush(STALL_SECONDS * 4):
            raise BenchError(f"warm-up messages not delivered; client errors: {errors or plines.errors()}")
    n_targets = len(targets)
    clock_edge()
    start = time.perf_counter()
    if per_transaction:
        producer.begin_transaction()
    for i in range(messages):
        if per_transaction and i and i % per_transaction == 0:
            producer.commit_transaction(STALL_SECONDS * 4)
            producer.begin_transaction()
        topic, partition = targets[i % n_targets]
        while True:
            try:
                produce(topic, value, partition=partition)
                break
            except BufferError:  # queue.buffering.max.messages in flight: wait for acks
                poll(0.001)
        if i & 1023 == 0:
            poll(0)
    if per_transaction:
        producer.commit_transaction(STALL_SECONDS * 4)
    left = producer.flush(STALL_SECONDS * 4)
    produce_s = time.perf_counter() - start
    clock_edge()
    if left:
        raise BenchError(f"{left} messages not delivered; client errors: {errors or plines.errors()}")
    return targets, produce_s


def consume_phase(
    bootstrap: str,
    targets: list[tuple[str, int]],
    messages: int,
    clock_edge: Callable[[], None] = lambda: None,
    committed_only: bool = False,
    *,
    warmup: int = 0,
    client_id: str = CLIENT_ID,
    overrides: dict[str, object] | None = None,
) -> float:
    """Reads `messages` messages from `targets` (assigned at offset 0); returns the seconds
    from assign() to the last one. `overrides` are consumer settings (e.g. fetch.wait.max.ms)."""
    if warmup:
        _warm_up_consumer(bootstrap, warmup, committed_only, client_id)
    errors: list[str] = []
    clog, clines = _client_logger("consumer")
    consumer = _consumer(bootstrap, client_id, committed_only, clog, errors, overrides or {})
    try:
        # Metadata of the topics first: a topic assigned without it waits for librdkafka's
        # next scan of unknown topics (every second), a random delay of up to 1 s.
        deadline = time.monotonic() + 30
        for topic in sorted({topic for topic, _ in targets}):
            wait_for_topic(consumer, topic, deadline)
        clock_edge()
        start = time.perf_counter()
        consumer.assign([TopicPartition(t, p, 0) for t, p in targets])
        read = _read(consumer, messages, errors, clines)
        consume_s = time.perf_counter() - start
        clock_edge()
    finally:
        consumer.close()
    if read != messages:
        raise BenchError(f"read {read} messages, {messages} produced")
    return consume_s


def _consumer(
    bootstrap: str,
    client_id: str,
    committed_only: bool,
    logger: logging.Logger,
    errors: list[str],
    overrides: dict[str, object],
) -> Consumer:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "group.id": "bench-throughput",
        "enable.auto.commit": False,
        "isolation.level": "read_committed" if committed_only else "read_uncommitted",
        # The Python loop drains slower than either broker fills librdkafka's prefetch
        # queue; on "queue full" the client stops fetching for fetch.queue.backoff.ms
        # (1 s by default), and those pauses, not the brokers, would set both rates.
        "fetch.queue.backoff.ms": 10,
        "logger": logger,
        "error_cb": lambda err: errors.append(str(err)),
    }
    config.update(overrides)
    return Consumer(config)


def _warm_up_consumer(bootstrap: str, warmup: int, committed_only: bool, client_id: str) -> None:
    """Reads the `warmup` messages of `WARMUP_TOPIC` with a consumer of its own, closed
    before the measured one starts: one that had read to the end of a topic would keep a
    long-polling fetch (fetch.wait.max.ms) in flight into the timed phase."""
    errors: list[str] = []
    wlog, wlines = _client_logger("warm-up consumer")
    consumer = _consumer(bootstrap, client_id, committed_only, wlog, errors, {"fetch.wait.max.ms": 10})
    try:
        partitions = wait_for_topic(consumer, WARMUP_TOPIC, time.monotonic() + 30)
        consumer.assign([TopicPartition(WARMUP_TOPIC, p, 0) for p in partitions])
        _read(consumer, warmup, errors, wlines)
    finally:
        consumer.close()


def _read(consumer: Consumer, messages: int, errors: list[str], lines: ClientLog) -> int:
    """Reads from the assigned partitions until `messages` messages came; returns how many
    did without an error."""
    read = 0
    last_progress = time.perf_counter()
    while read < messages:
        # Never ask for more than is left: consume() waits for the full count or the timeout.
        batch = consumer.consume(min(10000, messages - read), 0.5)
        now = time.perf_counter()
        if batch:
            last_progress = now
            failed = [m.error() for m in batch if m.error() is not None]
            read += len(batch) - len(failed)
            errors.extend(str(e) for e in failed)
        elif now - last_progress > STALL_SECONDS:
            raise BenchError(
                f"consumer stalled at {read}/{messages}; client errors: {errors or lines.errors()}"
            )
    return read


def configure_quotas(bootstrap: str, others: int) -> None:
    """Quotas that apply to the benchmark's client-id but never bind, plus `others`
    entities of every family, set with AlterClientQuotas and checked with
    DescribeClientQuotas."""
    entries = [
        quota_alteration(
            [("client-id", CLIENT_ID)],
            {
                "producer_byte_rate": UNREACHABLE_BYTE_RATE,
                "consumer_byte_rate": UNREACHABLE_BYTE_RATE,
                "request_percentage": UNREACHABLE_REQUEST_PERCENTAGE,
            },
        )
    ]
    ordinary = {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0, "request_percentage": 25.0}
    for i in range(others):
        family = i % 3
        if family == 0:
            entity = [("user", f"user-{i}")]
        elif family == 1:
            entity = [("client-id", f"app-{i}")]
        else:
            entity = [("user", f"user-{i}"), ("client-id", f"app-{i}")]
        entries.append(quota_alteration(entity, ordinary))
    host, _, port = bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        alter = AlterClientQuotasRequest(entries=entries, validate_only=False)
        response = round_trip(sock, alter, 1, QUOTA_SETUP_CLIENT_ID, version=1)
        refused = [e for e in response.entries if e.error_code]
        if refused:
            raise BenchError(f"AlterClientQuotas refused {len(refused)} entities: {refused[0]}")
        describe = DescribeClientQuotasRequest(components=[], strict=False)
        described = round_trip(sock, describe, 2, QUOTA_SETUP_CLIENT_ID, version=1)
        if described.error_code or len(described.entries) != others + 1:
            raise BenchError(
                f"DescribeClientQuotas: {described.error_code}, {len(described.entries or [])} entities"
            )


def configure_acls(bootstrap: str, total: int) -> None:
    """`total` ACLs over the wire with CreateAcls: the benchmark's principal may write and
    read the bench-* topics (prefixed) and its group; the rest name other principals and
    topics, so every produce and fetch is decided by walking real bindings."""
    topic, group, literal, prefixed, allow = 2, 3, 3, 4, 3
    read, write, describe = 3, 4, 8
    creations = [
        (topic, "bench-", prefixed, "User:ANONYMOUS", "*", write, allow),
        (topic, "bench-", prefixed, "User:ANONYMOUS", "*", read, allow),
        (group, CLIENT_ID, literal, "User:ANONYMOUS", "*", read, allow),
    ]
    for i in range(total - len(creations)):
        creations.append(
            (topic, f"other-{i}", literal, f"User:user-{i % 97}", "*", (read, write, describe)[i % 3], allow)
        )
    host, _, port = bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        response = round_trip(
            sock, CreateAclsRequest(creations=creations), 1, QUOTA_SETUP_CLIENT_ID, version=2
        )
        refused = [r for r in response.results if r.error_code]
        if refused:
            raise BenchError(f"CreateAcls refused {len(refused)} bindings: {refused[0]}")


def _check_stored(bootstrap: str, targets: list[tuple[str, int]], messages: int, markers: int = 0) -> None:
    """Outside the timings: every message must still be there (librdkafka's mock drops
    batches beyond 5 MiB per partition), and every transaction's marker in each partition."""
    checker = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-check", "logger": _client_logger("check")[0]}
    )
    try:
        stored = 0
        for topic, partition in targets:
            low, high = checker.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=10, cached=False
            )
            if low != 0:
                raise BenchError(
                    f"{bootstrap}: {topic}[{partition}] starts at offset {low}: data was dropped; "
                    "spread it over more --topics"
                )
            stored += high
    finally:
        checker.close()
    if stored != messages + markers:
        raise BenchError(
            f"{bootstrap}: {stored} offsets stored, {messages} messages and {markers} markers produced"
        )


def default_topics(messages: int, size: int, partitions: int) -> int:
    per_partition = MOCK_PARTITION_MAX_BYTES * RETENTION_BUDGET
    return max(1, math.ceil(messages * (size + RECORD_OVERHEAD) / (partitions * per_partition)))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench_throughput",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument(
        "--messages",
        type=int,
        default=None,
        help="messages to produce (default 1,000,000; with --matrix, per 100 B cell: 300,000)",
    )
    parser.add_argument(
        "--size", type=int, default=None, help="bytes per message value (default 100; not with --matrix)"
    )
    parser.add_argument(
        "--topics",
        type=int,
        default=None,
        help="topics bench-0.. (default: enough for librdkafka's mock retention)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 100,000 messages (30,000 per 100 B cell with --matrix) unless --messages",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds, each on a fresh broker and a fresh mock; the best rate of each side is compared",
    )
    parser.add_argument(
        "--min-ratio",
        type=float,
        default=None,
        help="exit 3 when a ratio ours/theirs is below this (default: report only)",
    )
    parser.add_argument(
        "--quota-entities",
        type=int,
        default=300,
        help="quota entities besides the benchmark's own in the run with quotas (default 300)",
    )
    parser.add_argument(
        "--transactional",
        type=int,
        default=0,
        metavar="N",
        help="transactional producer committing every N messages, read_committed consumer;\n"
        "this broker plain against the mock only (default 0: not transactional)",
    )
    parser.add_argument(
        "--min-quota-ratio",
        type=float,
        default=None,
        help="exit 3 when a ratio quotas/no quotas is below this (default: report only)",
    )
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="this broker plain against the mock only, over 100 B and 1 KiB x acks=1 and all\n"
        "x no compression and lz4 (8 cells); CPU per message ours/mock per cell",
    )
    parser.add_argument(
        "--max-cpu-ratio",
        type=float,
        default=None,
        help="exit 3 when a broker CPU per message ratio ours/mock is above this (default: report only)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=2000,
        help="messages produced and read through topic bench-warmup before each phase's clock\n"
        "(default 2,000; 0: none)",
    )
    parser.add_argument(
        "--cpu-threads", action="store_true", help="also print each run's broker CPU per thread name"
    )
    args = parser.parse_args(argv)
    if args.matrix and (args.size is not None or args.transactional):
        parser.error("--matrix sets the sizes itself and is not transactional")
    if args.size is None:
        args.size = 100
    if args.messages is None:
        if args.matrix:
            args.messages = 30_000 if args.quick else 300_000
        else:
            args.messages = 100_000 if args.quick else 1_000_000
    if min(args.messages, args.size, args.repeat, args.topics or 1) < 1:
        parser.error("--messages, --size, --topics and --repeat must be positive")
    if min(args.quota_entities, args.transactional, args.warmup) < 0:
        parser.error("--quota-entities, --transactional and --warmup must be at least 0")
    return args


OURS = "this broker (subprocess)"
QUOTAS = "this broker, quotas set"
METRICS = "this broker, metrics on"
ACLS = "this broker, 1,000 ACLs"
RING_OFF = "this broker, ring off"
THEIRS = "librdkafka mock cluster"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [MOCK_CHILD_FLAG]:
        return librdkafka_mock_child()
    args = parse_args(argv)
    try:
        if args.matrix:
            cells = run_matrix(args)
        else:
            results = run_rounds(args)
    except (BenchError, BrokerProcessError, KafkaException, OSError) as exc:
        print(f"bench_throughput: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    if args.matrix:
        return _report_matrix(args, cells)
    if args.transactional:
        return _report_transactional(args, results[OURS], results[THEIRS])
    return _report_features(args, results)


def run_rounds(args: argparse.Namespace) -> dict[str, list[Rates]]:
    """This broker plain and with each feature changed (plain only with --transactional),
    then the mock, `--repeat` times; each run's line is printed as it completes."""
    results: dict[str, list[Rates]] = {name: [] for name in (OURS, QUOTAS, METRICS, ACLS, RING_OFF, THEIRS)}
    topics: list[str] = []
    partitions = 0
    for round_ in range(args.repeat):
        mock = LibrdkafkaMock()
        try:
            if round_ == 0:
                partitions = probe_mock_partitions(mock.bootstrap_servers)
                n_topics = args.topics or default_topics(args.messages, args.size, partitions)
                topics = [f"bench-{i}" for i in range(n_topics)]
                _print_setup(args, n_topics, partitions)
            # Plain and with each feature changed, rotating which goes first.
            variants = (OURS,) if args.transactional else (OURS, QUOTAS, METRICS, ACLS, RING_OFF)
            first = round_ % len(variants)
            for name in variants[first:] + variants[:first]:
                with start_broker(
                    partitions, metrics=name == METRICS, authorizer=name == ACLS, ring=name != RING_OFF
                ) as broker:
                    bootstrap = broker.bootstrap_servers()
                    if name == QUOTAS:
                        configure_quotas(bootstrap, args.quota_entities)
                    if name == ACLS:
                        configure_acls(bootstrap, 1000)
                    results[name].append(
                        run(
                            bootstrap,
                            topics,
                            args.messages,
                            args.size,
                            functools.partial(cpu_sample, broker.pid),
                            args.transactional,
                            warmup=args.warmup,
                        )
                    )
                _report_line(name, results[name][-1], args.cpu_threads)
            results[THEIRS].append(
                run(
                    mock.bootstrap_servers,
                    topics,
                    args.messages,
                    args.size,
                    mock.cpu,
                    args.transactional,
                    warmup=args.warmup,
                )
            )
            _report_line(THEIRS, results[THEIRS][-1], args.cpu_threads)
        finally:
            mock.close()
    return results


def _report_features(args: argparse.Namespace, results: dict[str, list[Rates]]) -> int:
    ours, quotas, theirs = results[OURS], results[QUOTAS], results[THEIRS]
    if args.repeat > 1:
        print(f"best of {args.repeat} rounds:")
        for name in (OURS, QUOTAS, METRICS, ACLS, RING_OFF, THEIRS):
            _report_line(name, _best(results[name]))
    produce_ratio = max(r.produce_msgs() for r in ours) / max(r.produce_msgs() for r in theirs)
    consume_ratio = max(r.consume_msgs() for r in ours) / max(r.consume_msgs() for r in theirs)
    print(f"produce ratio ours/theirs: {produce_ratio:.3f}  (target >= 0.5)")
    print(f"consume ratio ours/theirs: {consume_ratio:.3f}  (target >= 0.5)", flush=True)
    cpu_ratios = _cpu_ratio_lines(_best(ours), _best(theirs))
    quota_produce = max(r.produce_msgs() for r in quotas) / max(r.produce_msgs() for r in ours)
    quota_consume = max(r.consume_msgs() for r in quotas) / max(r.consume_msgs() for r in ours)
    entities = f"{args.quota_entities + 1} quota entities, none binding"
    print(f"produce ratio quotas/no quotas: {quota_produce:.3f}  (target >= 0.95; {entities})")
    print(f"consume ratio quotas/no quotas: {quota_consume:.3f}  (target >= 0.95; {entities})", flush=True)
    metrics = results[METRICS]
    metrics_produce = max(r.produce_msgs() for r in metrics) / max(r.produce_msgs() for r in ours)
    metrics_consume = max(r.consume_msgs() for r in metrics) / max(r.consume_msgs() for r in ours)
    print(
        f"produce ratio metrics on/off: {metrics_produce:.3f}  (target >= 0.90; one Parquet row per request)"
    )
    print(f"consume ratio metrics on/off: {metrics_consume:.3f}  (target >= 0.90)", flush=True)
    acls = results[ACLS]
    acl_produce = max(r.produce_msgs() for r in acls) / max(r.produce_msgs() for r in ours)
    acl_consume = max(r.consume_msgs() for r in acls) / max(r.consume_msgs() for r in ours)
    print(f"produce ratio 1,000 ACLs/no authorizer: {acl_produce:.3f}")
    print(f"consume ratio 1,000 ACLs/no authorizer: {acl_consume:.3f}", flush=True)
    best_plain, best_quotas = _best(ours), _best(quotas)
    for phase, plain_cpu, quota_cpu in (
        ("produce", best_plain.produce_cpu, best_quotas.produce_cpu),
        ("consume", best_plain.consume_cpu, best_quotas.consume_cpu),
    ):
        line = _cpu_line(phase, plain_cpu, quota_cpu, args.messages)
        if line:
            print(line, flush=True)
    _print_feature_costs(
        [
            (f"quotas set ({args.quota_entities + 1} entities)", quotas, ours),
            ("metrics sink on", metrics, ours),
            ("StandardAuthorizer, 1,000 ACLs", acls, ours),
            ("recording ring (256 entries)", ours, results[RING_OFF]),
        ]
    )
    status = 0
    if args.min_ratio is not None and min(produce_ratio, consume_ratio) < args.min_ratio:
        print(f"bench_throughput: a ratio is below --min-ratio {args.min_ratio}", file=sys.stderr)
        status = 3
    if args.min_quota_ratio is not None and min(quota_produce, quota_consume) < args.min_quota_ratio:
        print(
            f"bench_throughput: a quota ratio is below --min-quota-ratio {args.min_quota_ratio}",
            file=sys.stderr,
        )
        status = 3
    if _cpu_ratio_exceeded(args, cpu_ratios):
        status = 3
    return status


def _report_transactional(args: argparse.Namespace, ours: list[Rates], theirs: list[Rates]) -> int:
    if args.repeat > 1:
        print(f"best of {args.repeat} rounds:")
        _report_line(OURS, _best(ours))
        _report_line(THEIRS, _best(theirs))
    produce_ratio = max(r.produce_msgs() for r in ours) / max(r.produce_msgs() for r in theirs)
    consume_ratio = max(r.consume_msgs() for r in ours) / max(r.consume_msgs() for r in theirs)
    every = f"transactional, {args.transactional:,} messages per transaction"
    print(f"produce ratio ours/theirs: {produce_ratio:.3f}  ({every})")
    print(f"consume ratio ours/theirs: {consume_ratio:.3f}  (read_committed)", flush=True)
    best = _best(ours)
    for phase, cpu in (("produce", best.produce_cpu), ("consume", best.consume_cpu)):
        if cpu is not None:
            print(f"{phase} broker CPU per message: {cpu / args.messages * 1e6:.2f} us", flush=True)
    cpu_ratios = _cpu_ratio_lines(best, _best(theirs))
    status = 0
    if args.min_ratio is not None and min(produce_ratio, consume_ratio) < args.min_ratio:
        print(f"bench_throughput: a ratio is below --min-ratio {args.min_ratio}", file=sys.stderr)
        status = 3
    if _cpu_ratio_exceeded(args, cpu_ratios):
        status = 3
    return status


def _cpu_ratio_lines(ours: Rates, theirs: Rates) -> list[float]:
    """Prints broker CPU per message ours/mock for both phases; returns the ratios known."""
    ratios: list[float] = []
    for phase, mine, mock in (
        ("produce", ours.produce_us(), theirs.produce_us()),
        ("consume", ours.consume_us(), theirs.consume_us()),
    ):
        if mine is None or mock is None or mock <= 0:
            print(f"{phase} broker CPU per message ours/mock: not measured (no /proc?)", flush=True)
            continue
        ratios.append(mine / mock)
        print(
            f"{phase} broker CPU per message ours/mock: {mine:.3f} / {mock:.3f} us = {mine / mock:.2f}  "
            "(target <= 1.0)",
            flush=True,
        )
    return ratios


def _cpu_ratio_exceeded(args: argparse.Namespace, ratios: list[float]) -> bool:
    if args.max_cpu_ratio is not None and any(ratio > args.max_cpu_ratio for ratio in ratios):
        print(
            f"bench_throughput: a CPU per message ratio ours/mock is above --max-cpu-ratio {args.max_cpu_ratio}",
            file=sys.stderr,
        )
        return True
    return False


def _print_feature_costs(features: list[tuple[str, list[Rates], list[Rates]]]) -> None:
    """For each (feature, rounds with it on, rounds with it off): best rates on/off and
    least CPU per message on, off and on/off, against the <= 5 % target."""
    low, high = 1 - FEATURE_COST_TARGET, 1 + FEATURE_COST_TARGET
    print(
        f"feature costs on/off (target: each <= {FEATURE_COST_TARGET:.0%}, i.e. msg/s on/off >= {low:.2f} "
        f"and broker CPU us/msg on/off <= {high:.2f}):"
    )
    print(
        f"{'feature':<32} {'produce msg/s':>13} {'consume msg/s':>13} "
        f"{'produce CPU on   off on/off':>28} {'consume CPU on   off on/off':>28}  over target"
    )
    for name, on, off in features:
        best_on, best_off = _best(on), _best(off)
        produce = best_on.produce_msgs() / best_off.produce_msgs()
        consume = best_on.consume_msgs() / best_off.consume_msgs()
        over = [
            what for what, ratio in (("produce msg/s", produce), ("consume msg/s", consume)) if ratio < low
        ]
        cells = []
        for phase, cpu_on, cpu_off in (
            ("produce", best_on.produce_us(), best_off.produce_us()),
            ("consume", best_on.consume_us(), best_off.consume_us()),
        ):
            if cpu_on is None or cpu_off is None or cpu_off <= 0:
                cells.append(f"{'n/a':>28}")
                continue
            cells.append(f"{cpu_on:>16.3f} {cpu_off:>5.3f} {cpu_on / cpu_off:>5.3f}")
            if cpu_on / cpu_off > high:
                over.append(f"{phase} CPU")
        print(
            f"{name:<32} {produce:>13.3f} {consume:>13.3f} {cells[0]} {cells[1]}  {', '.join(over) or '-'}",
            flush=True,
        )


# -- --matrix -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One combination of --matrix: `messages` values of `size` bytes over `topics`."""

    size: int
    acks: str
    compression: str
    messages: int
    topics: tuple[str, ...]

    def size_label(self) -> str:
        return f"{self.size // 1024} KiB" if self.size % 1024 == 0 else f"{self.size} B"

    def label(self) -> str:
        return f"{self.size_label()} acks={self.acks} {self.compression}"


def matrix_cells(args: argparse.Namespace, partitions: int) -> list[Cell]:
    """The 8 cells; values larger than the first size get proportionally fewer messages."""
    cells = []
    for size in MATRIX_SIZES:
        messages = max(1, round(args.messages * MATRIX_SIZES[0] / size))
        n_topics = args.topics or default_topics(messages, size, partitions)
        topics = tuple(f"bench-{i}" for i in range(n_topics))
        for acks in MATRIX_ACKS:
            for compression in MATRIX_COMPRESSION:
                cells.append(Cell(size, acks, compression, messages, topics))
    return cells


def run_matrix(args: argparse.Namespace) -> list[tuple[Cell, list[Rates], list[Rates]]]:
    """Every cell on a fresh broker and a fresh mock, `--repeat` times (which of the two
    goes first alternates per round); returns each cell's rounds, ours and the mock's."""
    import confluent_kafka

    cells: list[Cell] = []
    ours: list[list[Rates]] = []
    theirs: list[list[Rates]] = []
    partitions = 0
    for round_ in range(args.repeat):
        for index in range(len(MATRIX_SIZES) * len(MATRIX_ACKS) * len(MATRIX_COMPRESSION)):
            mock = LibrdkafkaMock()
            try:
                if not cells:
                    partitions = probe_mock_partitions(mock.bootstrap_servers)
                    cells = matrix_cells(args, partitions)
                    ours, theirs = [[] for _ in cells], [[] for _ in cells]
                    print(
                        f"bench_throughput --matrix: {len(cells)} cells, {args.messages:,} messages per "
                        f"{MATRIX_SIZES[0]} B cell, {cells[-1].messages:,} per {cells[-1].size_label()} cell, "
                        f"linger.ms=5, {partitions} partitions per topic; each cell on a fresh broker and "
                        f"mock; confluent-kafka {confluent_kafka.version()}, librdkafka "
                        f"{confluent_kafka.libversion()[0]}",
                        flush=True,
                    )
                    _print_matrix_header()
                cell = cells[index]
                sides = ("ours", "mock") if round_ % 2 == 0 else ("mock", "ours")
                for side in sides:
                    if side == "ours":
                        with start_broker(partitions) as broker:
                            ours[index].append(
                                _run_cell(
                                    cell,
                                    broker.bootstrap_servers(),
                                    functools.partial(cpu_sample, broker.pid),
                                    args,
                                )
                            )
                    else:
                        theirs[index].append(_run_cell(cell, mock.bootstrap_servers, mock.cpu, args))
            finally:
                mock.close()
            _matrix_line(cell, ours[index][-1], theirs[index][-1])
            if args.cpu_threads:
                _thread_lines(OURS, ours[index][-1])
                _thread_lines(THEIRS, theirs[index][-1])
    return list(zip(cells, ours, theirs, strict=True))


def _run_cell(
    cell: Cell, bootstrap: str, cpu: Callable[[], CpuSample | None], args: argparse.Namespace
) -> Rates:
    return run(
        bootstrap,
        list(cell.topics),
        cell.messages,
        cell.size,
        cpu,
        acks=cell.acks,
        compression=cell.compression,
        warmup=args.warmup,
    )


def _print_matrix_header() -> None:
    print(
        f"{'cell':<24} {'produce msg/s':^21} {'consume msg/s':^21} {'produce CPU us/msg':^22} "
        f"{'consume CPU us/msg':^22}"
    )
    print(
        f"{'':<24} {'ours':>10} {'mock':>10} {'ours':>10} {'mock':>10} {'ours':>6} {'mock':>6} {'o/m':>8} "
        f"{'ours':>6} {'mock':>6} {'o/m':>8}",
        flush=True,
    )


def _matrix_line(cell: Cell, ours: Rates, theirs: Rates) -> None:
    cpu = []
    for mine, mock in ((ours.produce_us(), theirs.produce_us()), (ours.consume_us(), theirs.consume_us())):
        if mine is None or mock is None or mock <= 0:
            cpu.append(f"{'n/a':>22}")
        else:
            cpu.append(f"{mine:>6.3f} {mock:>6.3f} {mine / mock:>8.2f}")
    print(
        f"{cell.label():<24} {ours.produce_msgs():>10,.0f} {theirs.produce_msgs():>10,.0f} "
        f"{ours.consume_msgs():>10,.0f} {theirs.consume_msgs():>10,.0f} {cpu[0]} {cpu[1]}",
        flush=True,
    )


def _report_matrix(args: argparse.Namespace, cells: list[tuple[Cell, list[Rates], list[Rates]]]) -> int:
    best = [(cell, _best(ours), _best(theirs)) for cell, ours, theirs in cells]
    if args.repeat > 1:
        print(f"best of {args.repeat} rounds (rates: best; CPU per message: least):")
        _print_matrix_header()
        for cell, ours, theirs in best:
            _matrix_line(cell, ours, theirs)
    status = 0
    cpu_ratios: list[float] = []
    for phase in ("produce", "consume"):
        ratios = []
        for cell, ours, theirs in best:
            mine, mock = ours.phase_us(phase), theirs.phase_us(phase)
            if mine is not None and mock is not None and mock > 0:
                ratios.append((mine / mock, cell))
        if not ratios:
            print(f"{phase} broker CPU per message ours/mock: not measured (no /proc?)")
            continue
        worst, worst_cell = max(ratios, key=lambda item: item[0])
        met = sum(1 for ratio, _ in ratios if ratio <= 1.0)
        cpu_ratios += [ratio for ratio, _ in ratios]
        print(
            f"{phase} broker CPU per message ours/mock: worst {worst:.2f} ({worst_cell.label()}), "
            f"{met}/{len(ratios)} cells at or below 1.0  (target <= 1.0 in every cell)",
            flush=True,
        )
    rate_ratios = [
        min(ours.produce_msgs() / theirs.produce_msgs(), ours.consume_msgs() / theirs.consume_msgs())
        for _, ours, theirs in best
    ]
    print(f"lowest rate ratio ours/mock over the cells: {min(rate_ratios):.3f}", flush=True)
    if args.min_ratio is not None and min(rate_ratios) < args.min_ratio:
        print(f"bench_throughput: a ratio is below --min-ratio {args.min_ratio}", file=sys.stderr)
        status = 3
    if _cpu_ratio_exceeded(args, cpu_ratios):
        status = 3
    return status


# -- lines ------------------------------------------------------------------------------------


def _best(rounds: list[Rates]) -> Rates:
    first = rounds[0]
    return Rates(
        min(r.produce_s for r in rounds),
        min(r.consume_s for r in rounds),
        first.messages,
        first.size,
        _least([r.produce_cpu for r in rounds]),
        _least([r.consume_cpu for r in rounds]),
    )


def _least(values: list[float | None]) -> float | None:
    return None if None in values else min(v for v in values if v is not None)


def _cpu_line(phase: str, plain: float | None, quotas: float | None, messages: int) -> str | None:
    """Broker CPU per message without and with quotas, while the clock runs: steadier than
    wall-clock rates on a small machine where the client competes with the broker for the
    cores."""
    if plain is None or quotas is None or quotas <= 0:
        return None
    return (
        f"{phase} broker CPU per message: {plain / messages * 1e6:.2f} us without quotas, "
        f"{quotas / messages * 1e6:.2f} us with; ratio without/with {plain / quotas:.3f}"
    )


def _print_setup(args: argparse.Namespace, n_topics: int, partitions: int) -> None:
    import confluent_kafka

    per_partition = args.messages * (args.size + RECORD_OVERHEAD) / (n_topics * partitions)
    mode = (
        f"transactional ({args.transactional:,} per transaction), acks=all"
        if args.transactional
        else "acks=1"
    )
    print(
        f"bench_throughput: {args.messages:,} x {args.size} B messages, {mode}, linger.ms=5, "
        f"{n_topics} topics x {partitions} partitions (~{per_partition / 2**20:.2f} MiB each); "
        f"confluent-kafka {confluent_kafka.version()}, librdkafka {confluent_kafka.libversion()[0]}",
        flush=True,
    )
    if per_partition > MOCK_PARTITION_MAX_BYTES * RETENTION_BUDGET:
        print(
            "warning: near or over the 5 MiB librdkafka's mock keeps per partition; raise --topics",
            flush=True,
        )
    print(
        f"{'target':<26} {'produce msg/s':>14} {'MB/s':>8} {'consume msg/s':>14} {'MB/s':>8} "
        f"{'broker CPU us/msg (produce, consume)':>37}",
        flush=True,
    )


def _report_line(name: str, rates: Rates, threads: bool = False) -> None:
    cpu = ""
    produce_us, consume_us = rates.produce_us(), rates.consume_us()
    if produce_us is not None and consume_us is not None:
        cpu = f"{produce_us:>27.3f} {consume_us:>9.3f}"
    print(
        f"{name:<26} {rates.produce_msgs():>14,.0f} {rates.produce_mb():>8.1f} "
        f"{rates.consume_msgs():>14,.0f} {rates.consume_mb():>8.1f} {cpu}".rstrip(),
        flush=True,
    )
    if threads:
        _thread_lines(name, rates)


def _thread_lines(name: str, rates: Rates) -> None:
    """The run's broker CPU per thread name, most first (threads under 1 ms left out)."""
    for phase, spent in (("produce", rates.produce_threads), ("consume", rates.consume_threads)):
        if not spent:
            continue
        shown = sorted(((s, n) for n, s in spent.items() if s >= 0.001), reverse=True)
        per_thread = ", ".join(f"{n} {s * 1e3:.1f} ms" for s, n in shown) or "every thread under 1 ms"
        print(f"  {name}, {phase} CPU by thread: {per_thread}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
