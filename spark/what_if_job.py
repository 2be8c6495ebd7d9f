"""The quota what-if on Spark: recorded requests replayed under proposed quotas
(`run_what_if`; the command line is `kafka-mock-report what-if`, the Python API
`spark.what_if`).

1. The request metrics are read (`spark.jobs.read_metrics`, `since <= ts < until`).
2. The distinct (broker, run, connection, principal, client id) identities, a few per
   client, come to the driver, which resolves them under the proposal and joins them
   into groups that share state (`spark.quota_replay.assign_groups`).
3. The rows, tagged with their group by a broadcast join, are grouped on the executors
   (`groupBy(bucket).applyInArrow`: a bucket is a few groups, packed by row count on the
   driver, since each call costs milliseconds whatever its size) and each group is
   replayed in time order through the project's quota code
   (`spark.quota_replay.replay_groups`). No row comes to the driver.
4. Tables under the output directory: `requests/` (a row per replayed request: ts,
   predicted_ts, principal, client_id, api_key, observed_throttle_ms,
   predicted_throttle_ms, ...), `entities/` (per principal, client id and quota type:
   recorded and predicted throughput, throttle count, total and p99 throttle time, share
   of time throttled, the proposed limit and where it comes from; `rank` 1 = changed
   most) and `entity_windows/` (the same per window, for the entities index.html
   lists); then a PNG per most-changed entity and `index.html`, written by the driver
   (on a cluster, a directory the driver and the executors share).
"""

from __future__ import annotations

import datetime as dt
import html
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window, types
from pyspark.sql import functions as F

from quotas.callback import ClientQuotaType
from spark import jobs
from spark.quota_replay import (
    CAUSE_NAMES,
    INPUT_COLUMNS,
    OUTPUT_COLUMNS,
    QUOTA_TYPES,
    ReplayConfig,
    apply_changes,
    assign_groups,
    pack_groups,
    proposed_limits,
    read_proposal,
    replay_groups,
)
from spark.report import _STYLE, Progress, _fmt, _table, _ts, _utc

TABLES = ("requests", "entities", "entity_windows")
IDENTITY = ["broker_id", "run_id", "connection_id", "principal", "client_id"]
PLOT_ENTITIES = 8  # entities with a plot in index.html, most changed first
# Calls of the replay (buckets of groups) and tasks running them, per core: enough to
# balance the cores, few enough that the calls' fixed cost does not count.
BUCKETS_PER_CORE = 16
TASKS_PER_CORE = 2
MAX_BUCKET_ROWS = 250_000  # a bucket is one Arrow table in a Python worker's memory
TABLE_ROWS = 50  # entities listed in index.html
UNITS = {"produce": "bytes/s", "fetch": "bytes/s", "request": "percent"}
_ARROW_TO_SPARK = {
    "int8": types.ByteType(),
    "double": types.DoubleType(),
    "int32": types.IntegerType(),
    "int64": types.LongType(),
}


@dataclass
class WhatIfResult:
    out: str
    index: str
    rows: int
    groups: int
    tables: dict[str, str] = field(default_factory=dict)  # name -> path
    plots: list[str] = field(default_factory=list)  # file names, relative to out
    replay_seconds: float = 0.0  # from reading the rows (grouping included) to requests/ written


def load_config(
    proposals: Sequence[str], samples: int = 11, window_seconds: int = 1, closed_loop: bool = True
) -> ReplayConfig:
    """The proposal files (JSON as /v1/quotas speaks it, or a quotas.sqlite), applied in
    order over no quotas, as a replay configuration."""
    changes = []
    for path in proposals:
        changes.extend(read_proposal(path))
    return ReplayConfig.of(apply_changes(changes), samples, window_seconds, closed_loop)


def run_what_if(
    spark: SparkSession,
    metrics: str,
    config: ReplayConfig,
    out: str,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    window: int | str = "1s",
    proposals: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> WhatIfResult:
    """Replays the metrics under `metrics` with `config`; writes the tables, the plots
    and index.html under `out`. `window`: the throughput windows of entity_windows and the
    plots. `proposals`: the file names, for the page."""
    say = progress or Progress(prefix="kafka-mock-report what-if")
    window_ms = jobs.parse_window(window) if isinstance(window, str) else int(window)
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    tables = {name: os.path.join(out, name) for name in TABLES}

    say(f"reading {metrics}" + (f" (ts from {_ts(since)} until {_ts(until)})" if since or until else ""))
    started = time.monotonic()
    df = jobs.read_metrics(spark, metrics, since, until)
    identities = df.groupBy(*IDENTITY).agg(F.count(F.lit(1)).alias("rows")).collect()
    rows = sum(int(r["rows"]) for r in identities)
    keys = [tuple(r[c] for c in IDENTITY) for r in identities]
    groups = assign_groups(keys, config)
    group_count = len(set(groups.values()))
    rows_per_group: dict[int, int] = {}
    for r, key in zip(identities, keys, strict=True):
        rows_per_group[groups[key]] = rows_per_group.get(groups[key], 0) + int(r["rows"])
    cores = spark.sparkContext.defaultParallelism
    buckets = pack_groups(rows_per_group, max(BUCKETS_PER_CORE * cores, rows // MAX_BUCKET_ROWS))
    model = "closed loop" if config.closed_loop else "open loop"
    say(f"{rows:,} requests from {len(keys):,} connection identities in {group_count:,} groups ({model})")

    # What the proposal gives each (principal, client id) per quota type, resolved here
    # once, joined to the replayed rows by Spark.
    pairs = sorted({(r["principal"], r["client_id"]) for r in identities}, key=repr)
    pair_ids = {pair: number for number, pair in enumerate(pairs)}
    limits = spark.createDataFrame(
        [
            (pair_ids[(principal, client_id)], QUOTA_TYPES.index(kind), principal, client_id, kind, *limit)
            for principal, client_id, kind, *limit in proposed_limits(pairs, config)
        ],
        "pair int, type_code byte, principal string, client_id string, quota_type string,"
        " proposed_limit double, proposed_user string, proposed_client_id string, limit_entity string",
    )
    replayed = _replay(spark, df, groups, buckets, pair_ids, limits, config)
    with _watch(spark, say, "replay"):
        replayed.write.mode("overwrite").parquet(tables["requests"])
    requests = spark.read.parquet(tables["requests"])
    elapsed = time.monotonic() - started
    say(
        f"requests: {rows:,} rows read, grouped and replayed in {elapsed:.1f} s ({rows / max(elapsed, 1e-9):,.0f} rows/s)"
    )

    # The request quota's view (every request of an entity) when it is in play: in the
    # proposal, or throttling in the recording.
    with_request = config.callback().has_quotas(ClientQuotaType.REQUEST) or (
        requests.where(F.col("observed_cause") == "request").limit(1).count() > 0
    )
    entities_df = _write(spark, entities(requests, limits, with_request), tables["entities"])
    say(f"entities: {entities_df.count():,} rows")
    listed = entities_df.where(F.col("rank") <= TABLE_ROWS).select("principal", "client_id", "quota_type")
    windows_df = _write(
        spark, entity_windows(requests, window_ms, with_request, listed), tables["entity_windows"]
    )
    say(f"entity_windows ({jobs.window_label(window_ms)}): {windows_df.count():,} rows")

    say("plots")
    header = {
        "metrics": metrics,
        "proposal": ", ".join(proposals) or "(given as a ReplayConfig)",
        "quotas in the proposal": f"{len(config.quotas):,} values on {len(config.entities()):,} entities",
        "model": model
        + (
            ": a throttled connection's later requests shift by the extra mute, recorded gaps kept"
            if config.closed_loop
            else ": every request at its recorded time"
        ),
        "quota window": f"{config.samples} x {config.window_ms} ms",
        "requests": f"{rows:,}",
        "groups replayed": f"{group_count:,}",
        "since": _ts(since),
        "until": _ts(until),
        "Spark": f"{spark.version}, master {spark.sparkContext.master}",
        "generated": _ts(dt.datetime.now(dt.UTC)),
    }
    # Each request once (an entity's produce or fetch rows and its request-quota rows are
    # the same requests: summing entities/ would count their throttle twice).
    totals = requests.agg(
        F.sum("observed_throttle_ms").cast("long").alias("o"),
        F.sum("predicted_throttle_ms").cast("long").alias("p"),
    ).first()
    throttle_totals = (totals["o"] or 0, totals["p"] or 0) if totals else (0, 0)
    plots, index = write_index(
        spark, out, entities_df, windows_df, window_ms, header, tables, throttle_totals
    )
    say(f"wrote {index}")
    return WhatIfResult(out, index, rows, group_count, tables, plots, elapsed)


def _write(spark: SparkSession, df: DataFrame, path: str) -> DataFrame:
    df.write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def _replay(
    spark: SparkSession,
    df: DataFrame,
    groups: dict[Any, int],
    buckets: dict[int, int],
    pair_ids: dict[tuple[str, str | None], int],
    limits: DataFrame,
    config: ReplayConfig,
) -> DataFrame:
    """The requests table: every row replayed in its group, on the executors, a bucket
    of groups per call. What crosses to Python and back is kept small, strings above all
    (they cost the most there): rows find their group by their connection (all of a
    connection's identities are in one group), the recorded cause goes as a code, and
    nothing but numbers comes back: the (principal, client id) as a number `pair_ids`
    gives it, to which Spark joins the names and the proposal's limits (`limits`), and
    the API names."""
    # Buckets hold about the same number of rows, so a task per `tasks` of them is about
    # the same work. A bucket's task is set here, not left to a hash of the bucket (uneven
    # for a few dozen keys) nor to adaptive execution (whose coalescing makes fewer, uneven
    # tasks of a shuffle this small in bytes; an explicit partition count it leaves alone).
    tasks = max(1, min(len(set(buckets.values())), TASKS_PER_CORE * spark.sparkContext.defaultParallelism))
    slots = _slots(spark, tasks)
    connections = {identity[:3]: group for identity, group in groups.items()}
    mapping = spark.createDataFrame(
        [(*key, group, buckets[group], slots[buckets[group] % tasks]) for key, group in connections.items()],
        "m_broker_id int, m_run_id long, m_connection_id long, group long, bucket int, slot int",
    )
    on = [df[c].eqNullSafe(mapping[f"m_{c}"]) for c in IDENTITY[:3]]
    cause_code = F.lit(None).cast("byte")
    for code, name in enumerate(CAUSE_NAMES):
        cause_code = F.when(F.col("throttle_cause") == name, F.lit(code).cast("byte")).otherwise(cause_code)
    inputs = [F.col(c) for c in INPUT_COLUMNS if c not in ("ts_us", "throttle_cause")]
    rows = df.join(F.broadcast(mapping), on).select(
        "slot",
        "bucket",
        "group",
        F.unix_micros("ts").alias("ts_us"),
        *inputs,
        cause_code.alias("throttle_cause"),
        "quota_limit",
    )
    dropped = ("slot", "bucket", "group", "principal", "client_id")  # strings stay out of the return
    output = types.StructType(
        [*(f for f in rows.schema.fields if f.name not in dropped)]
        + [types.StructField("pair", types.IntegerType(), False)]
        + [types.StructField(name, _ARROW_TO_SPARK[kind], True) for name, kind in OUTPUT_COLUMNS]
    )
    names = output.fieldNames()

    def replay(table: Any) -> Any:
        return replay_groups(table, config, pairs=pair_ids).select(names)

    # Hash partitioning by slot is what grouping by (slot, bucket) needs: one shuffle.
    replayed = rows.repartition(tasks, "slot").groupBy("slot", "bucket").applyInArrow(replay, output)
    api_names = F.broadcast(df.select("api_key", "api_name").distinct())  # a name per key

    def named(column: str, names: Sequence[str]) -> Column:
        return F.element_at(F.array(*[F.lit(n) for n in names]), F.col(column).cast("int") + 1)

    on = [replayed["pair"] == limits["pair"], replayed["quota_type"] == limits["type_code"]]
    return (
        replayed.join(F.broadcast(limits), on)
        .join(api_names, "api_key")
        .select(
            F.timestamp_micros("ts_us").alias("ts"),
            F.timestamp_micros("predicted_ts_us").alias("predicted_ts"),
            "broker_id",
            "run_id",
            "connection_id",
            "seq",
            "principal",
            "client_id",
            "api_key",
            "api_name",
            "api_version",
            "request_bytes",
            "response_bytes",
            limits["quota_type"],
            "amount",
            "request_amount",
            F.col("throttle_time_ms").alias("observed_throttle_ms"),
            "predicted_throttle_ms",
            named("throttle_cause", CAUSE_NAMES).alias("observed_cause"),
            named("predicted_cause", CAUSE_NAMES).alias("predicted_cause"),
            "shift_ms",
            F.col("quota_limit").alias("observed_limit"),
            "proposed_limit",
            "proposed_user",
            "proposed_client_id",
            F.when(F.col("limit_entity") != "", F.col("limit_entity")).alias("limit_entity"),
        )
    )


def _slots(spark: SparkSession, tasks: int) -> list[int]:
    """For each of `tasks` hash partitions, an int that Spark's hash partitioning puts in
    it (pmod(murmur3 hash, tasks), as HashPartitioning computes it), asked of Spark."""
    found: dict[int, int] = {}
    probe = spark.range(64 * tasks).select(
        F.col("id").cast("int").alias("x"), F.expr(f"pmod(hash(cast(id as int)), {tasks})").alias("p")
    )
    for r in probe.collect():
        found.setdefault(int(r["p"]), int(r["x"]))
    if len(found) < tasks:  # 64 candidates per partition: never in practice
        raise RuntimeError(f"no int hashes to partitions {sorted(set(range(tasks)) - set(found))}")
    return [found[p] for p in range(tasks)]


@contextmanager
def _watch(
    spark: SparkSession, say: Callable[[str], None], label: str, every_s: float = 15.0
) -> Iterator[None]:
    """Task progress of the running job on stderr every `every_s` while it runs."""
    stop = threading.Event()
    tracker = spark.sparkContext.statusTracker()

    def report() -> None:
        while not stop.wait(every_s):
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                say(f"{label}: {done}/{total} tasks of the running stages done")

    watcher = threading.Thread(target=report, name="what-if-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()


def _span_s(first: Column, last: Column) -> Column:
    return (F.unix_micros(last) - F.unix_micros(first)) / F.lit(1e6)


def entity_rows(requests: DataFrame, with_request: bool) -> DataFrame:
    """The requests as each quota type counts them: produce and fetch requests with their
    bytes, and (`with_request`) every request with its request time as quota type
    "request"; observed_limit is the recorded limit of rows of the type's own API.

    The bytes are the data moved, recorded and predicted alike (the same workload, at
    other times): a produce request's size; a fetch's response, but nothing for a fetch
    that a quota throttled in the recording (it was answered empty, and its data came
    in a later fetch)."""
    columns = [
        "principal",
        "client_id",
        "broker_id",
        "ts",
        "predicted_ts",
        "observed_throttle_ms",
        "predicted_throttle_ms",
    ]
    emptied = (
        (F.col("quota_type") == "fetch")
        & (F.col("observed_throttle_ms") > 0)
        & F.col("observed_cause").isin("fetch", "request")
    )
    own = requests.where(F.col("quota_type") != "request").select(
        *columns,
        "quota_type",
        F.when(emptied, F.lit(0.0)).otherwise(F.col("amount")).alias("amount"),
        "observed_limit",
    )
    if not with_request:
        return own
    every = requests.select(
        *columns,
        F.lit("request").alias("quota_type"),
        F.col("request_amount").alias("amount"),
        F.when(F.col("quota_type") == "request", F.col("observed_limit")).alias("observed_limit"),
    )
    return own.unionByName(every)


def _muted_ms(rows: DataFrame, ts: str, throttle: str, name: str) -> DataFrame:
    """Per entity: the time any of its connections was muted, as the union of the
    intervals [ts, ts + throttle] (several connections muted at once count once), and
    `name`_end, the end of its last mute."""
    entity = ["principal", "client_id", "quota_type"]
    start = F.unix_micros(ts)
    intervals = rows.where(F.col(throttle) > 0).select(
        *entity, start.alias("s"), (start + F.col(throttle).cast("long") * 1000).alias("e")
    )
    before = Window.partitionBy(*entity).orderBy("s", "e").rowsBetween(Window.unboundedPreceding, -1)
    covered = intervals.withColumn("covered", F.max("e").over(before))
    fresh = F.greatest(F.col("e") - F.greatest(F.col("s"), F.coalesce("covered", F.col("s"))), F.lit(0))
    return covered.groupBy(*entity).agg(
        (F.sum(fresh) / 1000).alias(name), F.timestamp_micros(F.max("e")).alias(f"{name}_end")
    )


def entities(requests: DataFrame, limits: DataFrame, with_request: bool = True) -> DataFrame:
    """Per (principal, client_id, quota_type) (see `entity_rows`): what the proposal
    changes for it.

    requests, brokers (how many its requests went to), amount (bytes; request quota:
    percent-seconds), observed_rate and predicted_rate (amount over the span from the
    first to the last request, recorded and predicted, summed over its brokers; null
    below two requests), proposed_limit (per broker: each broker enforces it on its own,
    as in Kafka), limit_entity (where it comes from) and
    proposed_user/proposed_client_id (the metric tags it is measured under, from
    `limits`), observed_limit (the largest limit the rows recorded),
    observed_/predicted_ throttle_count, throttle_ms, p99_throttle_ms (exact,
    interpolated, over all its requests) and throttled_share (the time any of its
    connections was muted over the span from its first request to the end of its last
    mute), throttle_ms_change, rate_change (predicted over recorded rate, minus 1)
    and rank: 1 for the entity whose outcome changes most (most throttle time gained or
    lost, then the largest rate change)."""
    entity = ["principal", "client_id", "quota_type"]
    observed_span = _span_s(F.min("ts"), F.max("ts"))
    predicted_span = _span_s(F.min("predicted_ts"), F.max("predicted_ts"))
    rows = entity_rows(requests, with_request)
    agg = rows.groupBy(*entity).agg(
        F.count(F.lit(1)).alias("requests"),
        F.countDistinct("broker_id").alias("brokers"),
        F.sum("amount").alias("amount"),
        F.min("ts").alias("first_ts"),
        F.max("ts").alias("last_ts"),
        F.min("predicted_ts").alias("predicted_first_ts"),
        F.max("predicted_ts").alias("predicted_last_ts"),
        observed_span.alias("observed_span_s"),
        predicted_span.alias("predicted_span_s"),
        F.max(F.when(F.col("observed_limit") < F.lit(float("inf")), F.col("observed_limit"))).alias(
            "observed_limit"
        ),
        F.count(F.when(F.col("observed_throttle_ms") > 0, 1)).alias("observed_throttle_count"),
        F.count(F.when(F.col("predicted_throttle_ms") > 0, 1)).alias("predicted_throttle_count"),
        F.sum("observed_throttle_ms").cast("long").alias("observed_throttle_ms"),
        F.sum("predicted_throttle_ms").cast("long").alias("predicted_throttle_ms"),
        F.percentile("observed_throttle_ms", 0.99).alias("observed_p99_throttle_ms"),
        F.percentile("predicted_throttle_ms", 0.99).alias("predicted_p99_throttle_ms"),
    )
    on = [agg[c].eqNullSafe(limits[c]) for c in entity]
    agg = agg.join(F.broadcast(limits), on, "left").select(
        agg["*"],
        *[limits[c] for c in ("proposed_limit", "limit_entity", "proposed_user", "proposed_client_id")],
    )
    for ts, throttle, name in (
        ("ts", "observed_throttle_ms", "observed_muted_ms"),
        ("predicted_ts", "predicted_throttle_ms", "predicted_muted_ms"),
    ):
        muted = _muted_ms(rows, ts, throttle, name)
        on = [agg[c].eqNullSafe(muted[c]) for c in entity]
        agg = agg.join(muted, on, "left").select(agg["*"], muted[name], muted[f"{name}_end"])

    def rate(span: str) -> Column:
        return F.when((F.col("requests") > 1) & (F.col(span) > 0), F.col("amount") / F.col(span))

    def share(muted: str, first: str, last: str) -> Column:
        span_ms = (F.unix_micros(F.greatest(f"{muted}_end", last)) - F.unix_micros(first)) / 1000
        return F.when(F.col(muted).isNull(), F.lit(0.0)).when(
            span_ms > 0, F.least(F.col(muted) / span_ms, F.lit(1.0))
        )

    scored = agg.select(
        *entity,
        F.create_map(*[F.lit(x) for pair in UNITS.items() for x in pair])[F.col("quota_type")].alias(
            "rate_unit"
        ),
        "requests",
        "brokers",
        "amount",
        "first_ts",
        "last_ts",
        "predicted_first_ts",
        "predicted_last_ts",
        rate("observed_span_s").alias("observed_rate"),
        rate("predicted_span_s").alias("predicted_rate"),
        "proposed_limit",
        F.when(F.col("limit_entity") != "", F.col("limit_entity")).alias("limit_entity"),
        "proposed_user",
        "proposed_client_id",
        "observed_limit",
        "observed_throttle_count",
        "predicted_throttle_count",
        "observed_throttle_ms",
        "predicted_throttle_ms",
        "observed_p99_throttle_ms",
        "predicted_p99_throttle_ms",
        share("observed_muted_ms", "first_ts", "last_ts").alias("observed_throttled_share"),
        share("predicted_muted_ms", "predicted_first_ts", "predicted_last_ts").alias(
            "predicted_throttled_share"
        ),
        (F.col("predicted_throttle_ms") - F.col("observed_throttle_ms")).alias("throttle_ms_change"),
    ).withColumn("rate_change", F.col("predicted_rate") / F.col("observed_rate") - 1)
    order = F.row_number().over(
        Window.orderBy(
            F.abs("throttle_ms_change").desc(),
            F.abs(F.coalesce(F.col("rate_change"), F.lit(0.0))).desc(),
            F.col("principal").asc(),
            F.col("client_id").asc_nulls_first(),
            F.col("quota_type").asc(),
        )
    )
    return scored.withColumn("rank", order)


def entity_windows(
    requests: DataFrame, window_ms: int, with_request: bool = True, only: DataFrame | None = None
) -> DataFrame:
    """Per (principal, client_id, quota_type) (those of `only`, if given) and `window_ms`
    window (aligned to the epoch): observed_amount and observed_throttle_ms of the requests
    recorded in it, predicted_amount and predicted_throttle_ms of those predicted in it;
    the rates are the amounts per second. Quota types as in `entity_rows`."""
    entity = ["principal", "client_id", "quota_type"]
    w_us = window_ms * 1000
    rows = entity_rows(requests, with_request)
    if only is not None:
        wanted = only.select(*[F.col(c).alias(f"o_{c}") for c in entity])
        on = [rows[c].eqNullSafe(wanted[f"o_{c}"]) for c in entity]
        rows = rows.join(F.broadcast(wanted), on, "left_semi")

    def per_window(ts: str, prefix: str) -> DataFrame:
        return rows.groupBy(*entity, F.expr(f"unix_micros({ts}) div {w_us}").alias("w")).agg(
            F.sum("amount").alias(f"{prefix}_amount"),
            F.sum(f"{prefix}_throttle_ms").cast("long").alias(f"{prefix}_throttle_ms"),
            F.count(F.lit(1)).alias(f"{prefix}_requests"),
        )

    joined = _full_join(per_window("ts", "observed"), per_window("predicted_ts", "predicted"), [*entity, "w"])
    seconds = F.lit(window_ms / 1000.0)
    return joined.select(
        *entity,
        F.lit(window_ms).cast("long").alias("window_ms"),
        F.timestamp_micros(F.col("w") * F.lit(w_us)).alias("window_start"),
        F.coalesce("observed_requests", F.lit(0)).alias("observed_requests"),
        F.coalesce("observed_amount", F.lit(0.0)).alias("observed_amount"),
        (F.coalesce("observed_amount", F.lit(0.0)) / seconds).alias("observed_rate"),
        F.coalesce("observed_throttle_ms", F.lit(0)).alias("observed_throttle_ms"),
        F.coalesce("predicted_requests", F.lit(0)).alias("predicted_requests"),
        F.coalesce("predicted_amount", F.lit(0.0)).alias("predicted_amount"),
        (F.coalesce("predicted_amount", F.lit(0.0)) / seconds).alias("predicted_rate"),
        F.coalesce("predicted_throttle_ms", F.lit(0)).alias("predicted_throttle_ms"),
    )


def _full_join(left: DataFrame, right: DataFrame, keys: list[str]) -> DataFrame:
    """A full outer join on `keys`, null-safe (client_id may be null). A matched pair has
    equal keys and an unmatched side null ones, so coalescing the two gives the key."""
    renamed = right.select(
        *[F.col(c).alias(f"r_{c}") for c in keys], *[c for c in right.columns if c not in keys]
    )
    cond = [left[c].eqNullSafe(renamed[f"r_{c}"]) for c in keys]
    joined = left.join(renamed, cond, "full_outer")
    return joined.select(
        *[F.coalesce(left[c], renamed[f"r_{c}"]).alias(c) for c in keys],
        *[c for c in left.columns if c not in keys],
        *[c for c in right.columns if c not in keys],
    )


# -- index.html -----------------------------------------------------------------------


def _per_broker(limit: float | None, brokers: int) -> str:
    """What a limit means for rates summed over `brokers` (each enforces it on its own)."""
    if brokers <= 1:
        return ""
    in_all = "" if limit is None else f": {_fmt(limit * brokers)} in all"
    return f". Limits are per broker; its requests went to {brokers} brokers{html.escape(in_all)}"


def _entity_label(principal: str | None, client_id: str | None, quota_type: str) -> str:
    return f"{principal} / {client_id if client_id is not None else '(no client id)'} ({quota_type})"


def write_index(
    spark: SparkSession,
    out: str,
    entities_df: DataFrame,
    windows_df: DataFrame,
    window_ms: int,
    header: dict[str, str],
    tables: dict[str, str],
    throttle_totals: tuple[int, int],
) -> tuple[list[str], str]:
    """A PNG per most-changed entity and index.html (written aside, then renamed).
    `throttle_totals`: the recorded and predicted throttle time of all the requests (the
    sum over entities counts a request in its produce or fetch row and in its request
    row)."""
    from spark import plots

    top = entities_df.where(F.col("rank") <= TABLE_ROWS).orderBy("rank").collect()
    chosen = top[:PLOT_ENTITIES]
    keys = [(r["principal"], r["client_id"], r["quota_type"]) for r in chosen]
    by_key: dict[tuple[Any, ...], list[Any]] = {}
    if keys:
        wanted = spark.createDataFrame(keys, "k_principal string, k_client_id string, k_quota_type string")
        cond = (
            windows_df["principal"].eqNullSafe(wanted["k_principal"])
            & windows_df["client_id"].eqNullSafe(wanted["k_client_id"])
            & (windows_df["quota_type"] == wanted["k_quota_type"])
        )
        for r in windows_df.join(F.broadcast(wanted), cond).select(windows_df.columns).collect():
            by_key.setdefault((r["principal"], r["client_id"], r["quota_type"]), []).append(r)
    label = jobs.window_label(window_ms)
    names: list[str] = []
    figures: list[str] = []
    for n, r in enumerate(chosen, start=1):
        key = (r["principal"], r["client_id"], r["quota_type"])
        entity = plots.WhatIfSeries(_entity_label(*key), r["rate_unit"], r["proposed_limit"], r["brokers"])
        for w in by_key.get(key, []):
            start = _utc(w["window_start"])
            assert start is not None
            if w["observed_requests"]:
                entity.observed[start] = float(w["observed_rate"])
                entity.observed_throttle[start] = float(w["observed_throttle_ms"])
            if w["predicted_requests"]:
                entity.predicted[start] = float(w["predicted_rate"])
                entity.predicted_throttle[start] = float(w["predicted_throttle_ms"])
        name = f"entity_{n:02d}.png"
        plots.plot_what_if(
            os.path.join(out, name), f"rate and throttle time per {label} window", entity, window_ms
        )
        names.append(name)
        figures.append(
            f"<h3>{n}. {html.escape(_entity_label(*key))}</h3>"
            + _table(
                ["", "rate", "throttled", "throttle ms", "p99 ms", "share throttled"],
                [
                    (
                        "recorded",
                        r["observed_rate"],
                        r["observed_throttle_count"],
                        r["observed_throttle_ms"],
                        r["observed_p99_throttle_ms"],
                        r["observed_throttled_share"],
                    ),
                    (
                        "predicted",
                        r["predicted_rate"],
                        r["predicted_throttle_count"],
                        r["predicted_throttle_ms"],
                        r["predicted_p99_throttle_ms"],
                        r["predicted_throttled_share"],
                    ),
                ],
            )
            + f"<p class='note'>proposed limit {html.escape(_fmt(r['proposed_limit']))} {r['rate_unit']}"
            + (f" from {html.escape(r['limit_entity'])}" if r["limit_entity"] else " (none)")
            + f"; recorded limit {html.escape(_fmt(r['observed_limit']))}"
            + _per_broker(r["proposed_limit"], r["brokers"])
            + "</p>"
            + f"<figure><img src='{name}' alt='{html.escape(_entity_label(*key))}'></figure>"
        )
    changed = entities_df.where(F.col("throttle_ms_change") != 0).count()
    summary = (
        f"<p>{changed:,} of {entities_df.count():,} entities (principal, client id, quota) change"
        f" their throttle time; in all, the requests were throttled {_fmt(throttle_totals[0])} ms as"
        f" recorded, {_fmt(throttle_totals[1])} ms as predicted.</p>"
    )
    listing = (
        "<h2>Entities, most changed first</h2>"
        + _table(
            [
                "#",
                "principal / client id (quota)",
                "unit",
                "requests",
                "brokers",
                "proposed limit (per broker)",
                "from",
                "rate recorded",
                "rate predicted",
                "throttled recorded",
                "throttled predicted",
                "throttle ms recorded",
                "throttle ms predicted",
                "p99 ms recorded",
                "p99 ms predicted",
                "share recorded",
                "share predicted",
            ],
            [
                (
                    r["rank"],
                    _entity_label(r["principal"], r["client_id"], r["quota_type"]),
                    r["rate_unit"],
                    r["requests"],
                    r["brokers"],
                    r["proposed_limit"],
                    r["limit_entity"] or "-",
                    r["observed_rate"],
                    r["predicted_rate"],
                    r["observed_throttle_count"],
                    r["predicted_throttle_count"],
                    r["observed_throttle_ms"],
                    r["predicted_throttle_ms"],
                    r["observed_p99_throttle_ms"],
                    r["predicted_p99_throttle_ms"],
                    r["observed_throttled_share"],
                    r["predicted_throttled_share"],
                )
                for r in top
            ],
            ["over" if (r["throttle_ms_change"] or 0) > 0 else "" for r in top],
        )
        + (
            "<p class='note'>Rates over each entity's span from its first to its last request (recorded and"
            " predicted), summed over the brokers its requests went to; limits are per broker, as in"
            " Kafka (each broker enforces its own); p99 over all its requests; share: throttle time over"
            " the span. Rows in red gain"
            f" throttle time. Top {TABLE_ROWS}; all rows are in entities/.</p>"
        )
    )
    page = (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        "<title>Kafka mock broker: quota what-if</title>"
        f"<style>{_STYLE}</style></head><body><h1>Kafka mock broker: quota what-if</h1>"
        + _table(["", ""], list(header.items()))
        + summary
        + listing
        + f"<h2>Throughput and throttling per {html.escape(label)} window</h2>"
        + ("".join(figures) or "<p class='note'>no entity</p>")
        + "<h2>Tables (Parquet)</h2><ul>"
        + "".join(
            f'<li><a href="{html.escape(os.path.relpath(path, out))}/">{html.escape(name)}</a></li>'
            for name, path in tables.items()
        )
        + "</ul></body></html>\n"
    )
    index = os.path.join(out, "index.html")
    staging = os.path.join(out, ".index.html.tmp")
    with open(staging, "w", encoding="utf-8") as fh:
        fh.write(page)
    os.replace(staging, index)
    return names, index
