"""Smoke runs of the issue-20 target benchmarks (start-up, small requests, memory,
latency): each completes on tiny settings and prints its figures.

Timing is not asserted (shared CI machines are too noisy for that); the full runs and
their targets are in each script's docstring and in the README.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
NUMBER = r"[\d,]+\.?\d*"


def run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / script), *args],
        cwd=SCRIPTS.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_bench_startup_smoke() -> None:
    out = run("bench_startup.py", "--cycles", "5", "--runs", "1", "--imports", "5")
    assert re.search(rf"^\s+median\s+{NUMBER} ms\s+p95\s+{NUMBER} ms", out, re.MULTILINE), out
    for row in ("kafka-mock-broker ", "python -m broker", "kafka-mock-broker, no .pyc", "python -c pass"):
        assert re.search(rf"^\s+{re.escape(row)}.*median\s+{NUMBER} ms", out, re.MULTILINE), out
    assert re.search(rf"kafka-mock-broker / python -c pass: {NUMBER}", out), out
    assert "slowest imports" in out


@pytest.mark.slow
def test_bench_small_requests_smoke() -> None:
    out = run("bench_small_requests.py", "--seconds", "0.2", "--warmup", "0.1", "--depths", "10,100")
    for api in ("ApiVersions", "Metadata", "DescribeClientQuotas", "Heartbeat"):
        for depth in (10, 100):
            assert re.search(
                rf"^{api}\s+{depth}\s+\d+\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}", out, re.MULTILINE
            ), out
    assert re.search(rf"^lowest ratio {NUMBER}", out, re.MULTILINE), out


@pytest.mark.slow
def test_bench_memory_smoke() -> None:
    out = run(
        "bench_memory.py",
        *("--bytes", "20e6", "--topics", "1", "--partitions", "2"),
        *("--duration", "4", "--interval", "0.5", "--retention-bytes", "1048576"),
    )
    assert re.search(rf"RSS growth / log size: {NUMBER} \(target <= 1.1\)", out), out
    assert re.search(r"growth last/reference: [+-][\d.]+ %", out), out
    assert "RSS growth by mapping: heap" in out


@pytest.mark.slow
def test_bench_latency_smoke() -> None:
    out = run("bench_latency.py", "--rate", "2000", "--seconds", "1", "--warmup", "0.5", "--topics", "1")
    for side in ("this broker (subprocess)", "librdkafka mock cluster"):
        assert re.search(rf"^{re.escape(side)}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}", out, re.MULTILINE), out
    assert re.search(rf"^p99 this broker {NUMBER} ms", out, re.MULTILINE), out
