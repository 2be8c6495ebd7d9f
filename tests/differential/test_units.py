"""The differential suite's own parts, without the reference: the normaliser, the
explained-differences file (every anchor a section of the differences page) and the
conformance page's table against the scenario inventory."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path

from messages.registry import response_class
from tests.differential.normalise import Keyed, differences, normalise, tree
from tests.differential.runner import EXPLAINED, Explanation, explain, load_explained
from tests.differential.scenarios import all_scenarios

ROOT = Path(__file__).resolve().parents[2]
DIFFERENCES = ROOT / "docs" / "explanation" / "differences.md"
CONFORMANCE = ROOT / "docs" / "explanation" / "conformance.md"


def metadata_answer(order: list[str], cluster: str, port: int) -> object:
    Metadata = response_class(3)[12]
    Topic = Metadata.fields["topics"].data_class
    Broker = Metadata.fields["brokers"].data_class
    return Metadata(
        throttle_time_ms=0,
        brokers=[Broker(node_id=0, host="127.0.0.1", port=port, rack=None)],
        cluster_id=cluster,
        controller_id=0,
        topics=[
            Topic(error_code=0, name=n, topic_id=None, is_internal=False, partitions=[], authorized_operations=[])
            for n in order
        ],
    )


def test_unordered_arrays_ids_and_addresses_normalise_equal() -> None:
    a = normalise(tree(metadata_answer(["a", "b"], "one", 1111), 12))
    b = normalise(tree(metadata_answer(["b", "a"], "two", 2222), 12))
    assert isinstance(a["topics"], Keyed) and list(a["topics"]) == ["a", "b"]
    assert list(differences(a, b)) == []


def test_a_difference_has_a_stable_path() -> None:
    a = normalise(tree(metadata_answer(["a"], "x", 1), 12))
    b = normalise(tree(metadata_answer(["a"], "x", 1), 12))
    b["topics"]["a"]["error_code"] = 3
    assert list(differences(a, b)) == [("topics[a].error_code", 0, 3)]


def test_what_is_compared_as_sent() -> None:
    assert normalise({"error_code": 3, "error_message": "m", "throttle_time_ms": 5}) == {
        "error_code": 3,
        "error_message": "m",
        "throttle_time_ms": 5,
    }
    assert normalise({"throttle_time_ms": 5}, throttle_positive_only=True) == {"throttle_time_ms": ">0"}
    assert normalise({"producer_id": 4000, "timestamp": 1_800_000_000_000, "member_id": "m-1"}) == {
        "producer_id": "<producer_id>",
        "timestamp": "<time>",
        "member_id": "<member_id>",
    }
    # a timestamp before 2020 is a scenario's own record timestamp, compared as sent
    assert normalise({"timestamp": 1_500_000_000_000, "max_timestamp": 17}) == {
        "timestamp": 1_500_000_000_000,
        "max_timestamp": 17,
    }
    assert normalise({"producer_id": -1, "timestamp": -1}) == {"producer_id": -1, "timestamp": -1}


def test_patterns_take_brackets_literally_and_values_when_given() -> None:
    only = [Explanation("s/*/topics[{a,b}].error_code", "x", "r", reference="17", mock="3")]
    assert explain("s/Metadata/v12/topics[a].error_code", only, 17, 3)
    assert not explain("s/Metadata/v12/topics[a].error_code", only, 17, 0)
    assert not explain("s/Metadata/v12/topics[c].error_code", only, 17, 3)


def anchors(page: Path) -> set[str]:
    """The heading anchors mkdocs' toc gives a page."""
    found = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip()
            found.add(re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower()))
    return found


def test_every_explanation_points_at_a_section_of_the_differences_page() -> None:
    with EXPLAINED.open("rb") as handle:
        entries = tomllib.load(handle)["difference"]
    assert entries and all(e["reason"].strip() for e in entries)
    sections = anchors(DIFFERENCES)
    missing = {e["anchor"] for e in entries} - sections
    assert not missing, f"explained.toml names sections the differences page lacks: {missing}"
    assert len(load_explained()) == len(entries)


def test_scenario_names_are_unique_and_cover_every_served_api() -> None:
    from broker.config.broker_config import BrokerConfig
    from broker.handlers import HANDLERS

    scenarios = all_scenarios()
    assert len({s.name for s in scenarios}) == len(scenarios)
    served = {spec.name for spec in HANDLERS.values() if spec.enabled.applies(BrokerConfig({}))}
    covered = set().union(*(s.apis for s in scenarios))
    assert served <= covered


def test_the_conformance_table_counts_the_scenarios_there_are() -> None:
    """The committed table (scripts/conformance_page.py, from a run's report) lists as many
    compared steps per API as the scenarios hold: a new scenario needs a new run."""
    inventory: Counter[str] = Counter()
    for scenario in all_scenarios():
        for step in scenario.steps:
            if step.compare:
                inventory[step.api] += 1
    rows = re.findall(r"^\| (\w+) \| (\d+) \|", CONFORMANCE.read_text(), re.MULTILINE)
    assert {api: int(n) for api, n in rows} == dict(inventory)
