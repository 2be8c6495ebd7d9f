""" "Any Spark master", backed: a standalone Spark master and one worker on 127.0.0.1,
started from the installed pyspark's own `spark-class` launcher, run `kafka-mock-report`
and `kafka-mock-report what-if` (each in its own process, the driver there, executors in
the worker) and give the same tables as the same commands on local[2].

The master and the worker are this test's children, each in a process group of its own
(the worker's executors and their Python workers join it) that the fixture ends, and each
asked by the kernel to die with the process that started them (PR_SET_PDEATHSIG), so
none outlives the session even if it is killed."""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark.test_spark_jobs import write_dataset
from tests.spark.test_what_if import run_cli, write_traffic
from tests.spark_session import spark_fixture  # noqa: F401

pytestmark = pytest.mark.slow

REPORT_TABLES = (
    "quota_windows",
    "quota_summary",
    "api_errors",
    "api_latency",
    "client_software",
    "top_offenders",
)
WHAT_IF_TABLES = ("requests", "entities", "entity_windows")
PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def wait_for_line(log: Path, text: str, process: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise AssertionError(
                f"{log.name}: exited with {process.returncode}:\n{log.read_text(errors='replace')}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{log.name}: no {text!r} in {timeout:.0f} s:\n{log.read_text(errors='replace')}"
            )
        time.sleep(0.2)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group this test created for `process`, then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """spark://127.0.0.1:<port> with one worker (2 cores, 2 GiB); the environment to run
    a driver against it."""
    root = tmp_path_factory.mktemp("standalone")
    conf_dir = root / "conf"  # empty: no spark-defaults of the machine's
    conf_dir.mkdir()
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOG_DIR": str(root / "logs"),
        "PYSPARK_PYTHON": sys.executable,
    }
    env.pop("SPARK_HOME", None)  # spark-class finds its own
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    processes: list[subprocess.Popen[bytes]] = []

    def launch(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = root / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(spark_class()), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=root,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        processes.append(process)
        return process, log

    try:
        master, master_log = launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()),
        )  # fmt: skip
        wait_for_line(master_log, "I have been elected leader", master)
        worker, worker_log = launch(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
            "--cores", "2", "--memory", "2g", "--work-dir", str(root / "work"),
            master_url,
        )  # fmt: skip
        wait_for_line(worker_log, "Successfully registered with master", worker)
        yield master_url, env
    finally:
        for process in reversed(processes):
            stop(process)
    assert all(process.poll() is not None for process in processes)


def comparable(rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows as sortable tuples, None first; doubles rounded to 9 significant digits (sums
    of doubles depend on the order the partitions add up in)."""

    def value(v: Any) -> Any:
        if isinstance(v, float) and math.isfinite(v) and v != 0:
            return float(f"{v:.9g}")
        if isinstance(v, dict):
            return tuple(sorted(v.items()))
        if isinstance(v, list):
            return tuple(v)
        if isinstance(v, dt.datetime):
            return v.isoformat()
        return v

    return sorted(tuple((v is not None, value(v)) for v in r.asDict().values()) for r in rows)


def test_standalone_master_gives_the_tables_of_local(
    spark: Any, tmp_path: Path, standalone: tuple[str, dict[str, str]]
) -> None:
    master_url, env = standalone
    report_metrics = write_dataset(tmp_path / "report-metrics")
    what_if_metrics = write_traffic(tmp_path / "what-if-metrics")
    proposal = tmp_path / "proposal.json"
    proposal.write_text(
        json.dumps(
            [
                {"entity": {"user": "alice"}, "set": {"producer_byte_rate": 50_000}},
                {"entity": {"user": None}, "set": {"producer_byte_rate": 20_000, "request_percentage": 1}},
            ]
        )
    )
    report = ["--metrics", str(report_metrics), "--window", "1s,10s"]
    what_if = [
        "what-if",
        "--metrics",
        str(what_if_metrics),
        "--quotas",
        str(proposal),
        "--quota-window-num",
        "3",
    ]
    command = str(Path(sys.executable).parent / "kafka-mock-report")
    for name, argv in (("report", report), ("what-if", what_if)):
        out = tmp_path / f"{name}-cluster"
        done = subprocess.run(
            [command, *argv, "--out", str(out), "--master", master_url, "--conf", "spark.executor.memory=1g"],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stderr[-5000:]
        assert f"master {master_url}" in (out / "index.html").read_text(encoding="utf-8")
        run_cli([*argv, "--out", str(tmp_path / f"{name}-local")])  # the shared local[2] session

    assert spark.sparkContext.master == "local[2]"
    for name, tables in (("report", REPORT_TABLES), ("what-if", WHAT_IF_TABLES)):
        for table in tables:
            cluster = spark.read.parquet(str(tmp_path / f"{name}-cluster" / table))
            local = spark.read.parquet(str(tmp_path / f"{name}-local" / table))
            assert cluster.schema == local.schema, table
            cluster_rows, local_rows = comparable(cluster.collect()), comparable(local.collect())
            assert cluster_rows, table
            assert cluster_rows == local_rows, table
