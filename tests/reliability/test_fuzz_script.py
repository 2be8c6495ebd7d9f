"""Smoke runs of scripts/fuzz.py (the long run is 1,000,000 inputs: see the README):
each engine completes a few thousand inputs with no finding, both healthy clients
served, and prints its figures (inputs/s, findings, RSS at start and end; not asserted)."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
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
    temp = tmp_path / "tmp"
    temp.mkdir()
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
        env={**os.environ, "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr[-5000:]}"
    assert f"engine: {engine}" in run.stdout
    assert re.search(
        r"^done: \d+ inputs in \d+ s \(\d+ inputs/s\), 0 findings, \d+ not sent \(protected\); RSS at start",
        run.stdout,
        re.M,
    )
    assert (
        len(re.findall(r"^healthy client on .*: (\d+) records sent, \1 acknowledged", run.stdout, re.M)) == 2
    )
    assert not (tmp_path / "findings").exists()
    assert not list(temp.iterdir())  # the run's directory (users file, atheris' corpus) is gone


def test_a_stopped_run_removes_its_directory(tmp_path: Path) -> None:
    """SIGTERM mid-run: the run's temporary directory goes with it (atheris ends with
    os._exit, so nothing else would remove it)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    with subprocess.Popen(
        [sys.executable, str(SCRIPT), "--engine", "mutate", "--findings", str(tmp_path / "findings")],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as run:
        assert run.stdout is not None
        for line in run.stdout:
            if line.startswith("fuzzing "):  # set up: the broker runs, the directory exists
                break
        assert list(temp.iterdir())
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=60) == 128 + signal.SIGTERM
    assert not list(temp.iterdir())
