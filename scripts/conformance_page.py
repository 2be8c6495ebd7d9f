"""Writes the per-API table of docs/explanation/conformance.md from a differential report
(`scripts/differential --json report.json`, then `python scripts/conformance_page.py
report.json`). tests/differential/test_inventory.py checks the table's "steps" column
against the scenario inventory, so a new scenario needs a new run and a new table."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "explanation" / "conformance.md"
BEGIN = "<!-- table: scripts/conformance_page.py -->"
END = "<!-- end of table -->"


def table(report: dict[str, Any]) -> str:
    run: Counter[str] = Counter()
    identical: Counter[str] = Counter()
    for step in report["steps"]:
        run[step["api"]] += 1
        identical[step["api"]] += step["differences"] == 0
    explained: dict[str, set[str]] = {}
    for difference in report["differences"]:
        if difference["anchor"]:
            explained.setdefault(difference["api"], set()).add(difference["anchor"])
    lines = [
        f"Reference: Apache Kafka {report['reference']}; {report['scenarios']} scenarios.",
        "",
        "| API | steps | identical | different | explained by |",
        "|---|---:|---:|---:|---|",
    ]
    for api in sorted(run):
        anchors = ", ".join(f"[{a}](differences.md#{a})" for a in sorted(explained.get(api, ())))
        lines.append(f"| {api} | {run[api]} | {identical[api]} | {run[api] - identical[api]} | {anchors} |")
    total = sum(run.values())
    same = sum(identical.values())
    lines.append(f"| **all** | {total} | {same} | {total - same} | |")
    return "\n".join(lines)


def main() -> int:
    report = json.loads(Path(sys.argv[1]).read_text())
    if report["differences"] and any(not d["anchor"] for d in report["differences"]):
        print("conformance_page: the report has unexplained differences", file=sys.stderr)
        return 1
    page = PAGE.read_text()
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    PAGE.write_text(f"{head}{BEGIN}\n{table(report)}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
