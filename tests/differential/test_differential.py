"""Every differential scenario against Apache Kafka 4.4 (tests/reference, started once per
family) and MockCluster: fails listing each unexplained difference with its request and
both answers. Needs java and mvn; without them it fails, never skips."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.differential.reference import ReferenceError, classpath
from tests.differential.runner import render, run
from tests.differential.scenarios import RESETS, all_scenarios

pytestmark = pytest.mark.slow


def test_every_difference_is_explained(tmp_path: Path) -> None:
    try:
        classpath()
    except ReferenceError as exc:
        pytest.fail(str(exc), pytrace=False)
    began = time.monotonic()
    report = run(all_scenarios(), resets=RESETS, out=lambda _line: None)
    elapsed = time.monotonic() - began
    # kept for scripts/conformance_page.py and for reading after a failure
    target = Path(os.environ.get("DIFFERENTIAL_REPORT", tmp_path / "differential.json"))
    target.write_text(json.dumps(report.to_json(), indent=1, sort_keys=True) + "\n")
    print(f"{report.summary()} in {elapsed:.0f} s; reference starts {report.start_seconds}")
    assert report.scenarios == len(all_scenarios())
    if report.unexplained:
        listing = "\n".join(render(d) for d in report.unexplained[:200])
        pytest.fail(f"{report.summary()}\n{listing}", pytrace=False)
