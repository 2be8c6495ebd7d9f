"""PySpark jobs over the request metrics the broker mirrors to Parquet.

- `spark.schema`: the column contract shared with the broker's sink.
- `spark.jobs`: the aggregations (DataFrame in, DataFrame out) and the reader.
- `spark.report`: the batch report (Parquet tables, PNG plots, index.html).
- `spark.follow`: the same tables and page kept current (Structured Streaming).
- `spark.quota_replay`: the what-if's model (recorded requests replayed through the
  quota code under proposed quotas), no pyspark; `spark.what_if_job`: it on Spark.
- `spark.what_if(...)`: the what-if from Python.
- `spark.cli`: `kafka-mock-report` (and `kafka-mock-report what-if`), the command line.
- `spark.plots`, `spark.session`: matplotlib plots; the SparkSession settings.

Importing this package or `spark.schema` imports neither pyspark nor matplotlib.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark.what_if_job import WhatIfResult


def what_if(
    metrics: str,
    quotas: str | Sequence[str],
    out: str,
    *,
    spark: Any = None,
    master: str = "local[*]",
    since: dt.datetime | str | None = None,
    until: dt.datetime | str | None = None,
    model: str = "closed",
    window_num: int = 11,
    window_seconds: int = 1,
    window: str = "1s",
    progress: Callable[[str], None] | None = None,
) -> WhatIfResult:
    """Replays the request metrics under `metrics` under the quotas of `quotas` (one or
    more proposal files, applied in order: JSON as the control plane's /v1/quotas bodies,
    or a state dir's quotas.sqlite) and writes requests/, entities/, entity_windows/ and
    index.html under `out`. `spark`: a SparkSession to use (default: the active one, else
    a new one on `master`, stopped at the end). `model`: "closed" (a throttled
    connection's later requests shift by the extra mute) or "open" (no shifting).
    `window_num`/`window_seconds`: the broker's quota.window.num/.size.seconds."""
    from pyspark.sql import SparkSession

    from spark import jobs
    from spark.what_if_job import load_config, run_what_if

    if model not in ("closed", "open"):
        raise ValueError(f"model must be 'closed' or 'open', not {model!r}")
    files = [quotas] if isinstance(quotas, str) else list(quotas)
    config = load_config(files, window_num, window_seconds, closed_loop=model == "closed")
    if isinstance(since, str):
        since = jobs.parse_time(since)
    if isinstance(until, str):
        until = jobs.parse_time(until)
    session = spark or SparkSession.getActiveSession()
    owned = session is None
    if session is None:
        from spark.session import build_session

        session = build_session(master, app_name="kafka-mock-what-if")
    try:
        return run_what_if(session, metrics, config, out, since, until, window, files, progress)
    finally:
        if owned:
            session.stop()
