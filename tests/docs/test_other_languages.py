"""The other languages' examples run as their users would run them: the JUnit 5 project
(docs/examples/junit) with `mvn test`, the Go package (docs/examples/gotest) with `go
test`, each starting this environment's `kafka-mock-broker` (KAFKA_MOCK_BROKER) as a
subprocess. A missing JDK, Maven or Go fails them with one line: they are part of the
suite, never skipped."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
BROKER = Path(sys.executable).parent / "kafka-mock-broker"


def tool(name: str, needed_for: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: {needed_for}", pytrace=False)
    return found


def run(command: list[str], cwd: Path, timeout: float) -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, "KAFKA_MOCK_BROKER": str(BROKER)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode} in {cwd}:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    )
    return done.stdout


def test_junit5_example_passes() -> None:
    tool("java", "the JUnit 5 example (docs/examples/junit) needs a JDK (17+)")
    mvn = tool("mvn", "the JUnit 5 example (docs/examples/junit) needs Maven")
    project = EXAMPLES / "junit"
    reports = project / "target" / "surefire-reports"
    shutil.rmtree(reports, ignore_errors=True)
    run([mvn, "-q", "-B", "test"], project, timeout=900)
    suite = ET.parse(reports / "TEST-example.QuotaAndFaultTest.xml").getroot()
    counts = {key: int(suite.get(key, "-1")) for key in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": 3, "failures": 0, "errors": 0, "skipped": 0}
    passed = sorted(case.get("name", "") for case in suite.iter("testcase"))
    assert passed == [
        "faultIsRetriedByTheProducer",
        "faultReachesAProducerWithoutRetries",
        "producerOverItsQuotaIsThrottled",
    ]


def test_go_example_passes() -> None:
    go = tool("go", "the Go example (docs/examples/gotest) needs a Go toolchain (1.26+)")
    # -count=1: the broker is outside the module, so a cached result would prove nothing.
    out = run([go, "test", "-mod=readonly", "-count=1", "-v", "./..."], EXAMPLES / "gotest", timeout=900)
    passed = sorted(re.findall(r"^--- PASS: (\w+)", out, re.M))
    assert passed == [
        "TestFaultIsRetriedByTheProducer",
        "TestFaultReachesTheApplication",
        "TestProducerOverItsQuotaIsThrottled",
        "TestShutdownOverHTTP",
    ], out
    assert "--- SKIP" not in out and "throttled for up to" in out
