#!/usr/bin/env python3
"""Many connections at once, and many one after another, against a `python -m broker` subprocess.

(a) Concurrent: `--connections N` (default 1,000) real clients connected at once, N/2
aiokafka producers and N/2 aiokafka consumers (assign(), no group; one asyncio loop in this
process). Producer i writes `--messages` records of 100 B (acks=1) to its own topic
`conn-<i>` while consumer i reads that topic from offset 0, until it has them all. Printed:
the time to connect everyone, the broker's open sockets at the peak (from
/proc/<pid>/fd) and its RSS (per connection), the produce and consume wall times and
rates, and once every client stopped, the broker's sockets and RSS against the baseline.
Checked: at least N sockets were open at once, every consumer got exactly its producer's
records in order, no client error, and the broker's file descriptors came back to the
baseline.

(b) Cycles: `--cycles C` (default 10,000) connect/disconnect cycles with plain sockets, in
four ways round-robin: an ApiVersions round trip then a close; an ApiVersions round
trip then a reset (SO_LINGER 0); half a request then a close; a connect and an
immediate close. Run twice: printed are the cycles per second and the broker's file
descriptors and RSS before, after C and after 2C cycles. Checked: the file descriptors
are back to the baseline after each run, and the second run added less than
`--rss-slack-mib` (default 4 MiB) of RSS (no memory kept per cycle).

(c) Clients that never read: `--never-read K` (default 8) plain sockets (a 4 KiB
receive buffer) pipeline requests and read nothing for `--never-read-s` seconds (default
10): half Metadata of 200 topics (20-byte requests, 31 KB answers), half Fetch of 3.6 MB
(views of the log), as fast as the kernel takes them, while one healthy connection
measures its round trips. Printed: requests the kernel took from them, the broker's RSS
growth (peak), the healthy client's median and slowest round trips. Checked: RSS grew by less than
`--never-read-max-mib` (default 64 MiB).

    .venv/bin/python scripts/bench_connections.py                        # 1,000 connections, 10,000 cycles
    .venv/bin/python scripts/bench_connections.py --connections 200 --messages 20   # CI scale
    .venv/bin/python scripts/bench_connections.py --cycles 0             # (a) only
    .venv/bin/python scripts/bench_connections.py --connections 0 --never-read 0   # (b) only
    .venv/bin/python scripts/bench_connections.py --override connections.max.idle.ms=5000

Exit status: 0 when every check passed, 1 otherwise. Needs a file-descriptor limit above
N + a few hundred for this process and the broker (`ulimit -n`).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import socket
import statistics
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from confluent_kafka import Producer
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import MetadataRequest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support (not installed)
from tests.support.process import BrokerProcess  # noqa: E402
from tests.support.wire import encode_request, read_frame  # noqa: E402

RECORD_BYTES = 100
SETTLE_S = 10.0  # for the broker to see every close


def sockets(pid: int) -> int:
    """Open sockets of process `pid` (its /proc fd links to socket:[...])."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass  # closed meanwhile
    return count


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def mib(kib: float) -> str:
    return f"{kib / 1024:,.1f} MiB"


def steady_fds(pid: int) -> int:
    """The broker's fd count once it held still for 0.3 s (closes it has yet to see)."""
    last, since = fds(pid), time.monotonic()
    deadline = since + SETTLE_S
    while time.monotonic() - since < 0.3 and time.monotonic() < deadline:
        time.sleep(0.05)
        count = fds(pid)
        if count != last:
            last, since = count, time.monotonic()
    return last


def wait_for_fds(pid: int, baseline: int) -> int:
    """The broker's fd count once it is back to `baseline` (or after SETTLE_S)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        count = fds(pid)
        if count <= baseline or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


@dataclass
class Sampler:
    """The broker's peak socket count and RSS, sampled on a thread."""

    pid: int
    peak_sockets: int = 0
    peak_rss: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self.sample()

    def sample(self) -> None:
        self.peak_sockets = max(self.peak_sockets, sockets(self.pid))
        self.peak_rss = max(self.peak_rss, rss_kib(self.pid))

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.sample()


# -- (a) concurrent producers and consumers --------------------------------------------------


async def concurrent(broker: BrokerProcess, connections: int, messages: int) -> bool:
    pairs = connections // 2
    bootstrap = broker.bootstrap_servers()
    topics = [f"conn-{i}" for i in range(pairs)]
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(t, 1, 1) for t in topics])
    await admin.close()
    base_fds = steady_fds(broker.pid)
    base_sockets, base_rss = sockets(broker.pid), rss_kib(broker.pid)
    producers = [AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5) for _ in topics]
    consumers = [
        AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100)
        for _ in topics
    ]
    errors: list[str] = []
    received: list[list[bytes]] = [[] for _ in topics]
    with Sampler(broker.pid) as sampler:
        started = time.monotonic()
        await asyncio.gather(*(p.start() for p in producers), *(c.start() for c in consumers))
        for consumer, topic in zip(consumers, topics, strict=True):
            consumer.assign([TopicPartition(topic, 0)])
            await consumer.seek_to_beginning()
        # Every client's first request: all connections are open before the clock starts.
        await asyncio.gather(
            *(p.client.force_metadata_update() for p in producers),
            *(c.position(TopicPartition(t, 0)) for c, t in zip(consumers, topics, strict=True)),
        )
        connected = time.monotonic() - started
        connected_sockets = sockets(broker.pid) - base_sockets

        async def produce(index: int) -> float:
            try:
                for seq in range(messages):
                    value = f"{index}:{seq}:".encode().ljust(RECORD_BYTES, b".")
                    await producers[index].send(topics[index], value, partition=0)
                await producers[index].flush()
            except Exception as exc:  # reported, not raised: the others go on
                errors.append(f"producer {index}: {exc!r}")
            return time.monotonic()

        async def consume(index: int) -> float:
            deadline = time.monotonic() + 120
            try:
                while len(received[index]) < messages and time.monotonic() < deadline:
                    batches = await consumers[index].getmany(timeout_ms=500)
                    for batch in batches.values():
                        received[index].extend(m.value for m in batch if m.value is not None)
            except Exception as exc:
                errors.append(f"consumer {index}: {exc!r}")
            return time.monotonic()

        clock = time.monotonic()
        ends = await asyncio.gather(*(produce(i) for i in range(pairs)), *(consume(i) for i in range(pairs)))
        produce_s = max(ends[:pairs]) - clock
        consume_s = max(ends[pairs:]) - clock
        await asyncio.gather(*(p.stop() for p in producers), *(c.stop() for c in consumers))
    after_fds = wait_for_fds(broker.pid, base_fds)
    after_rss = rss_kib(broker.pid)
    wrong = [
        i
        for i in range(pairs)
        if received[i] != [f"{i}:{seq}:".encode().ljust(RECORD_BYTES, b".") for seq in range(messages)]
    ]
    total = pairs * messages
    peak_connections = sampler.peak_sockets - base_sockets
    print(
        f"(a) {connections:,} connections: {pairs:,} producers + {pairs:,} consumers (aiokafka), "
        f"{messages:,} x {RECORD_BYTES} B each"
    )
    print(
        f"    connected in {connected:.2f} s: {connected_sockets:,} broker sockets open "
        f"(peak {peak_connections:,})"
    )
    print(
        f"    produce {total:,} records in {produce_s:.2f} s ({total / produce_s:,.0f}/s); "
        f"consumed in {consume_s:.2f} s ({total / consume_s:,.0f}/s)"
    )
    per_connection = (sampler.peak_rss - base_rss) / max(connections, 1)
    print(
        f"    broker RSS {mib(base_rss)} -> peak {mib(sampler.peak_rss)} "
        f"({per_connection:,.1f} KiB per connection, the records retained included)"
    )
    print(f"    after every client stopped: {after_fds} fds (baseline {base_fds}), RSS {mib(after_rss)}")
    ok = True
    if peak_connections < connections:
        print(f"    FAILED: only {peak_connections} connections were open at once")
        ok = False
    if errors:
        print(f"    FAILED: {len(errors)} client errors, first: {errors[0]}")
        ok = False
    if wrong:
        print(
            f"    FAILED: {len(wrong)} consumers did not get exactly their producer's records "
            f"(first: {wrong[0]}, {len(received[wrong[0]])} records)"
        )
        ok = False
    if after_fds != base_fds:
        print(f"    FAILED: the broker has {after_fds - base_fds} more fds than before")
        ok = False
    return ok


# -- (b) connect/disconnect cycles -------------------------------------------------------------

API_VERSIONS = struct.pack(">ihhih", 13, 18, 0, 1, 3) + b"raw"  # v0, client id "raw"


def cycle(address: tuple[str, int], kind: int) -> None:
    with socket.create_connection(address, timeout=30) as sock:
        if kind == 0:  # a round trip, then a close
            sock.sendall(API_VERSIONS)
            read_answer(sock)
        elif kind == 1:  # a round trip, then a reset
            sock.sendall(API_VERSIONS)
            read_answer(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif kind == 2:  # half a request, then a close
            sock.sendall(API_VERSIONS[:9])
        # kind 3: connected and closed at once


def read_answer(sock: socket.socket) -> None:
    header = recv_exactly(sock, 4)
    recv_exactly(sock, struct.unpack(">i", header)[0])


def recv_exactly(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed by the broker")
        data += chunk
    return bytes(data)


def cycles(broker: BrokerProcess, count: int, rss_slack_mib: float) -> bool:
    address = broker.address()
    for kind in range(4):  # every path once before the baseline
        cycle(address, kind)
    base_fds, base_rss = steady_fds(broker.pid), rss_kib(broker.pid)
    results = []
    for _ in range(2):
        started = time.monotonic()
        for i in range(count):
            cycle(address, i % 4)
        elapsed = time.monotonic() - started
        after = wait_for_fds(broker.pid, base_fds)
        results.append((elapsed, after, rss_kib(broker.pid)))
    print(
        f"(b) {count:,} connect/disconnect cycles (round trip + close, round trip + reset, "
        f"half a request + close, connect + close), twice"
    )
    for run, (elapsed, after, rss) in enumerate(results, 1):
        print(
            f"    run {run}: {count / elapsed:,.0f} cycles/s; broker fds {base_fds} -> {after}, "
            f"RSS {mib(base_rss)} -> {mib(rss)}"
        )
    second_growth = (results[1][2] - results[0][2]) / 1024
    print(f"    RSS added by the second {count:,} cycles: {second_growth:+.1f} MiB")
    ok = True
    if any(after != base_fds for _, after, _ in results):
        print("    FAILED: the broker's file descriptors did not come back to the baseline")
        ok = False
    if second_growth > rss_slack_mib:
        print(f"    FAILED: the second run added more than {rss_slack_mib} MiB of RSS")
        ok = False
    return ok


# -- (c) clients that never read ----------------------------------------------------------


def metadata_frame(correlation_id: int) -> bytes:
    request = MetadataRequest[12](topics=None, allow_auto_topic_creation=False)  # every topic
    return encode_request(request, correlation_id, "never-reads")


def fetch_frame(correlation_id: int, topic: str, max_bytes: int) -> bytes:
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=max_bytes
    )
    request = FetchRequest[12](
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=max_bytes,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
    )
    return encode_request(request, correlation_id, "never-reads")


def push(sock: socket.socket, kind: str, data: bytes, until: float, sent: list[tuple[str, int]]) -> None:
    """Writes `data` over and over without reading until `until`; counts frames sent."""
    sock.setblocking(False)
    frame_size = struct.unpack_from(">i", data)[0] + 4
    pending = memoryview(data)
    written_total = 0
    while time.monotonic() < until:
        try:
            written = sock.send(pending)
        except BlockingIOError:
            time.sleep(0.01)
            continue
        except OSError:
            break
        written_total += written
        pending = pending[written:] or memoryview(data)
    sent.append((kind, written_total // frame_size))


def never_read(broker: BrokerProcess, count: int, seconds: float, max_mib: float) -> bool:
    host, port = broker.address()
    producer = Producer({"bootstrap.servers": f"{host}:{port}", "linger.ms": 5})
    for i in range(200):
        producer.produce(f"never-read-{i:03d}-" + "x" * 100, b"v", partition=0)
    for _ in range(4):
        producer.produce("never-read-big", os.urandom(900_000), partition=0)
    if producer.flush(60) != 0:
        print("(c) FAILED: could not produce the data")
        return False
    ok = True
    with socket.create_connection((host, port), timeout=60) as healthy:
        for correlation_id in range(3):  # every answer built once before the baseline
            healthy.sendall(metadata_frame(correlation_id))
            metadata_size = len(read_frame(healthy)) + 4
            healthy.sendall(fetch_frame(correlation_id, "never-read-big", 4 << 20))
            fetch_size = len(read_frame(healthy)) + 4
        time.sleep(0.5)
        before = rss_kib(broker.pid)
        until = time.monotonic() + seconds
        sent: list[tuple[str, int]] = []
        hostile = []
        threads = []
        for kind in itertools.islice(itertools.cycle(("metadata", "fetch")), count):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect((host, port))
            hostile.append(sock)
            data = (
                metadata_frame(9) * 1000
                if kind == "metadata"
                else fetch_frame(9, "never-read-big", 4 << 20) * 100
            )
            threads.append(threading.Thread(target=push, args=(sock, kind, data, until, sent)))
        with Sampler(broker.pid) as sampler:
            for thread in threads:
                thread.start()
            round_trips: list[float] = []
            correlation_id = 100
            while time.monotonic() < until:
                correlation_id += 1
                started = time.monotonic()
                healthy.sendall(metadata_frame(correlation_id))
                read_frame(healthy)
                round_trips.append(time.monotonic() - started)
                time.sleep(0.05)
            for thread in threads:
                thread.join()
        for sock in hostile:
            sock.close()
    growth = (sampler.peak_rss - before) / 1024
    answers_mib = sum(n * (metadata_size if kind == "metadata" else fetch_size) for kind, n in sent) / 2**20
    print(
        f"(c) {count} connections pipelining without reading for {seconds:g} s "
        f"(Metadata answers {metadata_size:,} B, Fetch answers {fetch_size:,} B)"
    )
    print(
        f"    the kernel took {sum(n for _, n in sent):,} requests from them"
        f" (answers to them all: {answers_mib:,.0f} MiB)"
    )
    print(f"    broker RSS {mib(before)} -> peak {mib(sampler.peak_rss)} ({growth:+.1f} MiB)")
    print(
        f"    a healthy client's Metadata round trips meanwhile: {len(round_trips)}, median"
        f" {statistics.median(round_trips) * 1000:.1f} ms, slowest {max(round_trips) * 1000:.1f} ms"
    )
    if growth >= max_mib:
        print(f"    FAILED: RSS grew {growth:.1f} MiB (limit {max_mib:g})")
        ok = False
    return ok


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench_connections",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--connections", type=int, default=1000, help="(a): clients at once (0: skip)")
    parser.add_argument("--messages", type=int, default=100, help="(a): records per producer")
    parser.add_argument("--cycles", type=int, default=10_000, help="(b): cycles per run (0: skip)")
    parser.add_argument("--rss-slack-mib", type=float, default=4.0, help="(b): RSS the second run may add")
    parser.add_argument(
        "--never-read", type=int, default=8, help="(c): connections that never read (0: skip)"
    )
    parser.add_argument("--never-read-s", type=float, default=10.0, help="(c): for how long")
    parser.add_argument("--never-read-max-mib", type=float, default=64.0, help="(c): RSS growth allowed")
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="broker config, repeatable"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    overrides = ["listeners=PLAINTEXT://127.0.0.1:0", *args.override]
    ok = True
    if args.connections:
        with BrokerProcess(*(a for o in overrides for a in ("--override", o))) as broker:
            broker.wait_listening(timeout=30)
            ok &= asyncio.run(concurrent(broker, args.connections, args.messages))
    if args.cycles:
        with BrokerProcess(*(a for o in overrides for a in ("--override", o))) as broker:
            broker.wait_listening(timeout=30)
            ok &= cycles(broker, args.cycles, args.rss_slack_mib)
    if args.never_read:
        # The recording ring keeps the last 256 requests and answers (bounded, but tens of
        # MiB of these): off, so the growth measured is the connections'.
        never_read_overrides = [*overrides, "record.requests.max=0"]
        with BrokerProcess(*(a for o in never_read_overrides for a in ("--override", o))) as broker:
            broker.wait_listening(timeout=30)
            ok &= never_read(broker, args.never_read, args.never_read_s, args.never_read_max_mib)
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
