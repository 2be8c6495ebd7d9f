#!/usr/bin/env python3
"""Quota administration throughput and resolution cost, with 100 and 10,000 entities.

    .venv/bin/python scripts/bench_quota_admin.py [--requests 2000] [--sizes 100,10000]

The broker runs as a `python -m broker` subprocess (no shared GIL with this client). For
each entity count N it first loads N entities (users with a producer_byte_rate), then
measures over one connection, one request in flight at a time, frames pre-encoded with
kafka-python's structs so client cost stays out of the figure:

- ApiVersions: the reference round trip, measured in the same run;
- DescribeClientQuotas with a match-any filter (match type 2 on user: every entity);
- AlterClientQuotas with batches of 100 entities (values changed every request).

It prints requests/s, p50/p99 latency and the ratio to the ApiVersions round trip, and,
in-process, the cost of one resolution (metric tags + limit, what the broker does per
request) at each N with the ratio to the smallest N: resolution must not grow with N.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.metadata import ApiVersionsRequest

from quotas.entity import QuotaEntity
from quotas.resolution import QuotaIndex

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support (not installed)
from tests.support.process import BrokerProcess, BrokerProcessError  # noqa: E402
from tests.support.wire import encode_request, exchange, quota_alteration  # noqa: E402

ALTER_BATCH = 100
CLIENT_ID = "bench"


def start_broker() -> BrokerProcess:
    broker = BrokerProcess("--port", "0", "--log-level", "info")
    try:
        broker.wait_listening(timeout=30)
    except BrokerProcessError as exc:
        broker.kill()
        raise SystemExit(f"broker did not start: {exc}") from None
    return broker


def connect(broker: BrokerProcess) -> socket.socket:
    """One connection, Nagle off: requests go out at once, one in flight at a time."""
    sock = socket.create_connection(broker.address())
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def frame(request: object, version: int) -> bytes:
    """A pre-encoded request: client cost stays out of the timings."""
    return encode_request(request, 1, CLIENT_ID, version)


def alter_frame(first: int, count: int, value: float) -> bytes:
    """AlterClientQuotas v1: producer_byte_rate `value` for users user-<first> ..."""
    entries = [
        quota_alteration([("user", f"user-{i}")], {"producer_byte_rate": value})
        for i in range(first, first + count)
    ]
    return frame(AlterClientQuotasRequest(entries=entries, validate_only=False), 1)


def measure(sock: socket.socket, frames: list[bytes]) -> tuple[float, float, float]:
    """(requests/s, p50 ms, p99 ms) over the frames, one in flight."""
    latencies = []
    start = time.perf_counter()
    for payload in frames:
        sent = time.perf_counter()
        exchange(sock, payload)
        latencies.append(time.perf_counter() - sent)
    elapsed = time.perf_counter() - start
    latencies.sort()
    return (
        len(frames) / elapsed,
        latencies[len(latencies) // 2] * 1e3,
        latencies[int(len(latencies) * 0.99)] * 1e3,
    )


def resolution_cost_ns(entities: int, lookups: int = 200_000) -> float:
    index = QuotaIndex()
    for i in range(entities):
        index.set(QuotaEntity({"user": f"user-{i}"}), "producer_byte_rate", 1024.0 + i)
    index.set(QuotaEntity({"user": None}), "producer_byte_rate", 512.0)
    users = [f"user-{i * 7919 % entities}" for i in range(1000)]
    start = time.perf_counter_ns()
    for i in range(lookups):
        user_tag, client_tag = index.metric_tags("producer_byte_rate", users[i % 1000], "client")
        index.limit("producer_byte_rate", user_tag, client_tag)
    return (time.perf_counter_ns() - start) / lookups


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000, help="requests per measurement")
    parser.add_argument("--sizes", default="100,10000", help="entity counts")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"bench_quota_admin: python {sys.version.split()[0]}, pid {os.getpid()}, {args.requests} requests each"
    )
    print(f"{'entities':>9} {'request':<28} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs ApiVersions':>15}")
    resolution: dict[int, float] = {}
    for size in sizes:
        with start_broker() as broker, connect(broker) as wire:
            for first in range(0, size, 1000):
                exchange(wire, alter_frame(first, min(1000, size - first), 1024.0))
            reference = measure(wire, [frame(ApiVersionsRequest(), 3)] * args.requests)
            describe = DescribeClientQuotasRequest(
                components=[
                    DescribeClientQuotasRequest.ComponentData(entity_type="user", match_type=2, match=None)
                ],
                strict=False,
            )
            describe_requests = max(20, args.requests * 100 // size)
            rows = [
                ("ApiVersions (reference)", reference),
                ("DescribeClientQuotas any", measure(wire, [frame(describe, 1)] * describe_requests)),
                (
                    f"AlterClientQuotas x{ALTER_BATCH}",
                    measure(
                        wire,
                        [
                            alter_frame(
                                (i * ALTER_BATCH) % max(size - ALTER_BATCH, 1), ALTER_BATCH, 2048.0 + i
                            )
                            for i in range(max(20, args.requests // 10))
                        ],
                    ),
                ),
            ]
            for name, (rate, p50, p99) in rows:
                print(
                    f"{size:>9} {name:<28} {rate:>9.0f} {p50:>8.3f} {p99:>8.3f} {rate / reference[0]:>15.3f}"
                )
        resolution[size] = resolution_cost_ns(size)
    base = resolution[sizes[0]]
    for size in sizes:
        print(
            f"resolution with {size:>6} entities: {resolution[size]:7.0f} ns  (x{resolution[size] / base:.2f} of {sizes[0]})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
