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
import time
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


@pytest.mark.parametrize("engine", ENGINES)
def test_a_stopped_run_removes_its_directory(engine: str, tmp_path: Path) -> None:
    """SIGTERM mid-run: the run's temporary directory goes with it (atheris ends with
    os._exit, so nothing else would remove it; libFuzzer takes the signal over when it
    starts, and the script takes it back)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    out, err = tmp_path / "out.log", tmp_path / "err.log"
    with (
        out.open("w") as stdout,
        err.open("w") as stderr,
        subprocess.Popen(
            [sys.executable, str(SCRIPT), "--engine", engine, "--findings", str(tmp_path / "findings")],
            cwd=tmp_path,
            env={**os.environ, "TMPDIR": str(temp)},
            stdout=stdout,
            stderr=stderr,
        ) as run,
    ):
        # running: the broker set up (mutate), libFuzzer past its seed corpus (atheris)
        ready = re.compile(r"^#\d+\s+INITED" if engine == "atheris" else r"^fuzzing ", re.M)
        deadline = time.monotonic() + 300
        while not ready.search(out.read_text() + err.read_text()):
            assert run.poll() is None and time.monotonic() < deadline, err.read_text()[-3000:]
            time.sleep(0.2)
        assert list(temp.iterdir())
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=60) == 128 + signal.SIGTERM
    assert not list(temp.iterdir())
    assert not (tmp_path / "findings").exists()
