#!/usr/bin/env python3
"""What each feature costs per produce request, measured on identical requests.

    .venv/bin/python scripts/bench_features.py                 # 5 rounds x 2,000 requests per feature
    .venv/bin/python scripts/bench_features.py --quick         # 3 rounds x 500
    .venv/bin/python scripts/bench_features.py --features quotas,acls --rounds 9

Why it exists: bench_throughput's feature rows compare broker CPU per message between runs
of a real producer, and a real producer's batching moves with the machine's load (in one
session its 300,000 messages went out in 489 to 2,614 produce requests), so CPU per
message there measures batching as much as the feature. Here every configuration handles
the very same frames:

- the request librdkafka sends (ProduceRequest v10, one partition, one batch of
  `--records` x 100 B records, client id "bench-throughput"), cycled over 10 topics x 4
  partitions, encoded once before the clock;
- one in-process broker (MockCluster) per configuration: plain, quotas set (the same 301
  entities as bench_throughput, none binding), the metrics sink on, StandardAuthorizer
  with the same 1,000 ACLs, the recording ring off;
- the frames fed to a connection with a stand-in transport on the broker's own loop, so
  nothing but the broker's request path runs; the CPU time of the loop thread per request;
- rounds alternate the configurations; the median round of each is compared with the
  plain broker's (target: each feature <= 5 %).

Exit status 0 (with `--max-ratio R`: 3 when a feature costs more than R x plain).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_throughput  # noqa: E402
from kafka.protocol.producer import ProduceRequest  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

from broker import MockCluster  # noqa: E402
from broker.connection import Connection  # noqa: E402
from tests.support.wire import encode_request  # noqa: E402

CLIENT_ID = bench_throughput.CLIENT_ID
TOPICS = [f"bench-{i}" for i in range(10)]
PARTITIONS = 4
FEATURES = ("plain", "quotas", "metrics", "acls", "ring-off")
LABELS = {
    "plain": "plain broker",
    "quotas": "quotas set (301 entities)",
    "metrics": "metrics sink on",
    "acls": "StandardAuthorizer, 1,000 ACLs",
    "ring-off": "recording ring off",
}
TARGET = 1.05


class _Transport:
    """Takes what the broker writes and drops it: only the broker's own path is timed."""

    def write(self, data: Any) -> None:
        pass

    def writelines(self, chunks: Any) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def frames(records: int) -> list[bytes]:
    """One framed produce request per (topic, partition), as librdkafka sends them."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 24)
    now = int(time.time() * 1000)
    value = bytes(range(100))
    for offset in range(records):
        builder.append(offset, now, None, value, [])
    batch = bytes(builder.build())
    found: list[bytes] = []
    for topic in TOPICS:
        for partition in range(PARTITIONS):
            request = ProduceRequest[10](
                transactional_id=None,
                acks=1,
                timeout_ms=30000,
                topic_data=[
                    ProduceRequest[10].TopicProduceData(
                        name=topic,
                        partition_data=[
                            ProduceRequest[10].TopicProduceData.PartitionProduceData(
                                index=partition, records=batch
                            )
                        ],
                    )
                ],
            )
            found.append(encode_request(request, len(found), CLIENT_ID))
    return found


def start(feature: str, stack: ExitStack) -> MockCluster:
    config = {
        "num.partitions": str(PARTITIONS),
        "log.retention.bytes": str(16 << 20),  # the same work in every configuration, bounded memory
    }
    if feature == "metrics":
        config["metrics.dir"] = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-features-"))
    if feature == "acls":
        config["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        config["allow.everyone.if.no.acl.found"] = "true"
    if feature == "ring-off":
        config["record.requests.max"] = "0"
    cluster = stack.enter_context(MockCluster(brokers=1, config=config))
    for topic in TOPICS:
        cluster.create_topic(topic, partitions=PARTITIONS)
    if feature == "quotas":
        bench_throughput.configure_quotas(cluster.bootstrap_servers, 300)
    if feature == "acls":
        bench_throughput.configure_acls(cluster.bootstrap_servers, 1000)
    return cluster


def measure(cluster: MockCluster, requests: list[bytes], count: int) -> float:
    """The loop thread's CPU microseconds per request over `count` requests."""

    def run() -> float:
        connection = Connection(cluster.brokers[0], "PLAINTEXT")
        connection.connection_made(_Transport())  # type: ignore[arg-type]
        started = time.thread_time()
        for i in range(count):
            connection.data_received(requests[i % len(requests)])
        spent = time.thread_time() - started
        connection.close()
        return spent / count * 1e6

    result: float = cluster.on_loop(run)
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--features", default=",".join(FEATURES[1:]), help="subset of " + ",".join(FEATURES[1:])
    )
    parser.add_argument("--rounds", type=int, default=None, help="rounds per configuration (default 5)")
    parser.add_argument("--requests", type=int, default=None, help="requests per round (default 2,000)")
    parser.add_argument("--records", type=int, default=237, help="records per request (default 237)")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 500 requests unless given")
    parser.add_argument("--max-ratio", type=float, default=None, help="exit 3 when a feature costs more")
    args = parser.parse_args(argv)
    args.features = [f for f in args.features.split(",") if f]
    unknown = [f for f in args.features if f not in FEATURES[1:]]
    if unknown:
        parser.error(f"unknown features {unknown}; choose from {', '.join(FEATURES[1:])}")
    args.rounds = args.rounds or (3 if args.quick else 5)
    args.requests = args.requests or (500 if args.quick else 2000)
    if args.rounds < 1 or args.requests < 1 or args.records < 1:
        parser.error("--rounds, --requests and --records must be positive")
    return args


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> dict[str, list[float]]:
    requests = frames(args.records)
    configurations = ["plain", *args.features]
    results: dict[str, list[float]] = {feature: [] for feature in configurations}
    with ExitStack() as stack:
        clusters = {feature: start(feature, stack) for feature in configurations}
        for cluster in clusters.values():  # warm-up: every code path taken once, outside the clock
            measure(cluster, requests, min(200, args.requests))
        for round_number in range(args.rounds):
            for feature in configurations:
                results[feature].append(measure(clusters[feature], requests, args.requests))
            out(
                f"round {round_number + 1}: "
                + ", ".join(f"{feature} {results[feature][-1]:.1f}" for feature in configurations)
            )
    return results


def report(results: dict[str, list[float]], out: Callable[[str], None] = print) -> dict[str, float]:
    """The medians, and each feature's cost as on/off: the feature's configuration against
    the plain broker, except the recording ring, which the plain broker has on (its cost
    is plain against ring-off)."""
    medians = {feature: statistics.median(values) for feature, values in results.items()}
    out(f"{'configuration':<32} {'CPU us/request (median)':>24} {'min':>8} {'max':>8}")
    for feature, values in results.items():
        out(f"{LABELS[feature]:<32} {medians[feature]:>24.1f} {min(values):>8.1f} {max(values):>8.1f}")
    out(f"{'feature':<32} {'on/off':>9}")
    ratios = {}
    for feature in results:
        if feature == "plain":
            continue
        if feature == "ring-off":
            label, ratio = "recording ring (256 entries)", medians["plain"] / medians["ring-off"]
        else:
            label, ratio = LABELS[feature], medians[feature] / medians["plain"]
        ratios[feature] = ratio
        out(f"{label:<32} {ratio:>9.3f}{'  over target' if ratio > TARGET else ''}")
    out(f"target: each feature's CPU per request on/off <= {TARGET:.2f}")
    return ratios


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"bench_features: {args.rounds} rounds x {args.requests} produce requests per configuration, "
        f"{args.records} x 100 B records each (ProduceRequest v10, one partition), in-process"
    )
    ratios = report(run(args))
    if args.max_ratio is not None and any(ratio > args.max_ratio for ratio in ratios.values()):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
