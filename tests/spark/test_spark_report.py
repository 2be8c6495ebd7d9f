"""kafka-mock-report end to end on the generated dataset of test_spark_jobs: the tables,
the PNGs and index.html."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.spark.test_spark_jobs import ROWS, write_dataset
from tests.spark_session import spark_fixture  # noqa: F401

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    assert data.rstrip(b"\0").endswith(b"IEND\xaeB`\x82"), f"{path.name} is truncated"
    return width, height


@pytest.fixture(scope="module")
def report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    """One report run through main(), on the shared session (main leaves a session it did
    not start running)."""
    import contextlib
    import io

    from spark import cli

    metrics = write_dataset(tmp_path_factory.mktemp("metrics"))
    out = tmp_path_factory.mktemp("report")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(
            ["--metrics", str(metrics), "--out", str(out), "--window", "1s,10s", "--master", "local[1]"]
        )
    return out, err.getvalue(), code


@pytest.mark.slow
def test_report_writes_index_with_real_pngs(report: tuple[Path, str, int]) -> None:
    out, _, code = report
    assert code == 0
    index = out / "index.html"
    assert index.is_file()
    page = index.read_text(encoding="utf-8")
    images = re.findall(r'<img src="([^"]+)"', page)
    assert sorted(images) == sorted(
        [
            "throughput_produce.png",
            "throughput_fetch.png",
            "throughput_request.png",
            "throughput_mutation.png",
            "throttle.png",
            "latency.png",
        ]
    )
    for name in images:
        path = out / name
        assert path.is_file(), name
        assert path.stat().st_size > 5000, name  # a drawn plot, not an empty canvas
        width, height = png_size(path)
        assert width >= 400 and height >= 200, name
    # The page's tables carry the dataset's entities and findings.
    for text in (
        "User:alice / producer-a",
        "User:carol / admin-c",
        "TopicAlreadyExistsError (36)",
        "Produce v9 (5)",
    ):
        assert text in page, text
    assert "apache-kafka-java" in page and "(not reported)" in page
    for table in ("quota_windows", "api_latency", "top_offenders", "client_software"):
        assert f'href="{table}/"' in page


@pytest.mark.slow
def test_report_tables_are_readable(spark: Any, report: tuple[Path, str, int]) -> None:
    import pyarrow.parquet as pq

    out, _, _ = report
    # Counts follow test_spark_jobs: 14 + 10 window rows, 6 entity-quota pairs per window
    # length, 5 API versions, 2 (api, error) pairs, 6 software-API rows, 3 throttled entities.
    expected = {
        "quota_windows": 24,
        "quota_summary": 12,
        "api_latency": 5,
        "api_errors": 2,
        "client_software": 6,
        "top_offenders": 3,
    }
    for name, rows in expected.items():
        assert spark.read.parquet(str(out / name)).count() == rows, name
        assert pq.read_table(out / name).num_rows == rows, name  # plain Parquet, for any reader
    top = pq.read_table(out / "top_offenders").to_pylist()
    assert sorted((r["principal"], r["throttle_count"], r["throttle_ms"]) for r in top) == [
        ("User:alice", 2, 1750),
        ("User:bob", 1, 200),
        ("User:carol", 2, 1300),
    ]
    latency = {r["api_name"]: r for r in pq.read_table(out / "api_latency").to_pylist()}
    assert latency["Produce"]["p50_us"] == 3007 and latency["Produce"]["requests"] == 5  # 3000's bucket
    assert dict(latency["Fetch"]["errors_by_code"]) == {1: 1}


@pytest.mark.slow
def test_report_shows_progress(report: tuple[Path, str, int]) -> None:
    out, err, _ = report
    lines = err.splitlines()
    assert any("using the active Spark session" in line for line in lines)
    assert any(f"{ROWS} requests" in line for line in lines)
    for table in (
        "quota_windows (1s, 10s): 24 rows",
        "api_latency: 5 rows",
        "top_offenders: 3 rows",
        "plots",
    ):
        assert any(table in line for line in lines), table
    assert any(str(out / "index.html") in line for line in lines)


@pytest.mark.slow
def test_report_since_until_and_errors(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spark import cli

    metrics = write_dataset(tmp_path / "metrics")
    out = tmp_path / "out"
    # since <= ts < until keeps A4, A5, B4, C1, C2, C3 (see test_spark_jobs).
    code = cli.main(
        ["--metrics", str(metrics), "--out", str(out), "--since", "2024-05-01T00:00:01Z", "--until", "2024-05-02",
         "--window", "10s"]
    )  # fmt: skip
    assert code == 0
    assert "6 requests" in capsys.readouterr().err
    assert (
        spark.read.parquet(str(out / "quota_windows")).select("window_size").distinct().collect()[0][0]
        == "10s"
    )
    png_size(out / "throughput_mutation.png")

    # A path that does not exist: an error message and exit status 2, no traceback.
    assert cli.main(["--metrics", str(tmp_path / "missing"), "--out", str(tmp_path / "out2")]) == 2
    assert "kafka-mock-report:" in capsys.readouterr().err


def test_report_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    from spark import cli

    for argv in (
        ["--metrics", "m", "--out", "o", "--window", "fast"],
        ["--metrics", "m", "--out", "o", "--since", "yesterday"],
        ["--metrics", "m", "--out", "o", "--conf", "novalue"],
        ["--metrics", "m", "--out", "o", "--top", "0"],
        ["--metrics", "m", "--out", "o", "--follow", "--watermark", "soon"],
        ["--out", "o"],
    ):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2, argv
    assert "bad window" in capsys.readouterr().err


QUOTA = 20_000  # producer_byte_rate of the capped client, bytes/s


def produce_under_quota(metrics: Path, seconds: float) -> int:
    """A real broker with the metrics sink on, a kafka-python producer (client id "capped",
    producer_byte_rate QUOTA) sending 2 kB messages one at a time for `seconds`: the broker
    throttles it to its quota. Returns the messages sent."""
    import time

    from kafka import KafkaProducer

    from broker import MockCluster
    from tests.conftest import FAST

    config = {
        **FAST,
        "metrics.dir": str(metrics),
        "metrics.roll.ms": "500",
        "quota.window.num": "3",
        "quota.window.size.seconds": "1",
    }
    sent = 0
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("capped-topic")
        cluster.quotas.alter({"client-id": "capped"}, set={"producer_byte_rate": QUOTA})
        producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, client_id="capped", linger_ms=0, acks=1
        )
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                producer.send("capped-topic", b"x" * 2000).get(timeout=30)
                sent += 1
        finally:
            producer.close(timeout=10)
    return sent


@pytest.mark.slow
def test_report_of_a_real_broker_run_shows_the_capped_client_near_its_quota(
    spark: Any, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    from spark import cli

    metrics = tmp_path / "metrics"
    sent = produce_under_quota(metrics, seconds=6.0)
    out = tmp_path / "report"
    assert cli.main(["--metrics", str(metrics), "--out", str(out), "--window", "1s,10s"]) == 0

    summary = [
        r
        for r in pq.read_table(out / "quota_summary").to_pylist()
        if r["client_id"] == "capped" and r["quota_type"] == "produce" and r["window_size"] == "1s"
    ]
    assert len(summary) == 1
    [capped] = summary
    # Every message was one Produce request, each one row; the limit is the quota set.
    assert capped["requests"] == sent > 10
    assert capped["limit"] == QUOTA
    # Held to its quota: throttled, and over the run its rate is near the limit. Single
    # 1 s windows swing far both ways (a 3 x 1 s quota window lets a burst through, then
    # mutes the connection), and the span has partly idle windows at both ends: hence
    # the band.
    assert capped["throttle_count"] > 0 and capped["throttled_windows"] > 0
    assert 0.5 <= capped["span_rate_to_limit"] <= 1.3, capped
    assert capped["max_rate_to_limit"] >= 0.9, capped
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "User:ANONYMOUS / capped" in page
    assert png_size(out / "throughput_produce.png")[0] >= 400


# --------------------------------------------------------------------------- --follow


def publish(staging: Path, metrics: Path, relative: str) -> None:
    """Moves a staged file into the metrics directory the way the sink does: a hidden
    temporary name in the target folder, then a rename."""
    import shutil

    target = metrics / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.parent / f".{target.name}.tmp"
    shutil.copyfile(staging / relative, temporary)
    temporary.rename(target)


def wait_until(check: Any, timeout: float = 120.0, what: str = "") -> None:
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except Exception:  # a table being replaced, or not written yet
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def comparable(rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows as sortable tuples (maps as sorted item tuples, None sorting first)."""
    out = []
    for r in rows:
        values = []
        for v in r.asDict().values():
            if isinstance(v, dict):
                v = tuple(sorted(v.items()))
            elif isinstance(v, list):
                v = tuple(v)
            values.append((v is not None, v))
        out.append(tuple(values))
    return sorted(out)


@pytest.mark.slow
def test_follow_updates_the_tables_as_files_arrive_and_stops_on_ctrl_c(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kafka-mock-report --follow` in this process (on the shared session, which main()
    leaves running), fed files while it runs; then Ctrl-C (a SIGINT to this process,
    sent only while --follow's handler is installed)."""
    import os
    import signal
    import threading

    from pyspark.sql import functions as F

    from spark import cli, jobs
    from tests.spark.test_spark_jobs import DAY2

    staging = write_dataset(tmp_path / "staging")
    metrics = tmp_path / "metrics"
    out = tmp_path / "out"
    seen: dict[str, int] = {}
    outside = signal.getsignal(signal.SIGINT)  # PySpark's own, or Python's default

    def rows(table: str) -> int:
        return int(spark.read.parquet(str(out / table)).count())

    def requests() -> int:
        return int(spark.read.parquet(str(out / "api_latency")).agg(F.sum("requests")).first()[0])

    def feed() -> None:
        try:
            # --follow's handler is installed before its queries start.
            wait_until(lambda: signal.getsignal(signal.SIGINT) is not outside, what="--follow")
            # Day 1 first, with a hidden file the stream must skip.
            publish(staging, metrics, "broker=1/date=2024-05-01/part-0.parquet")
            publish(staging, metrics, "broker=2/date=2024-05-01/part-0.parquet")
            (metrics / "broker=1" / "date=2024-05-01" / ".part-1.parquet").write_bytes(
                (staging / "broker=1" / "date=2024-05-01" / ".part-1.parquet").read_bytes()
            )
            # Latest ts +10.5 s, watermark 1 s: the 1 s windows ending by +9.5 are final:
            # alice +0, +1; bob +0, +1; carol +2, each with two quota types: 10 rows. No
            # 10 s window has ended.
            wait_until(lambda: rows("quota_windows_1s") == 10, what="the first 10 window rows")
            wait_until(lambda: requests() == 12, what="api_latency over day 1's 12 requests")
            seen["1s"], seen["10s"] = rows("quota_windows_1s"), rows("quota_windows_10s")
            # Day 2's file moves the watermark past every day-1 window.
            publish(staging, metrics, "broker=2/date=2024-05-02/part-0.parquet")
            wait_until(
                lambda: rows("quota_windows_1s") == 12 and rows("quota_windows_10s") == 8, what="day 1"
            )
            wait_until(lambda: requests() == 13, what="api_latency over all 13 requests")
        finally:
            # Ctrl-C, if --follow is still running (else it would interrupt pytest).
            if signal.getsignal(signal.SIGINT) is not outside:
                os.kill(os.getpid(), signal.SIGINT)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        code = cli.main(
            ["--follow", "--metrics", str(metrics), "--out", str(out), "--window", "1s,10s", "--watermark", "1s",
             "--trigger", "500ms", "--refresh", "1s"]
        )  # fmt: skip
    finally:
        feeder.join()
    err = capsys.readouterr().err
    assert code == 0, err
    assert seen == {"1s": 10, "10s": 0}, err
    assert signal.getsignal(signal.SIGINT) is outside  # restored
    for line in (
        "streaming queries running",
        "] batch ",
        "index.html refreshed",
        "stopping the streaming queries",
    ):
        assert line in err, line
    assert err.rstrip().splitlines()[-1].split("] ", 1)[1].startswith("stopped;")
    assert "Traceback" not in err

    # The streamed tables equal the batch jobs' on the same rows: every window of day 1
    # (day 2's are not final yet), and running totals over all 13 requests.
    static = jobs.read_metrics(spark, str(staging))
    day1 = static.where(F.col("ts") < F.lit(DAY2))
    for ms, table in ((1000, "quota_windows_1s"), (10_000, "quota_windows_10s")):
        expected = jobs.quota_windows(spark, day1, [ms]).collect()
        assert comparable(spark.read.parquet(str(out / table)).collect()) == comparable(expected), table
    for table, batch in (
        ("api_latency", jobs.api_latency(spark, static)),
        ("api_errors", jobs.api_errors(spark, static)),
        ("client_software", jobs.client_software(spark, static)),
        ("top_offenders", jobs.top_offenders(spark, static)),
    ):
        assert comparable(spark.read.parquet(str(out / table)).collect()) == comparable(batch.collect()), (
            table
        )
    assert (
        spark.read.parquet(str(out / "quota_summary")).count() == 12
    )  # day 1: 6 entity-quota pairs x 2 sizes
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "http-equiv='refresh'" not in page  # the last page, written after the stop
    for name in re.findall(r'<img src="([^"]+)"', page):
        png_size(out / name)
    assert "User:carol / admin-c" in page and "13" in page


# --------------------------------------------------------------------------- imports


def test_spark_modules_import_in_one_direction() -> None:
    """`spark.cli` knows the report and --follow; the report knows neither, --follow only
    the report's page. `spark` and `spark.schema` load without pyspark or matplotlib
    (the broker's sink imports the schema)."""
    import ast
    import subprocess
    import sys

    import spark

    root = Path(spark.__file__).parent

    def imported(module: str) -> set[str]:
        tree = ast.parse((root / f"{module}.py").read_text(encoding="utf-8"))
        names: set[str] = set()
        for node in ast.walk(tree):  # function-level imports too
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        return names

    assert not {"spark.follow", "spark.cli"} & imported("report")
    assert "spark.cli" not in imported("follow")
    assert {"spark.report", "spark.follow"} <= imported("cli")

    code = "import sys, spark, spark.schema; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'matplotlib')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout
