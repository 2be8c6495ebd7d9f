"""kafka-mock-report joins what clients pushed (KIP-714) with what the broker recorded for
them: a librdkafka producer under a produce quota reports its own request latency and
throttle time, the report puts them beside the broker's per-request rows."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from broker import MockCluster
from spark import cli
from tests.conftest import FAST
from tests.spark_session import spark_fixture  # noqa: F401

CLIENT_ID = "reporting-producer"


def record_a_run(metrics: Path) -> None:
    config = {**FAST, "telemetry.enabled": "true", "metrics.dir": str(metrics), "metrics.roll.ms": "200"}
    with MockCluster(config=config) as cluster:
        cluster.client_metrics.set("producers", ["org.apache.kafka.producer."], interval_ms=500)
        cluster.quotas.alter({"client-id": CLIENT_ID}, set={"producer_byte_rate": 20_000})
        producer = Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "client.id": CLIENT_ID, "linger.ms": 5}
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # Bursts over the quota, each flushed: a backlog that only grows would keep
            # the push queued behind throttled produce requests (librdkafka sends it on
            # the same connection, after them).
            for _ in range(30):
                producer.produce("reported", b"x" * 1000)
            producer.flush(30)
            throttles = [
                p.value
                for push in cluster.client_metrics.pushes()
                for p in push.points
                if p.name == "org.apache.kafka.producer.produce.throttle.time.max"
            ]
            if len(throttles) >= 2 and max(throttles) > 0:
                break
        else:
            raise AssertionError("the producer never reported a throttle time")
        producer.flush(30)


def test_report_puts_client_metrics_beside_the_brokers(spark: Any, tmp_path: Path) -> None:
    metrics, out = tmp_path / "metrics", tmp_path / "report"
    record_a_run(metrics)
    assert cli.main(["--metrics", str(metrics), "--out", str(out), "--window", "1s,5s"]) == 0
    rows = spark.read.parquet(str(out / "client_telemetry")).where(f"client_id = '{CLIENT_ID}'").collect()
    assert rows and {r["window_ms"] for r in rows} == {5000}
    joined = [r for r in rows if r["broker_requests"]]
    assert joined, "no window has both the client's pushes and its requests"
    assert all(r["client_latency_avg_ms"] is not None and r["broker_latency_avg_ms"] > 0 for r in joined)
    # Both sides saw the throttling the quota caused.
    assert max(r["client_throttle_max_ms"] or 0 for r in rows) > 0
    assert max(r["broker_throttle_max_ms"] or 0 for r in joined) > 0
    page = (out / "index.html").read_text()
    assert "Client telemetry (KIP-714)" in page and CLIENT_ID in page
    assert (out / "client_telemetry.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_without_client_metrics_has_no_telemetry_section(spark: Any, tmp_path: Path) -> None:
    metrics, out = tmp_path / "metrics", tmp_path / "report"
    with MockCluster(config={**FAST, "metrics.dir": str(metrics), "metrics.roll.ms": "100"}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        producer.produce("plain", b"x")
        producer.flush(10)
    assert cli.main(["--metrics", str(metrics), "--out", str(out)]) == 0
    assert not (out / "client_telemetry").exists()
    assert "Client telemetry" not in (out / "index.html").read_text()
