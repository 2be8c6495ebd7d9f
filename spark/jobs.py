"""The report's aggregations: pure functions from a DataFrame of request-metrics rows
(`spark.schema.COLUMNS`, one row per request) to DataFrames.

Reading: `read_metrics` gives Spark the schema up front (no inference pass over the
files) and `basePath`, so the broker's `broker=<id>/date=<yyyy-mm-dd>/` folders are
partition columns whatever sub-folder is read; Spark's file listing skips names starting
with `.` or `_`, so the sink's hidden temporary files are never read.

Quota types. Every request counts against the request quota (its `handler_us`, as a
percentage of one thread's time in the window); Produce also against the produce quota
(`request_bytes`), Fetch against the fetch quota (`response_bytes`), and CreateTopics,
CreatePartitions and DeleteTopics against the controller mutation quota (counted here as
requests: the records do not carry the number of partitions mutated). `throttle_cause`
says which of them throttled a row. A row's `quota_*` columns describe its
`throttle_cause` quota when it was throttled, else its API's own quota (produce, fetch,
mutation, or request for the other APIs): that is the quota whose limit a row reports.

Time windows are tumbling, aligned to the UTC epoch, given as "1s", "10s", "500ms",
"1m", ...; `ts` filters are `since <= ts < until`.

Latency percentiles come from a log-linear histogram of total_us per API version, the
way HdrHistogram keeps them (Kafka's own `Percentiles` metric also reads percentiles off
a histogram's bins, linear ones): one bucket per microsecond below 256 us, 128 per power
of two above, so a percentile is reported as the upper bound of the bucket holding it,
less than 1/128 (0.78 %) above the exact value (exact below 256 us, and the top one
capped at the maximum). A histogram has a bounded number of rows whatever the number of
requests, merges by adding counts (what a streaming aggregation keeps), and is one hash
aggregation: cheaper than a quantile sketch per API version, and deterministic.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession, Window, types
from pyspark.sql import functions as F

from spark import schema
from spark.schema import (
    CLIENT_METRICS_COLUMN_NAMES,
    CLIENT_METRICS_COLUMNS,
    CLIENT_METRICS_DIR,
    COLUMN_NAMES,
    COLUMNS,
    SPARK_TYPES,
)

# The APIs with a quota of their own besides the request quota, by API key (Kafka's
# protocol numbers, from which the sink writes api_name): the quota windows classify rows
# by these small integers rather than by comparing strings.
PRODUCE_KEYS = (0,)
FETCH_KEYS = (1, 78)  # Fetch and ShareFetch (measured as a fetch)
MUTATION_KEYS = (19, 37, 20)  # CreateTopics, CreatePartitions, DeleteTopics
QUOTA_TYPES = ("produce", "fetch", "request", "mutation")
RATE_UNITS = {"produce": "bytes/s", "fetch": "bytes/s", "request": "percent", "mutation": "mutations/s"}
# The latency percentiles reported, in percent: p50_us, p95_us, p99_us.
PERCENTILES = (50, 95, 99)
# The latency histogram's resolution: SUB_BUCKETS buckets per power of two above
# 2 x SUB_BUCKETS us, one per microsecond below (see latency_bucket).
SUB_BUCKET_BITS = 7
SUB_BUCKETS = 1 << SUB_BUCKET_BITS  # 128: a bucket's upper bound is within 1/128 of its values
EXACT_BELOW_US = 2 * SUB_BUCKETS  # 256
API_KEYS = ["api_key", "api_name", "api_version"]
ENTITY = ["principal", "client_id"]

_UNITS_MS = {
    "ms": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "second": 1000,
    "seconds": 1000,
    "m": 60_000,
    "min": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}
_WINDOW_RE = re.compile(r"^\s*(\d+)\s*([a-z]+)\s*$")


def spark_schema(columns: tuple[schema.Column, ...] = COLUMNS) -> types.StructType:
    """A metrics schema (spark/schema.py) as a pyspark StructType, given to readers up front."""
    return types.StructType([types.StructField(c.name, _spark_type(c.kind), c.nullable) for c in columns])


def _spark_type(kind: str) -> types.DataType:
    if kind == "map_string":
        return types.MapType(types.StringType(), types.StringType())
    return getattr(types, SPARK_TYPES[kind])()


def parse_window(text: str) -> int:
    """ "10s", "500ms", "1m", "2 hours" -> milliseconds (a positive integer)."""
    match = _WINDOW_RE.match(text.lower())
    if not match or match.group(2) not in _UNITS_MS:
        raise ValueError(f"bad window {text!r}: use e.g. 500ms, 1s, 10s, 1m, 1h")
    ms = int(match.group(1)) * _UNITS_MS[match.group(2)]
    if ms <= 0:
        raise ValueError(f"bad window {text!r}: must be positive")
    return ms


def window_label(ms: int) -> str:
    """The canonical name of a window length: 1000 -> "1s", 60000 -> "1m", 1500 -> "1500ms"."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def parse_windows(spec: str | Iterable[str]) -> list[int]:
    """ "1s,10s" (or a list of such) -> sorted distinct milliseconds."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    windows = sorted({parse_window(part) for part in parts if part.strip()})
    if not windows:
        raise ValueError("no window given")
    return windows


def parse_time(text: str) -> dt.datetime:
    """An ISO 8601 time ("2024-05-01T12:00:00Z", "2024-05-01 12:00", "2024-05-01"; no zone
    means UTC) or epoch seconds ("1714564800.5") -> an aware UTC datetime."""
    text = text.strip()
    try:
        return dt.datetime.fromtimestamp(float(text), tz=dt.UTC)
    except ValueError:
        pass
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"bad time {text!r}: use ISO 8601 (e.g. 2024-05-01T12:00:00Z) or epoch seconds"
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def has_glob(path: str) -> bool:
    """Whether a path has Hadoop glob characters."""
    return any(char in path for char in "*?[{")


def read_metrics(
    spark: SparkSession,
    path: str,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> DataFrame:
    """The metrics under `path` (a metrics directory, one of its `broker=`/`date=` folders,
    a glob or a single file; any Spark-readable URI), filtered to `since <= ts < until`,
    with exactly the schema's columns."""
    reader = spark.read.schema(spark_schema())
    base = base_path(path)
    if base is not None:
        reader = reader.option("basePath", base)
    return filter_time(reader.parquet(path), since, until).select(*COLUMN_NAMES)


def base_path(path: str) -> str | None:
    """The folder partition columns are read below: the path itself, or for a glob the
    folder before its first wildcard; None for a single file or a glob with no fixed
    folder. (Without it, a glob matching `broker=` folders that hold `date=` folders
    looks like conflicting partition layouts to Spark.)"""
    parts = path.rstrip("/").split("/")
    for i, part in enumerate(parts):
        if has_glob(part):
            base = "/".join(parts[:i])
            return base if base and not base.rstrip("/").endswith(":") else None
    return None if path.rstrip("/").endswith(".parquet") else path


def filter_time(df: DataFrame, since: dt.datetime | None, until: dt.datetime | None) -> DataFrame:
    """`since <= ts < until` (either may be None). When the frame still has the `date`
    partition column, whole folders outside the range (a day's margin each side, whatever
    zone the sink's dates are in) are pruned without being read."""
    has_date = "date" in df.columns
    if since is not None:
        df = df.where(F.col("ts") >= F.lit(since))
        if has_date:
            df = df.where(F.col("date") >= F.lit(since.date() - dt.timedelta(days=1)))
    if until is not None:
        df = df.where(F.col("ts") < F.lit(until))
        if has_date:
            df = df.where(F.col("date") <= F.lit(until.date() + dt.timedelta(days=1)))
    return df


def quota_windows(
    spark: SparkSession, df: DataFrame, windows: Sequence[int | str] = ("1s", "10s")
) -> DataFrame:
    """Per window length, window, (principal, client_id) and quota type:

    window_size ("10s"), window_ms, window_start, window_end, principal, client_id,
    quota_type, requests, bytes (produce: request bytes; fetch: response bytes; request and
    mutation: request + response bytes), handler_us, rate (produce/fetch: bytes/s; request:
    handler time as percent of one thread; mutation: requests/s) and rate_unit, limit (the
    largest quota_limit the rows of that quota reported), rate_to_limit, throttle_count and
    throttle_ms (rows throttled by this quota), throttled_share (throttle_ms / window,
    at most 1). Windows with no request of an entity have no row."""
    sizes = sorted({parse_window(w) if isinstance(w, str) else int(w) for w in windows})
    if not sizes:
        raise ValueError("no window given")
    frames = [_quota_window(df, ms) for ms in sizes]
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _quota_window(df: DataFrame, window_ms: int) -> DataFrame:
    # One aggregation per (window, entity), with each quota type's measures side by side,
    # then one row per quota type that had requests: a single pass over the rows, no
    # per-type copies of them (and streaming allows a projection after its aggregation).
    # Quota types compare as small integers (their index in QUOTA_TYPES), not strings, and
    # a row's API is told by its api_key (the sink derives api_name from it).
    code = {t: F.lit(i) for i, t in enumerate(QUOTA_TYPES)}
    key = F.col("api_key")
    primary = (
        F.when(key.isin(*PRODUCE_KEYS), code["produce"])
        .when(key.isin(*FETCH_KEYS), code["fetch"])
        .when(key.isin(*MUTATION_KEYS), code["mutation"])
        .otherwise(code["request"])
    )
    cause = F.col("throttle_cause")
    # The quota that throttled the row (-1: none), and the one its quota_* columns describe.
    throttler = F.when(cause == "none", F.lit(-1))
    for t in QUOTA_TYPES:
        throttler = throttler.when(cause == t, code[t])
    throttler = throttler.otherwise(F.lit(-1))
    if df.isStreaming:
        # An event-time window: what the watermark closes.
        window = F.window("ts", f"{window_ms} milliseconds")
    else:
        # The same tumbling window (aligned to the epoch) as a number: cheaper to group by.
        window = F.expr(f"unix_micros(ts) div {window_ms * 1000}")
    rows = df.select(
        window.alias("w"),
        *ENTITY,
        primary.alias("primary"),
        throttler.alias("throttler"),
        F.col("request_bytes").cast("long").alias("request_bytes"),
        F.col("response_bytes").cast("long").alias("response_bytes"),
        "handler_us",
        (F.col("throttle_time_ms") > 0).alias("throttled"),
        "throttle_time_ms",
        # Finite limits only: an infinite (or NaN) bound is no limit.
        F.when(F.col("quota_limit") < F.lit(float("inf")), F.col("quota_limit")).alias("quota_limit"),
    )
    primary, throttler = F.col("primary"), F.col("throttler")
    subject = F.when(throttler >= 0, throttler).otherwise(primary)
    both = F.col("request_bytes") + F.col("response_bytes")
    measured = {
        "produce": F.col("request_bytes"),
        "fetch": F.col("response_bytes"),
        "request": both,
        "mutation": both,
    }
    measures = []
    for t in QUOTA_TYPES:
        counted = F.lit(True) if t == "request" else primary == code[t]  # rows this quota measures
        hit = counted & (throttler == code[t]) & F.col("throttled")
        # Counts as count(when(...)): a count's buffer is never null, a sum's may be.
        measures += [
            F.count(F.when(counted, 1)).alias(f"{t}_requests"),
            F.sum(F.when(counted, measured[t])).alias(f"{t}_bytes"),
            F.sum(F.when(counted, F.col("handler_us"))).alias(f"{t}_handler_us"),
            F.count(F.when(hit, 1)).alias(f"{t}_throttle_count"),
            F.sum(F.when(hit, F.col("throttle_time_ms")).otherwise(0)).cast("long").alias(f"{t}_throttle_ms"),
            F.max(F.when(counted & (subject == code[t]), F.col("quota_limit"))).alias(f"{t}_limit"),
        ]
    wide = rows.groupBy("w", *ENTITY).agg(*measures)
    fields = ("requests", "bytes", "handler_us", "throttle_count", "throttle_ms", "limit")
    per_type = F.array(
        *[
            F.struct(F.lit(t).alias("quota_type"), *[F.col(f"{t}_{name}").alias(name) for name in fields])
            for t in QUOTA_TYPES
        ]
    )
    agg = (
        wide.select("w", *ENTITY, F.explode(per_type).alias("q"))
        .select("w", *ENTITY, "q.*")
        .where(F.col("requests") > 0)
    )
    if df.isStreaming:
        start, end = F.col("w.start"), F.col("w.end")
    else:
        start = F.timestamp_micros(F.col("w") * F.lit(window_ms * 1000))
        end = F.timestamp_micros((F.col("w") + 1) * F.lit(window_ms * 1000))
    qt = F.col("quota_type")
    seconds = F.lit(window_ms / 1000.0)
    rate = (
        F.when(qt.isin("produce", "fetch"), F.col("bytes") / seconds)
        .when(qt == "request", F.col("handler_us") / F.lit(window_ms * 1000.0) * F.lit(100.0))
        .otherwise(F.col("requests") / seconds)
    )
    unit = F.create_map(*[F.lit(x) for pair in RATE_UNITS.items() for x in pair])[qt]
    return agg.select(
        F.lit(window_label(window_ms)).alias("window_size"),
        F.lit(window_ms).cast("long").alias("window_ms"),
        start.alias("window_start"),
        end.alias("window_end"),
        *ENTITY,
        "quota_type",
        "requests",
        "bytes",
        "handler_us",
        rate.alias("rate"),
        unit.alias("rate_unit"),
        "limit",
        F.when(F.col("limit") > 0, rate / F.col("limit")).alias("rate_to_limit"),
        "throttle_count",
        "throttle_ms",
        F.least(F.col("throttle_ms") / F.lit(float(window_ms)), F.lit(1.0)).alias("throttled_share"),
    )


def quota_summary(spark: SparkSession, windows: DataFrame) -> DataFrame:
    """`quota_windows` rolled up per (window_size, principal, client_id, quota_type):
    active_windows (with requests), requests, bytes, avg_rate and max_rate over the active
    windows, span_rate (the rate over the whole span from the first window's start to the
    last one's end, idle windows counting as zero), limit, avg_rate_to_limit,
    max_rate_to_limit, throttle_count, throttle_ms, throttled_windows, first_window_start,
    last_window_end, span_rate_to_limit. Whether an entity stayed within its quota, at a
    glance."""
    span_ms = F.unix_millis(F.max("window_end")) - F.unix_millis(F.min("window_start"))
    # sum(rate) x window / span: the measured amount over the span, in the rate's unit.
    span_rate = F.sum("rate") * F.first("window_ms") / span_ms
    rolled = windows.groupBy("window_size", "window_ms", *ENTITY, "quota_type", "rate_unit").agg(
        F.count(F.lit(1)).alias("active_windows"),
        F.sum("requests").alias("requests"),
        F.sum("bytes").alias("bytes"),
        F.avg("rate").alias("avg_rate"),
        F.max("rate").alias("max_rate"),
        span_rate.alias("span_rate"),
        F.max("limit").alias("limit"),
        F.avg("rate_to_limit").alias("avg_rate_to_limit"),
        F.max("rate_to_limit").alias("max_rate_to_limit"),
        F.sum("throttle_count").alias("throttle_count"),
        F.sum("throttle_ms").alias("throttle_ms"),
        F.sum(F.when(F.col("throttle_count") > 0, 1).otherwise(0)).cast("long").alias("throttled_windows"),
        F.min("window_start").alias("first_window_start"),
        F.max("window_end").alias("last_window_end"),
    )
    return rolled.withColumn(
        "span_rate_to_limit", F.when(F.col("limit") > 0, F.col("span_rate") / F.col("limit"))
    )


def api_errors(spark: SparkSession, df: DataFrame) -> DataFrame:
    """Per (api_key, api_name, api_version, error_code), non-zero codes only: requests."""
    return (
        df.where(F.col("error_code") != 0)
        .groupBy(*API_KEYS, "error_code")
        .agg(F.count(F.lit(1)).alias("requests"))
    )


def api_latency(spark: SparkSession, df: DataFrame, errors: DataFrame | None = None) -> DataFrame:
    """Per (api_key, api_name, api_version): requests, errors (rows with a non-zero
    error_code), errors_by_code (map code -> requests), throttled, p50_us/p95_us/p99_us
    (of total_us, from its log-linear histogram: see `latency_from_histogram`), max_us,
    mean_us, handler_mean_us, handler_max_us. `errors`: `api_errors` of the same rows, if
    already computed."""
    return add_error_map(latency_stats(spark, df), errors if errors is not None else api_errors(spark, df))


def latency_stats(spark: SparkSession, df: DataFrame) -> DataFrame:
    """`api_latency` without errors_by_code: `latency_from_histogram(latency_histogram(df))`."""
    return latency_from_histogram(latency_histogram(df))


def latency_bucket(value: str) -> Column:
    """The log-linear histogram bucket of a non-negative microsecond count (the SQL
    expression or column name `value`), given as the bucket's upper bound (its largest
    value), as HdrHistogram buckets (and reports) values: below EXACT_BELOW_US (256) one
    bucket per microsecond, the value itself; above, SUB_BUCKETS (128) buckets per power
    of two, [2^e, 2^(e+1)) cut into slices 2^(e-7) wide, so the upper bound exceeds any
    value of its bucket by less than 1/128 of it (0.78 %).

    Integer arithmetic but for the exponent: e = floor(log2(v)), s = e - 7, and the upper
    bound is v with its s low bits set, v | (2^s - 1) = ((v >> s) + 1 << s) - 1. Spark's
    log2 is exact at powers of two and its floor right below them up to 2^47 - 1 (tested
    to 2^48 - 1); from 2^47 us (4.5 years) on, where it may round 2^k - 1 up to k, a
    v >> s below 128 gives that away and s is taken one less."""
    v = f"({value})"
    s = f"(cast(floor(log2({v})) as int) - {SUB_BUCKET_BITS})"
    corrected = f"({s} - if(shiftright({v}, {s}) < {SUB_BUCKETS}, 1, 0))"
    return F.expr(
        f"if({v} < {EXACT_BELOW_US}, {v}, {v} | (shiftleft(1L, if({v} < {1 << 47}L, {s}, {corrected})) - 1))"
    )


def latency_histogram(df: DataFrame) -> DataFrame:
    """The log-linear histogram of total_us per API version: one aggregation (streaming
    allows it) by API_KEYS and bucket_us (`latency_bucket(total_us)`), with the bucket's
    requests, errors, throttled, total_us_sum, max_us, handler_us_sum and handler_max_us:
    everything `latency_from_histogram` needs to roll the rows of an API version up."""
    return df.groupBy(*API_KEYS, latency_bucket("total_us").alias("bucket_us")).agg(
        F.count(F.lit(1)).alias("requests"),
        F.count(F.when(F.col("error_code") != 0, 1)).alias("errors"),
        F.count(F.when(F.col("throttle_time_ms") > 0, 1)).alias("throttled"),
        F.sum("total_us").alias("total_us_sum"),
        F.max("total_us").alias("max_us"),
        F.sum("handler_us").alias("handler_us_sum"),
        F.max("handler_us").alias("handler_max_us"),
    )


def latency_from_histogram(hist: DataFrame) -> DataFrame:
    """`latency_histogram` rolled up per API version: requests, errors, throttled,
    p50_us/p95_us/p99_us, max_us, mean_us, handler_mean_us, handler_max_us.

    The p-th percentile is the smallest bucket whose cumulative count reaches p % of the
    requests (the ceil(p x n / 100)-th smallest value falls in it), reported as that
    bucket's upper bound capped at max_us: less than 1/128 (0.78 %) above the exact value,
    exact below 256 us and for the largest value (the top bucket reports max_us). Integer
    comparisons (cumulative x 100 >= p x requests): no rounding. The figures depend only on
    the rows, not on their order or partitioning (as a merged quantile sketch's may): batch
    and streaming, Spark and any other engine bucketing alike, give the same numbers."""
    api = Window.partitionBy(*API_KEYS)
    cumulative = F.sum("requests").over(api.orderBy("bucket_us").rowsBetween(Window.unboundedPreceding, 0))
    ranked = hist.select(
        *API_KEYS,
        "bucket_us",
        "requests",
        "errors",
        "throttled",
        "total_us_sum",
        "max_us",
        "handler_us_sum",
        "handler_max_us",
        cumulative.alias("cumulative"),
        F.sum("requests").over(api).alias("total"),
    )
    reached = {
        p: F.min(F.when(F.col("cumulative") * 100 >= F.col("total") * p, F.col("bucket_us"))).alias(f"b{p}")
        for p in PERCENTILES
    }
    stats = ranked.groupBy(*API_KEYS).agg(
        F.sum("requests").alias("requests"),
        F.sum("errors").alias("errors"),
        F.sum("throttled").alias("throttled"),
        *reached.values(),
        F.max("max_us").alias("max_us"),
        F.sum("total_us_sum").alias("total_us_sum"),
        F.sum("handler_us_sum").alias("handler_us_sum"),
        F.max("handler_max_us").alias("handler_max_us"),
    )
    requests = F.col("requests").cast("double")
    return stats.select(
        *API_KEYS,
        "requests",
        "errors",
        "throttled",
        *[F.least(F.col(f"b{p}"), F.col("max_us")).alias(f"p{p}_us") for p in PERCENTILES],
        "max_us",
        (F.col("total_us_sum") / requests).alias("mean_us"),
        (F.col("handler_us_sum") / requests).alias("handler_mean_us"),
        "handler_max_us",
    )


def add_error_map(stats: DataFrame, errors: DataFrame) -> DataFrame:
    """`latency_stats` with errors_by_code from `api_errors` (an empty map when none)."""
    by_code = errors.groupBy(*API_KEYS).agg(
        F.map_from_entries(F.array_sort(F.collect_list(F.struct("error_code", "requests")))).alias(
            "errors_by_code"
        )
    )
    empty = F.create_map().cast("map<smallint,bigint>")
    columns = [c for c in stats.columns if c != "errors_by_code"]
    at = columns.index("errors") + 1
    return stats.join(by_code, API_KEYS, "left").select(
        *columns[:at],
        F.coalesce(F.col("errors_by_code"), empty).alias("errors_by_code"),
        *columns[at:],
    )


def client_software(spark: SparkSession, df: DataFrame) -> DataFrame:
    """The conformance view: per (client_software_name, client_software_version, api_key,
    api_name, api_version): requests, errors, clients (distinct client ids), first_seen,
    last_seen. Software is null for clients that sent no ApiVersions v3+."""
    return df.groupBy("client_software_name", "client_software_version", *API_KEYS).agg(
        F.count(F.lit(1)).alias("requests"),
        F.sum(F.when(F.col("error_code") != 0, 1).otherwise(0)).cast("long").alias("errors"),
        # Not countDistinct: streaming aggregations allow no distinct.
        F.size(F.collect_set("client_id")).alias("clients"),
        F.min("ts").alias("first_seen"),
        F.max("ts").alias("last_seen"),
    )


def top_offenders(spark: SparkSession, df: DataFrame, limit: int | None = 20) -> DataFrame:
    """The (principal, client_id) pairs most often throttled (rows with throttle_time_ms > 0),
    most first (then most throttle time): throttle_count, throttle_ms, max_throttle_ms,
    causes (sorted distinct throttle_cause), first_violation and last_violation (ts of the
    first and last throttled request)."""
    return rank_offenders(offender_stats(spark, df), limit)


def offender_stats(spark: SparkSession, df: DataFrame) -> DataFrame:
    """`top_offenders` of every throttled entity, unordered (streaming allows it)."""
    return (
        df.where(F.col("throttle_time_ms") > 0)
        .groupBy(*ENTITY)
        .agg(
            F.count(F.lit(1)).alias("throttle_count"),
            F.sum("throttle_time_ms").cast("long").alias("throttle_ms"),
            F.max("throttle_time_ms").alias("max_throttle_ms"),
            F.array_sort(F.collect_set("throttle_cause")).alias("causes"),
            F.min("ts").alias("first_violation"),
            F.max("ts").alias("last_violation"),
        )
    )


def rank_offenders(stats: DataFrame, limit: int | None = 20) -> DataFrame:
    ordered = stats.orderBy(
        F.col("throttle_count").desc(),
        F.col("throttle_ms").desc(),
        F.col("principal").asc(),
        F.col("client_id").asc_nulls_first(),
    )
    return ordered.limit(limit) if limit is not None else ordered


# -- KIP-714: what clients say they saw, next to what the broker recorded -------------

CLIENT_LATENCY = "request.latency"  # org.apache.kafka.{producer,consumer}[.node].request.latency.{avg,max}
CLIENT_THROTTLE = "throttle.time"  # org.apache.kafka.producer.produce.throttle.time.{avg,max}, ...


def read_client_metrics(
    spark: SparkSession,
    path: str,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> DataFrame | None:
    """The client metrics table under a metrics directory (`_client_metrics/`), filtered
    like the requests; None when there is none (telemetry off, or `path` is not the
    metrics directory itself)."""
    if has_glob(path) or path.rstrip("/").endswith(".parquet"):
        return None
    folder = path.rstrip("/") + "/" + CLIENT_METRICS_DIR
    reader = spark.read.schema(spark_schema(CLIENT_METRICS_COLUMNS)).option("basePath", folder)
    try:
        df = reader.parquet(folder)
    except AnalysisException:
        return None
    return filter_time(df, since, until).select(*CLIENT_METRICS_COLUMN_NAMES)


def client_telemetry(
    spark: SparkSession, requests: DataFrame, client_metrics: DataFrame, window_ms: int
) -> DataFrame:
    """Per client instance and window: the request latency and throttle time the client
    pushed (KIP-714 gauges whose names end in request.latency.avg/max and
    throttle.time.avg/max, all brokers' nodes together), next to what the broker recorded
    for requests with the same client id and principal in that window (total_us as ms,
    throttle_time_ms). A window with pushes but no requests has null broker columns."""
    seconds = window_ms / 1000
    start = (F.floor(F.col("ts").cast("double") / seconds) * seconds).cast("timestamp").alias("window_start")
    name = F.col("metric")

    def pushed(suffix: str, aggregate: Any) -> Column:
        return aggregate(F.when(name.endswith(suffix), F.col("value")))

    client = client_metrics.groupBy(start, "client_instance_id", "client_id", "principal").agg(
        pushed(f"{CLIENT_LATENCY}.avg", F.avg).alias("client_latency_avg_ms"),
        pushed(f"{CLIENT_LATENCY}.max", F.max).alias("client_latency_max_ms"),
        pushed(f"{CLIENT_THROTTLE}.avg", F.avg).alias("client_throttle_avg_ms"),
        pushed(f"{CLIENT_THROTTLE}.max", F.max).alias("client_throttle_max_ms"),
        F.count(F.lit(1)).alias("client_points"),
    )
    broker = (
        requests.where(F.col("api_key") != 72)  # the pushes themselves are not the client's traffic
        .groupBy(start, "client_id", "principal")
        .agg(
            F.count(F.lit(1)).alias("broker_requests"),
            (F.avg("total_us") / 1000).alias("broker_latency_avg_ms"),
            (F.max("total_us") / 1000).alias("broker_latency_max_ms"),
            F.avg("throttle_time_ms").alias("broker_throttle_avg_ms"),
            F.max("throttle_time_ms").alias("broker_throttle_max_ms"),
        )
    )
    joined = client.join(broker, ["window_start", "client_id", "principal"], "left")
    return joined.select(
        "window_start",
        F.lit(window_ms).alias("window_ms"),
        "client_instance_id",
        "client_id",
        "principal",
        "client_latency_avg_ms",
        "client_latency_max_ms",
        "client_throttle_avg_ms",
        "client_throttle_max_ms",
        "client_points",
        "broker_requests",
        "broker_latency_avg_ms",
        "broker_latency_max_ms",
        "broker_throttle_avg_ms",
        "broker_throttle_max_ms",
    )
