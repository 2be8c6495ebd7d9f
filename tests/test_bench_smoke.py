"""Smoke run of scripts/bench_throughput: it completes and reports both ratios.

Timing is not asserted (shared CI machines are too noisy for that); the full run, with
its >= 0.5 target, is `.venv/bin/python scripts/bench_throughput`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_throughput"


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
