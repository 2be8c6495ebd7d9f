"""Smoke run of scripts/bench_features.py: it replays the same produce requests through
every configuration and reports each feature's cost (timing not asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_features.py"


def test_bench_features_smoke() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", "1", "--requests", "40", "--records", "5"],
        cwd=SCRIPT.parent.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    for label in (
        "quotas set (301 entities)",
        "metrics sink on",
        "StandardAuthorizer, 1,000 ACLs",
        "recording ring (256 entries)",
    ):
        assert re.search(rf"^{re.escape(label)} +\d+\.\d+", run.stdout, re.MULTILINE), run.stdout
