"""kafka-mock-report: the request-metrics report from the command line.

    kafka-mock-report --metrics PATH --out DIR [--master URL] [--since T] [--until T]
                      [--window 1s,10s] [--top N] [--conf KEY=VALUE ...]
                      [--follow [--watermark 30s] [--trigger 5s] [--refresh 10s]]

PATH is the broker's metrics directory (or one of its `broker=`/`date=` folders, a glob,
or any Spark-readable URI: hdfs://, s3a://, ...). DIR gets one Parquet table per
aggregate (see `spark.jobs`), the plots and index.html (see `spark.report`); on a
cluster DIR must be a directory the driver and the executors share. T is ISO 8601 (no
zone means UTC) or epoch seconds: `since <= ts < until`. Stage lines go to stderr as
the job runs. `--follow` keeps the tables and the page up to date as files arrive,
until Ctrl-C (see `spark.follow`).

    kafka-mock-report what-if --metrics PATH --quotas PROPOSAL [--quotas PROPOSAL ...]
                      --out DIR [--master URL] [--since T] [--until T] [--model closed|open]
                      [--quota-window-num 11] [--quota-window-size-seconds 1] [--window 1s]
                      [--conf KEY=VALUE ...]

`what-if` replays the recorded requests through the broker's quota code under the quotas
of PROPOSAL (JSON as the HTTP control plane's /v1/quotas bodies, or a state dir's
quotas.sqlite for today's quotas; several are applied in order) and writes requests/,
entities/, entity_windows/ and index.html under DIR (see `spark.what_if_job`).

This module is the only one that knows both modes: `spark.report` runs the batch
report and `spark.follow` the streaming one (which reuses the report's page).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from urllib.parse import urlparse

# The 'spark' extra. Without it this module still imports (its parsers, --help), and
# main() says in one line what to install instead of a traceback.
SPARK_EXTRA_MODULES = ("pyspark", "matplotlib", "pandas", "pyarrow")
MISSING_SPARK_EXTRA = "kafka-mock-report needs the 'spark' extra: pip install 'kafka-mock-broker[spark]'"

try:
    from pyspark.errors import AnalysisException
    from pyspark.sql import SparkSession

    from spark import jobs
    from spark.follow import run_follow
    from spark.report import Progress, run_report
except ImportError as exc:
    if (exc.name or "").partition(".")[0] not in SPARK_EXTRA_MODULES:
        raise


def _spark_extra_missing() -> bool:
    """Whether a module of the 'spark' extra is not installed (said, then exit 2)."""
    for module in SPARK_EXTRA_MODULES:
        if importlib.util.find_spec(module) is None:
            print(MISSING_SPARK_EXTRA, file=sys.stderr)
            return True
    return False


def _parse_conf(items: Sequence[str]) -> dict[str, str]:
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"bad --conf {item!r}: use KEY=VALUE")
        conf[key.strip()] = value
    return conf


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-mock-report",
        description="Tables and plots of the broker's request metrics (PySpark).",
        epilog="kafka-mock-report what-if --help: replay the requests under proposed quotas.",
    )
    parser.add_argument(
        "--metrics", required=True, metavar="PATH", help="metrics directory or any Spark-readable path"
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (tables, plots, index.html)"
    )
    parser.add_argument(
        "--master", default="local[*]", metavar="URL", help="Spark master (default: local[*])"
    )
    parser.add_argument(
        "--since", metavar="T", help="only requests at or after T (ISO 8601, UTC, or epoch s)"
    )
    parser.add_argument("--until", metavar="T", help="only requests before T")
    parser.add_argument(
        "--window", default="1s,10s", metavar="W[,W...]", help="window lengths (default: 1s,10s)"
    )
    parser.add_argument("--top", type=int, default=20, metavar="N", help="top offenders listed (default: 20)")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark configuration (repeatable)",
    )
    follow = parser.add_argument_group("streaming")
    follow.add_argument(
        "--follow",
        action="store_true",
        help="keep the tables up to date as metrics files arrive (Structured Streaming) until Ctrl-C",
    )
    follow.add_argument(
        "--watermark", default="30s", metavar="W", help="--follow: allowed lateness (default: 30s)"
    )
    follow.add_argument(
        "--trigger", default="5s", metavar="W", help="--follow: micro-batch interval (default: 5s)"
    )
    follow.add_argument(
        "--refresh", default="10s", metavar="W", help="--follow: index.html refresh (default: 10s)"
    )
    return parser


def build_what_if_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-mock-report what-if",
        description="Replay recorded requests under proposed quotas (PySpark): what each client would see.",
    )
    parser.add_argument(
        "--metrics", required=True, metavar="PATH", help="metrics directory or any Spark-readable path"
    )
    parser.add_argument(
        "--quotas",
        required=True,
        action="append",
        metavar="PROPOSAL",
        help="JSON (/v1/quotas bodies) or quotas.sqlite; repeat to apply several in order",
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (tables, plots, index.html)"
    )
    parser.add_argument(
        "--master", default="local[*]", metavar="URL", help="Spark master (default: local[*])"
    )
    parser.add_argument(
        "--since", metavar="T", help="only requests at or after T (ISO 8601, UTC, or epoch s)"
    )
    parser.add_argument("--until", metavar="T", help="only requests before T")
    parser.add_argument(
        "--model",
        choices=("closed", "open"),
        default="closed",
        help="closed: a throttled connection's later requests shift by the extra mute (default); open: no shift",
    )
    parser.add_argument(
        "--quota-window-num",
        type=int,
        default=11,
        metavar="N",
        help="the broker's quota.window.num (default: 11)",
    )
    parser.add_argument(
        "--quota-window-size-seconds",
        type=int,
        default=1,
        metavar="S",
        help="the broker's quota.window.size.seconds (default: 1)",
    )
    parser.add_argument(
        "--window", default="1s", metavar="W", help="throughput window of the plots (default: 1s)"
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark configuration (repeatable)",
    )
    return parser


def what_if_main(argv: Sequence[str]) -> int:
    """`kafka-mock-report what-if ...`."""
    parser = build_what_if_parser()
    args = parser.parse_args(argv)
    if _spark_extra_missing():
        return 2
    from spark.quota_replay import ProposalError
    from spark.what_if_job import load_config, run_what_if

    try:
        jobs.parse_window(args.window)
        since = jobs.parse_time(args.since) if args.since else None
        until = jobs.parse_time(args.until) if args.until else None
        conf = _parse_conf(args.conf)
        config = load_config(
            args.quotas, args.quota_window_num, args.quota_window_size_seconds, args.model == "closed"
        )
    except ProposalError as exc:
        parser.error(f"--quotas: {exc}")
    except ValueError as exc:
        parser.error(str(exc))
    problem = _input_output_problem(args.metrics, args.out, follow=False)
    if problem:
        print(f"kafka-mock-report what-if: {problem}", file=sys.stderr)
        return 2
    progress = Progress(prefix="kafka-mock-report what-if")
    spark, owned = _session(args.master, conf, progress)
    try:
        result = run_what_if(
            spark, args.metrics, config, args.out, since, until, args.window, args.quotas, progress
        )
    except AnalysisException as exc:
        print(f"kafka-mock-report what-if: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the output directory: permissions, space
        print(f"kafka-mock-report what-if: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kafka-mock-report what-if: interrupted", file=sys.stderr)
        return 130
    finally:
        if owned:
            spark.stop()
    progress(f"done: {result.rows} requests in {result.groups} groups, {len(result.plots)} plots")
    print(result.index)
    return 0


def _local(path: str) -> str | None:
    """The local file a path names (no URI scheme, or file:, and no wildcards), else None
    (hdfs://, s3a://, a glob: Spark's to find)."""
    if jobs.has_glob(path):
        return None
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return parsed.path
    return None if parsed.scheme else path


def _input_output_problem(metrics: str, out: str, follow: bool) -> str | None:
    """What is wrong with --metrics or --out that can be told before Spark starts (Spark
    would take seconds to start, then log a Java stack trace before its PATH_NOT_FOUND):
    a local metrics path that does not exist (--follow waits for the broker to write it),
    an output directory that is a file."""
    local = _local(metrics)
    if not follow and local is not None and not os.path.exists(local):
        return f"--metrics {metrics}: no such file or directory"
    local = _local(out)
    if local is not None and os.path.exists(local) and not os.path.isdir(local):
        return f"--out {out}: not a directory"
    return None


def _session(master: str, conf: dict[str, str], progress: Progress) -> tuple[SparkSession, bool]:
    """A new session on `master` (owned: the caller stops it), or the active one as it
    is (a notebook, the tests) plus `conf`."""
    active = SparkSession.getActiveSession()
    if active is None:
        progress(f"starting Spark ({master})")
        from spark.session import build_session

        # Spark's own progress bar only on a terminal: in a log it is carriage-return noise.
        conf.setdefault("spark.ui.showConsoleProgress", "true" if sys.stderr.isatty() else "false")
        return build_session(master, conf=conf), True
    progress("using the active Spark session")
    for key, value in conf.items():
        active.conf.set(key, value)
    return active, False


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["what-if"]:
        return what_if_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if _spark_extra_missing():
        return 2
    try:
        windows = jobs.parse_windows(args.window)
        since = jobs.parse_time(args.since) if args.since else None
        until = jobs.parse_time(args.until) if args.until else None
        conf = _parse_conf(args.conf)
        for option in (args.watermark, args.trigger, args.refresh):
            jobs.parse_window(option)
    except ValueError as exc:
        parser.error(str(exc))
    if args.top < 1:
        parser.error("--top must be at least 1")

    problem = _input_output_problem(args.metrics, args.out, follow=args.follow)
    if problem:
        print(f"kafka-mock-report: {problem}", file=sys.stderr)
        return 2
    progress = Progress()
    spark, owned = _session(args.master, conf, progress)
    try:
        if args.follow:
            return run_follow(
                spark, args.metrics, args.out, windows, since, until, args.top,
                args.watermark, args.trigger, args.refresh, progress,
            )  # fmt: skip
        result = run_report(spark, args.metrics, args.out, windows, since, until, args.top, progress)
    except AnalysisException as exc:
        print(f"kafka-mock-report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the output directory: permissions, space
        print(f"kafka-mock-report: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kafka-mock-report: interrupted", file=sys.stderr)
        return 130
    finally:
        if owned:
            spark.stop()
    progress(f"done: {result.rows} requests, {len(result.tables)} tables, {len(result.plots)} plots")
    print(result.index)
    return 0


if __name__ == "__main__":
    sys.exit(main())
