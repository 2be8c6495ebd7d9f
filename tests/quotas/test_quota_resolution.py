"""Which quota applies to a (user, client-id), as Apache Kafka's DefaultQuotaCallback
(ClientQuotaManager) decides it: the 8-level precedence, the metric tags that decide who
shares one sensor, per-key independence and user-name sanitization.

Unit tests of quotas.resolution, then the same through the Python API
(`cluster.quotas.resolve`) after alterations sent over TCP.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest

from broker import MockCluster
from quotas.entity import QuotaEntity
from quotas.resolution import QuotaIndex, resolve

PBR = "producer_byte_rate"
CBR = "consumer_byte_rate"
RP = "request_percentage"
CMR = "controller_mutation_rate"


def entity(user: object = "absent", client: object = "absent") -> QuotaEntity:
    """An entity from a user and a client-id part: a name, None (the default) or absent."""
    parts: dict[str, str | None] = {}
    if user != "absent":
        assert user is None or isinstance(user, str)
        parts["user"] = user
    if client != "absent":
        assert client is None or isinstance(client, str)
        parts["client-id"] = client
    return QuotaEntity(parts)


# The 8 levels for user "alice" and client id "c1", most specific first.
LEVELS: list[QuotaEntity] = [
    entity("alice", "c1"),  # 1 (user, client-id)
    entity("alice", None),  # 2 (user, default client-id)
    entity("alice"),  # 3 (user)
    entity(None, "c1"),  # 4 (default user, client-id)
    entity(None, None),  # 5 (default user, default client-id)
    entity(None),  # 6 (default user)
    entity(client="c1"),  # 7 (client-id)
    entity(client=None),  # 8 (default client-id)
]


def tags_for_level(level: int) -> tuple[str, str]:
    """The metric tags when `level` is the first configured one for (alice, c1)."""
    if level in (1, 2, 4, 5):
        return ("alice", "c1")
    if level in (3, 6):
        return ("alice", "")
    return ("", "c1")


def value_of(level: int) -> float:
    return 100.0 * level


# ------------------------------------------------------------------- 8-level precedence


def test_each_level_wins_in_turn_as_more_specific_ones_are_removed() -> None:
    index = QuotaIndex()
    for level, configured in enumerate(LEVELS, start=1):
        index.set(configured, PBR, value_of(level))
    for level in range(1, 9):
        tags = index.metric_tags(PBR, "alice", "c1")
        assert tags == tags_for_level(level), f"level {level}"
        assert index.limit(PBR, *tags) == value_of(level), f"level {level}"
        (resolved,) = resolve(index, "alice", "c1")
        assert (resolved.key, resolved.value, resolved.entity) == (PBR, value_of(level), LEVELS[level - 1])
        # Beneath the winner: every less specific configured level, in order.
        assert [e for _, e in resolved.overridden] == LEVELS[level:]
        assert [v for v, _ in resolved.overridden] == [value_of(k) for k in range(level + 1, 9)]
        index.set(LEVELS[level - 1], PBR, None)  # remove the winner
    assert index.metric_tags(PBR, "alice", "c1") == ("", "c1")
    assert index.limit(PBR, "", "c1") is None
    assert resolve(index, "alice", "c1") == []


@pytest.mark.parametrize("level", range(1, 9))
def test_each_level_alone(level: int) -> None:
    index = QuotaIndex()
    index.set(LEVELS[level - 1], PBR, value_of(level))
    tags = index.metric_tags(PBR, "alice", "c1")
    assert tags == tags_for_level(level)
    assert index.limit(PBR, *tags) == value_of(level)
    assert [(r.value, r.entity) for r in resolve(index, "alice", "c1")] == [
        (value_of(level), LEVELS[level - 1])
    ]


def test_precedence_does_not_leak_to_other_users_or_clients() -> None:
    index = QuotaIndex()
    for level, configured in enumerate(LEVELS, start=1):
        index.set(configured, PBR, value_of(level))
    # bob / c1: levels 4 (default user, c1) is the first that applies to him.
    assert index.metric_tags(PBR, "bob", "c1") == ("bob", "c1")
    assert index.limit(PBR, "bob", "c1") == value_of(4)
    # bob / c2: (default user, default client-id).
    assert index.limit(PBR, *index.metric_tags(PBR, "bob", "c2")) == value_of(5)
    # alice / c2: (alice, default client-id).
    assert index.limit(PBR, *index.metric_tags(PBR, "alice", "c2")) == value_of(2)


# ------------------------------------------------------------------------- metric tags


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        pytest.param(
            [entity(client="c1")], {("alice", "c1"): ("", "c1"), ("bob", "c2"): ("", "c2")}, id="client-only"
        ),
        pytest.param(
            [entity(client=None)],
            {("alice", "c1"): ("", "c1"), ("bob", "c2"): ("", "c2")},
            id="default-client-only",
        ),
        pytest.param(
            [entity("alice")], {("alice", "c1"): ("alice", ""), ("bob", "c2"): ("bob", "")}, id="user-only"
        ),
        pytest.param(
            [entity("alice", "c1")],
            {("alice", "c1"): ("alice", "c1"), ("bob", "c2"): ("bob", "c2")},
            id="user-client-only",
        ),
        pytest.param(
            [entity(None, None), entity("alice", None)],
            {("alice", "c1"): ("alice", "c1"), ("bob", "c2"): ("bob", "c2")},
            id="user-client-family-defaults",
        ),
        pytest.param([], {("alice", "c1"): ("", "c1"), ("bob", ""): ("", "")}, id="nothing"),
    ],
)
def test_single_family_tags(
    configured: list[QuotaEntity], expected: dict[tuple[str, str], tuple[str, str]]
) -> None:
    index = QuotaIndex()
    for e in configured:
        index.set(e, PBR, 1000.0)
    for (user, client), tags in expected.items():
        assert index.metric_tags(PBR, user, client) == tags, (user, client)


# Unrelated entities of every family, so that the mixed-mode walk is taken.
ALL_FAMILIES = [entity("zed"), entity(client="zzz"), entity("zed", "zzz")]


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5, 6, None])
def test_mixed_families_walk_to_the_first_configured_level(level: int | None) -> None:
    index = QuotaIndex()
    for e in ALL_FAMILIES:
        index.set(e, PBR, 1.0)
    if level is not None:
        index.set(LEVELS[level - 1], PBR, value_of(level))
    tags = index.metric_tags(PBR, "alice", "c1")
    assert tags == tags_for_level(level or 7)
    assert index.limit(PBR, *tags) == (value_of(level) if level else None)


def test_mixed_families_levels_7_and_8_tag_by_client_id() -> None:
    index = QuotaIndex()
    for e in ALL_FAMILIES:
        index.set(e, PBR, 1.0)
    index.set(entity(client=None), PBR, 800.0)
    index.set(entity(client="c1"), PBR, 700.0)
    assert index.metric_tags(PBR, "alice", "c1") == ("", "c1")
    assert index.limit(PBR, "", "c1") == 700.0
    assert index.metric_tags(PBR, "alice", "c2") == ("", "c2")
    assert index.limit(PBR, "", "c2") == 800.0


def test_default_user_gives_each_user_its_own_allowance() -> None:
    index = QuotaIndex()
    index.set(entity(None), PBR, 5000.0)
    alice = index.metric_tags(PBR, "alice", "app")
    bob = index.metric_tags(PBR, "bob", "app")
    assert (alice, bob) == (("alice", ""), ("bob", ""))
    assert alice != bob  # two sensors, not one shared bucket
    assert index.limit(PBR, *alice) == index.limit(PBR, *bob) == 5000.0


def test_default_user_default_client_gives_each_pair_its_own_allowance() -> None:
    index = QuotaIndex()
    index.set(entity(None, None), PBR, 5000.0)
    pairs = [("alice", "a"), ("alice", "b"), ("bob", "a")]
    tags = [index.metric_tags(PBR, u, c) for u, c in pairs]
    assert tags == pairs
    assert {index.limit(PBR, *t) for t in tags} == {5000.0}


def test_default_client_id_gives_each_client_its_own_allowance_across_users() -> None:
    index = QuotaIndex()
    index.set(entity(client=None), PBR, 5000.0)
    # Client-id family only: the user is not part of the tags, so alice and bob share
    # the sensor of client id "app".
    assert index.metric_tags(PBR, "alice", "app") == index.metric_tags(PBR, "bob", "app") == ("", "app")
    assert index.metric_tags(PBR, "alice", "other") == ("", "other")


def test_quota_keys_are_independent() -> None:
    index = QuotaIndex()
    index.set(entity("alice"), PBR, 1.0)
    index.set(entity(client="c1"), CBR, 2.0)
    index.set(entity("alice", "c1"), RP, 3.0)
    assert index.metric_tags(PBR, "alice", "c1") == ("alice", "")
    assert index.metric_tags(CBR, "alice", "c1") == ("", "c1")
    assert index.metric_tags(RP, "alice", "c1") == ("alice", "c1")
    assert index.metric_tags(CMR, "alice", "c1") == ("", "c1")
    assert index.limit(CMR, "", "c1") is None
    assert {r.key: r.value for r in resolve(index, "alice", "c1")} == {PBR: 1.0, CBR: 2.0, RP: 3.0}


def test_one_entity_several_keys() -> None:
    index = QuotaIndex()
    index.set(entity(None), PBR, 1.0)
    index.set(entity(None), CBR, 2.0)
    index.set(entity(None), PBR, None)
    assert index.metric_tags(PBR, "alice", "c1") == ("", "c1")  # the user family is gone for PBR only
    assert index.metric_tags(CBR, "alice", "c1") == ("alice", "")


# --------------------------------------------------------------------- sanitized names


@pytest.mark.parametrize(
    ("principal", "sanitized"),
    [
        ("CN=alice,O=x", "CN%3Dalice%2CO%3Dx"),
        ("a b", "a%20b"),  # URLEncoder's "+" becomes %20
        ("a*b", "a%2Ab"),  # "*" becomes %2A
        ("user@EXAMPLE.COM", "user%40EXAMPLE.COM"),
        ("é", "%C3%A9"),  # UTF-8 bytes, upper-case hex
        ("plain-name_1.x", "plain-name_1.x"),
        ("50%", "50%25"),
    ],
)
def test_user_names_are_sanitized_in_tags(principal: str, sanitized: str) -> None:
    index = QuotaIndex()
    index.set(entity(principal), PBR, 10.0)
    tags = index.metric_tags(PBR, principal, "c")
    assert tags == (sanitized, "")
    assert index.limit(PBR, *tags) == 10.0
    (resolved,) = resolve(index, principal, "c")
    assert resolved.entity == entity(principal)  # reported with the name as configured


def test_sanitized_spelling_is_a_different_user() -> None:
    """An entity literally named "CN%3Dalice" is sanitized again ("CN%253Dalice"): it
    does not apply to the principal "CN=alice"."""
    index = QuotaIndex()
    index.set(entity("CN%3Dalice"), PBR, 10.0)
    assert index.limit(PBR, *index.metric_tags(PBR, "CN=alice", "c")) is None
    assert index.limit(PBR, *index.metric_tags(PBR, "CN%3Dalice", "c")) == 10.0


def test_client_ids_are_not_sanitized() -> None:
    index = QuotaIndex()
    index.set(entity(client="my app*"), PBR, 10.0)
    assert index.metric_tags(PBR, "alice", "my app*") == ("", "my app*")
    assert index.limit(PBR, "", "my app*") == 10.0


# ------------------------------------------------------------------ families cleared


def test_removing_all_quotas_of_a_family_clears_it() -> None:
    index = QuotaIndex()
    index.set(entity("alice"), PBR, 1.0)
    index.set(entity("bob"), PBR, 2.0)
    index.set(entity(client="c1"), PBR, 3.0)
    assert index.metric_tags(PBR, "alice", "c1") == ("alice", "")  # mixed, level 3
    assert index.metric_tags(PBR, "carol", "c1") == ("", "c1")  # mixed, nothing for carol
    index.set(entity("alice"), PBR, None)
    assert index.metric_tags(PBR, "alice", "c1") == ("", "c1")
    assert index.metric_tags(PBR, "bob", "c1") == ("bob", "")  # bob keeps the user family alive
    index.set(entity("bob"), PBR, None)
    # Only the client-id family remains: every user of c1 shares one sensor again.
    assert index.metric_tags(PBR, "bob", "c9") == ("", "c9")
    index.set(entity(client="c1"), PBR, None)
    assert index.keys() == []
    assert resolve(index, "bob", "c1") == []


def test_removing_an_unset_slot_does_not_clear_a_family() -> None:
    index = QuotaIndex()
    index.set(entity("alice"), PBR, 1.0)
    index.set(entity("bob"), PBR, None)  # never set
    index.set(entity("alice"), PBR, 2.0)  # update, not a second entity
    index.set(entity("alice"), PBR, None)
    assert index.metric_tags(PBR, "alice", "c") == ("", "c")


def test_ip_entities_do_not_take_part() -> None:
    index = QuotaIndex()
    index.set(QuotaEntity({"ip": None}), "connection_creation_rate", 5.0)
    index.set(QuotaEntity({"ip": "10.0.0.1"}), "connection_creation_rate", 7.0)
    assert resolve(index, "alice", "c") == []
    assert index.ip_limit("connection_creation_rate", "10.0.0.1") == 7.0
    assert index.ip_limit("connection_creation_rate", "10.0.0.2") == 5.0


# ------------------------------------------------------------- the same over the wire

AlterEntry = AlterClientQuotasRequest.EntryData


@pytest.fixture
def admin(sync_cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=sync_cluster.bootstrap_servers, request_timeout_ms=10000)
    yield client
    client.close()


def alter(admin: KafkaAdminClient, target: QuotaEntity, quota_key: str, value: float | None) -> None:
    request = AlterClientQuotasRequest(
        entries=[
            AlterEntry(
                entity=[AlterEntry.EntityData(entity_type=t, entity_name=n) for t, n in target.items()],
                ops=[AlterEntry.OpData(key=quota_key, value=value or 0.0, remove=value is None)],
            )
        ],
        validate_only=False,
    )
    response = admin._manager.run(admin._manager.send, request)
    assert [(r.error_code, r.error_message) for r in response.entries] == [(0, None)]


def test_precedence_over_tcp(sync_cluster: MockCluster, admin: KafkaAdminClient) -> None:
    for level, configured in enumerate(LEVELS, start=1):
        alter(admin, configured, RP, value_of(level) + 0.5)
    for level in range(1, 9):
        resolved = sync_cluster.quotas.resolve(user="alice", client_id="c1")
        assert set(resolved) == {RP}
        assert (resolved[RP].value, resolved[RP].entity) == (value_of(level) + 0.5, LEVELS[level - 1])
        assert [e for _, e in resolved[RP].overridden] == LEVELS[level:]
        alter(admin, LEVELS[level - 1], RP, None)
    assert sync_cluster.quotas.resolve(user="alice", client_id="c1") == {}


def test_resolve_over_tcp_defaults_sanitized_names_and_keys(
    sync_cluster: MockCluster, admin: KafkaAdminClient
) -> None:
    alter(admin, entity(None), PBR, 1000.0)
    alter(admin, entity("CN=alice,O=x"), PBR, 2000.0)
    alter(admin, entity(client="batch"), CBR, 3000.0)
    alter(admin, entity("CN=alice,O=x", "batch"), CBR, 4000.0)
    alice = sync_cluster.quotas.resolve(user="CN=alice,O=x", client_id="batch")
    assert {k: (r.value, r.entity) for k, r in alice.items()} == {
        PBR: (2000.0, entity("CN=alice,O=x")),
        CBR: (4000.0, entity("CN=alice,O=x", "batch")),
    }
    assert [e for _, e in alice[PBR].overridden] == [entity(None)]
    assert [e for _, e in alice[CBR].overridden] == [entity(client="batch")]
    bob = sync_cluster.quotas.resolve(user="bob", client_id="batch")
    assert {k: (r.value, r.entity) for k, r in bob.items()} == {
        PBR: (1000.0, entity(None)),
        CBR: (3000.0, entity(client="batch")),
    }
    # Unauthenticated connections are the principal ANONYMOUS.
    anonymous = sync_cluster.quotas.resolve(client_id="other")
    assert {k: (r.value, r.entity) for k, r in anonymous.items()} == {PBR: (1000.0, entity(None))}
    # The "<default>" literal is a user like any other, not the default.
    alter(admin, entity("<default>"), PBR, 9.0)
    assert sync_cluster.quotas.resolve(user="carol", client_id="x")[PBR].value == 1000.0
    assert sync_cluster.quotas.resolve(user="<default>", client_id="x")[PBR].value == 9.0
    # Refused and validate-only alterations change nothing.
    before = {
        k: (r.value, r.entity) for k, r in sync_cluster.quotas.resolve(user="bob", client_id="batch").items()
    }
    response = admin._manager.run(
        admin._manager.send,
        AlterClientQuotasRequest(
            entries=[
                AlterEntry(
                    entity=[AlterEntry.EntityData(entity_type="user", entity_name="bob")],
                    ops=[AlterEntry.OpData(key=PBR, value=1.0, remove=False)],
                )
            ],
            validate_only=True,
        ),
    )
    assert response.entries[0].error_code == 0
    after = {
        k: (r.value, r.entity) for k, r in sync_cluster.quotas.resolve(user="bob", client_id="batch").items()
    }
    assert after == before
