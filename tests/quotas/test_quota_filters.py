"""DescribeClientQuotas filters over TCP against a fixed table of entities.

The entities are created through AlterClientQuotas; each filter's expected result set
follows Apache Kafka's ClientQuotasImage.describe: every component must match (exact name,
default = null name only, specified = any name), Strict additionally requires the entity
to have exactly as many types as the filter has components, and an empty filter returns
everything when not strict and nothing when strict.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from broker import MockCluster

Key = frozenset[tuple[str, str | None]]
AlterEntry = AlterClientQuotasRequest.EntryData
Component = DescribeClientQuotasRequest.ComponentData

EXACT, DEFAULT, SPECIFIED = 0, 1, 2

# name -> (entity components, quota key, value); every value distinct.
ENTITIES: dict[str, tuple[tuple[tuple[str, str | None], ...], str, float]] = {
    "alice": ((("user", "alice"),), "producer_byte_rate", 1001.0),
    "bob": ((("user", "bob"),), "consumer_byte_rate", 1002.0),
    "user-default": ((("user", None),), "producer_byte_rate", 1003.0),
    "user-literal-default": ((("user", "<default>"),), "producer_byte_rate", 1004.0),
    "c1": ((("client-id", "c1"),), "request_percentage", 10.5),
    "client-default": ((("client-id", None),), "request_percentage", 11.5),
    "alice-c1": ((("user", "alice"), ("client-id", "c1")), "producer_byte_rate", 1007.0),
    "alice-client-default": ((("user", "alice"), ("client-id", None)), "controller_mutation_rate", 12.25),
    "user-default-c1": ((("user", None), ("client-id", "c1")), "consumer_byte_rate", 1009.0),
    "both-default": ((("user", None), ("client-id", None)), "producer_byte_rate", 1010.0),
    "bob-client-literal-default": (
        (("user", "bob"), ("client-id", "<default>")),
        "producer_byte_rate",
        1011.0,
    ),
    "ip": ((("ip", "192.0.2.1"),), "connection_creation_rate", 12.0),
    "ip-default": ((("ip", None),), "connection_creation_rate", 13.0),
}

ALL = set(ENTITIES)
WITH_USER = {n for n, (pairs, _, _) in ENTITIES.items() if any(t == "user" for t, _ in pairs)}
WITH_CLIENT = {n for n, (pairs, _, _) in ENTITIES.items() if any(t == "client-id" for t, _ in pairs)}

FILTERS: list[Any] = [
    pytest.param([], False, ALL, id="empty-not-strict-everything-including-ip"),
    pytest.param([], True, set(), id="empty-strict-nothing"),
    pytest.param(
        [("user", EXACT, "alice")], False, {"alice", "alice-c1", "alice-client-default"}, id="user-exact"
    ),
    pytest.param([("user", EXACT, "alice")], True, {"alice"}, id="user-exact-strict"),
    pytest.param(
        [("user", DEFAULT, None)],
        False,
        {"user-default", "user-default-c1", "both-default"},
        id="user-default",
    ),
    pytest.param([("user", DEFAULT, None)], True, {"user-default"}, id="user-default-strict"),
    pytest.param(
        [("user", EXACT, "<default>")], False, {"user-literal-default"}, id="user-literal-default-name"
    ),
    pytest.param([("user", SPECIFIED, None)], False, WITH_USER, id="user-specified"),
    pytest.param(
        [("user", SPECIFIED, None)],
        True,
        {"alice", "bob", "user-default", "user-literal-default"},
        id="user-specified-strict",
    ),
    pytest.param(
        [("client-id", EXACT, "c1")], False, {"c1", "alice-c1", "user-default-c1"}, id="client-exact"
    ),
    pytest.param(
        [("client-id", DEFAULT, None)],
        False,
        {"client-default", "alice-client-default", "both-default"},
        id="client-default",
    ),
    pytest.param([("client-id", DEFAULT, None)], True, {"client-default"}, id="client-default-strict"),
    pytest.param([("client-id", SPECIFIED, None)], False, WITH_CLIENT, id="client-specified"),
    pytest.param(
        [("user", EXACT, "alice"), ("client-id", DEFAULT, None)],
        True,
        {"alice-client-default"},
        id="alice-and-default",
    ),
    pytest.param(
        [("client-id", DEFAULT, None), ("user", DEFAULT, None)],
        False,
        {"both-default"},
        id="both-default-components",
    ),
    pytest.param(
        [("user", SPECIFIED, None), ("client-id", SPECIFIED, None)],
        True,
        {"alice-c1", "alice-client-default", "user-default-c1", "both-default", "bob-client-literal-default"},
        id="both-specified-strict",
    ),
    pytest.param(
        [("user", SPECIFIED, None), ("client-id", EXACT, "c1")],
        False,
        {"alice-c1", "user-default-c1"},
        id="any-user-c1",
    ),
    pytest.param(
        [("user", EXACT, "bob"), ("client-id", SPECIFIED, None)],
        False,
        {"bob-client-literal-default"},
        id="bob-any-client",
    ),
    pytest.param([("client-id", EXACT, "<default>")], True, set(), id="client-literal-default-strict"),
    pytest.param([("ip", SPECIFIED, None)], False, {"ip", "ip-default"}, id="ip-specified"),
    pytest.param([("ip", SPECIFIED, None)], True, {"ip", "ip-default"}, id="ip-specified-strict"),
    pytest.param([("ip", DEFAULT, None)], False, {"ip-default"}, id="ip-default"),
    pytest.param([("ip", EXACT, "192.0.2.1")], True, {"ip"}, id="ip-exact-strict"),
    pytest.param([("user", EXACT, "nobody")], False, set(), id="no-match"),
    pytest.param([("user", EXACT, "Alice")], False, set(), id="names-are-case-sensitive"),
]


def send(admin: KafkaAdminClient, request: Any) -> Any:
    return admin._manager.run(admin._manager.send, request)


@pytest.fixture(scope="module")
def admin() -> Iterator[KafkaAdminClient]:
    with MockCluster() as cluster:
        client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
        entries = [
            AlterEntry(
                entity=[AlterEntry.EntityData(entity_type=t, entity_name=n) for t, n in pairs],
                ops=[AlterEntry.OpData(key=quota_key, value=value, remove=False)],
            )
            for pairs, quota_key, value in ENTITIES.values()
        ]
        response = send(client, AlterClientQuotasRequest(entries=entries, validate_only=False))
        assert [(r.error_code, r.error_message) for r in response.entries] == [(0, None)] * len(ENTITIES)
        yield client
        client.close()


def describe(
    admin: KafkaAdminClient, components: Sequence[tuple[str, int, str | None]], strict: bool
) -> dict[Key, dict[str, float]]:
    request = DescribeClientQuotasRequest(
        components=[Component(entity_type=t, match_type=m, match=s) for t, m, s in components], strict=strict
    )
    response = send(admin, request)
    assert (response.error_code, response.error_message) == (0, "")  # Kafka's "" on success
    assert response.entries is not None
    found: dict[Key, dict[str, float]] = {}
    for e in response.entries:
        entity = frozenset((c.entity_type, c.entity_name) for c in e.entity)
        assert len(entity) == len(e.entity)
        assert entity not in found, "an entity listed twice"
        found[entity] = {v.key: v.value for v in e.values}
    return found


@pytest.mark.parametrize(("components", "strict", "expected"), FILTERS)
def test_filter(
    admin: KafkaAdminClient, components: list[tuple[str, int, str | None]], strict: bool, expected: set[str]
) -> None:
    want = {frozenset(ENTITIES[name][0]): {ENTITIES[name][1]: ENTITIES[name][2]} for name in expected}
    assert describe(admin, components, strict) == want


@pytest.mark.parametrize(("components", "strict", "expected"), FILTERS)
def test_filter_component_order_does_not_matter(
    admin: KafkaAdminClient, components: list[tuple[str, int, str | None]], strict: bool, expected: set[str]
) -> None:
    assert describe(admin, list(reversed(components)), strict) == describe(admin, components, strict)


def test_every_entity_listed_with_its_values(admin: KafkaAdminClient) -> None:
    """Every entity is described with all its values, exactly as created."""
    everything = describe(admin, [], strict=False)
    assert len(everything) == len(ENTITIES)
    for pairs, quota_key, value in ENTITIES.values():
        assert everything[frozenset(pairs)] == {quota_key: value}
