"""Smoke runs of the benchmark scripts: they complete and report their ratios.

Timing is not asserted (shared CI machines are too noisy for that); the full run, with
its >= 0.5 target, is `.venv/bin/python scripts/bench_throughput`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
SCRIPT = SCRIPTS / "bench_throughput"


@pytest.mark.slow
def test_bench_throughput_smoke() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--messages", "20000"],
        cwd=SCRIPT.parent.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    for phase in ("produce", "consume"):
        assert re.search(rf"^{phase} ratio ours/theirs: \d+\.\d+", run.stdout, re.MULTILINE), run.stdout
    assert "this broker (subprocess)" in run.stdout
    assert "librdkafka mock cluster" in run.stdout


@pytest.mark.slow
def test_bench_quota_admin_smoke() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_quota_admin"), "--requests", "50", "--sizes", "10,200"],
        cwd=SCRIPTS.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    for entities in (10, 200):
        for request in ("ApiVersions (reference)", "DescribeClientQuotas any", "AlterClientQuotas x100"):
            assert re.search(rf"^\s+{entities} {re.escape(request)}\s+\d+", run.stdout, re.MULTILINE), run.stdout
        assert re.search(rf"^resolution with\s+{entities} entities:\s+\d+ ns", run.stdout, re.MULTILINE), run.stdout
