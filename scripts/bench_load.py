#!/usr/bin/env python3
"""Aggregate throughput under load: 8 producer and 8 consumer processes at once, this broker against librdkafka's mock cluster.

N producer processes and N consumer processes (confluent-kafka, default N = 8; this
script's functions in `multiprocessing` "spawn" children) run at once against one broker,
in turn: this broker plain (a `python -m broker` subprocess), this broker with 100 idle
connections and 1,000 quota entities, and librdkafka's mock cluster (in a process of its
own, as in bench_throughput.py), each fresh, the order rotating from round to round.
Producer i writes its share of `--messages` (acks=1, linger.ms=5, the same random value
in each of its messages) round-robin over topics of its own, `load-<i>-0` ..; consumer i
reads producer i's partitions from offset 0 with assign() (no consumer group protocol: a
`group.id` is set, nothing is committed, as in bench_throughput's consume phase) while
they are being written, until it has all of them. Every client process connects and
fetches its topics' metadata first; the clock starts when all are ready and released
together.

Prints per broker the aggregate produce rate (all messages / from the common start to
the last producer's flush() returning) and consume rate (all messages / from the same
start to the last consumer's last message), so both are taken over the same wall-clock
window from one start, and the ratios ours/mock (target >= 1.0). The broker's CPU time
over the whole window (from /proc, as bench_throughput.py reads it: the process's
threads' schedstat run times) divided by the messages (each produced and consumed once)
is printed for both brokers too, with the ratio ours/mock.

The loaded variant: before it, 1,000 quota entities are set over the wire with
AlterClientQuotas (bench_throughput.configure_quotas: the benchmark client-id's with
byte rates and a request percentage far beyond reach, so nothing binds, and 999 users,
client-ids and user + client-id pairs with ordinary values), and 100 plain sockets each
complete an ApiVersions round trip and then sit idle through the run. The mock has no
quotas; it runs plain (`--mock-idle` adds a run of it with the 100 idle connections).

Consumers keep librdkafka's default fetch.wait.max.ms (500 ms; `--fetch-wait-ms` sets
it). A consumer that has caught up with its producer sends a fetch that finds no new
data: this broker answers it as soon as data is appended, as Kafka does, while
librdkafka's mock holds it for the whole fetch.wait.max.ms (a fetch of an empty
partition answered after 500 ms although messages came 20 ms after it). So against the
mock each catch-up can cost a consumer up to 0.5 s; the consume rates include that, and
`--fetch-wait-ms 10` makes it small on both sides.

Before each run a single client produces and reads back a few thousand messages of a
topic of its own (`load-warmup`), so the broker's first-request costs are not in the
window. Topics are auto-created by Metadata before the clock, with the partition count
librdkafka's mock gives (probed first; this broker gets the same `num.partitions`), and
each producer gets enough topics to keep under the 5 MiB per partition the mock retains.

    .venv/bin/python scripts/bench_load.py                 # 2,000,000 x 100 B, under a minute here
    .venv/bin/python scripts/bench_load.py --repeat 3      # figures to quote (best of 3 per target)
    .venv/bin/python scripts/bench_load.py --quick         # 200,000 x 100 B smoke run
    .venv/bin/python scripts/bench_load.py --clients 4 --messages 500000 --size 1024
    .venv/bin/python scripts/bench_load.py --mock-idle     # the mock with 100 idle connections too

or as `scripts/bench_load.py ...` with the virtualenv activated. On a machine with fewer
cores than client processes the clients compete with the broker for CPU: the rates are
those of the whole machine under that load, the same for both brokers; the CPU per
message is the broker's own.

Exit status: 0 when every run completed (whatever the ratios, unless `--min-ratio` is
given and a ratio ours/mock is below it: 3), 1 when a run failed.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import multiprocessing.queues
import multiprocessing.synchronize
import queue
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from multiprocessing.context import SpawnProcess
from pathlib import Path
from typing import Any

import bench_throughput as bt
from confluent_kafka import KafkaException, Producer
from kafka.protocol.metadata import ApiVersionsRequest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support (not installed)
from tests.support.clients import client_logger, wait_for_topic  # noqa: E402
from tests.support.process import BrokerProcessError  # noqa: E402
from tests.support.wire import round_trip  # noqa: E402

READY_SECONDS = 120.0  # every client process connected and saw its topics within this
IDLE_CLIENT_ID = "bench-load-idle"
WARMUP_MESSAGES = 5000


@dataclass
class Load:
    """One run: the aggregate rates from the common start, and the broker's CPU."""

    messages: int
    size: int
    produce_s: float  # common start to the last producer done
    consume_s: float  # common start to the last consumer done
    cpu: float | None  # broker CPU seconds over [start, last consumer done]

    def produce_msgs(self) -> float:
        return self.messages / self.produce_s

    def consume_msgs(self) -> float:
        return self.messages / self.consume_s

    def cpu_us(self) -> float | None:
        """Broker CPU microseconds per message (produced once and consumed once)."""
        return None if self.cpu is None else self.cpu / self.messages * 1e6


# -- the client processes -------------------------------------------------------------------


def client_process(
    role: str,
    index: int,
    bootstrap: str,
    topics: list[str],
    targets: list[tuple[str, int]],
    messages: int,
    size: int,
    consumer_overrides: dict[str, object],
    go: multiprocessing.synchronize.Event,
    release: multiprocessing.synchronize.Event,
    reports: multiprocessing.queues.Queue[tuple[Any, ...]],
) -> None:
    """One producer ("produce": `messages` over `topics`) or consumer ("consume": `messages`
    from `targets`), run with bench_throughput's phase functions. Reports ("ready", role,
    index) once connected, waits for `go`, reports ("done", role, index, start, end) in
    monotonic seconds, holds its client until `release`, and ends with ("exit", role, index,
    error or None)."""
    edges: list[float] = []

    def clock_edge() -> None:
        if not edges:
            reports.put(("ready", role, index))
            if not go.wait(READY_SECONDS * 2):
                raise bt.BenchError("never started")
            edges.append(time.monotonic())
        else:
            edges.append(time.monotonic())
            reports.put(("done", role, index, edges[0], edges[1]))
            release.wait(READY_SECONDS * 2)

    error = None
    try:
        if role == "produce":
            bt.produce_phase(bootstrap, topics, messages, size, clock_edge)
        else:
            bt.consume_phase(bootstrap, targets, messages, clock_edge, overrides=consumer_overrides)
    except Exception as exc:  # reported to the parent, which fails the run
        error = f"{role} {index}: {type(exc).__name__}: {exc}"
    reports.put(("exit", role, index, error))


def run_load(
    bootstrap: str,
    layout: list[list[tuple[str, int]]],
    shares: list[int],
    size: int,
    cpu: Callable[[], bt.CpuSample | None],
    consumer_overrides: dict[str, object],
) -> Load:
    """Producer i writes shares[i] messages over the partitions layout[i], consumer i reads
    them; all start together. `cpu()` samples the broker's CPU (bench_throughput.CpuSample)."""
    context = multiprocessing.get_context("spawn")
    go, release = context.Event(), context.Event()
    reports: multiprocessing.queues.Queue[tuple[Any, ...]] = context.Queue()
    processes: list[SpawnProcess] = []
    for role in ("consume", "produce"):
        for index, targets in enumerate(layout):
            topics = sorted({topic for topic, _ in targets})
            process = context.Process(
                target=client_process,
                args=(
                    role,
                    index,
                    bootstrap,
                    topics,
                    targets,
                    shares[index],
                    size,
                    consumer_overrides,
                    go,
                    release,
                    reports,
                ),
                name=f"bench-load-{role}-{index}",
                daemon=True,
            )
            process.start()
            processes.append(process)
    try:
        expected = len(processes)
        _collect(reports, "ready", expected, READY_SECONDS)
        before = cpu()
        start = time.monotonic()
        go.set()
        done = _collect(reports, "done", expected, bt.STALL_SECONDS * 4)
        after = cpu()
        release.set()
        errors = [report[3] for report in _collect(reports, "exit", expected, 60) if report[3]]
        if errors:
            raise bt.BenchError("; ".join(errors))
        for process in processes:
            process.join(10)
    finally:
        go.set()
        release.set()
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join(5)
    ends = {role: max(r[4] for r in done if r[1] == role) for role in ("produce", "consume")}
    spent = bt.cpu_seconds_between(before, after) if before is not None and after is not None else None
    return Load(sum(shares), size, ends["produce"] - start, ends["consume"] - start, spent)


def _collect(
    reports: multiprocessing.queues.Queue[tuple[Any, ...]], kind: str, count: int, quiet_seconds: float
) -> list[tuple[Any, ...]]:
    """`count` reports of `kind`; an "exit" with an error before them fails the run, as does
    no report at all for `quiet_seconds`."""
    found: list[tuple[Any, ...]] = []
    while len(found) < count:
        try:
            report = reports.get(timeout=quiet_seconds)
        except queue.Empty:
            raise bt.BenchError(
                f"{count - len(found)} client processes not {kind} after {quiet_seconds:g} s"
            ) from None
        if report[0] == kind:
            found.append(report)
        elif report[0] == "exit" and report[3]:
            raise bt.BenchError(report[3])
    return found


# -- set-up ---------------------------------------------------------------------------------


def create_layout(bootstrap: str, clients: int, topics_each: int) -> list[list[tuple[str, int]]]:
    """Auto-creates every producer's topics (Metadata); returns each producer's partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "logger": client_logger("layout")[0]})
    try:
        deadline = time.monotonic() + 60
        return [
            [
                (topic, partition)
                for topic in (f"load-{i}-{j}" for j in range(topics_each))
                for partition in wait_for_topic(producer, topic, deadline)
            ]
            for i in range(clients)
        ]
    finally:
        producer.flush(1)


@contextmanager
def idle_connections(bootstrap: str, count: int) -> Iterator[list[socket.socket]]:
    """`count` sockets that each completed an ApiVersions round trip, open until the end."""
    host, _, port = bootstrap.rpartition(":")
    with ExitStack() as stack:
        sockets = []
        for i in range(count):
            sock = stack.enter_context(socket.create_connection((host, int(port)), timeout=30))
            response = round_trip(sock, ApiVersionsRequest[0](), i + 1, IDLE_CLIENT_ID)
            if response.error_code:
                raise bt.BenchError(f"ApiVersions on an idle connection: error {response.error_code}")
            sockets.append(sock)
        yield sockets


def warm_up(bootstrap: str, size: int) -> None:
    """A single client produces and reads back WARMUP_MESSAGES, outside the window."""
    bt.run(bootstrap, ["load-warmup"], WARMUP_MESSAGES, size)


# -- main -----------------------------------------------------------------------------------

OURS = "this broker"
LOADED = "this broker, 100 idle conns, 1,000 quotas"
THEIRS = "librdkafka mock cluster"
THEIRS_IDLE = "librdkafka mock, 100 idle conns"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench_load", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--clients", type=int, default=8, help="producer processes, and as many consumers (8)"
    )
    parser.add_argument(
        "--messages", type=int, default=None, help="messages in all, split over the producers (2,000,000)"
    )
    parser.add_argument("--size", type=int, default=100, help="bytes per message value (100)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 200,000 messages unless --messages")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best of each target is compared")
    parser.add_argument(
        "--idle-connections", type=int, default=100, help="idle connections in the loaded run (100)"
    )
    parser.add_argument(
        "--quota-entities", type=int, default=1000, help="quota entities in the loaded run, in all (1,000)"
    )
    parser.add_argument(
        "--fetch-wait-ms",
        type=int,
        default=None,
        help="the consumers' fetch.wait.max.ms (default: librdkafka's, 500)",
    )
    parser.add_argument(
        "--mock-idle", action="store_true", help="also run the mock with the idle connections"
    )
    parser.add_argument(
        "--min-ratio",
        type=float,
        default=None,
        help="exit 3 when a ratio ours/mock is below this (default: report only)",
    )
    args = parser.parse_args(argv)
    if args.messages is None:
        args.messages = 200_000 if args.quick else 2_000_000
    if min(args.clients, args.messages, args.size, args.repeat, args.quota_entities) < 1:
        parser.error("--clients, --messages, --size, --repeat and --quota-entities must be positive")
    if args.messages < args.clients:
        parser.error("--messages must be at least --clients")
    if args.idle_connections < 0:
        parser.error("--idle-connections must be at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    shares = [args.messages // args.clients + (i < args.messages % args.clients) for i in range(args.clients)]
    targets = (OURS, LOADED, THEIRS, THEIRS_IDLE) if args.mock_idle else (OURS, LOADED, THEIRS)
    results: dict[str, list[Load]] = {name: [] for name in targets}
    try:
        probe = bt.LibrdkafkaMock()
        try:  # the mock's default partition count; this broker is started with it
            partitions = bt.probe_mock_partitions(probe.bootstrap_servers)
        finally:
            probe.close()
        topics_each = bt.default_topics(shares[0], args.size, partitions)
        _print_setup(args, shares, topics_each, partitions)
        for round_ in range(args.repeat):
            first = round_ % len(targets)
            for name in targets[first:] + targets[:first]:
                results[name].append(_run_target(name, args, shares, partitions, topics_each))
                _report_line(name, results[name][-1])
    except (bt.BenchError, BrokerProcessError, KafkaException, OSError, TimeoutError) as exc:
        print(f"bench_load: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    return _report(args, results)


def _run_target(
    name: str, args: argparse.Namespace, shares: list[int], partitions: int, topics_each: int
) -> Load:
    """One run against a fresh broker or mock, set up as `name` says."""
    with ExitStack() as stack:
        cpu: Callable[[], bt.CpuSample | None]
        if name in (THEIRS, THEIRS_IDLE):
            mock = bt.LibrdkafkaMock()
            stack.callback(mock.close)
            bootstrap, cpu = mock.bootstrap_servers, mock.cpu
        else:
            broker = stack.enter_context(bt.start_broker(partitions))
            bootstrap, cpu = broker.bootstrap_servers(), functools.partial(bt.cpu_sample, broker.pid)
        if name == LOADED:
            bt.configure_quotas(bootstrap, args.quota_entities - 1)
        if name in (LOADED, THEIRS_IDLE):
            stack.enter_context(idle_connections(bootstrap, args.idle_connections))
        layout = create_layout(bootstrap, args.clients, topics_each)
        warm_up(bootstrap, args.size)
        overrides: dict[str, object] = {}
        if args.fetch_wait_ms is not None:
            overrides["fetch.wait.max.ms"] = args.fetch_wait_ms
        return run_load(bootstrap, layout, shares, args.size, cpu, overrides)


def _report(args: argparse.Namespace, results: dict[str, list[Load]]) -> int:
    best = {name: _best(rounds) for name, rounds in results.items()}
    if args.repeat > 1:
        print(f"best of {args.repeat} rounds (rates: best; CPU per message: least):")
        for name, load in best.items():
            _report_line(name, load)
    loaded = f"{args.idle_connections} idle connections, {args.quota_entities:,} quota entities"
    pairs = [(OURS, "plain", THEIRS, "mock"), (LOADED, loaded, THEIRS, "mock")]
    if THEIRS_IDLE in best:
        pairs.append((LOADED, loaded, THEIRS_IDLE, f"mock with {args.idle_connections} idle connections"))
    ratios = []
    for name, label, reference, reference_label in pairs:
        ours, mock = best[name], best[reference]
        produce, consume = (
            ours.produce_msgs() / mock.produce_msgs(),
            ours.consume_msgs() / mock.consume_msgs(),
        )
        ratios += [produce, consume]
        print(f"produce ratio ours ({label})/{reference_label}: {produce:.3f}  (target >= 1.0)")
        print(f"consume ratio ours ({label})/{reference_label}: {consume:.3f}  (target >= 1.0)", flush=True)
    for name, label, reference, reference_label in pairs:
        mine, theirs = best[name].cpu_us(), best[reference].cpu_us()
        if mine is not None and theirs is not None and theirs > 0:
            print(
                f"broker CPU per message ours ({label})/{reference_label}: {mine:.3f} / {theirs:.3f} us "
                f"= {mine / theirs:.2f}  (issue 20's CPU per message target: <= 1.0)",
                flush=True,
            )
    wait_ms = 500 if args.fetch_wait_ms is None else args.fetch_wait_ms
    if wait_ms > 50:
        print(
            f"note: librdkafka's mock answers a fetch that finds no new data only after fetch.wait.max.ms "
            f"({wait_ms} ms), this broker as soon as data comes: consumers that catch up with their "
            "producer wait longer on the mock (--fetch-wait-ms 10 makes that small)",
            flush=True,
        )
    if args.min_ratio is not None and min(ratios) < args.min_ratio:
        print(f"bench_load: a ratio is below --min-ratio {args.min_ratio}", file=sys.stderr)
        return 3
    return 0


def _best(rounds: list[Load]) -> Load:
    cpus = [r.cpu for r in rounds]
    return Load(
        rounds[0].messages,
        rounds[0].size,
        min(r.produce_s for r in rounds),
        min(r.consume_s for r in rounds),
        None if None in cpus else min(c for c in cpus if c is not None),
    )


def _print_setup(args: argparse.Namespace, shares: list[int], topics_each: int, partitions: int) -> None:
    import confluent_kafka

    print(
        f"bench_load: {args.clients} producer and {args.clients} consumer processes at once, "
        f"{args.messages:,} x {args.size} B in all ({shares[0]:,} per producer over {topics_each} topics x "
        f"{partitions} partitions), acks=1, linger.ms=5, fetch.wait.max.ms="
        f"{500 if args.fetch_wait_ms is None else args.fetch_wait_ms}; confluent-kafka {confluent_kafka.version()}, "
        f"librdkafka {confluent_kafka.libversion()[0]}",
        flush=True,
    )
    print(
        f"{'target':<42} {'produce msg/s':>14} {'MB/s':>7} {'consume msg/s':>14} {'MB/s':>7} "
        f"{'window s':>9} {'broker CPU s':>13} {'CPU us/msg':>11}",
        flush=True,
    )


def _report_line(name: str, load: Load) -> None:
    cpu_us = load.cpu_us()
    cpu = "" if load.cpu is None or cpu_us is None else f"{load.cpu:>13.3f} {cpu_us:>11.3f}"
    print(
        f"{name:<42} {load.produce_msgs():>14,.0f} {load.produce_msgs() * load.size / 1e6:>7.1f} "
        f"{load.consume_msgs():>14,.0f} {load.consume_msgs() * load.size / 1e6:>7.1f} "
        f"{load.consume_s:>9.2f} {cpu}".rstrip(),
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
