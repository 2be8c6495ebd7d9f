"""The API reference page (docs/reference/apis.md) says what a running broker advertises:
its table is compared with the ApiVersions answer kafka-python's admin client gets, for the
default configuration and for one that enables the optional APIs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from broker import MockCluster
from broker.handlers.spec import ALWAYS, WITH_CONSUMER_PROTOCOL, WITH_TELEMETRY

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "apis.md"
ROW = re.compile(r"^\| (\d+) \| \[(\w+)\]\(#\w+\) \| (\d+)(?:-(\d+))? \| (.+) \|$")


def documented() -> dict[int, tuple[int, int, str]]:
    rows: dict[int, tuple[int, int, str]] = {}
    for line in PAGE.read_text().splitlines():
        match = ROW.match(line)
        if match:
            key, _, low, high, served = match.groups()
            rows[int(key)] = (int(low), int(high if high is not None else low), served)
    return rows


def advertised(config: dict[str, str]) -> dict[int, tuple[int, int]]:
    with MockCluster(brokers=1, config=config) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="reference-check")
        try:
            versions = admin._manager.broker_version_data.api_versions
            return {int(key): (int(low), int(high)) for key, (low, high) in versions.items()}
        finally:
            admin.close()


@pytest.mark.parametrize(
    ("config", "optional_served"),
    [
        ({}, {WITH_CONSUMER_PROTOCOL.summary}),
        (
            {"group.coordinator.rebalance.protocols": "classic", "telemetry.enabled": "true"},
            {WITH_TELEMETRY.summary},
        ),
    ],
    ids=["default", "classic-and-telemetry"],
)
def test_the_api_table_is_what_a_running_broker_advertises(
    config: dict[str, str], optional_served: set[str]
) -> None:
    rows = documented()
    assert len(rows) >= 60, "the API table was not found in docs/reference/apis.md"
    expected = {
        key: (low, high)
        for key, (low, high, served) in rows.items()
        if served == ALWAYS.summary or served in optional_served
    }
    assert advertised(config) == expected
