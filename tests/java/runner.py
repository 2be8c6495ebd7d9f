"""Runs a class of the Java test project (tests/java/src/main/java/mockbroker) and returns
the one line of JSON it prints last."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def run_java(
    classpath: str, *args: str, main: str = "mockbroker.JavaClients", timeout: float = 300
) -> dict[str, Any]:
    done = subprocess.run(
        ["java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp", classpath, main, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
