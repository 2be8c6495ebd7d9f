"""scripts/bench_connections.py at CI scale: 200 real clients connected at once (100
aiokafka producers, 100 consumers) each producing or consuming its own topic; 10,000
plain connect/disconnect cycles (clean closes, resets, half-sent requests) run twice;
four clients pipelining without reading for 2 s. The script checks what matters (every
record consumed by its consumer, exactly and in order, the broker's file descriptors back
to the baseline, no RSS kept per cycle, RSS bounded against the clients that never read)
and exits 1 otherwise; the full run is `.venv/bin/python scripts/bench_connections.py`
(1,000 connections, 10 s of clients that never read)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_connections.py"


def test_bench_connections_at_ci_scale() -> None:
    run = subprocess.run(
        [
            *(sys.executable, str(SCRIPT), "--connections", "200", "--messages", "20", "--cycles", "10000"),
            *("--never-read", "4", "--never-read-s", "2"),
        ],
        cwd=SCRIPT.parent.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    out = run.stdout
    assert re.search(r"connected in [\d.]+ s: 200 broker sockets open", out), out
    assert re.search(r"after every client stopped: (\d+) fds \(baseline \1\)", out), out
    assert len(re.findall(r"run \d: [\d,]+ cycles/s; broker fds (\d+) -> \1,", out)) == 2, out
    assert re.search(r"4 connections pipelining without reading for 2 s", out), out
    assert "all checks passed" in out
