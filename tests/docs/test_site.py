"""The documentation site's structure and the rules its text keeps: every page of the nav
exists, the README stays short and its links lead to pages that exist, and no document
carries development history (issue numbers, "rounds", commit hashes), which belongs in
CHANGELOG.md and the git log. scripts/docs builds the site itself, strictly."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX_LINES = 250
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")

# What development history looks like in prose. Each pattern says what it caught.
HISTORY = [
    (re.compile(r"\bissues?\s+#?\d+", re.I), "an issue reference"),
    (re.compile(r"(?<![\w&/#])#\d+\b"), "an issue reference"),
    (
        re.compile(r"(?<![-_])\brounds?\b(?![-\s](?:trips?|robin)\b)(?!\()", re.I),
        'a development "round" (round trip, round-robin and round() are fine)',
    ),
    (
        re.compile(r"(?<![\w.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])"),
        "a commit hash",
    ),
]


def nav_pages(nav: Any) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def test_every_page_of_the_nav_exists() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = list(nav_pages(config["nav"]))
    assert len(pages) >= 25, "the nav of mkdocs.yml was not read"
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing, f"pages in the nav of mkdocs.yml that docs/ lacks: {missing}"


def test_the_readme_is_short() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines, at most {README_MAX_LINES}: move the detail into docs/"
    )


def test_the_readme_links_lead_to_pages_that_exist() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    in_nav = {f"docs/{page}" for page in nav_pages(config["nav"])}
    broken = []
    targets = [t for t in LINK.findall(README.read_text()) if "://" not in t and not t.startswith("#")]
    assert any(t.startswith("docs/") for t in targets), "README.md links into no docs page"
    for target in targets:
        path = target.split("#", 1)[0]
        if not (ROOT / path).exists():
            broken.append(f"{target} (no such file)")
        elif path.startswith("docs/") and path.endswith(".md") and path not in in_nav:
            broken.append(f"{target} (not in the site's nav)")
    assert not broken, f"README.md links that lead nowhere: {broken}"


def documents() -> list[Path]:
    found = [README, README.parent / "CONTRIBUTING.md"] + sorted(p for p in DOCS.rglob("*") if p.is_file())
    return [
        p for p in found if p.suffix in (".md", ".py", ".sh", ".txt", ".json", ".yml", ".yaml", ".properties")
    ]


def history_in(text: str) -> list[tuple[int, str, str]]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, what in HISTORY:
            match = pattern.search(line)
            if match:
                found.append((number, match.group(0), what))
    return found


def test_the_history_scan_catches_what_it_should() -> None:
    assert history_in("as issue 20 asked") and history_in("see #20") and history_in("the third round")
    assert history_in("measured at 0c63abb") and history_in("baseline 6746876e")
    assert not history_in("a round trip, round-robin, round(x, 2), 1048576 bytes, key 48 (#produce)")
    assert not history_in("scripts/crash_rounds.py --rounds 20, round trips, the URL issues/5511")
    assert not history_in("topic id 3f2a9c1e-0b7d-4c55-9a8e-1d2c3b4a5f60")


def test_no_document_carries_development_history() -> None:
    """History goes to CHANGELOG.md (exempt) and the git log, not into the docs."""
    found = []
    for path in documents():
        for number, text, what in history_in(path.read_text(errors="replace")):
            found.append(f"{path.relative_to(ROOT)}:{number}: {text!r} looks like {what}")
    assert not found, "development history in the documentation:\n" + "\n".join(found)


def test_the_clients_table_names_the_pinned_versions() -> None:
    """README's "Tested with" table says the versions constraints.txt, the pom and go.mod pin."""
    from tests.docs.test_clients_page import PINNED, pins

    pinned = pins()
    table = README.read_text().split("## Tested with", 1)[1].split("\n## ", 1)[0]
    named = set()
    for row in table.splitlines()[2:]:
        if not row.startswith("| ") or row.startswith("| Client") or row.startswith("|---"):
            continue
        client, version = (cell.strip() for cell in row.strip("|").split("|")[:2])
        name = client.split(": ", 1)[-1].split(" (")[0]
        if name == "kcat":
            continue
        named.add(name)
        key = name if ":" in name or "/" in name else name.lower()
        assert version.startswith(pinned[key]), (row, pinned[key])
    assert PINNED - {"github.com/twmb/franz-go/pkg/kadm"} <= named, sorted(PINNED - named)
