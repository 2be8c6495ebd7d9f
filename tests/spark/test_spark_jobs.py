"""The Spark jobs on a small generated dataset with hand-computed aggregates.

The dataset (written with pyarrow and `arrow_schema()`, in the sink's hive layout, with
hidden temporary files that must be ignored). T0 = 2024-05-01T00:00:00Z; +x is x seconds
after T0. "req/resp" are request_bytes/response_bytes, "h" handler_us, "tot" total_us.

alice (User:alice / producer-a, apache-kafka-java 3.7.0, broker 1):
  A1 +0.1  ApiVersions v3   req 50   resp 400  h 100   tot 150
  A2 +0.2  Produce v9       req 1000 resp 60   h 2000  tot 3000  limit 2000 (produce)
  A3 +0.5  Produce v9       req 1500 resp 60   h 3000  tot 5000  limit 2000, throttled 250 ms (produce)
  A4 +1.2  Produce v9       req 500  resp 60   h 1000  tot 1000  limit 2000
  A5 +10.5 Produce v9       req 2000 resp 60   h 4000  tot 8000  limit 2000, throttled 1500 ms (produce)
  D1 2024-05-02T00:00:00.5Z (broker 2, folder date=2024-05-02)
           Produce v9       req 700  resp 60   h 1000  tot 2500  limit 2000
bob (User:bob / consumer-b, librdkafka 2.4.0, broker 2):
  B1 +0.3  Metadata v12     req 40   resp 200  h 400   tot 500
  B2 +0.4  Fetch v13        req 100  resp 4000 h 500   tot 100000 limit 5000 (fetch)
  B3 +0.8  Fetch v13        req 100  resp 6000 h 700   tot 200000 limit 5000, throttled 200 ms (fetch)
  B4 +1.5  Fetch v13        req 100  resp 50   h 300   tot 1000  limit 5000, error 1
carol (User:carol / admin-c, no software reported, broker 1):
  C1 +2.0  CreateTopics v7  req 120  resp 80   h 5000  tot 6000  limit 1 (mutation)
  C2 +2.3  CreateTopics v7  req 120  resp 80   h 3000  tot 4000  limit 1, throttled 1000 ms (mutation), error 36
  C3 +2.6  Metadata v12     req 40   resp 200  h 600000 tot 650000 limit 50 (request), throttled 300 ms (request)

13 visible rows. Every row counts for the request quota; Produce also for produce
(bytes = req), Fetch for fetch (bytes = resp), CreateTopics for mutation.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest

from spark.jobs import spark_schema
from spark.schema import COLUMN_NAMES, arrow_schema
from tests.spark_session import spark_fixture  # noqa: F401

T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
DAY2 = dt.datetime(2024, 5, 2, tzinfo=dt.UTC)

API_KEYS = {"Produce": 0, "Fetch": 1, "Metadata": 3, "ApiVersions": 18, "CreateTopics": 19}

ALICE = {
    "principal": "User:alice",
    "client_id": "producer-a",
    "client_software_name": "apache-kafka-java",
    "client_software_version": "3.7.0",
    "broker_id": 1,
    "connection_id": 1,
    "quota_user": "alice",
}
BOB = {
    "principal": "User:bob",
    "client_id": "consumer-b",
    "client_software_name": "librdkafka",
    "client_software_version": "2.4.0",
    "broker_id": 2,
    "connection_id": 7,
    "quota_client_id": "consumer-b",
}
CAROL = {
    "principal": "User:carol",
    "client_id": "admin-c",
    "broker_id": 1,
    "connection_id": 3,
    "quota_user": "carol",
}


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def row(ts: dt.datetime, entity: dict[str, Any], api: str, version: int, **values: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict.fromkeys(COLUMN_NAMES)
    base.update(
        ts=ts,
        listener="PLAINTEXT",
        client_host="127.0.0.1",
        api_key=API_KEYS[api],
        api_name=api,
        api_version=version,
        correlation_id=0,
        request_bytes=0,
        response_bytes=0,
        handler_us=0,
        total_us=0,
        throttle_time_ms=0,
        throttle_cause="none",
        error_code=0,
        error_count=0,
    )
    base.update(entity)
    base.update(values)
    if api in ("Produce", "Fetch"):
        base.update(record_count=10, partition_count=1)
    if api == "Produce":
        base["acks"] = -1
    return base


def produce(ts: dt.datetime, req: int, h: int, tot: int, throttle: int = 0, **extra: Any) -> dict[str, Any]:
    return row(
        ts, ALICE, "Produce", 9, request_bytes=req, response_bytes=60, handler_us=h, total_us=tot,
        throttle_time_ms=throttle, throttle_cause="produce" if throttle else "none", quota_limit=2000.0,
        quota_rate=1000.0, **extra,
    )  # fmt: skip


def fetch(ts: dt.datetime, resp: int, h: int, tot: int, throttle: int = 0, error: int = 0) -> dict[str, Any]:
    return row(
        ts, BOB, "Fetch", 13, request_bytes=100, response_bytes=resp, handler_us=h, total_us=tot,
        throttle_time_ms=throttle, throttle_cause="fetch" if throttle else "none", quota_limit=5000.0,
        error_code=error, error_count=1 if error else 0,
    )  # fmt: skip


BROKER1_DAY1 = [
    row(at(0.1), ALICE, "ApiVersions", 3, request_bytes=50, response_bytes=400, handler_us=100, total_us=150),
    produce(at(0.2), 1000, 2000, 3000),
    produce(at(0.5), 1500, 3000, 5000, throttle=250),
    produce(at(1.2), 500, 1000, 1000),
    produce(at(10.5), 2000, 4000, 8000, throttle=1500),
    row(at(2.0), CAROL, "CreateTopics", 7, request_bytes=120, response_bytes=80, handler_us=5000, total_us=6000,
        quota_limit=1.0),
    row(at(2.3), CAROL, "CreateTopics", 7, request_bytes=120, response_bytes=80, handler_us=3000, total_us=4000,
        quota_limit=1.0, throttle_time_ms=1000, throttle_cause="mutation", error_code=36, error_count=1),
    row(at(2.6), CAROL, "Metadata", 12, request_bytes=40, response_bytes=200, handler_us=600000, total_us=650000,
        quota_limit=50.0, throttle_time_ms=300, throttle_cause="request"),
]  # fmt: skip
BROKER2_DAY1 = [
    row(at(0.3), BOB, "Metadata", 12, request_bytes=40, response_bytes=200, handler_us=400, total_us=500),
    fetch(at(0.4), 4000, 500, 100000),
    fetch(at(0.8), 6000, 700, 200000, throttle=200),
    fetch(at(1.5), 50, 300, 1000, error=1),
]
BROKER2_DAY2 = [produce(DAY2 + dt.timedelta(seconds=0.5), 700, 1000, 2500, broker_id=2)]
ROWS = len(BROKER1_DAY1) + len(BROKER2_DAY1) + len(BROKER2_DAY2)  # 13


def write_dataset(root: Path) -> Path:
    """The dataset above, in `root/broker=<id>/date=<day>/part-0.parquet`, plus what a
    reader must skip: a finished-looking hidden file with rows, a torn hidden file, and a
    `_`-prefixed one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema()

    def write(rows: list[dict[str, Any]], path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)

    write(BROKER1_DAY1, root / "broker=1" / "date=2024-05-01" / "part-0.parquet")
    write(BROKER2_DAY1, root / "broker=2" / "date=2024-05-01" / "part-0.parquet")
    write(BROKER2_DAY2, root / "broker=2" / "date=2024-05-02" / "part-0.parquet")
    # A whole file still under its hidden temporary name: its rows must not be counted.
    write(
        [produce(at(0.9), 99999, 1, 1, throttle=5000)],
        root / "broker=1" / "date=2024-05-01" / ".part-1.parquet",
    )
    (root / "broker=2" / "date=2024-05-01" / ".part-1.parquet.tmp").write_bytes(b"PAR1 torn write")
    (root / "broker=2" / "date=2024-05-01" / "_temporary").write_bytes(b"not parquet")
    return root


@pytest.fixture(scope="module")
def metrics_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("metrics"))


@pytest.fixture(scope="module")
def metrics(spark: Any, metrics_dir: Path) -> Any:
    from spark import jobs

    return jobs.read_metrics(spark, str(metrics_dir)).cache()


def utc(value: dt.datetime) -> dt.datetime:
    """PySpark returns naive local times."""
    return value.astimezone(dt.UTC)


# --- no Spark needed ---------------------------------------------------------------------


def test_arrow_and_spark_schemas_agree() -> None:
    from pyspark.sql import types

    arrow = arrow_schema()
    sparks = spark_schema()
    assert arrow.names == sparks.names == list(COLUMN_NAMES)
    expected = {
        "timestamp[us, tz=UTC]": types.TimestampType(),
        "int16": types.ShortType(),
        "int32": types.IntegerType(),
        "int64": types.LongType(),
        "double": types.DoubleType(),
        "string": types.StringType(),
    }
    for af, sf in zip(arrow, sparks.fields, strict=True):
        assert expected[str(af.type)] == sf.dataType, af.name
        assert af.nullable == sf.nullable, af.name


def test_parse_window_and_time() -> None:
    from spark import jobs

    assert [jobs.parse_window(w) for w in ("1s", "10s", "500ms", "1m", "2 hours", "1d")] == [
        1000, 10_000, 500, 60_000, 7_200_000, 86_400_000,
    ]  # fmt: skip
    assert jobs.parse_windows("10s, 1s,1s") == [1000, 10_000]
    assert [jobs.window_label(ms) for ms in (1000, 10_000, 1500, 60_000, 3_600_000)] == [
        "1s",
        "10s",
        "1500ms",
        "1m",
        "1h",
    ]
    for bad in ("", "10", "1x", "-1s", "0s", "1.5s"):
        with pytest.raises(ValueError):
            jobs.parse_window(bad)
    assert jobs.parse_time("2024-05-01T00:00:01Z") == at(1)
    assert jobs.parse_time("2024-05-01 00:00:01") == at(1)  # no zone: UTC
    assert jobs.parse_time("2024-05-01T02:00:01+02:00") == at(1)
    assert jobs.parse_time("2024-05-02") == DAY2
    assert jobs.parse_time(str(int(T0.timestamp()) + 1)) == at(1)  # epoch seconds
    assert jobs.parse_time("1714521600.5") == at(0.5)
    with pytest.raises(ValueError):
        jobs.parse_time("yesterday")
    assert jobs.base_path("/m") == "/m"
    assert jobs.base_path("/m/broker=*/date=2024-05-01") == "/m"
    assert jobs.base_path("s3a://bucket/m/broker={1,2}/") == "s3a://bucket/m"
    assert jobs.base_path("s3a://*/m") is None
    assert jobs.base_path("/m/broker=1/date=2024-05-01/part-0.parquet") is None
    assert jobs.base_path("broker=*") is None


# --- Spark -------------------------------------------------------------------------------


@pytest.mark.slow
def test_read_skips_hidden_files_and_keeps_the_schema(spark: Any, metrics_dir: Path, metrics: Any) -> None:
    from spark import jobs

    assert metrics.columns == list(COLUMN_NAMES)
    assert metrics.count() == ROWS == 13
    # A broker's folder alone: its partition below basePath still reads.
    assert jobs.read_metrics(spark, str(metrics_dir / "broker=2")).count() == 5  # B1-B4, D1
    one = jobs.read_metrics(
        spark, str(metrics_dir / "broker=2" / "date=2024-05-02" / "part-0.parquet")
    ).collect()
    assert (
        len(one) == 1
        and one[0]["request_bytes"] == 700
        and utc(one[0]["ts"]) == DAY2 + dt.timedelta(seconds=0.5)
    )
    assert jobs.read_metrics(spark, str(metrics_dir / "broker=*" / "date=2024-05-01")).count() == 12
    assert jobs.read_metrics(spark, str(metrics_dir / "broker={1,2}")).count() == 13
    assert jobs.read_metrics(spark, str(metrics_dir / "broker=2" / "*")).count() == 5


@pytest.mark.slow
def test_since_until(spark: Any, metrics_dir: Path) -> None:
    from spark import jobs

    # since <= ts < until: A4 (+1.2), A5 (+10.5), B4 (+1.5), C1-C3 (+2.0..+2.6); D1 is on day 2.
    df = jobs.read_metrics(spark, str(metrics_dir), since=at(1), until=DAY2)
    assert df.count() == 6
    # since alone; the day-2 folder is still read (date pruning keeps a day's margin).
    assert jobs.read_metrics(spark, str(metrics_dir), since=at(10)).count() == 2  # A5, D1
    assert jobs.read_metrics(spark, str(metrics_dir), until=at(0.35)).count() == 3  # A1, A2, B1
    assert jobs.read_metrics(spark, str(metrics_dir), since=DAY2 + dt.timedelta(days=5)).count() == 0


def _windows(spark: Any, metrics: Any) -> dict[tuple[str, dt.datetime, str, str], Any]:
    from spark import jobs

    rows = jobs.quota_windows(spark, metrics, ["1s", "10s"]).collect()
    table = {(r["window_size"], utc(r["window_start"]), r["principal"], r["quota_type"]): r for r in rows}
    assert len(table) == len(rows)
    return table


@pytest.mark.slow
def test_quota_windows(spark: Any, metrics: Any) -> None:
    w = _windows(spark, metrics)
    # 1s: alice has 4 windows (+0, +1, +10, day 2), bob 2 (+0, +1), carol 1 (+2), each with its
    # own quota type and request rows: 8 + 4 + 2 = 14. 10s: alice 3 (+0, +10, day 2) x 2,
    # bob 1 x 2, carol 1 x 2 = 10.
    assert sum(1 for k in w if k[0] == "1s") == 14
    assert sum(1 for k in w if k[0] == "10s") == 10

    # alice, 1s window at +0: A2, A3 produce 1000 + 1500 = 2500 bytes in 1 s; limit 2000;
    # rate/limit 2500/2000 = 1.25; A3 throttled 250 ms: share 250/1000.
    r = w[("1s", at(0), "User:alice", "produce")]
    assert r["window_ms"] == 1000 and utc(r["window_end"]) == at(1) and r["client_id"] == "producer-a"
    assert (r["requests"], r["bytes"], r["handler_us"]) == (2, 2500, 5000)
    assert (r["rate"], r["rate_unit"], r["limit"], r["rate_to_limit"]) == (2500.0, "bytes/s", 2000.0, 1.25)
    assert (r["throttle_count"], r["throttle_ms"], r["throttled_share"]) == (1, 250, 0.25)
    # Its request quota: A1, A2, A3; bytes (50+400)+(1000+60)+(1500+60) = 3070; handler
    # 100+2000+3000 = 5100 us of 1,000,000 us = 0.51 %; no request-quota limit reported.
    r = w[("1s", at(0), "User:alice", "request")]
    assert (r["requests"], r["bytes"], r["handler_us"], r["rate_unit"]) == (3, 3070, 5100, "percent")
    assert r["rate"] == pytest.approx(0.51)
    assert (r["limit"], r["rate_to_limit"], r["throttle_count"], r["throttle_ms"]) == (None, None, 0, 0)
    # +1: A4 500 bytes: 500/2000 = 0.25.
    r = w[("1s", at(1), "User:alice", "produce")]
    assert (r["requests"], r["bytes"], r["rate"], r["rate_to_limit"], r["throttle_count"]) == (
        1,
        500,
        500.0,
        0.25,
        0,
    )
    # +10: A5 2000 bytes, throttled 1500 ms: share capped at 1; not a request-quota throttle.
    r = w[("1s", at(10), "User:alice", "produce")]
    assert (r["rate"], r["rate_to_limit"], r["throttle_ms"], r["throttled_share"]) == (2000.0, 1.0, 1500, 1.0)
    r = w[("1s", at(10), "User:alice", "request")]
    assert (r["bytes"], r["handler_us"], r["throttle_count"], r["throttle_ms"]) == (2060, 4000, 0, 0)
    assert r["rate"] == pytest.approx(0.4)
    # Day 2: D1 700 bytes, 700/2000 = 0.35.
    r = w[("1s", DAY2, "User:alice", "produce")]
    assert (r["bytes"], r["rate"], r["rate_to_limit"]) == (700, 700.0, 0.35)

    # bob, +0: B2, B3 fetch: response bytes 4000 + 6000 = 10000 B/s against 5000: 2.0;
    # B3 throttled 200 ms: 0.2. Request quota: B1, B2, B3: (40+200)+(100+4000)+(100+6000)
    # = 10440 bytes, handler 400+500+700 = 1600 us: 0.16 %.
    r = w[("1s", at(0), "User:bob", "fetch")]
    assert (r["requests"], r["bytes"], r["rate"], r["limit"], r["rate_to_limit"]) == (
        2,
        10000,
        10000.0,
        5000.0,
        2.0,
    )
    assert (r["throttle_count"], r["throttle_ms"], r["throttled_share"]) == (1, 200, 0.2)
    r = w[("1s", at(0), "User:bob", "request")]
    assert (r["requests"], r["bytes"], r["handler_us"]) == (3, 10440, 1600)
    assert r["rate"] == pytest.approx(0.16)
    # +1: B4 50 bytes: 50/5000 = 0.01.
    r = w[("1s", at(1), "User:bob", "fetch")]
    assert (r["bytes"], r["rate"], r["rate_to_limit"]) == (50, 50.0, 0.01)

    # carol, +2: C1, C2 mutations: 2 requests/s against 1/s: 2.0; C2 throttled 1000 ms: 1.0.
    r = w[("1s", at(2), "User:carol", "mutation")]
    assert (r["requests"], r["bytes"], r["rate"], r["rate_unit"]) == (2, 400, 2.0, "mutations/s")
    assert (r["limit"], r["rate_to_limit"], r["throttle_count"], r["throttle_ms"], r["throttled_share"]) == (
        1.0, 2.0, 1, 1000, 1.0,
    )  # fmt: skip
    # Request quota: C1, C2, C3: handler 5000+3000+600000 = 608000 us: 60.8 % against C3's
    # 50 %: 1.216; C3 throttled 300 ms by it: 0.3.
    r = w[("1s", at(2), "User:carol", "request")]
    assert (r["requests"], r["bytes"], r["handler_us"], r["limit"]) == (3, 640, 608000, 50.0)
    assert r["rate"] == pytest.approx(60.8) and r["rate_to_limit"] == pytest.approx(1.216)
    assert (r["throttle_count"], r["throttle_ms"], r["throttled_share"]) == (1, 300, 0.3)

    # 10s windows. alice +0..+10: A2-A4 3000 bytes / 10 s = 300 B/s: 0.15; 250 ms throttled
    # of 10000: 0.025. Request: A1-A4, handler 6100 us of 10 s = 0.061 %.
    r = w[("10s", at(0), "User:alice", "produce")]
    assert (r["window_ms"], r["requests"], r["bytes"], r["rate"], r["rate_to_limit"]) == (
        10_000,
        3,
        3000,
        300.0,
        0.15,
    )
    assert (r["throttle_count"], r["throttle_ms"], r["throttled_share"]) == (1, 250, 0.025)
    r = w[("10s", at(0), "User:alice", "request")]
    assert (r["requests"], r["bytes"], r["handler_us"]) == (4, 3630, 6100)
    assert r["rate"] == pytest.approx(0.061)
    r = w[("10s", at(10), "User:alice", "produce")]  # A5: 2000/10 = 200 B/s: 0.1; 1500/10000
    assert (r["rate"], r["rate_to_limit"], r["throttled_share"]) == (200.0, 0.1, 0.15)
    r = w[("10s", at(0), "User:bob", "fetch")]  # B2-B4: 10050/10 = 1005 B/s: 0.201; 200/10000
    assert (r["requests"], r["bytes"], r["rate"], r["throttled_share"]) == (3, 10050, 1005.0, 0.02)
    assert r["rate_to_limit"] == pytest.approx(0.201)
    r = w[("10s", at(0), "User:carol", "mutation")]  # 2/10 = 0.2/s: 0.2; 1000/10000
    assert (r["rate"], r["rate_to_limit"], r["throttled_share"]) == (0.2, 0.2, 0.1)
    r = w[("10s", at(0), "User:carol", "request")]  # 608000 us of 10 s = 6.08 %: 0.1216
    assert r["rate"] == pytest.approx(6.08) and r["rate_to_limit"] == pytest.approx(0.1216)


@pytest.mark.slow
def test_quota_summary(spark: Any, metrics: Any) -> None:
    from spark import jobs

    rows = jobs.quota_summary(spark, jobs.quota_windows(spark, metrics, ["1s"])).collect()
    s = {(r["principal"], r["quota_type"]): r for r in rows}
    assert len(rows) == 6  # alice produce/request, bob fetch/request, carol mutation/request
    # alice produce, 1s windows: rates 2500, 500, 2000, 700: mean 5700/4 = 1425; ratios
    # 1.25, 0.25, 1.0, 0.35; throttled in 2 windows, 250 + 1500 ms.
    r = s[("User:alice", "produce")]
    assert (r["active_windows"], r["requests"], r["bytes"]) == (4, 5, 5700)
    assert (r["avg_rate"], r["max_rate"], r["limit"], r["max_rate_to_limit"]) == (
        1425.0,
        2500.0,
        2000.0,
        1.25,
    )
    assert r["avg_rate_to_limit"] == pytest.approx((1.25 + 0.25 + 1.0 + 0.35) / 4)
    assert (r["throttled_windows"], r["throttle_count"], r["throttle_ms"]) == (2, 2, 1750)
    assert utc(r["first_window_start"]) == at(0) and utc(r["last_window_end"]) == DAY2 + dt.timedelta(
        seconds=1
    )
    # Its span: +0 .. day 2 +1 s = 86401 one-second windows, 5700 bytes over them.
    assert r["span_rate"] == pytest.approx(5700 / 86401)
    # bob fetch: windows +0 (10000 B/s) and +1 (50 B/s), span +0 .. +2: 10050 / 2 s = 5025
    # B/s against 5000: 1.005; the active windows' mean is the same here (no idle window).
    r = s[("User:bob", "fetch")]
    assert (r["active_windows"], r["span_rate"], r["avg_rate"], r["max_rate_to_limit"]) == (
        2,
        5025.0,
        5025.0,
        2.0,
    )
    assert r["span_rate_to_limit"] == pytest.approx(1.005)
    r = s[("User:carol", "request")]
    assert (r["active_windows"], r["throttle_count"], r["limit"], r["span_rate"]) == (
        1,
        1,
        50.0,
        pytest.approx(60.8),
    )


@pytest.mark.slow
def test_api_latency_and_errors(spark: Any, metrics: Any) -> None:
    from spark import jobs

    rows = {(r["api_name"], r["api_version"]): r for r in jobs.api_latency(spark, metrics).collect()}
    assert sorted(rows) == [
        ("ApiVersions", 3),
        ("CreateTopics", 7),
        ("Fetch", 13),
        ("Metadata", 12),
        ("Produce", 9),
    ]
    # Percentiles come from total_us's log-linear histogram (jobs.latency_bucket): a value
    # v >= 256 falls in a bucket of width 2^s, s = floor(log2 v) - 7, reported as its upper
    # bound ((v >> s) + 1 << s) - 1; below 256 as itself. p-th percentile: the smallest
    # bucket whose cumulative count reaches p % of n (holding the ceil(p n / 100)-th
    # smallest value), capped at max_us.
    # Produce: total_us 3000, 5000, 1000, 8000, 2500 -> sorted 1000 2500 3000 5000 8000.
    # p50 = 3rd (ceil 2.5): 3000 in [2048, 4096), s = 4, 3000 >> 4 = 187: (188 << 4) - 1 =
    # 3007. p95 = p99 = 5th: 8000 in [4096, 8192), s = 5, 8000 >> 5 = 250: (251 << 5) - 1 =
    # 8031, capped at max 8000. Mean 19500/5 = 3900; A3, A5 throttled.
    r = rows[("Produce", 9)]
    assert (r["api_key"], r["requests"], r["errors"], r["errors_by_code"], r["throttled"]) == (0, 5, 0, {}, 2)
    assert (r["p50_us"], r["p95_us"], r["p99_us"], r["max_us"], r["mean_us"]) == (
        3007,
        8000,
        8000,
        8000,
        3900.0,
    )
    # handler_us 2000 3000 1000 4000 1000: mean 11000/5 = 2200, max 4000.
    assert (r["handler_mean_us"], r["handler_max_us"]) == (2200.0, 4000)
    # Fetch: 100000, 200000, 1000 -> sorted 1000 100000 200000; one error 1. p50 = 2nd
    # (ceil 1.5): 100000 in [65536, 131072), s = 9, 100000 >> 9 = 195: (196 << 9) - 1 =
    # 100351 (0.35 % above). p95 = p99 = 3rd: 200000's bucket, capped at max 200000.
    r = rows[("Fetch", 13)]
    assert (r["requests"], r["errors"], r["errors_by_code"], r["throttled"]) == (3, 1, {1: 1}, 1)
    assert (r["p50_us"], r["p95_us"], r["p99_us"], r["max_us"]) == (100351, 200000, 200000, 200000)
    # Metadata: B1 500, C3 650000. p50 = 1st (ceil 1.0): 500 in [256, 512), s = 1, 500 >> 1
    # = 250: (251 << 1) - 1 = 501. p95 = 2nd: 650000's bucket capped at max 650000.
    r = rows[("Metadata", 12)]
    assert (r["requests"], r["errors"], r["throttled"], r["p50_us"], r["p95_us"], r["max_us"]) == (
        2, 0, 1, 501, 650000, 650000,
    )  # fmt: skip
    # CreateTopics: 6000, 4000. p50 = 4000: s = 4, 4000 >> 4 = 250: (251 << 4) - 1 = 4015;
    # p99 = 6000 (capped). C2 failed with 36 (TOPIC_ALREADY_EXISTS).
    r = rows[("CreateTopics", 7)]
    assert (r["requests"], r["errors"], r["errors_by_code"], r["p50_us"], r["p99_us"]) == (
        2,
        1,
        {36: 1},
        4015,
        6000,
    )
    # ApiVersions: 150, below 256: exact.
    r = rows[("ApiVersions", 3)]
    assert (r["requests"], r["p50_us"], r["p99_us"], r["max_us"], r["errors_by_code"]) == (
        1,
        150,
        150,
        150,
        {},
    )

    errors = sorted(
        (r["api_name"], r["error_code"], r["requests"]) for r in jobs.api_errors(spark, metrics).collect()
    )
    assert errors == [("CreateTopics", 36, 1), ("Fetch", 1, 1)]


def _bucket_reference(v: int) -> int:
    """jobs.latency_bucket in Python: the upper bound of v's log-linear bucket."""
    if v < 256:
        return v
    shift = v.bit_length() - 1 - 7
    return (((v >> shift) + 1) << shift) - 1


@pytest.mark.slow
def test_latency_bucket(spark: Any) -> None:
    from spark import jobs

    values = {
        0,
        1,
        150,
        255,
        256,
        257,
        258,
        500,
        511,
        512,
        513,
        1000,
        3000,
        100_000,
        2**62 + 12345,
        2**63 - 1,
    }
    for k in range(1, 63):  # both sides of every power of two (log2 rounds up just below 2^48 and beyond)
        values |= {2**k - 1, 2**k, 2**k + 1}
    df = spark.createDataFrame([(v,) for v in sorted(values)], "v long")
    got = {r["v"]: r["b"] for r in df.select("v", jobs.latency_bucket("v").alias("b")).collect()}
    assert got == {v: _bucket_reference(v) for v in values}
    # Exact below 256; above, the bucket's upper bound is less than 1/128 above the value.
    assert [got[v] for v in (0, 1, 150, 255, 256, 257, 258, 511, 512, 513)] == [
        0,
        1,
        150,
        255,
        257,
        257,
        259,
        511,
        515,
        515,
    ]
    assert all(0 <= got[v] - v and 128 * (got[v] - v) < v for v in values if v >= 256)


@pytest.mark.slow
def test_latency_percentiles_from_the_histogram(spark: Any) -> None:
    from spark import jobs

    def req(api: str, total: int, handler: int, error: int = 0, throttle: int = 0) -> dict[str, Any]:
        return row(at(0), ALICE, api, 9 if api == "Produce" else 12, handler_us=handler, total_us=total,
                   error_code=error, throttle_time_ms=throttle, throttle_cause="produce" if throttle else "none")  # fmt: skip

    # Produce, 20 requests: 10, 20, ..., 120 (12 values below 256: exact), then 255, 256, 300,
    # 1000, 4000, 4001, 9000, 10000.
    produce_us = [*range(10, 130, 10), 255, 256, 300, 1000, 4000, 4001, 9000, 10000]
    rows = [
        req("Produce", t, t // 2, error=1 if t == 300 else 0, throttle=5 if t >= 9000 else 0)
        for t in produce_us
    ]
    # Metadata, 4 requests of 1 us and 1 of 999 us.
    rows += [req("Metadata", 1, 1)] * 4 + [req("Metadata", 999, 900)]
    df = spark.createDataFrame(rows, spark_schema())

    hist = jobs.latency_histogram(df)
    assert hist.columns == [*jobs.API_KEYS, "bucket_us", "requests", "errors", "throttled", "total_us_sum",
                            "max_us", "handler_us_sum", "handler_max_us"]  # fmt: skip
    # 4000 and 4001 share a bucket: 4000 >> 4 = 4001 >> 4 = 250 -> (251 << 4) - 1 = 4015.
    buckets = {(r["api_name"], r["bucket_us"]): r for r in hist.collect()}
    assert len(buckets) == 19 + 2
    b = buckets[("Produce", 4015)]
    assert (b["requests"], b["total_us_sum"], b["max_us"], b["handler_us_sum"], b["handler_max_us"]) == (
        2, 8001, 4001, 4000, 2000,
    )  # fmt: skip

    stats = {r["api_name"]: r for r in jobs.latency_from_histogram(hist).collect()}
    assert stats == {r["api_name"]: r for r in jobs.latency_stats(spark, df).collect()}
    r = stats["Produce"]
    # p50: 10th smallest (cumulative 10 x 100 >= 50 x 20): 100, below 256: exact.
    # p95: 19th (19 x 100 >= 95 x 20): 9000 in [8192, 16384), s = 6, 9000 >> 6 = 140:
    #   (141 << 6) - 1 = 9023 (0.26 % above 9000).
    # p99: 20th (ceil 19.8): 10000 >> 6 = 156: (157 << 6) - 1 = 10047, capped at max 10000.
    assert (r["p50_us"], r["p95_us"], r["p99_us"], r["max_us"]) == (100, 9023, 10000, 10000)
    assert (r["requests"], r["errors"], r["throttled"]) == (20, 1, 2)
    assert (
        r["mean_us"] == sum(produce_us) / 20 and r["handler_mean_us"] == sum(t // 2 for t in produce_us) / 20
    )
    assert r["handler_max_us"] == 5000
    # Metadata: p50 = 3rd of 5 (ceil 2.5) = 1 (exact); p95 = p99 = 5th: 999 in [512, 1024),
    # s = 2, 999 >> 2 = 249: (250 << 2) - 1 = 999 exactly, the max.
    r = stats["Metadata"]
    assert (r["requests"], r["p50_us"], r["p95_us"], r["p99_us"], r["max_us"]) == (5, 1, 999, 999, 999)


@pytest.mark.slow
def test_client_software(spark: Any, metrics: Any) -> None:
    from spark import jobs

    rows = jobs.client_software(spark, metrics).collect()
    got = sorted(
        (r["client_software_name"] or "", r["client_software_version"] or "", r["api_name"], r["api_version"],
         r["requests"], r["errors"], r["clients"])
        for r in rows
    )  # fmt: skip
    assert got == [
        ("", "", "CreateTopics", 7, 2, 1, 1),  # carol reported no software (C1, C2; C2 failed)
        ("", "", "Metadata", 12, 1, 0, 1),  # C3
        ("apache-kafka-java", "3.7.0", "ApiVersions", 3, 1, 0, 1),  # A1
        ("apache-kafka-java", "3.7.0", "Produce", 9, 5, 0, 1),  # A2-A5, D1
        ("librdkafka", "2.4.0", "Fetch", 13, 3, 1, 1),  # B2-B4
        ("librdkafka", "2.4.0", "Metadata", 12, 1, 0, 1),  # B1
    ]
    produce = next(r for r in rows if r["api_name"] == "Produce")
    assert utc(produce["first_seen"]) == at(0.2) and utc(produce["last_seen"]) == DAY2 + dt.timedelta(
        seconds=0.5
    )


@pytest.mark.slow
def test_top_offenders(spark: Any, metrics: Any) -> None:
    from spark import jobs

    rows = jobs.top_offenders(spark, metrics).collect()
    # alice: A3 250 + A5 1500 = 1750 ms in 2; carol: C2 1000 + C3 300 = 1300 ms in 2 (fewer
    # ms: second); bob: B3 200 ms.
    assert [(r["principal"], r["client_id"], r["throttle_count"], r["throttle_ms"], r["max_throttle_ms"],
             r["causes"]) for r in rows] == [
        ("User:alice", "producer-a", 2, 1750, 1500, ["produce"]),
        ("User:carol", "admin-c", 2, 1300, 1000, ["mutation", "request"]),
        ("User:bob", "consumer-b", 1, 200, 200, ["fetch"]),
    ]  # fmt: skip
    assert [(utc(r["first_violation"]), utc(r["last_violation"])) for r in rows] == [
        (at(0.5), at(10.5)),
        (at(2.3), at(2.6)),
        (at(0.8), at(0.8)),
    ]
    assert [r["principal"] for r in jobs.top_offenders(spark, metrics, limit=2).collect()] == [
        "User:alice",
        "User:carol",
    ]


@pytest.mark.slow
def test_empty_input(spark: Any, tmp_path: Path) -> None:
    from spark import jobs

    (tmp_path / "broker=1").mkdir()
    df = jobs.read_metrics(spark, str(tmp_path))
    assert df.count() == 0
    assert jobs.quota_windows(spark, df).count() == 0
    assert jobs.api_latency(spark, df).count() == 0
    assert jobs.top_offenders(spark, df).count() == 0


def test_dataset_has_no_stray_files(tmp_path: Path) -> None:
    """The layout the Spark tests read: three visible files in hive folders."""
    write_dataset(tmp_path)
    visible = sorted(
        os.path.relpath(os.path.join(d, f), tmp_path)
        for d, _, files in os.walk(tmp_path)
        for f in files
        if not f.startswith((".", "_"))
    )
    assert visible == [
        "broker=1/date=2024-05-01/part-0.parquet",
        "broker=2/date=2024-05-01/part-0.parquet",
        "broker=2/date=2024-05-02/part-0.parquet",
    ]
