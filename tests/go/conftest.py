"""Builds the Go clients (tests/go/cmd/goclients: franz-go, Sarama, kafka-go at the versions
tests/go/go.mod pins) once per session with `go build` into a temporary directory; modules
come from the Go module proxy into the default module cache. A missing Go toolchain fails
the tests that need it with one line: they are part of the suite, never skipped."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def go_clients(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not installed: the Go client tests need a Go toolchain (1.26+)", pytrace=False)
    binary = tmp_path_factory.mktemp("go") / "goclients"
    built = subprocess.run(
        [go, "build", "-mod=readonly", "-buildvcs=false", "-o", str(binary), "./cmd/goclients"],
        cwd=MODULE,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if built.returncode != 0:
        pytest.fail(
            f"go build failed in {MODULE}:\n{built.stdout[-4000:]}{built.stderr[-4000:]}", pytrace=False
        )
    return binary
