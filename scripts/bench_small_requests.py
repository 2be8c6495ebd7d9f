#!/usr/bin/env python3
"""Pipelined small requests against this broker and a bare asyncio server, same client, same run.

    .venv/bin/python scripts/bench_small_requests.py               # 3 s per API x depth, each side
    .venv/bin/python scripts/bench_small_requests.py --quick       # 1 s each
    .venv/bin/python scripts/bench_small_requests.py --seconds 5 --depths 1,100,1000 --apis Heartbeat

Four requests, each kept at 100 and at 1,000 in flight on one connection:
ApiVersions v3, Metadata v12 for one topic (2 partitions), DescribeClientQuotas v1 (the
entity of the benchmark's client-id, which has one quota set) and Heartbeat v4 of a real
member of a classic group (joined with raw JoinGroup and SyncGroup frames beforehand, so
every heartbeat is answered NONE; its session timeout is 5 minutes, so the pauses between
runs never expire it). Each request's error code is checked once before the runs.

The servers, each its own process, run side by side:

- this broker: `python -m broker` (BrokerProcess), group.initial.rebalance.delay.ms=0;
- the reference: this script's `--reference-server` mode, an `asyncio.Protocol` on a
  uvloop loop that splits the byte stream into frames by their size prefix, reads the
  request's api key (2 bytes) and answers with fixed bytes for it: the very bytes this
  broker answered that request with during the checks (so the same size; the
  correlation id is not rewritten). The answers to one read go out in one
  `writelines` call, as this broker writes its responses to one read. It is the floor
  a Python asyncio server can reach per request: the ratio ours/reference is the
  target (>= 0.5).
- a second reference, the same server writing each answer with its own
  `transport.write` (the most literal bare server: uvloop tries a send() per write),
  printed as "1 write/frame" with its ratio, for scale; the target is against the first.

The client (this process, uvloop) encodes the frames once with kafka-python's structs,
one per in-flight slot, correlation ids 0..depth-1, before the clock starts. It writes
the whole window, then, on every read, counts the complete responses by their size
prefix (nothing is decoded) and writes as many frames again, the slots just answered, so
`depth` requests stay in flight and no correlation id is in flight twice. A run is
`--warmup` s (not counted) then `--seconds` s; responses are counted between the two
clock readings, and the connection is drained and closed after each run. The runs
alternate ours/reference for every API and depth.

That the client is not the bottleneck is checked in every run: next to the rates the
table prints the CPU time per request of the server (from /proc) and of this client
(time.process_time()), in microseconds. Against this broker the client spends 0.5-1.5 us
per request while the broker spends 35-190 us and runs near 100 % of a core: the client
idles most of the time. Against the reference both sides spend ~0.4-0.9 us per request,
so there client and server share the bound (and the machine's cores): the reference's
rate is a lower bound of what it could do with a faster client, which can only flatter
the ratio ours/reference, never hurt it. `--client-only` prints the client's counting
loop alone (from memory, no sockets: ~3M responses/s) as its ceiling.

Exit status: 0 when everything ran (whatever the ratios; with `--min-ratio R`, 3 when a
ratio is below R), 1 when a server did not start or a request was answered with an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support (not installed)
CLIENT_ID = "bench-small-requests"
GROUP = "bench-small-requests"
TOPIC = "bench-small"
SESSION_TIMEOUT_MS = 300_000
APIS = ("ApiVersions", "Metadata", "DescribeClientQuotas", "Heartbeat")
TARGET = 0.5


class BenchError(RuntimeError):
    pass


# -- the reference server (its own process) -------------------------------------------------


class FixedAnswers(asyncio.Protocol):
    """Answers every complete request frame with the fixed bytes for its api key."""

    def __init__(self, answers: dict[int, bytes], batched: bool) -> None:
        self.answers = answers
        self.batched = batched
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        end = len(buffer)
        pos = 0
        out: list[bytes] = []
        answers = self.answers
        while end - pos >= 6:
            size = int.from_bytes(buffer[pos : pos + 4], "big")
            if end - pos - 4 < size:
                break
            out.append(answers[int.from_bytes(buffer[pos + 4 : pos + 6], "big")])
            pos += 4 + size
        if pos:
            del buffer[:pos]
        if out:
            assert self.transport is not None
            if self.batched:
                self.transport.writelines(out)
            else:
                for answer in out:
                    self.transport.write(answer)


def serve_reference(batched: bool) -> int:
    """`--reference-server batched|per-frame`: answers (api key -> hex of a size-prefixed frame) as JSON on
    stdin; prints the port it listens on, serves until stdin closes."""
    import uvloop

    answers = {int(k): bytes.fromhex(v) for k, v in json.loads(sys.stdin.readline()).items()}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: FixedAnswers(answers, batched), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        print(port, flush=True)
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes stdin
        server.close()

    uvloop.run(main())
    return 0


class ReferenceProcess:
    def __init__(self, answers: dict[int, bytes], writes: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--reference-server", writes],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({str(k): v.hex() for k, v in answers.items()}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise BenchError(f"the reference server did not start: {line!r}")
        self.address = ("127.0.0.1", int(line))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of `pid` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the client --------------------------------------------------------------------------------


class Pipeline(asyncio.Protocol):
    """Keeps `depth` pre-encoded frames in flight; counts responses by their size prefix."""

    def __init__(self, frames: list[bytes]) -> None:
        self.frames = frames
        self.depth = len(frames)
        self.cursor = 0  # the next slot to write (the oldest answered)
        self.answered = 0
        self.in_flight = 0
        self.refill = True
        self.pending = 0  # bytes of the current response still to skip
        self.header = b""  # a size prefix split between reads
        self.transport: asyncio.Transport | None = None
        self.drained: asyncio.Future[None] | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def start(self) -> None:
        self.send(self.depth)

    def send(self, count: int) -> None:
        assert self.transport is not None
        frames, depth, cursor = self.frames, self.depth, self.cursor
        end = cursor + count
        if end <= depth:
            self.transport.writelines(frames[cursor:end])
        else:
            self.transport.writelines(frames[cursor:] + frames[: end - depth])
        self.cursor = end % depth
        self.in_flight += count

    def data_received(self, data: bytes) -> None:
        view = memoryview(data)
        end = len(view)
        pos = 0
        done = 0
        if self.header:  # the rest of a size prefix split by the previous read
            need = 4 - len(self.header)
            self.header += bytes(view[:need])
            if len(self.header) < 4:
                return
            pos = need
            self.pending = int.from_bytes(self.header, "big")
            self.header = b""
        while True:
            pending = self.pending
            if pending:
                if end - pos < pending:
                    self.pending = pending - (end - pos)
                    break
                pos += pending
                self.pending = 0
                done += 1
            if end - pos >= 4:
                self.pending = int.from_bytes(view[pos : pos + 4], "big")
                pos += 4
            else:
                if pos < end:
                    self.header = bytes(view[pos:end])
                break
        if done:
            self.answered += done
            self.in_flight -= done
            if self.refill:
                self.send(done)
            elif self.in_flight == 0 and self.drained is not None and not self.drained.done():
                self.drained.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)
        if self.drained is not None and not self.drained.done():
            self.drained.set_exception(ConnectionError("connection closed with requests in flight"))


@dataclass
class Run:
    rate: float  # responses per second
    server_cpu_us: float  # server CPU per response
    client_cpu_us: float  # this process's CPU per response


async def pipelined(
    address: tuple[str, int], frames: list[bytes], server_pid: int, warmup: float, seconds: float
) -> Run:
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(lambda: Pipeline(frames), *address)
    try:
        client.start()
        await asyncio.sleep(warmup)
        count0, wall0, cpu0, server0 = (
            client.answered,
            time.perf_counter(),
            time.process_time(),
            process_cpu(server_pid),
        )
        await asyncio.sleep(seconds)
        count1, wall1, cpu1, server1 = (
            client.answered,
            time.perf_counter(),
            time.process_time(),
            process_cpu(server_pid),
        )
        client.refill = False
        client.drained = loop.create_future()
        if client.in_flight:
            await asyncio.wait_for(client.drained, 60)
    finally:
        if client.transport is not None:
            client.transport.close()
        await client.lost
    answered = count1 - count0
    if answered <= 0:
        raise BenchError(f"no responses from {address} in {seconds} s")
    return Run(
        answered / (wall1 - wall0),
        (server1 - server0) / answered * 1e6,
        (cpu1 - cpu0) / answered * 1e6,
    )


def client_ceiling(frame_size: int, count: int = 200_000) -> float:
    """Responses/s the counting loop handles from memory (64 KiB reads, no sockets)."""
    response = struct.pack(">i", frame_size - 4) + bytes(frame_size - 4)
    stream = response * count
    protocol = Pipeline.__new__(Pipeline)
    protocol.pending, protocol.header, protocol.answered, protocol.in_flight = 0, b"", 0, count
    protocol.refill, protocol.drained = False, None
    start = time.perf_counter()
    for offset in range(0, len(stream), 65536):
        protocol.data_received(stream[offset : offset + 65536])
    elapsed = time.perf_counter() - start
    assert protocol.answered == count, protocol.answered
    return count / elapsed


# -- setting up this broker: a topic, a quota, a group member -----------------------------------


@dataclass
class Requests:
    """Per API: a function of the correlation id giving the size-prefixed frame."""

    frames: dict[str, Callable[[int], bytes]]
    api_keys: dict[str, int]


def prepare(address: tuple[str, int]) -> tuple[Requests, dict[int, bytes]]:
    """Creates the topic, the quota and the group member on this broker; checks one of
    each benchmarked request; returns the frame makers and this broker's responses."""
    from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest
    from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
    from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

    from tests.support.wire import decode_response, encode_request, exchange, quota_alteration, round_trip

    with socket.create_connection(address, timeout=30) as sock:
        # The topic, created through Metadata's auto-creation and waited for.
        topic = MetadataRequest.MetadataRequestTopic(name=TOPIC, topic_id=None)
        for attempt in range(100):
            created = round_trip(
                sock,
                MetadataRequest[12](
                    topics=[topic], allow_auto_topic_creation=True, include_topic_authorized_operations=False
                ),
                attempt,
                CLIENT_ID,
            )
            if created.topics[0].error_code == 0 and created.topics[0].partitions:
                break
            time.sleep(0.05)
        else:
            raise BenchError(f"topic {TOPIC} not created: {created.topics[0].error_code}")
        # One quota on the benchmark's client-id: what DescribeClientQuotas finds.
        altered = round_trip(
            sock,
            AlterClientQuotasRequest(
                entries=[quota_alteration([("client-id", CLIENT_ID)], {"producer_byte_rate": 1048576.0})],
                validate_only=False,
            ),
            1,
            CLIENT_ID,
            version=1,
        )
        if any(e.error_code for e in altered.entries):
            raise BenchError(f"AlterClientQuotas: {altered.entries}")
        # The group member: JoinGroup (MEMBER_ID_REQUIRED, then again with the id), SyncGroup.
        protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
        member_id = ""
        for attempt in range(2):
            joined = round_trip(
                sock,
                JoinGroupRequest[9](
                    group_id=GROUP,
                    session_timeout_ms=SESSION_TIMEOUT_MS,
                    rebalance_timeout_ms=SESSION_TIMEOUT_MS,
                    member_id=member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=[protocol],
                    reason=None,
                ),
                10 + attempt,
                CLIENT_ID,
            )
            member_id = joined.member_id
            if joined.error_code == 0:
                break
            if joined.error_code != 79:  # MEMBER_ID_REQUIRED
                raise BenchError(f"JoinGroup answered error {joined.error_code}")
        else:
            raise BenchError("JoinGroup did not let the member in")
        assignment = SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=b"")
        synced = round_trip(
            sock,
            SyncGroupRequest[5](
                group_id=GROUP,
                generation_id=joined.generation_id,
                member_id=member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocol_name=joined.protocol_name,
                assignments=[assignment],
            ),
            12,
            CLIENT_ID,
        )
        if synced.error_code:
            raise BenchError(f"SyncGroup answered error {synced.error_code}")
        generation = joined.generation_id

        component = DescribeClientQuotasRequest.ComponentData(
            entity_type="client-id", match_type=0, match=CLIENT_ID
        )
        structs: dict[str, Callable[[], Any]] = {
            "ApiVersions": lambda: ApiVersionsRequest[3](
                client_software_name="bench-small-requests", client_software_version="1.0"
            ),
            "Metadata": lambda: MetadataRequest[12](
                topics=[topic], allow_auto_topic_creation=False, include_topic_authorized_operations=False
            ),
            "DescribeClientQuotas": lambda: DescribeClientQuotasRequest[1](
                components=[component], strict=False
            ),
            "Heartbeat": lambda: HeartbeatRequest[4](
                group_id=GROUP, generation_id=generation, member_id=member_id, group_instance_id=None
            ),
        }
        makers = {name: _frame_maker(make, encode_request) for name, make in structs.items()}
        api_keys = {name: make().API_KEY for name, make in structs.items()}
        answers: dict[int, bytes] = {}
        for name, make in structs.items():
            request = make()
            frame = exchange(sock, makers[name](100))
            decoded = decode_response(request, frame)
            errors = _errors(name, decoded)
            if errors:
                raise BenchError(f"{name} answered {errors}")
            answers[request.API_KEY] = struct.pack(">i", len(frame)) + frame
    return Requests(makers, api_keys), answers


def _frame_maker(make: Callable[[], Any], encode: Callable[..., bytes]) -> Callable[[int], bytes]:
    """A size-prefixed frame of a fresh `make()` request, for a correlation id."""
    return lambda correlation_id: encode(make(), correlation_id, CLIENT_ID)


def _errors(name: str, response: Any) -> list[int]:
    if name == "Metadata":
        return [t.error_code for t in response.topics if t.error_code]
    if name == "DescribeClientQuotas" and response.error_code == 0 and len(response.entries) != 1:
        return [-1]
    return [response.error_code] if response.error_code else []


# -- the run ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench_small_requests", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=None, help="measured seconds per run (default 3)")
    parser.add_argument("--warmup", type=float, default=None, help="uncounted seconds first (default 0.5)")
    parser.add_argument("--depths", default="100,1000", help="requests in flight (default 100,1000)")
    parser.add_argument("--apis", default=",".join(APIS), help=f"subset of {','.join(APIS)}")
    parser.add_argument("--quick", action="store_true", help="1 s runs, 0.3 s warm-up unless given")
    parser.add_argument("--min-ratio", type=float, default=None, help="exit 3 when a ratio is below this")
    parser.add_argument("--client-only", action="store_true", help="only the client's counting ceiling")
    parser.add_argument("--reference-server", choices=("batched", "per-frame"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.seconds is None:
        args.seconds = 1.0 if args.quick else 3.0
    if args.warmup is None:
        args.warmup = 0.3 if args.quick else 0.5
    args.depths = [int(d) for d in args.depths.split(",")]
    args.apis = [a for a in args.apis.split(",") if a]
    unknown = set(args.apis) - set(APIS)
    if unknown:
        parser.error(f"unknown --apis {sorted(unknown)}; choose from {', '.join(APIS)}")
    if min(args.depths) < 1 or args.seconds <= 0 or args.warmup < 0:
        parser.error("--depths must be positive, --seconds > 0, --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.reference_server:
        return serve_reference(args.reference_server == "batched")
    if args.client_only:
        for size in (30, 600):
            print(f"client counting ceiling, {size}-byte responses: {client_ceiling(size):,.0f} responses/s")
        return 0
    import uvloop

    from tests.support.process import BrokerProcess, BrokerProcessError

    os.chdir(ROOT)
    try:
        with BrokerProcess("--port", "0", "--override", "group.initial.rebalance.delay.ms=0") as broker:
            ours = broker.address(timeout=30)
            requests, answers = prepare(ours)
            reference = ReferenceProcess(answers, "batched")
            try:
                per_frame = ReferenceProcess(answers, "per-frame")
                try:
                    results = uvloop.run(
                        _measure(args, requests, answers, ours, broker.pid, reference, per_frame)
                    )
                finally:
                    per_frame.stop()
            finally:
                reference.stop()
    except (TimeoutError, BenchError, BrokerProcessError, OSError) as exc:
        print(f"bench_small_requests: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    ratios = [ratio for _, _, ratio in results]
    print(
        f"lowest ratio {min(ratios):.3f}, median {statistics.median(ratios):.3f} (target >= {TARGET})",
        flush=True,
    )
    if args.min_ratio is not None and min(ratios) < args.min_ratio:
        print(f"bench_small_requests: a ratio is below --min-ratio {args.min_ratio}", file=sys.stderr)
        return 3
    return 0


async def _measure(
    args: argparse.Namespace,
    requests: Requests,
    answers: dict[int, bytes],
    ours: tuple[str, int],
    broker_pid: int,
    reference: ReferenceProcess,
    per_frame: ReferenceProcess,
) -> list[tuple[str, int, float]]:
    print(
        f"bench_small_requests: {args.seconds:g} s per run after {args.warmup:g} s warm-up, one connection, "
        "frames pre-encoded; CPU in us per request (server from /proc, client = this process)",
        flush=True,
    )
    header = (
        f"{'request':<21} {'depth':>5} {'resp B':>6} {'ours req/s':>11} {'reference':>11} {'ratio':>6} "
        f"{'1 write/frame':>13} {'ratio':>6}  {'CPU ours':>8} {'ref':>6} {'client':>6} {'(vs ref)':>8}"
    )
    print(header, flush=True)
    results: list[tuple[str, int, float]] = []
    for name in args.apis:
        size = len(answers[requests.api_keys[name]])
        for depth in args.depths:
            frames = [requests.frames[name](correlation_id) for correlation_id in range(depth)]
            mine = await pipelined(ours, frames, broker_pid, args.warmup, args.seconds)
            floor = await pipelined(reference.address, frames, reference.pid, args.warmup, args.seconds)
            naive = await pipelined(per_frame.address, frames, per_frame.pid, args.warmup, args.seconds)
            ratio = mine.rate / floor.rate
            results.append((name, depth, ratio))
            print(
                f"{name:<21} {depth:>5} {size:>6} {mine.rate:>11,.0f} {floor.rate:>11,.0f} {ratio:>6.3f} "
                f"{naive.rate:>13,.0f} {mine.rate / naive.rate:>6.3f}  "
                f"{mine.server_cpu_us:>8.2f} {floor.server_cpu_us:>6.2f} {mine.client_cpu_us:>6.2f} "
                f"{floor.client_cpu_us:>8.2f}",
                flush=True,
            )
    return results


if __name__ == "__main__":
    sys.exit(main())
