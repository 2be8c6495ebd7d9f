"""Smoke runs of the benchmark scripts: they complete and report their ratios.

Timing is not asserted (shared CI machines are too noisy for that); the full runs, with
their targets, are `.venv/bin/python scripts/bench_throughput.py` (>= 0.5 against
librdkafka's mock, >= 0.95 with quotas set) and `.venv/bin/python
scripts/bench_quota_accuracy.py` (|observed / quota - 1| <= 0.03).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
SCRIPT = SCRIPTS / "bench_throughput.py"


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
    for phase in ("produce", "consume"):
        assert re.search(rf"^{phase} ratio quotas/no quotas: \d+\.\d+", run.stdout, re.MULTILINE), run.stdout
    assert "this broker (subprocess)" in run.stdout
    assert "this broker, quotas set" in run.stdout
    assert "librdkafka mock cluster" in run.stdout


@pytest.mark.slow
def test_bench_quota_admin_smoke() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_quota_admin.py"), "--requests", "50", "--sizes", "10,200"],
        cwd=SCRIPTS.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    for entities in (10, 200):
        for request in ("ApiVersions (reference)", "DescribeClientQuotas any", "AlterClientQuotas x100"):
            assert re.search(rf"^\s+{entities} {re.escape(request)}\s+\d+", run.stdout, re.MULTILINE), (
                run.stdout
            )
        assert re.search(rf"^resolution with\s+{entities} entities:\s+\d+ ns", run.stdout, re.MULTILINE), (
            run.stdout
        )


@pytest.mark.slow
def test_bench_quota_accuracy_smoke() -> None:
    run = subprocess.run(
        [
            sys.executable,
            str(SCRIPTS / "bench_quota_accuracy.py"),
            *("--seconds", "2", "--warmup", "1", "--reference-seconds", "1"),
            *("--quotas", "1", "--prefill-mib", "4", "--timeline"),
        ],
        cwd=SCRIPTS.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    rate = r"\d+\.\d+"
    for client in ("confluent", "kafka-python"):
        for direction in ("produce", "consume"):
            assert re.search(
                rf"^  {client} {direction} reference: {rate} MiB/s Kafka-counted, {rate} MiB/s payload",
                run.stdout,
                re.MULTILINE,
            ), run.stdout
            # The final table: reference, payload, Kafka-counted rate, then the ratio.
            assert re.search(
                rf"^{client}\s+{direction}\s+1 MiB/s\s+{rate}\s+{rate}\s+{rate}\s+({rate}|n/a)\s",
                run.stdout,
                re.MULTILINE,
            ), run.stdout
    # What the broker counted against the quotas is what confluent-kafka's own statistics
    # say went over the wire, in Kafka's units (bytes, not timing: exact enough to assert).
    checks = re.findall(r"wire/broker (\d+\.\d+)", run.stdout)
    assert len(checks) == 2, run.stdout
    assert all(abs(float(check) - 1) < 0.01 for check in checks), run.stdout
