"""The tested-clients page (docs/getting-started/clients.md) names each client at the
version its pin holds, and every line names test files that exist and hold tests."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started" / "clients.md"

# Clients the suite pins: each must have a line on the page.
PINNED = {
    "kafka-python",
    "aiokafka",
    "confluent-kafka",
    "org.apache.kafka:kafka-clients",
    "org.apache.kafka:kafka-streams",
    "github.com/twmb/franz-go",
    "github.com/twmb/franz-go/pkg/kadm",
    "github.com/IBM/sarama",
    "github.com/segmentio/kafka-go",
}


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            found[name.strip().lower()] = version.split(";")[0].strip()
    kafka = re.search(r"<kafka\.version>([^<]+)<", (ROOT / "tests" / "java" / "pom.xml").read_text())
    assert kafka is not None
    found["org.apache.kafka:kafka-clients"] = found["org.apache.kafka:kafka-streams"] = kafka.group(1)
    for module, version in re.findall(r"^\s*(\S+) (v\S+)$", (ROOT / "tests" / "go" / "go.mod").read_text(), re.M):
        found[module] = version
    return found


def rows() -> list[list[str]]:
    table = [line for line in PAGE.read_text().splitlines() if line.startswith("| ") and not line.startswith("| Client")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table]


def test_each_line_names_the_pinned_version() -> None:
    pinned = pins()
    named = set()
    for client, version, _, _ in rows():
        name = client.split(" (")[0]
        named.add(name)
        if name == "kcat":  # the distribution's package, not pinned by the project
            continue
        assert version == pinned[name.lower() if ":" not in name and "/" not in name else name], client
    assert PINNED <= named, sorted(PINNED - named)


def test_each_line_is_backed_by_tests_that_exist() -> None:
    for client, _, checks, tests in rows():
        paths = re.findall(r"`([^`]+)`", tests)
        assert paths, f"{client}: {checks} names no test"
        for path in paths:
            file = ROOT / path
            assert file.is_file(), f"{client}: {path} does not exist"
            assert re.search(r"^(async )?def test_", file.read_text(), re.M), f"{path} holds no test"
