"""The generated reference (docs/reference/) says what the code does: each page is what
scripts/gen_reference.py renders now, every config the broker reads is in a config table
with a meaning, every route of the HTTP control plane is documented with an example that
a running broker accepts, and every family /metrics exposes is in the metric table."""

from __future__ import annotations

import ast
import json
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kafka import KafkaProducer

from broker import MockCluster
from broker.config.broker_config import DEFAULTS, LOG_DEFAULTS
from broker.config.dynamic import _LOG_KEYS
from broker.config.group_configs import GROUP_CONFIGS
from broker.config.topic_configs import TOPIC_CONFIGS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import gen_reference  # noqa: E402  (scripts/gen_reference.py)

# Calls that read a broker config by name: config.get_int("num.partitions"), ...
READERS = {"get", "get_int", "get_bool", "get_str", "explicitly_set", "for_listener"}
CONFIG_NAME = re.compile(r"[a-z][a-z0-9]*(\.[a-z0-9]+)+")
# Not broker configs: client settings the console tools pass to kafka-python.
NOT_BROKER = ("broker/tools/",)


def test_the_generated_pages_match_the_code() -> None:
    stale = gen_reference.stale_pages()
    assert not stale, f"{', '.join(stale)} differ from the code: run scripts/gen_reference.py and commit them"


def configs_read_by_the_code() -> dict[str, set[str]]:
    """Config names passed as string literals to a config getter anywhere in broker/."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "broker").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if where.startswith(NOT_BROKER):
            continue
        for node in ast.walk(ast.parse(path.read_text(), where)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in READERS:
                continue
            for arg in node.args[:2]:
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and CONFIG_NAME.fullmatch(arg.value)
                ):
                    found.setdefault(arg.value, set()).add(f"{where}:{node.lineno}")
    return found


def test_every_config_the_broker_reads_is_in_a_config_table() -> None:
    documented = set(DEFAULTS) | set(LOG_DEFAULTS) | set(TOPIC_CONFIGS) | set(GROUP_CONFIGS)
    read = configs_read_by_the_code()
    assert len(read) > 50, "the scan found too few config reads: has the getter API changed?"
    missing = {name: sorted(where) for name, where in read.items() if name not in documented}
    assert not missing, (
        "configs read by the code but missing from broker/config/broker_config.py DEFAULTS (or"
        f" LOG_DEFAULTS): {missing}"
    )


def test_the_broker_keys_behind_topic_configs_are_documented() -> None:
    """The log.* keys whose values the logs follow (dynamic._LOG_KEYS) and every broker
    synonym the code reads are in DEFAULTS or LOG_DEFAULTS."""
    documented = set(DEFAULTS) | set(LOG_DEFAULTS)
    missing = sorted(_LOG_KEYS - documented)
    assert not missing, f"add these to LOG_DEFAULTS in broker/config/broker_config.py: {missing}"


def test_every_config_has_a_meaning() -> None:
    empty = [name for name, (_, _, doc) in DEFAULTS.items() if not doc.strip()]
    empty += [name for name, (_, _, doc) in LOG_DEFAULTS.items() if not doc.strip()]
    empty += [name for name, config in TOPIC_CONFIGS.items() if not config.documentation.strip()]
    empty += [name for name, config in GROUP_CONFIGS.items() if not config.documentation.strip()]
    assert not empty, f"configs without documentation: {empty}"


def test_every_route_is_documented_with_an_example() -> None:
    page = (ROOT / "docs" / "reference" / "http-api.md").read_text()
    routes = gen_reference.routes()
    assert len(routes) >= 20
    for method, path, handler, doc in routes:
        assert doc[""], f"{handler} ({method} {path}) has no docstring"
        assert "Example" in doc, f"{handler} ({method} {path}): its docstring has no Example section"
        assert f"\n## {method} {path} " in page, f"{method} {path} is not in docs/reference/http-api.md"


def _call(base: str, method: str, target: str, body: str | None) -> tuple[int, str]:
    request = urllib.request.Request(base + target, data=body.encode() if body else None, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_http_examples_are_accepted_by_a_running_broker() -> None:
    """Each documented example is well-formed: answered 2xx, or 404 where it names a
    resource (a fault, a group, a topic) the fresh cluster does not have."""
    with MockCluster(brokers=1, config={"admin.port": 0}) as cluster:
        assert cluster.admin is not None
        base = f"http://127.0.0.1:{cluster.admin.port}"
        for method, path, _, doc in gen_reference.routes():
            for example in gen_reference.examples(doc["Example"]):
                status, text = _call(base, *example)
                assert status < 300 or status == 404, f"{method} {path}: {example} answered {status} {text}"
                if status == 404:
                    assert json.loads(text)["error"], text


FAMILY = re.compile(r"^# TYPE (\S+) (\S+)$", re.M)
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ", re.M)


def test_every_exposed_metric_family_is_in_the_table(tmp_path: Path) -> None:
    from broker.harness.admin_http import METRIC_FAMILIES

    table = {name: (type_, set(labels)) for name, type_, labels, _ in METRIC_FAMILIES}
    config = {"admin.port": 0, "metrics.dir": str(tmp_path), "metrics.roll.ms": 100}
    with MockCluster(brokers=2, config=config) as cluster:
        assert cluster.admin is not None
        cluster.quotas.alter({"user": None}, {"producer_byte_rate": 1_000_000, "request_percentage": 200})
        cluster.quotas.alter({"client-id": None}, {"controller_mutation_rate": 100})
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="metrics-doc")
        try:
            producer.send("orders", b"x" * 100).get(timeout=30)
        finally:
            producer.close()
        cluster.stop_broker(1)
        status, text = _call(f"http://127.0.0.1:{cluster.admin.port}", "GET", "/metrics", None)
    assert status == 200
    # Counters: `# TYPE x_total counter` or `# TYPE x counter`, depending on prometheus_client.
    exposed = {
        name.removesuffix("_total") if type_ == "counter" else name: type_
        for name, type_ in FAMILY.findall(text)
    }
    assert "kafka_server_quota_byte_rate" in exposed and "kafka_mock_metrics_sink_rows_added" in exposed
    undocumented = sorted(set(exposed) - set(table))
    assert not undocumented, (
        f"add these families to METRIC_FAMILIES in broker/harness/admin_http.py: {undocumented}"
    )
    for name, type_ in exposed.items():
        assert table[name][0] == type_, f"{name} is a {type_}, the table says {table[name][0]}"
    for sample, labels in SAMPLE.findall(text):
        family = next((f for f in table if sample in (f, f + "_total", f + "_created")), None)
        assert family is not None, sample
        names = {pair.split("=", 1)[0] for pair in re.findall(r'(\w+)="', labels)}
        assert names <= table[family][1], (
            f"{sample} has labels {sorted(names)}, the table {sorted(table[family][1])}"
        )


@pytest.mark.parametrize("page", sorted(gen_reference.pages()))
def test_each_generated_page_says_it_is_generated(page: str) -> None:
    first = (ROOT / "docs" / "reference" / page).read_text().splitlines()[0]
    assert "scripts/gen_reference.py" in first and "do not edit" in first, first
