"""Writes the reference pages of the documentation site from the code, so that they cannot
drift from it: the broker, topic and group config tables, the command lines (argparse),
the HTTP control plane (its routes and their handlers' docstrings), the Prometheus metric
families, the metrics Parquet schema and (through scripts/api_reference.py) the APIs.

    scripts/gen_reference.py          rewrite docs/reference/*.md
    scripts/gen_reference.py --check  exit 1 naming every page that differs from the code

tests/docs/test_reference.py runs the check; scripts/docs runs it before building the site.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
REFERENCE = ROOT / "docs" / "reference"
for _path in (str(ROOT), str(SCRIPTS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)
os.environ.setdefault("COLUMNS", "100")  # argparse help does not depend on the terminal

GENERATOR = "scripts/gen_reference.py"


def header(source: str) -> list[str]:
    return [
        f"<!-- Generated from {source} by {GENERATOR}: do not edit by hand; run {GENERATOR}. -->",
        "",
    ]


def cell(text: object) -> str:
    """Text for a Markdown table cell: pipes escaped, one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: str) -> str:
    """Inline code for a table cell (empty: an em dash)."""
    return f"`{cell(text)}`" if text != "" else "(empty)"


def table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


# -- broker configs ------------------------------------------------------------------


def render_broker_configs() -> str:
    from broker.config.broker_config import (
        DEFAULTS,
        LISTENER_PREFIX,
        LOG_DEFAULTS,
        MINIMUMS,
        PER_BROKER_ONLY,
        READ_ONLY_PREFIX,
        is_read_only,
    )

    lines = header("broker/config/broker_config.py")
    lines += [
        "# Broker configs",
        "",
        "The broker takes Apache Kafka's property names, from a `server.properties`-style file",
        "(`kafka-mock-broker --config FILE`), `--override key=value`, the `config` dict of",
        "`MockCluster` or the pytest marker, and at runtime from IncrementalAlterConfigs or",
        "AlterConfigs (`cluster.configs.alter(...)` in Python). Defaults are Apache Kafka's",
        "unless the meaning says otherwise. Keys the broker does not know are kept and passed",
        "to the quota callback's `configure()`.",
        "",
        "**Dynamic** says whether the key can change while the broker runs. Read-only keys",
        "(listeners, ids, directories, quota windows, TLS files, the authorizer, the group",
        "coordinator's) are refused with Kafka's message; every `"
        + READ_ONLY_PREFIX
        + "*` key is read-only.",
        f"`ssl.*` and `sasl.*` keys can be set per listener as `{LISTENER_PREFIX}<name>.<key>`,",
        "as in Kafka, and so can `max.connections`"
        + (
            "; "
            + ", ".join(f"`{key}`" for key in sorted(PER_BROKER_ONLY))
            + " only per broker, not cluster-wide."
            if PER_BROKER_ONLY
            else "."
        ),
        "",
    ]
    rows = []
    for name, (default, type_, doc) in DEFAULTS.items():
        minimum = f" (at least {MINIMUMS[name]})" if name in MINIMUMS else ""
        rows.append(
            [
                f"`{name}`",
                code(default),
                type_,
                "no" if is_read_only(name) else "yes",
                cell(doc) + minimum,
            ]
        )
    lines += table(["Name", "Default", "Type", "Dynamic", "Meaning"], rows)
    lines += [
        "",
        "## Broker defaults of topic configs",
        "",
        "These keys set the broker-wide default of a topic config (see",
        "[Topic and group configs](topic-configs.md)); a topic's own config wins. Unset, the",
        "topic config's default applies; without any `log.retention.*` key, time retention is",
        "off (Kafka's default is 7 days).",
        "",
    ]
    rows = [
        [f"`{name}`", cell(default), type_, "yes", cell(doc)]
        for name, (default, type_, doc) in LOG_DEFAULTS.items()
    ]
    lines += table(["Name", "When unset", "Type", "Dynamic", "Meaning"], rows)
    return "\n".join(lines) + "\n"


# -- topic and group configs ---------------------------------------------------------


def _topic_validation(name: str) -> str:
    from broker.config import topic_configs

    ranges = cast(dict[str, tuple[int | None, int | None]], topic_configs._RANGES)
    choices = cast(dict[str, tuple[str, ...]], topic_configs._CHOICES)
    list_choices = cast(dict[str, tuple[str, ...]], topic_configs._LIST_CHOICES)
    parts = []
    if name in ranges:
        low, high = ranges[name]
        if low is not None and high is not None:
            parts.append(f"{low} to {high}")
        elif low is not None:
            parts.append(f"at least {low}")
        elif high is not None:
            parts.append(f"at most {high}")
    if name in choices:
        parts.append("one of " + ", ".join(choices[name]))
    if name in list_choices:
        parts.append("a list of distinct " + ", ".join(list_choices[name]) + " (may be empty)")
    if name in cast(frozenset[str], topic_configs._THROTTLED_REPLICAS):
        parts.append("`*` or `partition:broker,...`")
    if name == "compression.gzip.level":
        parts.append("1 to 9, or -1")
    return "; ".join(parts)


def applied_topic_configs() -> set[str]:
    """The topic configs the broker acts on: those its code names outside the table."""
    from broker.config.topic_configs import TOPIC_CONFIGS

    texts = [
        path.read_text()
        for path in sorted((ROOT / "broker").rglob("*.py"))
        if path.relative_to(ROOT).as_posix() != "broker/config/topic_configs.py"
    ]
    return {name for name in TOPIC_CONFIGS if any(f'"{name}"' in text for text in texts)}


def render_topic_configs() -> str:
    from broker.config.broker_config import DEFAULTS, LOG_DEFAULTS
    from broker.config.group_configs import GROUP_CONFIGS
    from broker.config.topic_configs import TOPIC_CONFIGS

    lines = header("broker/config/topic_configs.py and broker/config/group_configs.py")
    lines += [
        "# Topic and group configs",
        "",
        "## Topic configs",
        "",
        "Set with CreateTopics, IncrementalAlterConfigs or AlterConfigs on a TOPIC resource,",
        "validated as Apache Kafka's LogConfig validates them (its messages, INVALID_CONFIG),",
        "and reported by DescribeConfigs with their source and synonyms. A topic without its own",
        "value takes the **broker synonym**'s, else the default. **Applied** says whether the",
        "broker acts on the config (retention, compaction, timestamps, batch size, in-sync",
        "replicas); the others are accepted, validated and reported only.",
        "",
    ]
    broker_keys = set(DEFAULTS) | set(LOG_DEFAULTS)
    applied = applied_topic_configs()
    rows = []
    for config in TOPIC_CONFIGS.values():
        synonym = config.broker_synonym or ""
        if synonym in broker_keys:
            synonym = f"[`{synonym}`](broker-configs.md)"
        elif synonym:
            synonym = f"`{synonym}` (reported only)"
        rows.append(
            [
                f"`{config.name}`",
                code(config.default),
                config.type,
                "yes" if config.name in applied else "no",
                synonym,
                cell(_topic_validation(config.name)),
                cell(config.documentation),
            ]
        )
    lines += table(["Name", "Default", "Type", "Applied", "Broker synonym", "Valid values", "Meaning"], rows)
    lines += [
        "",
        "## Group configs",
        "",
        "A consumer group's own settings (KIP-848's GROUP config resource), set with",
        "IncrementalAlterConfigs. A group without its own value uses the broker config named",
        "here. Values must be integers of at least 1, within the broker's",
        "`group.consumer.min.*`/`group.consumer.max.*` bounds, and the session timeout must",
        "exceed the heartbeat interval.",
        "",
    ]
    rows = [
        [
            f"`{config.name}`",
            f"[`{config.broker_default}`](broker-configs.md)" if config.broker_default else "",
            code(DEFAULTS[config.broker_default][0] if config.broker_default else config.default),
            cell(config.documentation),
        ]
        for config in GROUP_CONFIGS.values()
    ]
    lines += table(["Name", "Broker default", "Its default", "Meaning"], rows)
    return "\n".join(lines) + "\n"


# -- command lines -------------------------------------------------------------------


def _metavar(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices is not None:
        return "{" + ",".join(str(choice) for choice in action.choices) + "}"
    if action.metavar is not None:
        return str(action.metavar) if isinstance(action.metavar, str) else " ".join(action.metavar)
    return action.dest.upper()


def _option(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) if action.option_strings else action.dest
    metavar = _metavar(action)
    return f"`{names}{' ' + metavar if metavar else ''}`"


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0 or action.default in (None, [], argparse.SUPPRESS):
        return ""
    return f"`{action.default}`"


def _repeatable(action: argparse.Action) -> bool:
    return type(action).__name__ in ("_AppendAction", "_AppendConstAction")


def _description(parser: argparse.ArgumentParser) -> str:
    """The parser's description without a leading "`prog`: "."""
    return re.sub(r"^`[\w-]+`: ", "", (parser.description or "").strip())


def render_parser(parser: argparse.ArgumentParser, level: str = "##") -> list[str]:
    lines = [f"{level} {parser.prog}", ""]
    if parser.description:
        lines += [_description(parser), ""]
    exclusive = [group for group in parser._mutually_exclusive_groups if group.required]
    for exclusive_group in exclusive:
        names = ", ".join(f"`{a.option_strings[0]}`" for a in exclusive_group._group_actions)
        lines += [f"Exactly one of {names}.", ""]
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if not isinstance(a, argparse._HelpAction)]
        if not actions:
            continue
        title = group.title or "options"
        if group not in (parser._optionals, parser._positionals):
            lines += [f"**{title[0].upper()}{title[1:]}**", ""]
        rows = []
        for action in actions:
            text = cell(action.help or "")
            if _repeatable(action) and "repeat" not in text:
                text = f"{text} (repeatable)" if text else "(repeatable)"
            rows.append([_option(action), _default(action), text])
        lines += table(["Option", "Default", "Meaning"], rows)
        lines.append("")
    if parser.epilog:
        epilog = parser.epilog % {"prog": parser.prog} if "%(prog)" in parser.epilog else parser.epilog
        lines += ["```", epilog.strip("\n"), "```", ""]
    return lines


def _cli_parsers() -> list[tuple[str, str, list[argparse.ArgumentParser]]]:
    from broker import cli
    from broker.tools import acls, client_quotas
    from spark import cli as spark_cli

    return [
        ("kafka-mock-broker", "broker.cli", [cli.build_parser()]),
        ("kafka-client-quotas", "broker.tools.client_quotas", [client_quotas.build_parser()]),
        ("kafka-acls", "broker.tools.acls", [acls.build_parser()]),
        (
            "kafka-mock-report",
            "spark.cli",
            [spark_cli.build_parser(), spark_cli.build_what_if_parser()],
        ),
    ]


def render_cli() -> str:
    lines = header("the console scripts' argparse parsers")
    lines += [
        "# Command line",
        "",
        "The console scripts the package installs (`python -m broker` is `kafka-mock-broker`).",
        "The tools exit 0 on success, 1 when the broker refuses or cannot be reached, 2 on",
        "a usage error. `kafka-mock-report` needs the `spark` extra.",
        "",
    ]
    lines += table(
        ["Command", "Module", "What it does"],
        [
            [f"[`{name}`](#{name})", f"`{module}`", cell(_description(parsers[0]))]
            for name, module, parsers in _cli_parsers()
        ],
    )
    lines.append("")
    for _, _, parsers in _cli_parsers():
        main, *subcommands = parsers
        lines += render_parser(main)
        for sub in subcommands:
            lines += render_parser(sub, "###")
    return "\n".join(lines).rstrip("\n") + "\n"


# -- HTTP control plane --------------------------------------------------------------

SECTIONS = ("Path", "Query", "Body", "Answer", "Example")


def parse_route_doc(doc: str) -> dict[str, str]:
    """A handler docstring as its summary ("") and its sections (Path, Query, Body,
    Answer, Example), each the dedented text under its heading."""
    text = inspect.cleandoc(doc)
    found: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        heading = line.rstrip(":")
        if line.endswith(":") and heading in SECTIONS:
            current = heading
            found[current] = []
        else:
            found[current].append(line[4:] if current and line.startswith("    ") else line)
    return {name: "\n".join(body).strip() for name, body in found.items()}


def _fields(text: str) -> list[tuple[str, str]]:
    """`name: meaning` lines (a meaning may continue on indented lines)."""
    fields: list[tuple[str, str]] = []
    for line in text.splitlines():
        if line.startswith(" ") and fields:
            fields[-1] = (fields[-1][0], fields[-1][1] + " " + line.strip())
            continue
        name, sep, meaning = line.partition(":")
        if not sep:
            raise ValueError(f"expected `name: meaning`, got {line!r}")
        fields.append((name.strip(), meaning.strip()))
    return fields


def examples(text: str) -> list[tuple[str, str, str | None]]:
    """The Example section's `METHOD /path[?query] [JSON body]` lines."""
    found = []
    for line in text.splitlines():
        method, _, rest = line.strip().partition(" ")
        target, _, body = rest.partition(" ")
        found.append((method, target, body or None))
    return found


def curl(method: str, target: str, body: str | None) -> str:
    url = f'"$A{target}"' if urlsplit(target).query else f"$A{target}"
    command = "curl -s" + ("" if method == "GET" else f" -X {method}")
    return f"{command} {url}" + (f" -d '{body}'" if body else "")


def routes() -> list[tuple[str, str, str, dict[str, str]]]:
    """(method, path, handler name, its parsed docstring) of every route the control
    plane registers, in registration order (HEAD, which aiohttp adds to GET, left out)."""
    from broker.harness.admin_http import AdminServer

    server = AdminServer(cast(Any, None))
    found = []
    for route in server.app.router.routes():
        if route.method == "HEAD":
            continue
        handler = cast(Callable[..., Any], route.handler)
        path = route.resource.canonical if route.resource is not None else ""
        found.append((route.method, path, handler.__name__, parse_route_doc(handler.__doc__ or "")))
    return found


def _anchor(method: str, path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", f"{method} {path}".lower()).strip("-")


def render_http_api() -> str:
    lines = header("broker/harness/admin_http.py (its routes and handler docstrings)")
    lines += [
        "# HTTP control plane",
        "",
        "`kafka-mock-broker --admin-port PORT` (config `admin.port`; `0` picks a free port, which",
        "the start-up log names and `cluster.admin.port` holds) serves JSON over HTTP on",
        "127.0.0.1, so that test suites in any language can drive the broker. The handlers run",
        "on the cluster's event loop and use the same code paths as the Python API. It needs the",
        "`http` extra.",
        "",
        "```",
        "kafka-mock-broker --brokers 3 --admin-port 8080 &",
        "A=http://127.0.0.1:8080",
        "```",
        "",
        "Bodies are JSON objects; an unknown field or query parameter is refused, so that a typo",
        "is never an ignored option. Errors come back as JSON:",
        "",
        '- malformed or mistyped input: `400 {"error": "BAD_REQUEST", "message": ...}`;',
        '- Kafka\'s refusals: `{"error_code": 42, "error": "INVALID_REQUEST", "message": ...}`, with',
        "  status 400, or 404 for an unknown broker, topic or partition;",
        "- unknown routes and methods: 404 and 405.",
        "",
        "In JSON bodies `null` names the default quota entity; in query strings `<default>` does",
        "(URL-encoded `%3Cdefault%3E`), and `<any>` matches any name.",
        "",
    ]
    found = routes()
    lines += table(
        ["Method", "Path", "What it does"],
        [
            [method, f"[`{path}`](#{_anchor(method, path)})", cell(doc[""].split(". ")[0].rstrip("."))]
            for method, path, _, doc in found
        ],
    )
    for method, path, _, doc in found:
        lines += ["", f"## {method} {path} {{#{_anchor(method, path)}}}", "", doc[""]]
        for section, title in (("Path", "Path parameter"), ("Query", "Query parameter"), ("Body", "Field")):
            if section in doc:
                lines += [""] + table(
                    [title, "Meaning"], [[f"`{n}`", cell(m)] for n, m in _fields(doc[section])]
                )
        if "Answer" in doc:
            lines += ["", "**Answer**: " + " ".join(doc["Answer"].split())]
        if "Example" in doc:
            lines += ["", "```", *(curl(*example) for example in examples(doc["Example"])), "```"]
    return "\n".join(lines) + "\n"


# -- Prometheus ----------------------------------------------------------------------


def render_prometheus_metrics() -> str:
    from broker.harness.admin_http import METRIC_FAMILIES

    lines = header("broker/harness/admin_http.py (METRIC_FAMILIES)")
    lines += [
        "# Prometheus metrics",
        "",
        "`GET /metrics` on the [HTTP control plane](http-api.md) answers in Prometheus's text",
        "format. Kafka's quota metrics are named as the JMX exporter names Kafka's MBeans",
        "(`kafka.server:type=Produce,user=...,client-id=...` `byte-rate` is",
        '`kafka_server_quota_byte_rate{quota_type="Produce",user="...",client_id="..."}`); the',
        "quota labels are the quota callback's metric tags (`user` and `client_id` with Kafka's",
        "default callback; a custom callback's own tags appear as labels, prefixed `tag_` when",
        "they collide with `broker` or `quota_type`). `broker` is the node id. Counters carry",
        "Prometheus's `_total` suffix. Quota gauges exist once a request was measured under",
        "those tags; the metrics sink's only with `metrics.dir` set.",
        "",
    ]
    lines += table(
        ["Name", "Type", "Labels", "Meaning"],
        [
            [
                f"`{name}{'_total' if type_ == 'counter' else ''}`",
                type_,
                ", ".join(f"`{label}`" for label in labels),
                cell(help_text),
            ]
            for name, type_, labels, help_text in METRIC_FAMILIES
        ],
    )
    return "\n".join(lines) + "\n"


# -- Parquet schema ------------------------------------------------------------------


def render_parquet_schema() -> str:
    import pyarrow as pa

    from spark import schema

    arrow_types = cast(dict[str, Callable[[Any], Any]], schema._ARROW_TYPES)

    def rows(columns: tuple[schema.Column, ...]) -> list[list[str]]:
        return [
            [
                f"`{column.name}`",
                f"`{arrow_types[column.kind](pa)}`",
                schema.SPARK_TYPES[column.kind],
                "yes" if column.nullable else "no",
                cell(column.doc),
            ]
            for column in columns
        ]

    head = ["Column", "Arrow type", "Spark type", "Nullable", "Meaning"]
    lines = header("spark/schema.py")
    lines += [
        "# Parquet schema",
        "",
        "With `metrics.dir` set (`--metrics-dir DIR`; the `metrics` extra), the broker writes",
        "one Parquet row per answered request under DIR, in folders",
        "`broker=<id>/date=<yyyy-mm-dd>/`, and the Spark report and what-if read them.",
        "`spark/schema.py` is the one definition both sides build their schemas from.",
        f"Every file carries the schema version ({schema.SCHEMA_VERSION}) in its Parquet",
        f"metadata under `{schema.SCHEMA_VERSION_KEY.decode()}`. Column names are fixed: tools",
        "rely on them.",
        "",
        "## Requests",
        "",
    ]
    lines += table(head, rows(schema.COLUMNS))
    lines += [
        "",
        "## Client metrics",
        "",
        f"KIP-714 pushes (with `telemetry.enabled=true`), under `{schema.CLIENT_METRICS_DIR}/` of",
        "the same directory: one row per data point a client pushed.",
        "",
    ]
    lines += table(head, rows(schema.CLIENT_METRICS_COLUMNS))
    return "\n".join(lines) + "\n"


# -- APIs ----------------------------------------------------------------------------


def render_apis() -> str:
    import api_reference  # scripts/api_reference.py

    return cast(str, api_reference.render_api_reference())


# -- main ----------------------------------------------------------------------------


def pages() -> dict[str, Callable[[], str]]:
    """The generated pages (file name in docs/reference/ -> renderer)."""
    found: dict[str, Callable[[], str]] = {
        "broker-configs.md": render_broker_configs,
        "topic-configs.md": render_topic_configs,
        "cli.md": render_cli,
        "http-api.md": render_http_api,
        "prometheus-metrics.md": render_prometheus_metrics,
        "parquet-schema.md": render_parquet_schema,
        "apis.md": render_apis,
    }
    return found


def stale_pages() -> list[str]:
    """The generated pages whose file differs from what the code renders now."""
    stale = []
    for name, render in pages().items():
        path = REFERENCE / name
        if not path.exists() or path.read_text() != render():
            stale.append(f"docs/reference/{name}")
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the code instead of writing")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for page in stale:
            print(f"{page} does not match the code: run {GENERATOR}", file=sys.stderr)
        return 1 if stale else 0
    REFERENCE.mkdir(parents=True, exist_ok=True)
    for name, render in pages().items():
        path = REFERENCE / name
        text = render()
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote docs/reference/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
