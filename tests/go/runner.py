"""Runs a mode of the Go test program (tests/go/cmd/goclients) and returns the one line of
JSON it prints last."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


def run_go(binary: Path, mode: str, bootstrap: str, *args: str, timeout: float = 180) -> dict[str, Any]:
    done = subprocess.run(
        [str(binary), mode, bootstrap, *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
