"""Crash safety at CI scale: `scripts/crash_rounds.py` with a dozen rounds and a fixed seed.

Each round SIGKILLs a `python -m broker --state-dir DIR` child at a random moment while
nine clients (kafka-python, confluent-kafka and a raw pipelining socket) change client
quotas, SCRAM credentials, dynamic broker configs and ACLs, several entries, users,
keys or bindings per request; some rounds kill it during start-up instead. After each
kill the state dir must open, hold every acknowledged change and hold each request in
flight at the kill entirely or not at all. The 100-round run is the script's default.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "crash_rounds.py"
ROUNDS = 12


def figure(output: str, label: str) -> int:
    match = re.search(rf"^{label}: (\d+)", output, re.MULTILINE)
    assert match, f"no {label!r} line in:\n{output}"
    return int(match.group(1))


@pytest.mark.slow
def test_kill_9_rounds_leave_every_acknowledged_change_and_no_half_request() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", str(ROUNDS), "--seed", "22", "--startup-kills", "0.15"],
        cwd=SCRIPT.parents[1],
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(run.stdout)  # the per-round figures, with pytest -s
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert figure(run.stdout, "violations") == 0
    assert figure(run.stdout, "rounds") == ROUNDS
    # The run proves something: every store was changed and acknowledged, and requests
    # were in flight at the kills (the ones that could have been half-applied).
    acknowledged = re.search(r"^acknowledged requests: \d+ \((.*)\)$", run.stdout, re.MULTILINE)
    assert acknowledged, run.stdout
    per_store = dict(item.split() for item in acknowledged.group(1).split(", "))
    assert set(per_store) == {"quotas", "scram", "configs", "acls"}
    assert all(int(count) > 0 for count in per_store.values()), per_store
    in_flight = re.search(
        r"^in flight at the kill: (\d+) \(found applied: (\d+), found not applied: (\d+)\)",
        run.stdout,
        re.MULTILINE,
    )
    assert in_flight, run.stdout
    assert int(in_flight.group(1)) > 0
