#!/usr/bin/env python3
"""Broker memory: RSS growth per retained byte, and RSS over a long produce run under retention.

    .venv/bin/python scripts/bench_memory.py                    # (a) 1 GB, then (b) 600 s
    .venv/bin/python scripts/bench_memory.py --quick            # (a) 1 GB, then (b) 60 s
    .venv/bin/python scripts/bench_memory.py --bytes 100e6 --duration 30   # smoke run
    .venv/bin/python scripts/bench_memory.py --only retained    # or --only retention

Both parts run this broker as a `python -m broker` subprocess and read its resident set
from /proc/<pid>/status (VmRSS; VmHWM, the peak, is printed too). confluent-kafka
produces 1 KiB records (incompressible random bytes, no compression, acks=1,
linger.ms=5) round-robin over every partition of `--topics` topics with `--partitions`
partitions each (default 4 x 4), auto-created before the clock starts. The producer's
own queue is held to 64 MiB so that this process's memory stays small as well.

(a) Retained data: the broker runs with log.retention.bytes=-1 and keeps everything.
The baseline RSS is read once the topics exist (after start-up and one Metadata round
per topic), then `--bytes` of record values (default 10^9) are produced and flushed,
and after a 2 s settle RSS is read again. The data retained is what the broker reports
for its partitions in DescribeLogDirs (the log size, as Kafka's would be on disk: the
values plus the record and batch framing); the target is RSS growth <= 1.1 x that. The
growth per payload byte is printed as well.

(b) Flat under retention: the broker runs with log.retention.bytes=`--retention-bytes`
per partition (default 64 MiB; 16 partitions x 64 MiB = 1 GiB held at steady state, so
`--topics 1 --partitions 4` on a small machine) and
log.retention.check.interval.ms=1000, and records are produced without pause for
`--duration` s (600; `--quick` 60) while RSS is sampled every `--interval` s (5; quick
2). With W = 60 s (a quarter of the duration when that is shorter), it prints the median
RSS of the samples in the first W, in the second W (the reference: the value after
the first window, once retention has started deleting) and in the last W, and the
growth last/reference - 1; the target is flat: within 10 %. A warning is printed when
less than the retention limit of every partition had been produced by the end of the
first window (then the reference is still on the ramp: raise --duration or lower
--retention-bytes).

Exit status: 0 when the runs completed (whatever the figures; with `--check`, 3 when a
target is missed), 1 on a failure (broker did not start, delivery errors, not enough
memory for --bytes).
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException, Producer
from kafka.protocol.admin import DescribeLogDirsRequest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support (not installed)
from tests.support.clients import client_logger, wait_for_topic  # noqa: E402
from tests.support.process import BrokerProcess, BrokerProcessError  # noqa: E402
from tests.support.wire import round_trip  # noqa: E402

RECORD_BYTES = 1024
RETAINED_TARGET = 1.1
FLAT_TARGET = 0.10
WINDOW_S = 60.0
SETTLE_S = 2.0
CLIENT_ID = "bench-memory"
EXTRA_OVERRIDES: list[str] = []  # --override, for both parts


class BenchError(RuntimeError):
    pass


def status_kib(pid: int, key: str) -> int:
    """A `/proc/<pid>/status` field in KiB (VmRSS, VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise BenchError(f"no {key} in /proc/{pid}/status")


def rss(pid: int) -> int:
    return status_kib(pid, "VmRSS") * 1024


def rss_breakdown(pid: int) -> dict[str, int]:
    """Resident bytes by kind of mapping (/proc/<pid>/smaps): the malloc heap, anonymous
    mappings of 4 MiB and more (the log's segments are 64 KiB-16 MiB mmaps; the large
    ones), the other anonymous ones, and files (the interpreter, libraries)."""
    found = {"heap": 0, "anonymous >= 4 MiB": 0, "anonymous < 4 MiB": 0, "files": 0}
    kind = "files"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        parts = line.split()
        if parts and not parts[0].endswith(
            ":"
        ):  # a mapping's first line: range perms offset dev inode [path]
            low, _, high = parts[0].partition("-")
            path = parts[5] if len(parts) > 5 else ""
            if path == "[heap]":
                kind = "heap"
            elif path.startswith("/"):
                kind = "files"
            elif path:
                kind = "anonymous < 4 MiB"  # [stack], [vdso], ...
            else:
                big = int(high, 16) - int(low, 16) >= 4 * 2**20
                kind = "anonymous >= 4 MiB" if big else "anonymous < 4 MiB"
        elif parts and parts[0] == "Rss:":
            found[kind] += int(parts[1]) * 1024
    return found


def breakdown_line(before: dict[str, int], after: dict[str, int]) -> str:
    return "RSS growth by mapping: " + ", ".join(
        f"{kind} {mib(after[kind] - before[kind])}" for kind in after
    )


def available_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def mib(value: float) -> str:
    return f"{value / 2**20:,.1f} MiB"


def start_broker(*overrides: str) -> BrokerProcess:
    args = ["--port", "0"]
    for override in (*overrides, *EXTRA_OVERRIDES):
        args += ["--override", override]
    broker = BrokerProcess(*args)
    try:
        broker.wait_listening(timeout=30)
    except BrokerProcessError:
        broker.kill()
        raise
    return broker


def log_size(broker: BrokerProcess) -> int:
    """Bytes the broker reports for all its partitions (DescribeLogDirs v4, every topic)."""
    with socket.create_connection(broker.address(), timeout=30) as sock:
        response = round_trip(sock, DescribeLogDirsRequest[4](topics=None), 1, CLIENT_ID)
    if response.error_code:
        raise BenchError(f"DescribeLogDirs answered error {response.error_code}")
    return sum(p.partition_size for d in response.results for t in d.topics for p in t.partitions)


@dataclass
class Production:
    """A producer writing 1 KiB records round-robin over every partition of the topics."""

    bootstrap: str
    topics: list[str]
    produced: int = 0  # records handed to produce()
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        logger, self.log = client_logger("memory-producer")
        self.producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": CLIENT_ID,
                "acks": 1,
                "linger.ms": 5,
                "queue.buffering.max.kbytes": 65536,
                "logger": logger,
                "error_cb": lambda err: self.errors.append(str(err)),
            }
        )
        deadline = time.monotonic() + 30
        self.targets = [
            (topic, partition)
            for topic in self.topics
            for partition in wait_for_topic(self.producer, topic, deadline)
        ]
        self.value = os.urandom(RECORD_BYTES)

    def produce(self, count: int) -> None:
        """Hands `count` more records to the producer, waiting when its queue is full."""
        producer, value, targets = self.producer, self.value, self.targets
        n = len(targets)
        start = self.produced
        for i in range(start, start + count):
            topic, partition = targets[i % n]
            while True:
                try:
                    producer.produce(topic, value, partition=partition, on_delivery=self._delivered)
                    break
                except BufferError:
                    producer.poll(0.01)
            if i & 1023 == 0:
                producer.poll(0)
        self.produced += count
        if self.errors:
            raise BenchError(f"producer errors: {self.errors[:3]}")

    def _delivered(self, err: object, _message: object) -> None:
        if err is not None:
            self.errors.append(str(err))

    def flush(self) -> None:
        left = self.producer.flush(120)
        if left or self.errors:
            raise BenchError(f"{left} records not delivered; errors: {self.errors[:3] or self.log.errors()}")


# -- (a) --------------------------------------------------------------------------------------


def retained(args: argparse.Namespace) -> bool:
    topics = [f"memory-{i}" for i in range(args.topics)]
    records = math.ceil(args.bytes / RECORD_BYTES)
    payload = records * RECORD_BYTES
    print(
        f"(a) retained data: {records:,} x {RECORD_BYTES} B = {payload / 1e9:.3f} GB of values, "
        f"{args.topics} topics x {args.partitions} partitions, log.retention.bytes=-1",
        flush=True,
    )
    with start_broker("log.retention.bytes=-1", f"num.partitions={args.partitions}") as broker:
        production = Production(broker.bootstrap_servers(), topics)
        time.sleep(SETTLE_S / 4)
        baseline, mappings = rss(broker.pid), rss_breakdown(broker.pid)
        start = time.perf_counter()
        step = 10_000
        while production.produced < records:
            production.produce(min(step, records - production.produced))
        production.flush()
        elapsed = time.perf_counter() - start
        time.sleep(SETTLE_S)
        after, peak = rss(broker.pid), status_kib(broker.pid, "VmHWM") * 1024
        mappings_after = rss_breakdown(broker.pid)
        stored = log_size(broker)
    growth = after - baseline
    ratio = growth / stored
    print(
        f"    produced in {elapsed:.1f} s ({payload / elapsed / 1e6:.0f} MB/s); "
        f"log size (DescribeLogDirs) {stored / 1e9:.3f} GB ({stored / payload:.3f} x the values)"
    )
    print(f"    RSS baseline {mib(baseline)}, after {mib(after)}, peak {mib(peak)}; growth {mib(growth)}")
    print(
        f"    RSS growth / log size: {ratio:.3f} (target <= {RETAINED_TARGET}); "
        f"/ values: {growth / payload:.3f}; peak growth / log size: {(peak - baseline) / stored:.3f}"
    )
    print(f"    {breakdown_line(mappings, mappings_after)}", flush=True)
    return ratio <= RETAINED_TARGET


# -- (b) --------------------------------------------------------------------------------------


def retention(args: argparse.Namespace) -> bool:
    topics = [f"retention-{i}" for i in range(args.topics)]
    partitions = args.topics * args.partitions
    limit = partitions * args.retention_bytes
    window = min(WINDOW_S, args.duration / 4)
    print(
        f"(b) under retention: log.retention.bytes={args.retention_bytes:,} per partition, "
        f"{partitions} partitions ({mib(limit)} held at most), producing for {args.duration:g} s, "
        f"RSS every {args.interval:g} s, windows of {window:g} s",
        flush=True,
    )
    samples: list[tuple[float, int, int]] = []  # (seconds, RSS bytes, bytes produced)
    with start_broker(
        f"log.retention.bytes={args.retention_bytes}",
        "log.retention.check.interval.ms=1000",
        f"num.partitions={args.partitions}",
    ) as broker:
        production = Production(broker.bootstrap_servers(), topics)
        baseline, mappings = rss(broker.pid), rss_breakdown(broker.pid)
        print(f"    {'t s':>6} {'RSS':>12} {'produced':>12}   (baseline RSS {mib(baseline)})", flush=True)
        start = time.perf_counter()
        next_sample = start + args.interval
        while True:
            production.produce(2_000)
            now = time.perf_counter()
            if now >= next_sample:
                sample = (now - start, rss(broker.pid), production.produced * RECORD_BYTES)
                samples.append(sample)
                print(f"    {sample[0]:>6.1f} {mib(sample[1]):>12} {mib(sample[2]):>12}", flush=True)
                next_sample += args.interval
                if now - start >= args.duration:
                    break
        production.flush()
        stored = log_size(broker)
        peak = status_kib(broker.pid, "VmHWM") * 1024
        mappings_after = rss_breakdown(broker.pid)
    first = [r for t, r, _ in samples if t < window]
    second = [r for t, r, _ in samples if window <= t < 2 * window]
    last = [r for t, r, _ in samples if t >= args.duration - window]
    if not first or not second or not last:
        raise BenchError("too few samples: raise --duration or lower --interval")
    reference = statistics.median(second)
    growth = statistics.median(last) / reference - 1
    produced_by_window = max((p for t, _, p in samples if t < window), default=0)
    print(
        f"    median RSS: first {window:g} s {mib(statistics.median(first))}, "
        f"next {window:g} s {mib(reference)} (reference), last {window:g} s {mib(statistics.median(last))}; "
        f"peak {mib(peak)}"
    )
    print(
        f"    growth last/reference: {growth * 100:+.1f} % (target within +/-{FLAT_TARGET * 100:g} %); "
        f"produced {mib(production.produced * RECORD_BYTES)}, retained at the end {mib(stored)} "
        f"(limit {mib(limit)})"
    )
    print(f"    {breakdown_line(mappings, mappings_after)} (from start to end)", flush=True)
    if produced_by_window < limit:
        print(
            f"    warning: only {mib(produced_by_window)} produced in the first window, less than the "
            "retention limit: the reference is still on the ramp (raise --duration, lower --retention-bytes)",
            flush=True,
        )
    return abs(growth) <= FLAT_TARGET


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench_memory",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--bytes", type=float, default=1e9, help="(a) bytes of record values (default 1e9)")
    parser.add_argument("--topics", type=int, default=4, help="topics (default 4)")
    parser.add_argument("--partitions", type=int, default=4, help="partitions per topic (default 4)")
    parser.add_argument(
        "--retention-bytes", type=int, default=64 * 2**20, help="(b) log.retention.bytes (default 64 MiB)"
    )
    parser.add_argument("--duration", type=float, default=None, help="(b) seconds (default 600)")
    parser.add_argument("--interval", type=float, default=None, help="(b) seconds between samples (5)")
    parser.add_argument("--quick", action="store_true", help="(b) 60 s, a sample every 2 s unless given")
    parser.add_argument("--only", choices=("retained", "retention"), help="run one part only")
    parser.add_argument("--check", action="store_true", help="exit 3 when a target is missed")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config for both parts (repeatable), e.g. record.requests.max=0",
    )
    args = parser.parse_args(argv)
    if args.duration is None:
        args.duration = 60.0 if args.quick else 600.0
    if args.interval is None:
        args.interval = 2.0 if args.quick else 5.0
    args.bytes = int(args.bytes)
    if min(args.bytes, args.topics, args.partitions, args.retention_bytes) < 1 or args.interval <= 0:
        parser.error("--bytes, --topics, --partitions, --retention-bytes and --interval must be positive")
    if args.duration < 4 * args.interval:
        parser.error("--duration must be at least 4 --interval")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    EXTRA_OVERRIDES[:] = args.override
    if args.override:
        print(f"broker overrides: {' '.join(args.override)}", flush=True)
    os.chdir(Path(__file__).resolve().parent.parent)
    met = True
    try:
        if args.only in (None, "retained"):
            needed = args.bytes * 1.5
            if available_memory() < needed:
                raise BenchError(
                    f"{mib(available_memory())} available, (a) needs about {mib(needed)}: lower --bytes"
                )
            met = retained(args) and met
        if args.only in (None, "retention"):
            met = retention(args) and met
    except (BenchError, BrokerProcessError, KafkaException, OSError) as exc:
        print(f"bench_memory: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    return 3 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
