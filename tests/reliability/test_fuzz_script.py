"""Smoke runs of scripts/fuzz.py (the long run is 1,000,000 inputs: see the README):
each engine completes a few thousand inputs with no finding, both healthy clients
served, and prints its figures (inputs/s, findings, RSS at start and end; not asserted)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzz.py"
ENGINES = [
    "mutate",
    pytest.param(
        "atheris",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("atheris") is None, reason="atheris is not installed"
        ),
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_fuzz_script_smoke(engine: str, tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--engine",
            engine,
            "--inputs",
            "3000",
            "--warmup",
            "1000",
            "--report-every",
            "1000",
            "--findings",
            str(tmp_path / "findings"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr[-5000:]}"
    assert f"engine: {engine}" in run.stdout
    assert re.search(
        r"^done: \d+ inputs in \d+ s \(\d+ inputs/s\), 0 findings, \d+ not sent \(protected\); RSS at start", run.stdout, re.M
    )
    assert (
        len(re.findall(r"^healthy client on .*: (\d+) records sent, \1 acknowledged", run.stdout, re.M)) == 2
    )
    assert not (tmp_path / "findings").exists()
