"""The request-metrics report: Parquet tables, PNG plots and index.html from the
broker's metrics files (`run_report`), and the page itself (`report_header`,
`write_index`), which `spark.follow` rewrites as it streams. The command line,
`kafka-mock-report`, is `spark.cli`.

`run_report` reads the metrics (any path `spark.jobs.read_metrics` takes), writes one
Parquet table per aggregate (see `spark.jobs`) under the output directory, then the plots
and index.html; the driver writes the plots and the HTML, so on a cluster the output
must be a directory the driver and the executors share. The plots use the shortest
window. Stage lines go to stderr as the job runs (`Progress`).
"""

from __future__ import annotations

import datetime as dt
import html
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from spark import jobs
from spark.schema import SCHEMA_VERSION

TABLES = ("quota_windows", "quota_summary", "api_errors", "api_latency", "client_software", "top_offenders")
PLOT_ENTITIES = 8  # entities per throughput plot and in the throttle plot
SUMMARY_ROWS = 50  # rows of the quota summary shown in index.html


class Progress:
    """Stage lines on stderr, with the time since the start."""

    def __init__(self, stream: TextIO | None = None, prefix: str = "kafka-mock-report") -> None:
        self.stream = stream
        self.prefix = prefix
        self.start = time.monotonic()

    def __call__(self, message: str) -> None:
        stream = self.stream or sys.stderr
        print(f"[{self.prefix} {time.monotonic() - self.start:7.1f}s] {message}", file=stream, flush=True)


@dataclass
class ReportResult:
    out: str
    index: str
    rows: int
    tables: dict[str, str] = field(default_factory=dict)  # name -> path
    plots: list[str] = field(default_factory=list)  # file names, relative to out


def _utc(value: dt.datetime | None) -> dt.datetime | None:
    """PySpark gives timestamps as naive local times; make them aware UTC."""
    if value is None:
        return None
    return value.astimezone(dt.UTC)  # a naive value is taken as local time


def _write(spark: SparkSession, df: DataFrame, path: str) -> DataFrame:
    df.write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def run_report(
    spark: SparkSession,
    metrics: str,
    out: str,
    windows: Sequence[int | str] = ("1s", "10s"),
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    top: int = 20,
    progress: Callable[[str], None] | None = None,
) -> ReportResult:
    """Read `metrics`, write every table under `out`, then the plots and index.html."""
    say = progress or Progress()
    sizes = sorted({jobs.parse_window(w) if isinstance(w, str) else int(w) for w in windows})
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    tables = {name: os.path.join(out, name) for name in TABLES}

    say(f"reading {metrics}" + _range_text(since, until))
    df = jobs.read_metrics(spark, metrics, since, until)
    overview = df.agg(
        F.count(F.lit(1)).alias("rows"), F.min("ts").alias("first"), F.max("ts").alias("last")
    ).first()
    assert overview is not None
    rows = int(overview["rows"])
    say(f"{rows} requests, {_ts(overview['first'])} .. {_ts(overview['last'])}")

    labels = ", ".join(jobs.window_label(ms) for ms in sizes)
    qw = _write(spark, jobs.quota_windows(spark, df, sizes), tables["quota_windows"])
    say(f"quota_windows ({labels}): {qw.count()} rows")
    qs = _write(spark, jobs.quota_summary(spark, qw), tables["quota_summary"])
    say(f"quota_summary: {qs.count()} rows")
    errors = _write(spark, jobs.api_errors(spark, df), tables["api_errors"])
    say(f"api_errors: {errors.count()} rows")
    latency = _write(spark, jobs.api_latency(spark, df, errors), tables["api_latency"])
    say(f"api_latency: {latency.count()} rows")
    software = _write(spark, jobs.client_software(spark, df), tables["client_software"])
    say(f"client_software: {software.count()} rows")
    offenders = _write(spark, jobs.top_offenders(spark, df, top), tables["top_offenders"])
    say(f"top_offenders: {offenders.count()} rows")
    telemetry = None
    client_metrics = jobs.read_client_metrics(spark, metrics, since, until)
    if client_metrics is not None:  # KIP-714 pushes beside the requests
        tables["client_telemetry"] = os.path.join(out, "client_telemetry")
        joined = jobs.client_telemetry(spark, df, client_metrics, sizes[-1])
        telemetry = _write(spark, joined, tables["client_telemetry"])
        say(f"client_telemetry ({jobs.window_label(sizes[-1])}): {telemetry.count()} rows")

    say("plots")
    plot_ms = sizes[0]
    header = report_header(spark, metrics, rows, overview["first"], overview["last"], since, until, sizes)
    plots, index = write_index(
        spark, out, qw, qs, latency, software, offenders, plot_ms, header, tables, telemetry=telemetry
    )
    say(f"wrote {index}")
    return ReportResult(out=out, index=index, rows=rows, tables=tables, plots=plots)


def report_header(
    spark: SparkSession,
    metrics: str,
    rows: int,
    first: dt.datetime | None,
    last: dt.datetime | None,
    since: dt.datetime | None,
    until: dt.datetime | None,
    sizes: Sequence[int],
    **extra: str,
) -> dict[str, str]:
    """The key/value lines at the top of index.html."""
    return {
        "metrics": metrics,
        "requests": f"{rows:,}",
        "first request": _ts(first),
        "last request": _ts(last),
        "since": _ts(since),
        "until": _ts(until),
        "windows": ", ".join(jobs.window_label(ms) for ms in sizes)
        + f" (plots: {jobs.window_label(sizes[0])})",
        **extra,
        "Spark": f"{spark.version}, master {spark.sparkContext.master}",
        "schema version": str(SCHEMA_VERSION),
        "generated": _ts(dt.datetime.now(dt.UTC)),
    }


def write_index(
    spark: SparkSession,
    out: str,
    qw: DataFrame,
    qs: DataFrame,
    latency: DataFrame,
    software: DataFrame,
    offenders: DataFrame,
    plot_ms: int,
    header: dict[str, str],
    tables: dict[str, str],
    refresh_s: float | None = None,
    telemetry: DataFrame | None = None,
) -> tuple[list[str], str]:
    """The PNGs and index.html in `out` from the aggregated tables; returns the PNG names
    and the page's path. The page is replaced whole (written aside, then renamed)."""
    plots, sections = _plots_and_sections(spark, out, qw, qs, latency, software, offenders, plot_ms)
    if telemetry is not None:
        plot, section = _client_telemetry_section(out, telemetry)
        plots.append(plot)
        sections.append(section)
    index = os.path.join(out, "index.html")
    staging = os.path.join(out, ".index.html.tmp")
    with open(staging, "w", encoding="utf-8") as fh:
        fh.write(_page(header, sections, tables, out, refresh_s))
    os.replace(staging, index)
    return plots, index


def _range_text(since: dt.datetime | None, until: dt.datetime | None) -> str:
    if since is None and until is None:
        return ""
    return f" (ts from {_ts(since)} until {_ts(until)})"


def _ts(value: dt.datetime | None) -> str:
    value = _utc(value)
    if value is None:
        return "-"
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dt.datetime):
        return _ts(value)
    return str(value)


def _entity(principal: str | None, client_id: str | None) -> str:
    return f"{principal} / {client_id if client_id is not None else '(no client id)'}"


def _error_name(code: int) -> str:
    try:
        from kafka.errors import for_code

        return f"{for_code(code).__name__} ({code})"
    except Exception:
        return str(code)


def _table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], classes: Sequence[str] | None = None
) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}" class="empty">none</td></tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _select_entities(summary: list[Row], quota_type: str) -> list[Row]:
    """The entities of a quota type worth plotting: with a limit first, nearest it first."""
    rows = [r for r in summary if r["quota_type"] == quota_type]
    rows.sort(
        key=lambda r: (
            r["limit"] is None,
            -(r["max_rate_to_limit"] or 0.0),
            -(r["requests"] or 0),
            r["principal"] or "",
            r["client_id"] or "",
        )
    )
    return rows[:PLOT_ENTITIES]


def _collect_windows(
    spark: SparkSession, qw: DataFrame, plot_ms: int, keys: list[tuple[Any, ...]]
) -> list[Row]:
    """quota_windows rows of the plot window for (principal, client_id, quota_type) keys."""
    if not keys:
        return []
    wanted = spark.createDataFrame(keys, "k_principal string, k_client_id string, k_quota_type string")
    cond = (
        (qw["principal"].eqNullSafe(wanted["k_principal"]))
        & (qw["client_id"].eqNullSafe(wanted["k_client_id"]))
        & (qw["quota_type"] == wanted["k_quota_type"])
    )
    return (
        qw.where(F.col("window_ms") == plot_ms).join(F.broadcast(wanted), cond).select(qw.columns).collect()
    )


def _plots_and_sections(
    spark: SparkSession,
    out: str,
    qw: DataFrame,
    qs: DataFrame,
    latency: DataFrame,
    software: DataFrame,
    offenders: DataFrame,
    plot_ms: int,
) -> tuple[list[str], list[str]]:
    from spark import plots

    label = jobs.window_label(plot_ms)
    summary = qs.where(F.col("window_ms") == plot_ms).collect()
    offender_rows = offenders.orderBy(
        F.col("throttle_count").desc(), F.col("throttle_ms").desc(), "principal", "client_id"
    ).collect()

    # Throughput against the quota line, one PNG per quota type.
    chosen = {qt: _select_entities(summary, qt) for qt in jobs.QUOTA_TYPES}
    keys = [(r["principal"], r["client_id"], qt) for qt, rs in chosen.items() for r in rs]
    throttled_keys = [
        (o["principal"], o["client_id"], qt) for o in offender_rows[:PLOT_ENTITIES] for qt in jobs.QUOTA_TYPES
    ]
    window_rows = _collect_windows(spark, qw, plot_ms, sorted(set(keys + throttled_keys), key=repr))
    by_key: dict[tuple[Any, ...], list[Row]] = {}
    for r in window_rows:
        by_key.setdefault((r["principal"], r["client_id"], r["quota_type"]), []).append(r)

    names: list[str] = []
    sections: list[str] = []
    for qt in jobs.QUOTA_TYPES:
        series = []
        for s in chosen[qt]:
            entity = plots.Series(_entity(s["principal"], s["client_id"]), unit=jobs.RATE_UNITS[qt])
            for r in by_key.get((s["principal"], s["client_id"], qt), []):
                start = _utc(r["window_start"])
                assert start is not None
                entity.values[start] = float(r["rate"])
                if r["limit"] is not None:
                    entity.limits[start] = float(r["limit"])
            series.append(entity)
        name = f"throughput_{qt}.png"
        plots.plot_throughput(
            os.path.join(out, name), f"{qt} quota: rate per {label} window against the quota", series, plot_ms
        )
        names.append(name)

    # Throttle time over time, per throttled entity (all quota types summed).
    throttle_series = []
    for o in offender_rows[:PLOT_ENTITIES]:
        entity = plots.Series(_entity(o["principal"], o["client_id"]), unit="ms")
        for qt in jobs.QUOTA_TYPES:
            for r in by_key.get((o["principal"], o["client_id"], qt), []):
                start = _utc(r["window_start"])
                assert start is not None
                entity.values[start] = entity.values.get(start, 0.0) + float(r["throttle_ms"])
        throttle_series.append(entity)
    plots.plot_throttle(
        os.path.join(out, "throttle.png"), f"throttle time per {label} window", throttle_series, plot_ms
    )
    names.append("throttle.png")

    # Latency percentiles per API version.
    latency_rows = sorted(latency.collect(), key=lambda r: (r["api_key"], r["api_version"]))
    apis = [{"label": f"{r['api_name']} v{r['api_version']}", **r.asDict()} for r in latency_rows]
    plots.plot_latency(os.path.join(out, "latency.png"), "latency per API (total_us)", apis)
    names.append("latency.png")

    # Sections of index.html.
    ordered = sorted(
        summary,
        key=lambda r: (
            r["max_rate_to_limit"] is None,
            -(r["max_rate_to_limit"] or 0.0),
            -(r["requests"] or 0),
            r["principal"] or "",
            r["client_id"] or "",
            r["quota_type"],
        ),
    )[:SUMMARY_ROWS]
    sections.append(
        f"<h2>Quotas: rate per {html.escape(label)} window against each entity's limit</h2>"
        + _table(
            [
                "principal / client id",
                "quota",
                "unit",
                "requests",
                "active windows",
                "avg rate",
                "max rate",
                "span rate",
                "limit",
                "avg rate/limit",
                "max rate/limit",
                "span rate/limit",
                "throttled windows",
                "throttled",
                "throttle ms",
            ],
            [
                (
                    _entity(r["principal"], r["client_id"]),
                    r["quota_type"],
                    r["rate_unit"],
                    r["requests"],
                    r["active_windows"],
                    r["avg_rate"],
                    r["max_rate"],
                    r["span_rate"],
                    r["limit"],
                    r["avg_rate_to_limit"],
                    r["max_rate_to_limit"],
                    r["span_rate_to_limit"],
                    r["throttled_windows"],
                    r["throttle_count"],
                    r["throttle_ms"],
                )
                for r in ordered
            ],
            ["over" if (r["span_rate_to_limit"] or 0) > 1 else "" for r in ordered],
        )
        + "<p class='note'>avg and max: over the windows with requests; span: over the entity's"
        " first to last window, idle windows counting as zero (rows in red: above the limit over"
        f" the span). Top {SUMMARY_ROWS} by max rate/limit; all rows are in quota_summary.</p>"
    )
    sections.append(
        "<h2>Throughput against the quota</h2>"
        + "".join(
            f'<figure><img src="throughput_{qt}.png" alt="{qt} throughput"></figure>'
            for qt in jobs.QUOTA_TYPES
        )
    )
    sections.append(
        "<h2>Throttling</h2>"
        + '<figure><img src="throttle.png" alt="throttle time"></figure>'
        + "<h3>Top offenders</h3>"
        + _table(
            [
                "principal / client id",
                "throttled",
                "throttle ms",
                "max ms",
                "causes",
                "first violation",
                "last violation",
            ],
            [
                (
                    _entity(o["principal"], o["client_id"]),
                    o["throttle_count"],
                    o["throttle_ms"],
                    o["max_throttle_ms"],
                    ", ".join(o["causes"] or []),
                    o["first_violation"],
                    o["last_violation"],
                )
                for o in offender_rows
            ],
        )
    )
    sections.append(
        "<h2>Latency per API</h2>"
        + '<figure><img src="latency.png" alt="latency per API"></figure>'
        + _table(
            [
                "API",
                "key",
                "requests",
                "errors",
                "errors by code",
                "throttled",
                "p50 us",
                "p95 us",
                "p99 us",
                "max us",
            ],
            [
                (
                    f"{r['api_name']} v{r['api_version']}",
                    r["api_key"],
                    r["requests"],
                    r["errors"],
                    ", ".join(
                        f"{_error_name(c)}: {n}" for c, n in sorted((r["errors_by_code"] or {}).items())
                    ),
                    r["throttled"],
                    r["p50_us"],
                    r["p95_us"],
                    r["p99_us"],
                    r["max_us"],
                )
                for r in latency_rows
            ],
        )
        + "<p class='note'>total_us (received to response written). Percentiles from a log-linear"
        " histogram (128 buckets per power of two): exact below 256 us, otherwise the upper bound of"
        " the bucket holding the value, less than 1/128 (0.78 %) above it; the top one is the max.</p>"
    )
    per_software: dict[tuple[Any, Any], list[Row]] = {}
    for r in software.collect():
        per_software.setdefault((r["client_software_name"], r["client_software_version"]), []).append(r)
    sections.append(
        "<h2>Client software (conformance)</h2>"
        + _table(
            ["software", "version", "requests", "API versions used (requests)"],
            [
                (
                    name if name is not None else "(not reported)",
                    version if version is not None else "-",
                    sum(r["requests"] for r in rs),
                    ", ".join(
                        f"{r['api_name']} v{r['api_version']} ({r['requests']})"
                        for r in sorted(rs, key=lambda r: (r["api_key"], r["api_version"]))
                    ),
                )
                for (name, version), rs in sorted(
                    per_software.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")
                )
            ],
        )
    )
    return names, sections


def _client_telemetry_section(out: str, telemetry: DataFrame) -> tuple[str, str]:
    """KIP-714: per client instance, what it reported against what the broker recorded,
    as a table of totals and one plot over time."""
    from spark import plots

    rows = telemetry.orderBy("client_id", "client_instance_id", "window_start").collect()
    by_client: dict[tuple[Any, Any, Any], list[Row]] = {}
    for r in rows:
        by_client.setdefault((r["client_id"], r["client_instance_id"], r["principal"]), []).append(r)
    series = []
    summary = []
    for (client_id, instance, principal), rs in by_client.items():
        label = f"{client_id or '(no client id)'} ({str(instance)[:8]})"
        entity = plots.ClientSeries(label)
        for r in rs:
            start = _utc(r["window_start"])
            assert start is not None
            for attribute, column in (
                ("client_latency", "client_latency_avg_ms"),
                ("broker_latency", "broker_latency_avg_ms"),
                ("client_throttle", "client_throttle_max_ms"),
                ("broker_throttle", "broker_throttle_max_ms"),
            ):
                if r[column] is not None:
                    getattr(entity, attribute)[start] = float(r[column])
        series.append(entity)

        def mean(column: str, rs: list[Row] = rs) -> float | None:
            values = [r[column] for r in rs if r[column] is not None]
            return sum(values) / len(values) if values else None

        def peak(column: str, rs: list[Row] = rs) -> float | None:
            values = [r[column] for r in rs if r[column] is not None]
            return max(values) if values else None

        summary.append(
            (
                client_id,
                principal,
                instance,
                sum(r["client_points"] for r in rs),
                sum(r["broker_requests"] or 0 for r in rs),
                mean("client_latency_avg_ms"),
                mean("broker_latency_avg_ms"),
                peak("client_throttle_max_ms"),
                peak("broker_throttle_max_ms"),
            )
        )
    name = "client_telemetry.png"
    window = jobs.window_label(rows[0]["window_ms"]) if rows else ""
    plots.plot_client_telemetry(
        os.path.join(out, name), f"clients' own metrics (KIP-714) against the broker's, per {window}", series
    )
    section = (
        "<h2>Client telemetry (KIP-714): what clients saw, what the broker recorded</h2>"
        + _table(
            [
                "client id",
                "principal",
                "client instance",
                "points pushed",
                "requests",
                "latency avg ms (client)",
                "latency avg ms (broker)",
                "throttle max ms (client)",
                "throttle max ms (broker)",
            ],
            summary,
        )
        + f"<figure><img src='{name}' alt='client telemetry'></figure>"
        + "<p class='note'>Client columns: the gauges it pushed whose names end in"
        " request.latency.avg and throttle.time.max (every node together). Broker columns: the"
        " requests with the same client id and principal (total_us, throttle_time_ms), PushTelemetry"
        " itself left out.</p>"
    )
    return name, section


_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
th { background: #f0f0f0; }
tr.over td { background: #fde0e0; }
td.empty { color: #888; font-style: italic; }
figure { margin: 0.5em 0; }
img { max-width: 100%; }
.note { color: #666; font-size: 0.85em; }
"""


def _page(
    header: dict[str, str],
    sections: list[str],
    tables: dict[str, str],
    out: str,
    refresh_s: float | None = None,
) -> str:
    meta = _table(["", ""], list(header.items()))
    links = "".join(
        f'<li><a href="{html.escape(os.path.relpath(path, out))}/">{html.escape(name)}</a></li>'
        for name, path in tables.items()
    )
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        + (f"<meta http-equiv='refresh' content='{max(1, round(refresh_s))}'>" if refresh_s else "")
        + "<title>Kafka mock broker: request metrics</title>"
        f"<style>{_STYLE}</style></head><body>"
        "<h1>Kafka mock broker: request metrics</h1>"
        + meta
        + "".join(sections)
        + f"<h2>Tables (Parquet)</h2><ul>{links}</ul>"
        + "</body></html>\n"
    )
