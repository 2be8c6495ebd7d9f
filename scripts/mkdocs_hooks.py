"""MkDocs hooks (mkdocs.yml `hooks:`) for the pages that include a file from the top of the
repository: docs/project/contributing.md is the line `--8<-- "CONTRIBUTING.md"`, and
changelog.md the same for CHANGELOG.md. Those files link as GitHub shows them, relative
to the repository root (`docs/explanation/differences.md`, `CHANGELOG.md`,
`broker/handlers/spec.py`), which is wrong from docs/project/. So the hook includes the
file itself (before pymdownx.snippets would) with each such link rewritten: a
documentation page to its path from docs/project/, an included file to its page, and any
other file of the repository to its address on the repository's site."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
INCLUDED = {"CONTRIBUTING.md": "contributing.md", "CHANGELOG.md": "changelog.md"}
PAGES_WITH_INCLUDES = {"project/contributing.md", "project/changelog.md"}
SNIPPET = re.compile(r'^--8<-- "([^"]+)"\s*$', re.M)
LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)\s#]+)(#[^)\s]*)?\)")


def rewrite_root_links(markdown: str, repo_url: str) -> str:
    """Links relative to the repository root, made right for a page in docs/project/."""

    def target(match: re.Match[str]) -> str:
        path, anchor = match.group(1), match.group(2) or ""
        if path in INCLUDED:
            return f"]({INCLUDED[path]}{anchor})"
        if path.startswith("docs/"):
            return f"](../{path.removeprefix('docs/')}{anchor})"
        if (ROOT / path).exists() and repo_url:
            return f"]({repo_url.rstrip('/')}/blob/main/{path}{anchor})"
        return match.group(0)

    return LINK.sub(target, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri not in PAGES_WITH_INCLUDES:
        return markdown
    repo_url = str(config.get("repo_url") or "")

    def include(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in INCLUDED:
            return match.group(0)
        return rewrite_root_links((ROOT / name).read_text(), repo_url)

    return SNIPPET.sub(include, markdown)
