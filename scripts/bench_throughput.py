#!/usr/bin/env python3
"""Throughput of this broker against librdkafka's built-in mock cluster, same client, same run.

confluent-kafka produces N messages of B bytes (acks=1, linger.ms=5) and a consumer reads
them all back, first against this broker (a `python -m broker` subprocess, so client and
broker do not share a GIL), then against librdkafka's mock cluster
(`test.mock.num.brokers=1`, which runs in its own C threads). Prints both rates and the
ratios ours/theirs; the target is >= 0.5 for produce and for consume.

Each round also runs this broker a second time with client quotas configured but not
binding, and prints the ratio quotas/no quotas (target >= 0.95): the cost of quota
enforcement on the request path. Before that run the benchmark's client-id
(`bench-throughput`, used by its producer and consumer in every run) gets
producer_byte_rate and consumer_byte_rate of 10^12 bytes/s and request_percentage of
10^6 %, far above what one broker process can serve, and `--quota-entities` other
entities (default 300: a third users, a third client-ids, a third user + client-id pairs,
with ordinary values) are set, all over the wire with AlterClientQuotas. So every produce
and fetch is measured against its sensors (request size, response size, request thread
time) with the resolution walking a precedence list that has several families
configured, and nothing is ever throttled. The two runs of this broker alternate which
goes first from round to round; use `--repeat 3` (best of each) for figures to quote.
The broker's CPU time per message while each phase's clock runs (from /proc, least of the
rounds) is printed for both runs as well: on a small machine where client and broker
compete for the cores it shows the overhead more steadily than the wall-clock rates (and
how far the broker is from being the bottleneck). It includes one-time costs of the
first requests (kafka-python's protocol code generation), the same in both runs.

Run it with the project's Python (the broker's dependencies and confluent-kafka must be
importable):

    .venv/bin/python scripts/bench_throughput.py                 # 1,000,000 x 100 B
    .venv/bin/python scripts/bench_throughput.py --repeat 3      # figures to quote
    .venv/bin/python scripts/bench_throughput.py --quick         # 100,000 x 100 B smoke run
    .venv/bin/python scripts/bench_throughput.py --messages 20000 --size 100 --topics 4
    .venv/bin/python scripts/bench_throughput.py --quota-entities 3000  # more quota entities
    .venv/bin/python scripts/bench_throughput.py --transactional 1000  # transactions, read_committed

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
- Messages go round-robin over every (topic, partition) with an explicit partition, so
  both brokers see the same batches. No per-message delivery callback (its Python cost
  would be the same on both sides and only hide the brokers' difference); delivery
  failures are caught by `flush()` leaving messages behind, by the error callback, and by
  the consumer having to read back exactly N messages.
- Produce rate: first `produce()` to `flush()` returning. Consume rate: `assign()` of every
  partition at offset 0 to the N-th message (a `group.id` is set, nothing is committed).
  The consumer sets `fetch.queue.backoff.ms=10`: the Python loop drains slower than
  either broker fills librdkafka's prefetch queue, and with the default 1 s backoff on a
  full queue those pauses, not the brokers, set both rates (about 250k msg/s either way).
- MB/s counts payload bytes only (N x B), in 10^6 bytes.

With `--transactional N` the producer is transactional (acks=all, idempotent), commits
every N messages, and the consumer reads read_committed; only this broker plain and the
mock run, and the stored-offsets check counts each transaction's markers.

Exit status: 0 when every run completed (whatever the ratios, unless `--min-ratio` or
`--min-quota-ratio` is given and not met: 3), 1 when a run failed (timeout, lost messages,
broker did not start, quotas refused).
"""

from __future__ import annotations

import argparse
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

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.acl import CreateAclsRequest

from broker.harness.clients import ClientLog, client_logger, wait_for_topic
from broker.harness.process import BrokerProcess, BrokerProcessError
from broker.harness.wire import quota_alteration, round_trip

MOCK_PARTITION_MAX_BYTES = 5 * 1024 * 1024  # librdkafka rd_kafka_mock_partition_init(): max_size
RETENTION_BUDGET = 0.6  # fill at most this share of it
RECORD_OVERHEAD = 20  # bytes a keyless record adds to its value in a v2 batch, rounded up
STALL_SECONDS = 30.0  # a phase fails when no progress is made for this long
CLIENT_ID = "bench-throughput"  # the producer's and the consumer's, in every run
UNREACHABLE_BYTE_RATE = 1e12  # bytes/s: quotas that are set but never bind
UNREACHABLE_REQUEST_PERCENTAGE = 1e6  # % of one request thread
QUOTA_SETUP_CLIENT_ID = "bench-quota-setup"  # the client-id of the AlterClientQuotas requests


class BenchError(RuntimeError):
    pass


@dataclass
class Rates:
    produce_s: float
    consume_s: float
    messages: int
    size: int
    # CPU seconds this broker's process used in each phase (None for librdkafka's mock,
    # which runs inside this process).
    produce_cpu: float | None = None
    consume_cpu: float | None = None

    def produce_msgs(self) -> float:
        return self.messages / self.produce_s

    def consume_msgs(self) -> float:
        return self.messages / self.consume_s

    def produce_mb(self) -> float:
        return self.messages * self.size / self.produce_s / 1e6

    def consume_mb(self) -> float:
        return self.messages * self.size / self.consume_s / 1e6


def _client_logger(name: str) -> tuple[logging.Logger, ClientLog]:
    """librdkafka's log lines, kept instead of reaching stderr."""
    return client_logger(name, logging.DEBUG)


class LibrdkafkaMock:
    """librdkafka's mock cluster, owned by an idle producer handle for as long as it is needed.

    confluent-kafka has no API for the mock cluster; the handle created with
    `test.mock.num.brokers` logs the address it listens on, and other clients connect to it
    through plain `bootstrap.servers`.
    """

    def __init__(self) -> None:
        logger, self._log = _client_logger("mock-owner")
        self._owner = Producer({"test.mock.num.brokers": 1, "logger": logger})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            self._owner.poll(0.05)
            for line in self._log.lines:
                match = re.search(r"replaced with (\S+)", line)
                if match:
                    self.bootstrap_servers = match.group(1).rstrip(",")
                    return
        raise BenchError("librdkafka's mock cluster did not log its address")

    def close(self) -> None:
        self._owner.flush(1)
        del self._owner


@contextmanager
def start_broker(partitions: int, metrics: bool = False, authorizer: bool = False) -> Iterator[BrokerProcess]:
    """`python -m broker` on a free port, with `partitions` per auto-created topic; with
    `metrics`, the metrics sink writing to a temporary directory; with `authorizer`,
    StandardAuthorizer (its ACLs set by `configure_acls`)."""
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
        with BrokerProcess(*args) as broker:
            broker.wait_listening(timeout=30)
            yield broker


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
    cpu: Callable[[], float | None] | None = None,
    per_transaction: int = 0,
) -> Rates:
    """Produces then consumes `messages` messages of `size` bytes over `topics` at `bootstrap`;
    `cpu` reads the broker's CPU seconds so far, when it has a process of its own. With
    `per_transaction`, a transactional producer commits every that many messages and the
    consumer reads read_committed."""
    produce_cpu: list[float | None] = []
    consume_cpu: list[float | None] = []
    targets, produce_s = produce_phase(
        bootstrap, topics, messages, size, _reader(cpu, produce_cpu), per_transaction
    )
    transactions = math.ceil(messages / per_transaction) if per_transaction else 0
    _check_stored(bootstrap, targets, messages, transactions * min(len(targets), per_transaction))
    consume_s = consume_phase(
        bootstrap, targets, messages, _reader(cpu, consume_cpu), committed_only=per_transaction > 0
    )
    return Rates(produce_s, consume_s, messages, size, _spent(produce_cpu), _spent(consume_cpu))


def _reader(cpu: Callable[[], float | None] | None, into: list[float | None]) -> Callable[[], None]:
    """Called when a phase's clock starts and when it stops."""
    return lambda: into.append(cpu() if cpu is not None else None)


def _spent(readings: list[float | None]) -> float | None:
    if len(readings) != 2 or readings[0] is None or readings[1] is None:
        return None
    return readings[1] - readings[0]


def produce_phase(
    bootstrap: str,
    topics: list[str],
    messages: int,
    size: int,
    clock_edge: Callable[[], None] = lambda: None,
    per_transaction: int = 0,
) -> tuple[list[tuple[str, int]], float]:
    errors: list[str] = []
    plog, plines = _client_logger("producer")
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "client.id": CLIENT_ID,
        "acks": 1,
        "linger.ms": 5,
        "logger": plog,
        "error_cb": lambda err: errors.append(str(err)),
    }
    if per_transaction:  # transactions need acks=all (idempotence)
        config.update({"acks": "all", "transactional.id": f"bench-{os.getpid()}-{time.monotonic_ns()}"})
    producer = Producer(config)
    layout = _create_topics(producer, topics)
    if per_transaction:
        producer.init_transactions(30)
    targets = [(topic, partition) for topic in topics for partition in layout[topic]]
    value = os.urandom(size)

    produce = producer.produce
    poll = producer.poll
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
) -> float:
    errors: list[str] = []
    clog, clines = _client_logger("consumer")
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": CLIENT_ID,
            "group.id": "bench-throughput",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed_only else "read_uncommitted",
            # The Python loop drains slower than either broker fills librdkafka's prefetch
            # queue; on "queue full" the client stops fetching for fetch.queue.backoff.ms
            # (1 s by default), and those pauses, not the brokers, would set both rates.
            "fetch.queue.backoff.ms": 10,
            "logger": clog,
            "error_cb": lambda err: errors.append(str(err)),
        }
    )
    try:
        read = 0
        clock_edge()
        start = time.perf_counter()
        consumer.assign([TopicPartition(t, p, 0) for t, p in targets])
        last_progress = start
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
                    f"consumer stalled at {read}/{messages}; client errors: {errors or clines.errors()}"
                )
        consume_s = time.perf_counter() - start
        clock_edge()
    finally:
        consumer.close()
    if read != messages:
        raise BenchError(f"read {read} messages, {messages} produced")
    return consume_s


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
    parser.add_argument("--messages", type=int, default=None, help="messages to produce (default 1,000,000)")
    parser.add_argument("--size", type=int, default=100, help="bytes per message value (default 100)")
    parser.add_argument(
        "--topics",
        type=int,
        default=None,
        help="topics bench-0.. (default: enough for librdkafka's mock retention)",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 100,000 messages unless --messages")
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
    args = parser.parse_args(argv)
    if args.messages is None:
        args.messages = 100_000 if args.quick else 1_000_000
    if min(args.messages, args.size, args.repeat, args.topics or 1) < 1:
        parser.error("--messages, --size, --topics and --repeat must be positive")
    if args.quota_entities < 0 or args.transactional < 0:
        parser.error("--quota-entities and --transactional must be at least 0")
    return args


OURS = "this broker (subprocess)"
QUOTAS = "this broker, quotas set"
METRICS = "this broker, metrics on"
ACLS = "this broker, 1,000 ACLs"
THEIRS = "librdkafka mock cluster"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: dict[str, list[Rates]] = {OURS: [], QUOTAS: [], METRICS: [], ACLS: [], THEIRS: []}
    try:
        for round_ in range(args.repeat):
            mock = LibrdkafkaMock()
            try:
                if round_ == 0:
                    partitions = probe_mock_partitions(mock.bootstrap_servers)
                    n_topics = args.topics or default_topics(args.messages, args.size, partitions)
                    topics = [f"bench-{i}" for i in range(n_topics)]
                    _print_setup(args, n_topics, partitions)
                # Plain, with quotas and with the metrics sink, rotating which goes first.
                variants = (OURS,) if args.transactional else (OURS, QUOTAS, METRICS, ACLS)
                first = round_ % len(variants)
                for name in variants[first:] + variants[:first]:
                    with start_broker(partitions, metrics=name == METRICS, authorizer=name == ACLS) as broker:
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
                                broker.cpu_seconds,
                                args.transactional,
                            )
                        )
                    _report_line(name, results[name][-1])
                results[THEIRS].append(
                    run(mock.bootstrap_servers, topics, args.messages, args.size, None, args.transactional)
                )
                _report_line(THEIRS, results[THEIRS][-1])
            finally:
                mock.close()
    except (BenchError, BrokerProcessError, KafkaException, OSError) as exc:
        print(f"bench_throughput: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1

    ours, quotas, theirs = results[OURS], results[QUOTAS], results[THEIRS]
    if args.transactional:
        return _report_transactional(args, ours, theirs)
    if args.repeat > 1:
        print(f"best of {args.repeat} rounds:")
        _report_line(OURS, _best(ours))
        _report_line(QUOTAS, _best(quotas))
        _report_line(METRICS, _best(results[METRICS]))
        _report_line(ACLS, _best(results[ACLS]))
        _report_line(THEIRS, _best(theirs))
    produce_ratio = max(r.produce_msgs() for r in ours) / max(r.produce_msgs() for r in theirs)
    consume_ratio = max(r.consume_msgs() for r in ours) / max(r.consume_msgs() for r in theirs)
    print(f"produce ratio ours/theirs: {produce_ratio:.3f}  (target >= 0.5)")
    print(f"consume ratio ours/theirs: {consume_ratio:.3f}  (target >= 0.5)", flush=True)
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
    if args.min_ratio is not None and min(produce_ratio, consume_ratio) < args.min_ratio:
        print(f"bench_throughput: a ratio is below --min-ratio {args.min_ratio}", file=sys.stderr)
        return 3
    return 0


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
    cores (it includes one-time costs of the first requests, the same in both runs)."""
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


def _report_line(name: str, rates: Rates) -> None:
    cpu = ""
    if rates.produce_cpu is not None and rates.consume_cpu is not None:
        per_message = 1e6 / rates.messages
        cpu = f"{rates.produce_cpu * per_message:>27.2f} {rates.consume_cpu * per_message:>9.2f}"
    print(
        f"{name:<26} {rates.produce_msgs():>14,.0f} {rates.produce_mb():>8.1f} "
        f"{rates.consume_msgs():>14,.0f} {rates.consume_mb():>8.1f} {cpu}".rstrip(),
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
