"""Builds the Java clients (tests/java/pom.xml, org.apache.kafka:kafka-clients) once per
session with Maven. A missing JDK or Maven fails the tests that need them with one line:
they are part of the suite, never skipped."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def java_classpath() -> str:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.fail(
                f"{tool} is not installed: the Java client tests need a JDK (17+) and Maven", pytrace=False
            )
    built = subprocess.run(
        ["mvn", "-q", "-B", "package"], cwd=PROJECT, capture_output=True, text=True, timeout=900
    )
    if built.returncode != 0:
        pytest.fail(
            f"mvn package failed in {PROJECT}:\n{built.stdout[-4000:]}{built.stderr[-4000:]}", pytrace=False
        )
    return f"{PROJECT / 'target' / 'classes'}:{PROJECT / 'target' / 'lib' / '*'}"
