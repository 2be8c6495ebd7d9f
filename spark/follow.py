"""`kafka-mock-report --follow`: the report's aggregates as Structured Streaming queries
over the metrics directory, updated as the broker's files arrive, until Ctrl-C (or
SIGTERM), which stops the queries, renders the page a last time and exits 0.

Queries (one file source, schema given, the sink's hidden temporary files skipped; the
folders are searched recursively, so new `broker=`/`date=` folders are picked up):

- `quota_windows_<size>` per window size: the `quota_windows` rows, appended to a Parquet
  file sink (exactly once, via its checkpoint) once the event-time watermark (latest ts
  seen minus `--watermark`) has passed a window's end: a window is final when written.
  Rows later than the watermark are dropped, so the watermark should exceed the broker's
  `metrics.roll.ms` (how long rows wait in the sink before their file appears).
- `api_errors`, `api_latency`, `client_software`, `top_offenders`: running totals
  (complete mode), each table rewritten whole after every micro-batch. api_latency's
  query keeps the latency histogram (`jobs.latency_histogram`: per API version at most
  256 rows below 256 us and 128 per power of two above, whatever the number of
  requests) and each micro-batch rolls it up with `jobs.latency_from_histogram`,
  as the batch report does, taking errors_by_code from the api_errors table as last
  written.
- every `--refresh`: `quota_summary` from the windows written so far, the plots and
  index.html (which reloads itself in a browser).

Checkpoints are in OUT/_checkpoints: a restart on the same OUT resumes where it stopped.
OUT must be a local directory (tables are replaced by renaming).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import StructType

from spark import jobs
from spark.jobs import spark_schema
from spark.report import Progress, report_header, write_index
from spark.schema import COLUMN_NAMES

COMPLETE_TABLES = ("api_errors", "api_latency", "client_software", "top_offenders")


def window_table(ms: int) -> str:
    return f"quota_windows_{jobs.window_label(ms)}"


def _replace_table(df: DataFrame, path: str) -> None:
    """Writes `df` beside `path`, then swaps it in by renaming (local directories)."""
    parent, name = os.path.split(path)
    staging = os.path.join(parent, f".{name}.new")
    retired = os.path.join(parent, f".{name}.old")
    shutil.rmtree(staging, ignore_errors=True)
    df.write.mode("overwrite").parquet(staging)
    shutil.rmtree(retired, ignore_errors=True)
    if os.path.exists(path):
        os.rename(path, retired)
    os.rename(staging, path)
    shutil.rmtree(retired, ignore_errors=True)


def _read(spark: SparkSession, path: str, schema: StructType) -> DataFrame:
    """A table as last written, or an empty one before its first write."""
    if os.path.isdir(path):
        return spark.read.schema(schema).parquet(path)
    return spark.createDataFrame([], schema)


def _install_stop_handlers(stop: threading.Event) -> Callable[[], None]:
    """SIGINT and SIGTERM set `stop` (a second SIGINT raises KeyboardInterrupt); returns
    a function restoring the previous handlers. Only the main thread can do this."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def run_follow(
    spark: SparkSession,
    metrics: str,
    out: str,
    windows: Sequence[int | str] = ("1s", "10s"),
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    top: int = 20,
    watermark: str = "30s",
    trigger: str = "5s",
    refresh: str = "10s",
    progress: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Runs the streaming queries until `stop` is set (or a signal sets it); 0 on a clean
    stop, 1 if a query failed."""
    say = progress or Progress()
    stop = stop or threading.Event()
    sizes = sorted({jobs.parse_window(w) if isinstance(w, str) else int(w) for w in windows})
    watermark_ms, trigger_ms = jobs.parse_window(watermark), jobs.parse_window(trigger)
    refresh_s = jobs.parse_window(refresh) / 1000
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    if "://" not in metrics and not jobs.has_glob(metrics):
        os.makedirs(metrics, exist_ok=True)  # the broker may not have written yet
    checkpoints = os.path.join(out, "_checkpoints")
    tables = {name: os.path.join(out, name) for name in [*map(window_table, sizes), *COMPLETE_TABLES]}
    tables["quota_summary"] = os.path.join(out, "quota_summary")

    empty = spark.createDataFrame([], spark_schema())
    schemas: dict[str, StructType] = {
        "quota_windows": jobs.quota_windows(spark, empty, sizes[:1]).schema,
        "api_errors": jobs.api_errors(spark, empty).schema,
        "api_latency": jobs.api_latency(spark, empty).schema,
        "client_software": jobs.client_software(spark, empty).schema,
        "top_offenders": jobs.top_offenders(spark, empty).schema,
    }
    lock = threading.Lock()  # table swaps against readers

    stream = (
        spark.readStream.schema(spark_schema())
        # No partition columns: folders created after the start are read all the same.
        .option("recursiveFileLookup", "true")
        .parquet(metrics)
    )
    stream = jobs.filter_time(stream, since, until).select(*COLUMN_NAMES)
    every = f"{trigger_ms} milliseconds"

    def complete(name: str, df: DataFrame, finish: Callable[[DataFrame], DataFrame]) -> StreamingQuery:
        def batch(result: DataFrame, batch_id: int) -> None:
            with lock:
                _replace_table(finish(result), tables[name])

        return (
            df.writeStream.queryName(name)
            .outputMode("complete")
            .foreachBatch(batch)
            .option("checkpointLocation", os.path.join(checkpoints, name))
            .trigger(processingTime=every)
            .start()
        )

    say(
        f"following {metrics}: watermark {jobs.window_label(watermark_ms)}, trigger {jobs.window_label(trigger_ms)}"
    )
    queries: list[StreamingQuery] = []
    status = 0
    restore = _install_stop_handlers(stop)
    try:
        timed = stream.withWatermark("ts", f"{watermark_ms} milliseconds")
        for ms in sizes:
            name = window_table(ms)
            queries.append(
                jobs.quota_windows(spark, timed, [ms])
                .writeStream.queryName(name)
                .outputMode("append")
                .format("parquet")
                .option("path", tables[name])
                .option("checkpointLocation", os.path.join(checkpoints, name))
                .trigger(processingTime=every)
                .start()
            )
        queries.append(complete("api_errors", jobs.api_errors(spark, stream), lambda df: df))
        queries.append(
            complete(
                "api_latency",
                # The running histogram; each batch rolls it up: the batch job's numbers.
                jobs.latency_histogram(stream),
                lambda hist: jobs.add_error_map(
                    jobs.latency_from_histogram(hist),
                    _read(spark, tables["api_errors"], schemas["api_errors"]),
                ),
            )
        )
        queries.append(complete("client_software", jobs.client_software(spark, stream), lambda df: df))
        queries.append(
            complete(
                "top_offenders", jobs.offender_stats(spark, stream), lambda df: jobs.rank_offenders(df, top)
            )
        )
        say(f"{len(queries)} streaming queries running; Ctrl-C stops")

        seen: dict[str, int] = {}
        next_refresh = time.monotonic() + refresh_s
        while not stop.wait(0.2):
            failed = [q for q in queries if not q.isActive]
            if failed:
                for q in failed:
                    say(f"query {q.name} stopped: {q.exception()}")
                status = 1
                break
            if time.monotonic() >= next_refresh:
                if _report_progress(queries, seen, say):
                    _refresh(spark, metrics, out, tables, schemas, sizes, since, until, lock, refresh_s)
                    say("index.html refreshed")
                next_refresh = time.monotonic() + refresh_s
    finally:
        say("stopping the streaming queries")
        for q in queries:
            try:
                q.stop()
            except Exception as exc:  # a failed query may refuse: it is stopped anyway
                say(f"query {q.name}: {exc}")
        restore()
    if status == 0:
        _refresh(spark, metrics, out, tables, schemas, sizes, since, until, lock, None)
        say(f"stopped; tables and {os.path.join(out, 'index.html')} are up to date")
    return status


def _report_progress(queries: list[StreamingQuery], seen: dict[str, int], say: Callable[[str], None]) -> bool:
    """Stage lines for micro-batches completed since the last call; True if any."""
    changed = False
    for q in queries:
        last = q.lastProgress
        if not last or seen.get(q.name or "") == last["batchId"]:
            continue
        seen[q.name or ""] = last["batchId"]
        changed = True
        if q is queries[0]:
            mark = (last.get("eventTime") or {}).get("watermark", "-")
            say(f"batch {last['batchId']}: {last['numInputRows']} new requests, watermark {mark}")
    return changed


def _refresh(
    spark: SparkSession,
    metrics: str,
    out: str,
    tables: dict[str, str],
    schemas: dict[str, StructType],
    sizes: list[int],
    since: dt.datetime | None,
    until: dt.datetime | None,
    lock: threading.Lock,
    refresh_s: float | None,
) -> None:
    """quota_summary, the plots and index.html from the tables as they are now."""
    with lock:
        frames = [_read(spark, tables[window_table(ms)], schemas["quota_windows"]) for ms in sizes]
        qw = frames[0]
        for frame in frames[1:]:
            qw = qw.unionByName(frame)
        _replace_table(jobs.quota_summary(spark, qw), tables["quota_summary"])
        qs = spark.read.parquet(tables["quota_summary"])
        latency = _read(spark, tables["api_latency"], schemas["api_latency"]).cache()
        software = _read(spark, tables["client_software"], schemas["client_software"]).cache()
        offenders = _read(spark, tables["top_offenders"], schemas["top_offenders"])
        totals = latency.agg(F.sum("requests")).first()
        span = software.agg(F.min("first_seen"), F.max("last_seen")).first()
        rows = int(totals[0] or 0) if totals else 0
        first, last = (span[0], span[1]) if span else (None, None)
        header = report_header(
            spark,
            metrics,
            rows,
            first,
            last,
            since,
            until,
            sizes,
            mode="--follow (streaming; windows appear once final)",
        )
        write_index(spark, out, qw, qs, latency, software, offenders, sizes[0], header, tables, refresh_s)
        latency.unpersist()
        software.unpersist()
