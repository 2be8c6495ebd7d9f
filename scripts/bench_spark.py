#!/usr/bin/env python3
"""The report's main aggregations in Spark (local[2]) against the same queries in DuckDB,
same data, same run.

Generates request-metrics rows (spark/schema.py's schema, the sink's layout: 100,000-row
files under `broker=<b>/date=<d>/`, 1,000,000 rows per broker folder), then for each size
(default 1,000,000 and 10,000,000 rows: the first 1 or all 10 broker folders) times:

- quota windows: `spark.jobs.quota_windows` at 10 s (per principal, client id, quota
  type and 10 s window: requests, bytes, handler time, throttle count and time, limit,
  rate, rate/limit; every row counts for the request quota and Produce/Fetch for theirs
  too: one aggregation per window and entity with every type's measures side by side);
- API latency: `spark.jobs.latency_stats` (per API version: requests, errors, throttled,
  p50/p95/p99 of total_us from its log-linear histogram, max and mean of total_us and
  handler_us: one aggregation per API version and bucket, then the per-version roll-up);

and the same two queries written in DuckDB SQL (the same histogram buckets and
percentile rule, so both engines answer the same question with the same numbers).
Spark reads with the schema given up front (no inference pass); its results go to the
`noop` sink (computed in full, not collected), DuckDB's to Arrow tables. Each query runs
`--repeat` times (default 3), Spark and DuckDB taking turns, and the best time counts:
the first Spark run also pays for JIT warm-up. The SparkSession's start-up is timed and
printed apart. Spark reads one split per core (`spark.sql.files.maxPartitionBytes` 1g:
Spark caps a split at the input's size over the cores); DuckDB runs with as many threads
as Spark has cores (`--cores`, default 2). Before the timings, both engines' results on
the smallest size are checked to agree (group counts and totals; the latency table row
by row, every count and percentile exactly).

Prints the time per query and engine, the ratio Spark/DuckDB and rows/s per size; the
target is Spark's query time <= 3 x DuckDB's at 10M rows.

The what-if (`--parts what-if`, run after the report's by default): `--what-if-rows`
(default 10,000,000) generated request rows of 10,000 entities (2,500 users x 4 client
ids, each on one of 10 brokers on its own connection: produce, fetch and a few other
requests over 10 minutes, recorded without quotas) replayed under a proposal (a default
user producer quota, some users with their own, a default client-id consumer quota and
a default user request quota): `spark.what_if_job.run_what_if` on local[N] (reading,
grouping and replaying to requests/ written, then the whole what-if with its tables and
page), against the same replay done by one plain Python process (pyarrow reads the
rows, the same `assign_groups` and `replay_table` per group, requests written with
pyarrow). Both must predict the same throttles (checked); the ratio of their replay
times is printed. `--what-if-repeat` rounds (default 2), the engines taking turns, the
best of each counting: a round of 10M rows takes minutes.

    .venv/bin/python scripts/bench_spark.py                    # 1M and 10M rows
    .venv/bin/python scripts/bench_spark.py --quick            # 100k and 1M, one repeat
    .venv/bin/python scripts/bench_spark.py --data /tmp/bench  # keep (and reuse) the data
    .venv/bin/python scripts/bench_spark.py --conf spark.sql.files.maxPartitionBytes=128m
    .venv/bin/python scripts/bench_spark.py --parts what-if                  # the what-if only
    .venv/bin/python scripts/bench_spark.py --parts what-if --what-if-rows 1000000

Exit status: 0 when every run completed (with `--check-target`, 3 if the target was not
met at the largest size), 1 on a failure (such as the engines disagreeing).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROWS_PER_FILE = 100_000
ROWS_PER_BROKER = 1_000_000
DURATION_S = 3600  # each broker folder's rows span this long
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
ENTITIES = 200  # (principal, client id) pairs: 50 users x 4 client ids
WINDOW_MS = 10_000
TARGET = 3.0

# api name, key, version, share of requests
APIS = [
    ("Produce", 0, 9, 0.45),
    ("Fetch", 1, 13, 0.45),
    ("Metadata", 3, 12, 0.04),
    ("ApiVersions", 18, 3, 0.02),
    ("OffsetCommit", 8, 8, 0.02),
    ("Heartbeat", 12, 4, 0.015),
    ("CreateTopics", 19, 7, 0.005),
]


def generate_file(path: Path, rows: int, seed: int, start_s: float, span_s: float) -> None:
    """`rows` random requests with ts in [start, start + span), sorted, like a sink file."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spark.schema import arrow_schema

    rng = np.random.default_rng(seed)
    schema = arrow_schema()

    def strings(values: list[str], index: Any) -> Any:
        return pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()), pa.array(values)).cast(pa.string())

    offsets_us = np.sort(rng.uniform(start_s, start_s + span_s, rows)) * 1e6
    ts = pa.array((int(T0.timestamp() * 1e6) + offsets_us).astype(np.int64), pa.int64()).cast(
        pa.timestamp("us", tz="UTC")
    )
    entity = rng.integers(0, ENTITIES, rows)
    api = rng.choice(len(APIS), rows, p=[a[3] for a in APIS])
    keys = np.array([a[1] for a in APIS], dtype=np.int16)[api]
    versions = np.array([a[2] for a in APIS], dtype=np.int16)[api]
    produce, fetch = api == 0, api == 1
    request_bytes = np.where(produce, rng.integers(200, 20_000, rows), rng.integers(40, 300, rows)).astype(
        np.int32
    )
    response_bytes = np.where(fetch, rng.integers(0, 60_000, rows), rng.integers(20, 400, rows)).astype(
        np.int32
    )
    handler_us = rng.integers(20, 3000, rows).astype(np.int64)
    total_us = handler_us + np.where(fetch, rng.integers(100, 500_000, rows), rng.integers(50, 20_000, rows))
    throttled = (produce | fetch) & (rng.random(rows) < 0.02)
    throttle_ms = np.where(throttled, rng.integers(1, 1000, rows), 0).astype(np.int32)
    cause = np.where(throttled, np.where(produce, 0, 1), 4)  # produce, fetch, none
    limit = np.where(produce, 1_000_000.0, np.where(fetch, 2_000_000.0, np.nan))
    has_limit = produce | fetch
    errors = rng.random(rows) < 0.01
    error_code = np.where(errors, rng.choice(np.array([1, 3, 6], dtype=np.int16), rows), 0).astype(np.int16)
    software = entity % 3  # java, librdkafka, none
    columns = {
        "ts": ts,
        "broker_id": pa.array(np.full(rows, seed % 1000, dtype=np.int32)),
        "listener": strings(["PLAINTEXT"], np.zeros(rows, dtype=np.int32)),
        "connection_id": pa.array((entity * 7 + 1).astype(np.int64)),
        "client_host": strings(["127.0.0.1"], np.zeros(rows, dtype=np.int32)),
        "principal": strings([f"User:u{i}" for i in range(ENTITIES // 4)], entity // 4),
        "client_id": strings([f"client-{i}" for i in range(ENTITIES)], entity),
        "client_software_name": pa.array(
            np.array(["apache-kafka-java", "librdkafka", ""], dtype=object)[software],
            pa.string(),
            mask=software == 2,
        ),
        "client_software_version": pa.array(
            np.array(["3.7.0", "2.4.0", ""], dtype=object)[software], pa.string(), mask=software == 2
        ),
        "api_key": pa.array(keys),
        "api_name": strings([a[0] for a in APIS], api),
        "api_version": pa.array(versions),
        "correlation_id": pa.array(np.arange(rows, dtype=np.int32)),
        "request_bytes": pa.array(request_bytes),
        "response_bytes": pa.array(response_bytes),
        "handler_us": pa.array(handler_us),
        "total_us": pa.array(total_us.astype(np.int64)),
        "throttle_time_ms": pa.array(throttle_ms),
        "throttle_cause": strings(["produce", "fetch", "request", "mutation", "none"], cause),
        "quota_user": pa.array(np.array([f"u{i}" for i in range(ENTITIES // 4)], dtype=object)[entity // 4]),
        "quota_client_id": pa.array(np.full(rows, None, dtype=object), pa.string()),
        "quota_limit": pa.array(limit, pa.float64(), mask=~has_limit),
        "quota_rate": pa.array(rng.uniform(0, 2e6, rows), pa.float64(), mask=~has_limit),
        "error_code": pa.array(error_code),
        "error_count": pa.array(errors.astype(np.int32)),
        "record_count": pa.array(rng.integers(1, 100, rows).astype(np.int32), mask=~has_limit),
        "partition_count": pa.array(np.ones(rows, dtype=np.int32), mask=~has_limit),
        "acks": pa.array(np.full(rows, -1, dtype=np.int16), mask=~produce),
    }
    table = pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.parent / f".{path.name}.tmp"
    pq.write_table(table, temporary)
    temporary.rename(path)


def generate(root: Path, brokers: int, say: Callable[[str], None]) -> None:
    """`brokers` folders of ROWS_PER_BROKER rows each (skipping those already complete)."""
    files = ROWS_PER_BROKER // ROWS_PER_FILE
    for broker in range(brokers):
        folder = root / f"broker={broker}" / f"date={T0.date().isoformat()}"
        if folder.is_dir() and len(list(folder.glob("part-*.parquet"))) == files:
            continue
        started = time.perf_counter()
        span = DURATION_S / files
        for i in range(files):
            generate_file(folder / f"part-{i:04d}.parquet", ROWS_PER_FILE, broker * 1000 + i, i * span, span)
        say(f"generated broker={broker}: {ROWS_PER_BROKER:,} rows in {time.perf_counter() - started:.1f} s")


def duckdb_queries(globs: list[str]) -> dict[str, str]:
    """The two aggregations in DuckDB SQL, as spark/jobs.py defines them."""
    from spark.jobs import PERCENTILES, SUB_BUCKET_BITS

    source = "read_parquet([" + ", ".join(f"'{g}'" for g in globs) + "])"
    w_us = WINDOW_MS * 1000
    windows = f"""
WITH base AS (
  SELECT epoch_us(ts) // {w_us} AS bucket, principal, client_id, request_bytes, response_bytes, handler_us,
         throttle_time_ms, throttle_cause, quota_limit,
         -- by API key, as jobs._quota_window: Produce 0, Fetch 1; CreateTopics 19,
         -- CreatePartitions 37, DeleteTopics 20
         CASE WHEN api_key = 0 THEN 'produce' WHEN api_key = 1 THEN 'fetch'
              WHEN api_key IN (19, 37, 20) THEN 'mutation' ELSE 'request' END AS primary_type
  FROM {source}
), rows AS (
  SELECT *, CASE WHEN throttle_cause <> 'none' THEN throttle_cause ELSE primary_type END AS subject,
         unnest(CASE WHEN primary_type = 'request' THEN ['request'] ELSE [primary_type, 'request'] END)
           AS quota_type
  FROM base
), agg AS (
  SELECT bucket, principal, client_id, quota_type,
         count(*) AS requests,
         sum(CASE quota_type WHEN 'produce' THEN request_bytes WHEN 'fetch' THEN response_bytes
                  ELSE request_bytes + response_bytes END)::BIGINT AS bytes,
         sum(handler_us)::BIGINT AS handler_us,
         count(*) FILTER (WHERE throttle_cause = quota_type AND throttle_time_ms > 0) AS throttle_count,
         coalesce(sum(throttle_time_ms) FILTER (WHERE throttle_cause = quota_type AND throttle_time_ms > 0), 0)::BIGINT
           AS throttle_ms,
         max(quota_limit) FILTER (WHERE subject = quota_type AND quota_limit < 'inf'::DOUBLE) AS "limit"
  FROM rows GROUP BY ALL
)
SELECT '10s' AS window_size, {WINDOW_MS} AS window_ms, make_timestamp(bucket * {w_us}) AS window_start,
       make_timestamp((bucket + 1) * {w_us}) AS window_end, principal, client_id, quota_type, requests, bytes,
       handler_us, rate, rate_unit, "limit", CASE WHEN "limit" > 0 THEN rate / "limit" END AS rate_to_limit,
       throttle_count, throttle_ms, least(throttle_ms / {WINDOW_MS}.0, 1.0) AS throttled_share
FROM (
  SELECT *, CASE WHEN quota_type IN ('produce', 'fetch') THEN bytes / {WINDOW_MS / 1000}
                 WHEN quota_type = 'request' THEN handler_us / {w_us}.0 * 100
                 ELSE requests / {WINDOW_MS / 1000} END AS rate,
            CASE quota_type WHEN 'request' THEN 'percent' WHEN 'mutation' THEN 'mutations/s'
                 ELSE 'bytes/s' END AS rate_unit
  FROM agg
)"""
    # jobs.latency_bucket: below 256 us the value; above, the upper bound of its slice of
    # 1/128 of its power of two, v | (2^s - 1) with s = floor(log2 v) - 7 (from 2^47 on,
    # one less where log2 rounds up to the next power of two).
    s = f"(floor(log2(total_us))::INTEGER - {SUB_BUCKET_BITS})"
    corrected = f"({s} - CASE WHEN total_us >> {s} < {1 << SUB_BUCKET_BITS} THEN 1 ELSE 0 END)"
    shift = f"CASE WHEN total_us < {1 << 47} THEN {s} ELSE {corrected} END"
    bucket = f"CASE WHEN total_us < {2 << SUB_BUCKET_BITS} THEN total_us ELSE total_us | ((1::BIGINT << ({shift})) - 1) END"
    reached = ",\n       ".join(
        f"least(min(bucket_us) FILTER (WHERE cumulative * 100 >= total * {p}), max(max_us)) AS p{p}_us"
        for p in PERCENTILES
    )
    # jobs.latency_from_histogram(jobs.latency_histogram(...)): the histogram, then per API
    # version the smallest bucket whose cumulative count reaches p % of the requests.
    latency = f"""
WITH hist AS (
  SELECT api_key, api_name, api_version, {bucket} AS bucket_us, count(*) AS requests,
         count(*) FILTER (WHERE error_code <> 0) AS errors,
         count(*) FILTER (WHERE throttle_time_ms > 0) AS throttled,
         sum(total_us) AS total_us_sum, max(total_us) AS max_us,
         sum(handler_us) AS handler_us_sum, max(handler_us) AS handler_max_us
  FROM {source} GROUP BY ALL
), ranked AS (
  SELECT *, sum(requests) OVER (PARTITION BY api_key, api_name, api_version ORDER BY bucket_us
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cumulative,
         sum(requests) OVER (PARTITION BY api_key, api_name, api_version) AS total
  FROM hist
)
SELECT api_key, api_name, api_version, sum(requests)::BIGINT AS requests, sum(errors)::BIGINT AS errors,
       sum(throttled)::BIGINT AS throttled,
       {reached},
       max(max_us) AS max_us, sum(total_us_sum) / sum(requests) AS mean_us,
       sum(handler_us_sum) / sum(requests) AS handler_mean_us, max(handler_max_us) AS handler_max_us
FROM ranked GROUP BY api_key, api_name, api_version"""
    return {"quota windows": windows, "API latency": latency}


def best_of(repeat: int, *runs: Callable[[], None]) -> list[float]:
    """The best time of each of `runs` over `repeat` rounds, the runs taking turns within
    a round: a load that comes and goes (other processes on the cores) weighs on both
    engines alike instead of on whichever ran during it."""
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            started = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - started)
    return best


def check_agreement(spark: Any, con: Any, path: str, globs: list[str], say: Callable[[str], None]) -> None:
    """Both engines' results on the same rows: same groups, same totals."""
    from pyspark.sql import functions as F

    from spark import jobs

    df = jobs.read_metrics(spark, path)
    sql = duckdb_queries(globs)
    checks = {
        "quota windows": (
            jobs.quota_windows(spark, df, [WINDOW_MS]),
            ["requests", "bytes", "handler_us", "throttle_count", "throttle_ms"],
        ),
        "API latency": (jobs.latency_stats(spark, df), ["requests", "errors", "throttled", "max_us"]),
    }
    for name, (frame, columns) in checks.items():
        first = frame.agg(F.count(F.lit(1)), *[F.sum(c) for c in columns]).first()
        assert first is not None
        spark_totals = [int(v) for v in first]
        sums = ", ".join(f"sum({c})" for c in columns)
        [row] = con.sql(f"SELECT count(*), {sums} FROM ({sql[name]})").fetchall()
        duck_totals = [int(v) for v in row]
        if spark_totals != duck_totals:
            raise SystemExit(f"bench_spark: {name}: Spark {spark_totals} != DuckDB {duck_totals}")
        say(f"agree: {name}: {spark_totals[0]:,} groups, totals {spark_totals[1:]}")
    # The latency table row by row: every count and percentile exactly, the means to 1e-9.
    exact = [
        "requests",
        "errors",
        "throttled",
        *[f"p{p}_us" for p in jobs.PERCENTILES],
        "max_us",
        "handler_max_us",
    ]
    means = ["mean_us", "handler_mean_us"]
    keys = ["api_key", "api_name", "api_version"]
    spark_rows = {
        tuple(r[k] for k in keys): r
        for r in jobs.latency_stats(spark, df).select(*keys, *exact, *means).collect()
    }
    cursor = con.sql(f"SELECT {', '.join(keys + exact + means)} FROM ({sql['API latency']})")
    duck_rows = {tuple(r[:3]): dict(zip(keys + exact + means, r, strict=True)) for r in cursor.fetchall()}
    if sorted(spark_rows) != sorted(duck_rows):
        raise SystemExit(
            f"bench_spark: API latency: Spark {sorted(spark_rows)} != DuckDB {sorted(duck_rows)}"
        )
    for key, s_row in spark_rows.items():
        d_row = duck_rows[key]
        differ = [c for c in exact if int(s_row[c]) != int(d_row[c])]
        differ += [c for c in means if abs(s_row[c] - d_row[c]) > 1e-9 * max(1.0, abs(d_row[c]))]
        if differ:
            raise SystemExit(
                f"bench_spark: API latency {key}: "
                + ", ".join(f"{c} Spark {s_row[c]} != DuckDB {d_row[c]}" for c in differ)
            )
    produce = next(r for k, r in spark_rows.items() if k[1] == "Produce")
    pcts = "/".join(str(produce[f"p{p}_us"]) for p in jobs.PERCENTILES)
    say(
        f"agree: API latency: {len(spark_rows)} rows, every count and percentile (Produce p50/p95/p99 {pcts} us)"
    )


WHAT_IF_ENTITIES = 10_000  # 2,500 users x 4 client ids
WHAT_IF_BROKERS = 10  # an entity's requests all go to broker entity % 10
WHAT_IF_SPAN_S = 600
WHAT_IF_RUN = 1_714_564_800_000_000  # run_id of the generated "recording"


def generate_what_if(root: Path, rows: int, say: Callable[[str], None]) -> None:
    """`rows` requests of WHAT_IF_ENTITIES entities, recorded without quotas (schema 2,
    quotas_on 0), ROWS_PER_FILE-row files under broker=<b>/date=<d>/ (skipped if there)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spark.schema import arrow_schema

    schema = arrow_schema()
    per_broker = rows // WHAT_IF_BROKERS
    files = max(1, per_broker // ROWS_PER_FILE)
    users = WHAT_IF_ENTITIES // 4
    principals = pa.array([f"User:u{u}" for u in range(users)])
    client_ids = pa.array([f"app-{e}" for e in range(WHAT_IF_ENTITIES)])
    for broker in range(WHAT_IF_BROKERS):
        folder = root / f"broker={broker}" / f"date={T0.date().isoformat()}"
        if folder.is_dir() and len(list(folder.glob("part-*.parquet"))) == files:
            continue
        started = time.perf_counter()
        rng = np.random.default_rng(broker)
        n = per_broker
        offsets_us = np.sort(rng.uniform(0, WHAT_IF_SPAN_S, n)) * 1e6
        entity = broker + WHAT_IF_BROKERS * rng.integers(0, WHAT_IF_ENTITIES // WHAT_IF_BROKERS, n)
        kind = rng.choice(3, n, p=[0.6, 0.3, 0.1])  # produce, fetch, metadata
        produce, fetch = kind == 0, kind == 1
        request_bytes = np.where(produce, rng.integers(1000, 30_000, n), rng.integers(40, 200, n))
        response_bytes = np.where(fetch, rng.integers(100, 60_000, n), rng.integers(50, 300, n))
        handler_us = rng.integers(50, 2000, n)
        total_us = handler_us + np.where(fetch, rng.integers(100, 100_000, n), rng.integers(20, 500, n))

        def strings(values: Any, index: Any) -> Any:
            return pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()), values).cast(pa.string())

        def repeat(value: Any, kind: Any, n: int = n) -> Any:
            return pa.array(np.full(n, value), kind)

        columns = {
            "ts": pa.array((int(T0.timestamp() * 1e6) + offsets_us).astype(np.int64)).cast(
                pa.timestamp("us", tz="UTC")
            ),
            "broker_id": repeat(broker, pa.int32()),
            "listener": strings(pa.array(["PLAINTEXT"]), np.zeros(n, dtype=np.int32)),
            "connection_id": pa.array(entity.astype(np.int64) + 1),
            "client_host": strings(pa.array(["127.0.0.1"]), np.zeros(n, dtype=np.int32)),
            "principal": strings(principals, entity // 4),
            "client_id": strings(client_ids, entity),
            "client_software_name": pa.nulls(n, pa.string()),
            "client_software_version": pa.nulls(n, pa.string()),
            "api_key": pa.array(np.array([0, 1, 3], dtype=np.int16)[kind]),
            "api_name": strings(pa.array(["Produce", "Fetch", "Metadata"]), kind),
            "api_version": pa.array(np.array([9, 13, 12], dtype=np.int16)[kind]),
            "correlation_id": pa.array(np.arange(n, dtype=np.int32)),
            "request_bytes": pa.array(request_bytes.astype(np.int32)),
            "response_bytes": pa.array(response_bytes.astype(np.int32)),
            "handler_us": pa.array(handler_us.astype(np.int64)),
            "total_us": pa.array(total_us.astype(np.int64)),
            "throttle_time_ms": repeat(0, pa.int32()),
            "throttle_cause": strings(pa.array(["none"]), np.zeros(n, dtype=np.int32)),
            "quota_user": pa.nulls(n, pa.string()),
            "quota_client_id": pa.nulls(n, pa.string()),
            "quota_limit": pa.nulls(n, pa.float64()),
            "quota_rate": pa.nulls(n, pa.float64()),
            "error_code": repeat(0, pa.int16()),
            "error_count": repeat(0, pa.int32()),
            "record_count": pa.array(rng.integers(1, 50, n).astype(np.int32), mask=~(produce | fetch)),
            "partition_count": pa.array(np.ones(n, dtype=np.int32), mask=~(produce | fetch)),
            "acks": pa.array(np.full(n, -1, dtype=np.int16), mask=~produce),
            "run_id": repeat(WHAT_IF_RUN, pa.int64()),
            "seq": pa.array(np.arange(n, dtype=np.int64)),
            "quotas_on": repeat(0, pa.int16()),
        }
        table = pa.Table.from_arrays(
            [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema], schema=schema
        )
        for i in range(files):
            part = table.slice(i * (n // files), n // files if i < files - 1 else None)
            path = folder / f"part-{i:04d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.parent / f".{path.name}.tmp"
            pq.write_table(part, temporary)
            temporary.rename(path)
        say(f"generated what-if broker={broker}: {n:,} rows in {time.perf_counter() - started:.1f} s")


def what_if_proposal(path: Path) -> Path:
    """A default user producer quota (below most entities' rate: many throttled), 250 users
    with their own, a default client-id consumer quota and a default user request quota."""
    body = [
        {"entity": {"user": None}, "set": {"producer_byte_rate": 8_000, "request_percentage": 0.5}},
        {"entity": {"client-id": None}, "set": {"consumer_byte_rate": 12_000}},
        *(
            {"entity": {"user": f"u{u}"}, "set": {"producer_byte_rate": 40_000}}
            for u in range(0, WHAT_IF_ENTITIES // 4, 10)
        ),
    ]
    path.write_text(json.dumps(body))
    return path


def python_replay(data: Path, config: Any, out: Path) -> tuple[int, int, float, int, int]:
    """The replay in this process, one thread: (rows, groups, seconds, total predicted
    throttle ms, throttled rows); requests written to `out` with pyarrow."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from spark.quota_replay import INPUT_COLUMNS, assign_groups, replay_groups

    started = time.perf_counter()
    names = [c for c in INPUT_COLUMNS if c != "ts_us"] + ["ts", "api_name"]
    table = ds.dataset(str(data), format="parquet", partitioning="hive").to_table(columns=names)
    table = table.append_column("ts_us", pc.cast(table.column("ts"), pa.int64()))
    identity = ["broker_id", "run_id", "connection_id", "principal", "client_id"]
    distinct = table.group_by(identity).aggregate([]).to_pylist()
    groups = assign_groups([tuple(r[c] for c in identity) for r in distinct], config)
    mapping = pa.table(
        {
            **{
                c: pa.array([key[i] for key in groups], table.schema.field(c).type)
                for i, c in enumerate(identity)
            },
            "group": pa.array(list(groups.values()), pa.int64()),
        }
    )
    table = table.join(mapping, identity)  # no null keys in this data
    replayed = replay_groups(table, config)  # what each Spark call does with its bucket
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(replayed.drop_columns(["ts"]), out / "part-0.parquet")
    elapsed = time.perf_counter() - started
    throttle = replayed.column("predicted_throttle_ms")
    return (
        replayed.num_rows,
        len(set(groups.values())),
        elapsed,
        int(pc.sum(throttle).as_py()),
        int(pc.sum(pc.greater(throttle, 0).cast(pa.int64())).as_py()),
    )


def bench_what_if(
    spark: Any, data: Path, rows: int, cores: int, repeat: int, say: Callable[[str], None]
) -> None:
    """The what-if on Spark and the same replay in plain Python, taking turns `repeat`
    times (the best of each counts: other work on the machine weighs on both alike);
    figures and the ratio."""
    from pyspark.sql import functions as F

    from spark.what_if_job import load_config, run_what_if

    generate_what_if(data, rows, say)
    proposal = what_if_proposal(data.parent / f"{data.name}-proposal.json")
    config = load_config([str(proposal)])
    out = Path(tempfile.mkdtemp(prefix="bench-what-if-"))
    spark_s = whole = py_s = float("inf")
    try:
        for round_number in range(1, repeat + 1):
            say(f"round {round_number}/{repeat}: Spark local[{cores}]")
            started = time.perf_counter()
            result = run_what_if(
                spark, str(data), config, str(out / "spark"), proposals=[str(proposal)], progress=say
            )
            whole = min(whole, time.perf_counter() - started)
            spark_s = min(spark_s, result.replay_seconds)
            spark_totals = (
                spark.read.parquet(result.tables["requests"])
                .agg(F.sum("predicted_throttle_ms"), F.count(F.when(F.col("predicted_throttle_ms") > 0, 1)))
                .first()
            )
            assert spark_totals is not None
            say(f"round {round_number}/{repeat}: plain Python, one thread, the same replay")
            py_rows, py_groups, seconds, py_throttle, py_throttled = python_replay(
                data, config, out / "python"
            )
            py_s = min(py_s, seconds)
            say(f"Python: {seconds:.1f} s")
            if (py_rows, py_groups, py_throttle, py_throttled) != (
                result.rows,
                result.groups,
                int(spark_totals[0]),
                int(spark_totals[1]),
            ):
                raise SystemExit(
                    f"bench_spark: what-if: Spark {result.rows} rows, {result.groups} groups, {spark_totals}"
                    f" != Python {py_rows} rows, {py_groups} groups, {py_throttle} ms, {py_throttled} throttled"
                )
            say(
                f"agree: {py_rows:,} rows in {py_groups:,} groups, {py_throttled:,} throttled, {py_throttle:,} ms"
            )
        say("")
        say(
            f"what-if: {rows:,} rows, {WHAT_IF_ENTITIES:,} entities, {result.groups:,} groups, best of {repeat}"
        )
        say(f"  Spark local[{cores}]   replay {spark_s:7.1f} s  {rows / spark_s:10,.0f} rows/s"
            f"   (whole what-if with tables and page: {whole:.1f} s)")  # fmt: skip
        say(f"  Python, one thread  replay {py_s:7.1f} s  {rows / py_s:10,.0f} rows/s")
        say(f"  ratio Python/Spark: {py_s / spark_s:.2f}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench_spark", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="1000000,10000000", help="row counts, multiples of 1,000,000 (default: 1M,10M)"
    )
    parser.add_argument("--quick", action="store_true", help="1M rows only, one repeat: a smoke run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per query and engine; the best counts")
    parser.add_argument("--cores", type=int, default=2, help="Spark local[N] and DuckDB threads (default: 2)")
    parser.add_argument("--driver-memory", default="3g", help="spark.driver.memory (default: 3g)")
    parser.add_argument(
        "--data", type=Path, help="data directory to keep and reuse (default: a temporary one)"
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        type=lambda text: (
            tuple(text.split("=", 1)) if "=" in text else parser.error(f"--conf {text}: KEY=VALUE")
        ),
        metavar="KEY=VALUE",
        help="a Spark setting for the session (repeatable), over the bench's own",
    )
    parser.add_argument(
        "--parts", default="report,what-if", help="report, what-if or both (default: report,what-if)"
    )
    parser.add_argument(
        "--what-if-rows", type=int, default=10_000_000, help="rows of the what-if (default: 10,000,000)"
    )
    parser.add_argument(
        "--what-if-repeat",
        type=int,
        default=2,
        help="rounds of the what-if, the engines taking turns (default: 2)",
    )
    parser.add_argument(
        "--check-target",
        action="store_true",
        help=f"exit 3 unless Spark <= {TARGET:g} x DuckDB at the largest size",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeat, args.what_if_rows, args.what_if_repeat = "1000000", 1, 1_000_000, 1
    args.parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not args.parts or args.parts - {"report", "what-if"}:
        parser.error("--parts: report, what-if or both")
    if args.what_if_rows < WHAT_IF_BROKERS * 1000:
        parser.error(f"--what-if-rows: at least {WHAT_IF_BROKERS * 1000:,}")
    try:
        args.sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error("--sizes: comma-separated row counts")
    if not args.sizes or any(s <= 0 or s % ROWS_PER_BROKER for s in args.sizes):
        parser.error("--sizes: multiples of 1,000,000")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def say(message: str) -> None:
        print(message, flush=True)

    data = args.data or Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        if "report" in args.parts:
            generate(data, max(args.sizes) // ROWS_PER_BROKER, say)

        started = time.perf_counter()
        from spark.session import build_session

        spark = build_session(
            f"local[{args.cores}]",
            app_name="bench-spark",
            conf={
                "spark.driver.memory": args.driver_memory,
                "spark.sql.shuffle.partitions": str(2 * args.cores),
                "spark.ui.showConsoleProgress": "false",
                # A throughput collector and the whole heap from the start: no resizing
                # between (or during) the timed runs.
                "spark.driver.extraJavaOptions": f"-XX:+UseParallelGC -Xms{args.driver_memory}",
                # Splits of up to a core's share of the input (Spark caps a split at
                # total / default parallelism): one partial aggregation per core, as
                # DuckDB has one per thread, instead of one per 128 MB.
                "spark.sql.files.maxPartitionBytes": "1g",
                **dict(args.conf),
            },
            log_level="ERROR",
        )
        spark.range(1).count()
        startup = time.perf_counter() - started
        say(f"SparkSession start: {startup:.1f} s (local[{args.cores}], Spark {spark.version})")
        status = 0
        if "report" in args.parts:
            status = bench_report(spark, data, args, startup, say)
        if "what-if" in args.parts:
            bench_what_if(
                spark,
                data / f"what-if-{args.what_if_rows}",
                args.what_if_rows,
                args.cores,
                args.what_if_repeat,
                say,
            )
        spark.stop()
        return status
    finally:
        if args.data is None:
            shutil.rmtree(data, ignore_errors=True)


def bench_report(
    spark: Any, data: Path, args: argparse.Namespace, startup: float, say: Callable[[str], None]
) -> int:
    """The report's aggregations, Spark against DuckDB; 3 when --check-target is missed."""
    import duckdb

    from spark import jobs

    con = duckdb.connect()
    con.sql(f"SET threads = {args.cores}")

    def paths(size: int) -> tuple[str, list[str]]:
        """The first size / 1M broker folders: a Spark path (glob) and DuckDB's globs."""
        brokers = range(size // ROWS_PER_BROKER)
        spec = "{" + ",".join(map(str, brokers)) + "}" if len(brokers) > 1 else "0"
        return str(data / f"broker={spec}"), [f"{data}/broker={b}/*/*.parquet" for b in brokers]

    check_agreement(spark, con, *paths(min(args.sizes)), say)

    results: dict[int, dict[str, tuple[float, float]]] = {}
    for size in args.sizes:
        path, globs = paths(size)
        df = jobs.read_metrics(spark, path)
        spark_queries = {
            "quota windows": jobs.quota_windows(spark, df, [WINDOW_MS]),
            "API latency": jobs.latency_stats(spark, df),
        }
        sql = duckdb_queries(globs)
        results[size] = {}
        for name, frame in spark_queries.items():

            def run_spark(frame: Any = frame) -> None:
                frame.write.format("noop").mode("overwrite").save()

            def run_duckdb(query: str = sql[name]) -> None:
                con.sql(query).to_arrow_table()

            spark_s, duck_s = best_of(args.repeat, run_spark, run_duckdb)
            results[size][name] = (spark_s, duck_s)
            say(
                f"{size:>12,} rows  {name:<14} Spark {spark_s:7.2f} s  DuckDB {duck_s:7.2f} s"
                f"  ratio {spark_s / duck_s:5.2f}"
            )

    say("")
    say(
        f"{'rows':>12}  {'Spark s':>8}  {'DuckDB s':>8}  {'ratio':>6}  {'Spark rows/s':>13}  {'DuckDB rows/s':>13}"
    )
    for size, queries in results.items():
        spark_s = sum(s for s, _ in queries.values())
        duck_s = sum(d for _, d in queries.values())
        say(
            f"{size:>12,}  {spark_s:8.2f}  {duck_s:8.2f}  {spark_s / duck_s:6.2f}"
            f"  {size / spark_s:13,.0f}  {size / duck_s:13,.0f}"
        )
    say(f"SparkSession start (not in the query times): {startup:.1f} s")
    largest = max(results)
    ratio = sum(s for s, _ in results[largest].values()) / sum(d for _, d in results[largest].values())
    met = ratio <= TARGET
    say(
        f"target Spark <= {TARGET:g} x DuckDB at {largest:,} rows: {'met' if met else 'NOT met'} ({ratio:.2f})"
    )
    say("")
    return 3 if args.check_target and not met else 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
