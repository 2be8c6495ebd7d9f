"""AlterClientQuotas validation and DescribeClientQuotas filter errors through a real
client over TCP (kafka-python's generated structs sent by its network client).

Every refusal is checked for Apache Kafka's exact error code and message
(ClientQuotaControlManager, ClientQuotasImage), and every alteration request mixes the
invalid entity with a valid one: Kafka validates per entity, so the valid one applies
and the invalid one does not.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from broker import MockCluster

Pairs = Sequence[tuple[str, str | None]]
Key = frozenset[tuple[str, str | None]]  # an entity, order-free
Result = tuple[Key, int, str | None]

AlterEntry = AlterClientQuotasRequest.EntryData
Component = DescribeClientQuotasRequest.ComponentData

INVALID_REQUEST = 42
UNSUPPORTED_VERSION = 35
CLUSTER_AUTHORIZATION_FAILED = 31

PBR = "producer_byte_rate"
CBR = "consumer_byte_rate"
RP = "request_percentage"
CMR = "controller_mutation_rate"
CCR = "connection_creation_rate"

VALID: Pairs = (("user", "valid-user"),)
VALID_OPS = [(PBR, 4096.0, False)]


# ----------------------------------------------------------------------------- client


@pytest.fixture
def admin(sync_cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=sync_cluster.bootstrap_servers, request_timeout_ms=10000)
    yield client
    client.close()


def send(admin: KafkaAdminClient, request: Any) -> Any:
    return admin._manager.run(admin._manager.send, request)


def key(pairs: Pairs) -> Key:
    return frozenset(pairs)


def entry(pairs: Pairs, ops: Sequence[tuple[str, float, bool]]) -> Any:
    return AlterEntry(
        entity=[AlterEntry.EntityData(entity_type=t, entity_name=n) for t, n in pairs],
        ops=[AlterEntry.OpData(key=k, value=v, remove=r) for k, v, r in ops],
    )


def alter(admin: KafkaAdminClient, entries: Sequence[Any], validate_only: bool = False) -> list[Result]:
    response = send(admin, AlterClientQuotasRequest(entries=list(entries), validate_only=validate_only))
    assert response.throttle_time_ms == 0
    return [
        (key([(e.entity_type, e.entity_name) for e in r.entity]), r.error_code, r.error_message)
        for r in response.entries
    ]


def describe(admin: KafkaAdminClient, components: Sequence[tuple[str, int, str | None]], strict: bool) -> Any:
    request = DescribeClientQuotasRequest(
        components=[Component(entity_type=t, match_type=m, match=s) for t, m, s in components], strict=strict
    )
    return send(admin, request)


def everything(admin: KafkaAdminClient) -> dict[Key, dict[str, float]]:
    """Every configured entity and its values (empty filter, not strict)."""
    response = describe(admin, [], strict=False)
    # Kafka 4.4 leaves a success's message at the schema's default, "" (not null).
    assert (response.error_code, response.error_message) == (0, "")
    found: dict[Key, dict[str, float]] = {}
    for e in response.entries:
        entity = key([(c.entity_type, c.entity_name) for c in e.entity])
        assert entity not in found
        found[entity] = {v.key: v.value for v in e.values}
    return found


def check_mixed(
    admin: KafkaAdminClient,
    pairs: Pairs,
    ops: Sequence[tuple[str, float, bool]],
    message: str,
    code: int = INVALID_REQUEST,
) -> None:
    """The invalid entity (first) is refused with `code`/`message`; the valid one (second) applies."""
    results = alter(admin, [entry(pairs, ops), entry(VALID, VALID_OPS)])
    assert results == [(key(pairs), code, message), (key(VALID), 0, None)]
    assert everything(admin) == {key(VALID): {PBR: 4096.0}}


# ------------------------------------------------------------------ duplicate handling


def test_duplicate_key_refuses_the_whole_entity(admin: KafkaAdminClient) -> None:
    check_mixed(
        admin,
        [("user", "dup")],
        [(RP, 10.0, False), (PBR, 100.0, False), (PBR, 200.0, False)],
        "Ignoring duplicate entity ClientQuotaEntity(entries={user=dup})",
    )


def test_duplicate_key_set_and_remove(admin: KafkaAdminClient) -> None:
    check_mixed(
        admin,
        [("client-id", "dup")],
        [(PBR, 100.0, False), (PBR, 0.0, True)],
        "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=dup})",
    )


def test_same_entity_twice_first_applies_second_refused(admin: KafkaAdminClient) -> None:
    results = alter(
        admin,
        [
            entry([("user", "twice")], [(PBR, 100.0, False)]),
            entry(VALID, VALID_OPS),
            entry([("user", "twice")], [(PBR, 200.0, False), (CBR, 300.0, False)]),
        ],
    )
    # One result per distinct entity, in first-appearance order.
    assert results == [
        (
            key([("user", "twice")]),
            INVALID_REQUEST,
            "Ignoring duplicate entity ClientQuotaEntity(entries={user=twice})",
        ),
        (key(VALID), 0, None),
    ]
    assert everything(admin) == {key([("user", "twice")]): {PBR: 100.0}, key(VALID): {PBR: 4096.0}}


def test_same_entity_twice_in_another_component_order(admin: KafkaAdminClient) -> None:
    """{user, client-id} and {client-id, user} are one entity."""
    results = alter(
        admin,
        [
            entry([("user", "u"), ("client-id", "c")], [(PBR, 100.0, False)]),
            entry([("client-id", "c"), ("user", "u")], [(PBR, 200.0, False)]),
            entry(VALID, VALID_OPS),
        ],
    )
    assert [r[:2] for r in results] == [
        (key([("user", "u"), ("client-id", "c")]), INVALID_REQUEST),
        (key(VALID), 0),
    ]
    assert everything(admin) == {
        key([("user", "u"), ("client-id", "c")]): {PBR: 100.0},
        key(VALID): {PBR: 4096.0},
    }


def test_invalid_first_then_duplicate_nothing_applies(admin: KafkaAdminClient) -> None:
    results = alter(
        admin,
        [
            entry([("user", "bad")], [(PBR, -1.0, False)]),
            entry([("user", "bad")], [(PBR, 5.0, False)]),
            entry(VALID, VALID_OPS),
        ],
    )
    assert results == [
        (
            key([("user", "bad")]),
            INVALID_REQUEST,
            "Ignoring duplicate entity ClientQuotaEntity(entries={user=bad})",
        ),
        (key(VALID), 0, None),
    ]
    assert everything(admin) == {key(VALID): {PBR: 4096.0}}


def test_duplicate_default_entity_message_renders_null(admin: KafkaAdminClient) -> None:
    """Kafka's message is ClientQuotaEntity.toString, a java.util.Map: a default is `null`."""
    results = alter(
        admin, [entry([("user", None)], [(PBR, 1.0, False)]), entry([("user", None)], [(PBR, 2.0, False)])]
    )
    assert results == [
        (
            key([("user", None)]),
            INVALID_REQUEST,
            "Ignoring duplicate entity ClientQuotaEntity(entries={user=null})",
        )
    ]
    assert everything(admin) == {key([("user", None)]): {PBR: 1.0}}


def test_duplicate_two_type_entity_message_in_java_hashmap_order(admin: KafkaAdminClient) -> None:
    """The entity map Kafka builds from the request is a java.util.HashMap; "client-id"
    hashes to an earlier bucket than "user", so toString prints client-id first."""
    pairs = [("user", "u"), ("client-id", "c")]
    results = alter(admin, [entry(pairs, [(PBR, 1.0, False)]), entry(pairs, [(PBR, 2.0, False)])])
    assert results == [
        (
            key(pairs),
            INVALID_REQUEST,
            "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c, user=u})",
        )
    ]


def test_both_names_empty_reports_client_id_first(admin: KafkaAdminClient) -> None:
    """validateEntity walks the same HashMap, client-id before user."""
    check_mixed(
        admin, [("user", ""), ("client-id", "")], [(PBR, 1.0, False)], "Empty client-id not supported"
    )


def test_type_repeated_in_one_entry_last_wins(admin: KafkaAdminClient) -> None:
    results = alter(
        admin, [entry([("user", "first"), ("user", "last")], [(PBR, 7.0, False)]), entry(VALID, VALID_OPS)]
    )
    assert results == [(key([("user", "last")]), 0, None), (key(VALID), 0, None)]
    assert everything(admin) == {key([("user", "last")]): {PBR: 7.0}, key(VALID): {PBR: 4096.0}}


# ---------------------------------------------------------------------- entity checks

SHOULDNOT = "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"


@pytest.mark.parametrize(
    ("pairs", "ops", "message"),
    [
        pytest.param([], [(PBR, 1.0, False)], "Invalid empty client quota entity", id="empty-entity"),
        pytest.param(
            [("group", "g")],
            [(PBR, 1.0, False)],
            "Unhandled client quota entity type: group",
            id="unknown-type",
        ),
        pytest.param(
            [("user", "u"), ("group", "g")],
            [(PBR, 1.0, False)],
            "Unhandled client quota entity type: group",
            id="known-and-unknown-type",
        ),
        pytest.param([("user", "")], [(PBR, 1.0, False)], "Empty user not supported", id="empty-user"),
        pytest.param(
            [("client-id", "")], [(PBR, 1.0, False)], "Empty client-id not supported", id="empty-client-id"
        ),
        pytest.param([("ip", "")], [(CCR, 1.0, False)], "Empty ip not supported", id="empty-ip"),
        pytest.param(
            [("user", ""), ("client-id", "c")],
            [(PBR, 1.0, False)],
            "Empty user not supported",
            id="empty-user-in-pair",
        ),
        # Kafka's message really lacks the space ("should" + "not ...", ClientQuotaControlManager
        # .configKeysForEntityType; ClientQuotaControlManagerTest asserts it so).
        pytest.param([("ip", "1.2.3.4"), ("user", "u")], [(CCR, 1.0, False)], SHOULDNOT, id="ip-with-user"),
        pytest.param(
            [("ip", None), ("client-id", "c")], [(PBR, 1.0, False)], SHOULDNOT, id="ip-with-client-id"
        ),
        pytest.param(
            [("ip", "not an ip!!")],
            [(CCR, 1.0, False)],
            "not an ip!! is not a valid IP or resolvable host.",
            id="invalid-ip",
        ),
    ],
)
def test_entity_refused(
    admin: KafkaAdminClient, pairs: Pairs, ops: Sequence[tuple[str, float, bool]], message: str
) -> None:
    check_mixed(admin, pairs, ops, message)


@pytest.mark.parametrize(
    "name",
    [
        "localhost",
        "127.0.0.1",
        "::1",
        "2001:db8::1",
        # InetAddress.getByName takes RFC 2732 bracketed IPv6 literals too.
        pytest.param("[::1]", id="bracketed-ipv6"),
        None,
    ],
)
def test_ip_names_accepted(admin: KafkaAdminClient, name: str | None) -> None:
    results = alter(admin, [entry([("ip", name)], [(CCR, 50.0, False)]), entry(VALID, VALID_OPS)])
    assert results == [(key([("ip", name)]), 0, None), (key(VALID), 0, None)]
    assert everything(admin) == {key([("ip", name)]): {CCR: 50.0}, key(VALID): {PBR: 4096.0}}


# ----------------------------------------------------------------------- value checks


@pytest.mark.parametrize(
    ("pairs", "op_key", "value", "message"),
    [
        pytest.param([("user", "u")], CCR, 5.0, f"Invalid configuration key {CCR}", id="ccr-on-user"),
        pytest.param([("client-id", "c")], CCR, 5.0, f"Invalid configuration key {CCR}", id="ccr-on-client"),
        pytest.param([("ip", "1.2.3.4")], PBR, 5.0, f"Invalid configuration key {PBR}", id="pbr-on-ip"),
        pytest.param([("ip", None)], RP, 5.0, f"Invalid configuration key {RP}", id="rp-on-default-ip"),
        pytest.param(
            [("user", "u")], "SCRAM-SHA-256", 4096.0, "Invalid configuration key SCRAM-SHA-256", id="scram"
        ),
        pytest.param(
            [("user", "u")], "not.a.quota.key", 1.0, "Invalid configuration key not.a.quota.key", id="unknown"
        ),
        pytest.param([("user", "u")], PBR, 0.0, f"Quota {PBR} must be greater than 0", id="zero"),
        pytest.param([("user", "u")], PBR, -5.0, f"Quota {PBR} must be greater than 0", id="negative"),
        pytest.param([("user", None)], RP, 0.0, f"Quota {RP} must be greater than 0", id="zero-double"),
        pytest.param([("ip", None)], CCR, -1.0, f"Quota {CCR} must be greater than 0", id="negative-int"),
        # Not finite (NaN, either infinity) is checked before the sign and the key's type.
        pytest.param([("user", "u")], RP, -math.inf, f"Quota {RP} must be a finite number", id="-inf"),
        pytest.param([("user", "u")], RP, math.inf, f"Quota {RP} must be a finite number", id="double-+inf"),
        pytest.param([("user", "u")], RP, math.nan, f"Quota {RP} must be a finite number", id="double-nan"),
        pytest.param(
            [("client-id", None)], CMR, math.inf, f"Quota {CMR} must be a finite number", id="cmr-inf"
        ),
        pytest.param(
            [("client-id", "c")], CMR, math.nan, f"Quota {CMR} must be a finite number", id="cmr-nan"
        ),
        pytest.param([("user", "u")], PBR, math.nan, f"Quota {PBR} must be a finite number", id="long-nan"),
        pytest.param(
            [("client-id", "c")], CBR, math.inf, f"Quota {CBR} must be a finite number", id="long-inf"
        ),
        pytest.param([("ip", None)], CCR, math.nan, f"Quota {CCR} must be a finite number", id="int-nan"),
        pytest.param(
            [("ip", "1.2.3.4")], CCR, math.inf, f"Quota {CCR} must be a finite number", id="int-inf"
        ),
        pytest.param(
            [("user", "u")], PBR, 1e19, f"Proposed value for {PBR} is too large for a LONG.", id="long-1e19"
        ),
        pytest.param(
            [("ip", "1.2.3.4")], CCR, 3e9, f"Proposed value for {CCR} is too large for an INT.", id="int-3e9"
        ),
        pytest.param(
            [("ip", None)],
            CCR,
            2147483648.0,
            f"Proposed value for {CCR} is too large for an INT.",
            id="int-2**31",
        ),
        pytest.param([("user", "u")], PBR, 1.5, f"{PBR} cannot be a fractional value.", id="long-1.5"),
        pytest.param(
            [("user", "u")], PBR, 1.00001, f"{PBR} cannot be a fractional value.", id="long-1.00001"
        ),
        # |v mod 1| is compared, not the distance to the nearest integer: 2.9999999 is refused.
        pytest.param(
            [("user", "u")], PBR, 2.9999999, f"{PBR} cannot be a fractional value.", id="long-2.9999999"
        ),
        pytest.param([("ip", None)], CCR, 10.5, f"{CCR} cannot be a fractional value.", id="int-10.5"),
    ],
)
def test_value_refused(
    admin: KafkaAdminClient, pairs: Pairs, op_key: str, value: float, message: str
) -> None:
    check_mixed(admin, pairs, [(op_key, value, False)], message)


def test_one_bad_op_refuses_the_whole_entity(admin: KafkaAdminClient) -> None:
    check_mixed(
        admin,
        [("user", "partial")],
        [(CBR, 1000.0, False), (PBR, 0.5, False)],
        f"{PBR} cannot be a fractional value.",
    )


@pytest.mark.parametrize(
    ("pairs", "op_key", "value"),
    [
        pytest.param([("user", "u")], PBR, 1.0000001, id="long-within-1e-6"),
        pytest.param([("user", "u")], PBR, 1.0000000001, id="long-1.0000000001"),
        pytest.param([("user", "u")], PBR, float(2**63), id="long-2**63-is-Long.MAX-as-double"),
        pytest.param([("ip", None)], CCR, 2147483647.0, id="int-max"),
        pytest.param([("user", "u")], RP, 0.5, id="double-fraction"),
        pytest.param([("client-id", None)], CMR, 2.75, id="mutation-fraction"),
        pytest.param([("user", "u"), ("client-id", None)], RP, 1e-300, id="double-tiny"),
        pytest.param([("user", "u")], RP, 1.7976931348623157e308, id="double-max-finite"),
    ],
)
def test_value_accepted(admin: KafkaAdminClient, pairs: Pairs, op_key: str, value: float) -> None:
    results = alter(admin, [entry(pairs, [(op_key, value, False)]), entry(VALID, VALID_OPS)])
    assert results == [(key(pairs), 0, None), (key(VALID), 0, None)]
    assert everything(admin) == {key(pairs): {op_key: value}, key(VALID): {PBR: 4096.0}}


# ------------------------------------------------------------------ removals, no-ops


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        pytest.param([], "Invalid empty client quota entity", id="empty-entity"),
        pytest.param([("group", "g")], "Unhandled client quota entity type: group", id="unknown-type"),
        pytest.param([("user", "")], "Empty user not supported", id="empty-name"),
        pytest.param(
            [("ip", "not an ip!!")], "not an ip!! is not a valid IP or resolvable host.", id="invalid-ip"
        ),
    ],
)
def test_remove_ops_do_not_skip_entity_validation(
    admin: KafkaAdminClient, pairs: Pairs, message: str
) -> None:
    check_mixed(admin, pairs, [(PBR, 0.0, True)], message)


def test_no_ops_is_a_success(admin: KafkaAdminClient) -> None:
    results = alter(admin, [entry([("user", "idle")], []), entry(VALID, VALID_OPS)])
    assert results == [(key([("user", "idle")]), 0, None), (key(VALID), 0, None)]
    assert everything(admin) == {key(VALID): {PBR: 4096.0}}


def test_remove_unset_key_is_a_successful_noop(admin: KafkaAdminClient) -> None:
    results = alter(
        admin,
        [
            entry([("user", "nobody")], [(PBR, 0.0, True), (CCR, 0.0, True), ("not.a.quota.key", 0.0, True)]),
            entry(VALID, VALID_OPS),
        ],
    )
    assert results == [(key([("user", "nobody")]), 0, None), (key(VALID), 0, None)]
    assert everything(admin) == {key(VALID): {PBR: 4096.0}}


@pytest.mark.parametrize("ignored", [0.0, -1.0, 1.5, math.nan, -math.inf, 1e300])
def test_remove_ignores_the_value(admin: KafkaAdminClient, ignored: float) -> None:
    assert alter(admin, [entry([("user", "r")], [(PBR, 100.0, False), (CBR, 200.0, False)])]) == [
        (key([("user", "r")]), 0, None)
    ]
    results = alter(admin, [entry([("user", "r")], [(PBR, ignored, True)]), entry(VALID, VALID_OPS)])
    assert results == [(key([("user", "r")]), 0, None), (key(VALID), 0, None)]
    assert everything(admin) == {key([("user", "r")]): {CBR: 200.0}, key(VALID): {PBR: 4096.0}}
    # Removing the last key removes the entity.
    assert alter(admin, [entry([("user", "r")], [(CBR, ignored, True)])]) == [(key([("user", "r")]), 0, None)]
    assert everything(admin) == {key(VALID): {PBR: 4096.0}}


def test_setting_an_equal_value_succeeds(admin: KafkaAdminClient) -> None:
    assert alter(admin, [entry(VALID, VALID_OPS)]) == [(key(VALID), 0, None)]
    assert alter(admin, [entry(VALID, VALID_OPS), entry([("user", "other")], [(RP, 1.0, False)])]) == [
        (key(VALID), 0, None),
        (key([("user", "other")]), 0, None),
    ]
    assert everything(admin) == {key(VALID): {PBR: 4096.0}, key([("user", "other")]): {RP: 1.0}}


def test_validate_only_same_results_nothing_written(admin: KafkaAdminClient) -> None:
    entries = [
        entry([("user", "dup")], [(PBR, 1.0, False), (PBR, 2.0, False)]),
        entry(VALID, VALID_OPS),
        entry([("ip", "not an ip!!")], [(CCR, 1.0, False)]),
        entry([("client-id", "c")], [(CBR, 1.5, False)]),
        entry([("user", None), ("client-id", None)], [(RP, 25.0, False)]),
    ]
    dry = alter(admin, entries, validate_only=True)
    assert everything(admin) == {}
    expected = [
        (
            key([("user", "dup")]),
            INVALID_REQUEST,
            "Ignoring duplicate entity ClientQuotaEntity(entries={user=dup})",
        ),
        (key(VALID), 0, None),
        (key([("ip", "not an ip!!")]), INVALID_REQUEST, "not an ip!! is not a valid IP or resolvable host."),
        (key([("client-id", "c")]), INVALID_REQUEST, f"{CBR} cannot be a fractional value."),
        (key([("user", None), ("client-id", None)]), 0, None),
    ]
    assert dry == expected
    assert alter(admin, entries) == expected
    assert everything(admin) == {
        key(VALID): {PBR: 4096.0},
        key([("user", None), ("client-id", None)]): {RP: 25.0},
    }


def test_validate_only_remove_keeps_the_value(admin: KafkaAdminClient) -> None:
    alter(admin, [entry(VALID, VALID_OPS)])
    assert alter(admin, [entry(VALID, [(PBR, 0.0, True)])], validate_only=True) == [(key(VALID), 0, None)]
    assert everything(admin) == {key(VALID): {PBR: 4096.0}}


def test_empty_entries_empty_response(admin: KafkaAdminClient) -> None:
    assert alter(admin, []) == []
    assert alter(admin, [], validate_only=True) == []
    assert everything(admin) == {}


def test_default_entity_and_literal_default_name_are_different(admin: KafkaAdminClient) -> None:
    results = alter(
        admin,
        [entry([("user", None)], [(PBR, 1.0, False)]), entry([("user", "<default>")], [(PBR, 2.0, False)])],
    )
    assert results == [(key([("user", None)]), 0, None), (key([("user", "<default>")]), 0, None)]
    assert everything(admin) == {key([("user", None)]): {PBR: 1.0}, key([("user", "<default>")]): {PBR: 2.0}}
    default_only = describe(admin, [("user", 1, None)], strict=True)
    assert [[(c.entity_type, c.entity_name) for c in e.entity] for e in default_only.entries] == [
        [("user", None)]
    ]
    literal = describe(admin, [("user", 0, "<default>")], strict=True)
    assert [[(c.entity_type, c.entity_name) for c in e.entity] for e in literal.entries] == [
        [("user", "<default>")]
    ]


# ---------------------------------------------------------------- describe filter errors

IP_COMBINATION = (
    "Invalid entity filter component combination. IP filter component should not be used with "
    "user or clientId filter component."
)


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        pytest.param([("", 2, None)], INVALID_REQUEST, "Invalid empty entity type.", id="empty-type"),
        pytest.param(
            [("user", 2, None), ("user", 0, "a")],
            INVALID_REQUEST,
            "Entity type user cannot appear more than once in the filter.",
            id="type-twice",
        ),
        pytest.param(
            [("group", 0, "x")], UNSUPPORTED_VERSION, "Unsupported entity type group", id="unknown-type"
        ),
        pytest.param(
            [("user", 0, None)],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            id="exact-null",
        ),
        pytest.param(
            [("client-id", 1, "c")],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
            id="default-with-name",
        ),
        pytest.param(
            [("ip", 2, "1.2.3.4")],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
            id="specified-with-name",
        ),
        pytest.param([("user", 7, None)], INVALID_REQUEST, "Unknown match type 7", id="match-type-7"),
        pytest.param(
            [("user", -1, None)], INVALID_REQUEST, "Unknown match type -1", id="match-type-negative"
        ),
        pytest.param([("ip", 2, None), ("user", 0, "u")], INVALID_REQUEST, IP_COMBINATION, id="ip-and-user"),
        pytest.param(
            [("client-id", 1, None), ("ip", 1, None)], INVALID_REQUEST, IP_COMBINATION, id="client-and-ip"
        ),
        # Checked component by component, in request order.
        pytest.param(
            [("group", 0, "x"), ("", 2, None)],
            UNSUPPORTED_VERSION,
            "Unsupported entity type group",
            id="order-1",
        ),
        pytest.param(
            [("user", 7, None), ("group", 0, "x")], INVALID_REQUEST, "Unknown match type 7", id="order-2"
        ),
        pytest.param(
            [("ip", 0, None), ("user", 2, None)],
            INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            id="component-error-before-combination",
        ),
    ],
)
@pytest.mark.parametrize("strict", [False, True])
def test_describe_refused(
    admin: KafkaAdminClient,
    components: list[tuple[str, int, str | None]],
    code: int,
    message: str,
    strict: bool,
) -> None:
    alter(admin, [entry(VALID, VALID_OPS)])
    response = describe(admin, components, strict)
    assert (response.error_code, response.error_message, response.entries) == (code, message, None)


def test_describe_no_match_is_an_empty_list(admin: KafkaAdminClient) -> None:
    alter(admin, [entry(VALID, VALID_OPS)])
    response = describe(admin, [("user", 0, "nobody")], strict=False)
    assert (response.error_code, response.error_message, response.entries) == (0, "", [])
    response = describe(admin, [], strict=True)
    assert (response.error_code, response.error_message, response.entries) == (0, "", [])


# ----------------------------------------------------------------------- authorization


def test_unauthorized_describe_and_alter(
    sync_cluster: MockCluster, admin: KafkaAdminClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    alter(admin, [entry(VALID, VALID_OPS)])
    before = everything(admin)
    asked: list[str] = []

    def deny(principal: object, operation: str, host: str = "*") -> bool:
        asked.append(operation)
        return False

    monkeypatch.setattr(sync_cluster.authorizer, "authorize_cluster", deny)

    response = describe(admin, [("user", 2, None)], strict=False)
    assert (response.error_code, response.error_message, response.entries) == (
        CLUSTER_AUTHORIZATION_FAILED,
        None,
        None,
    )
    # Authorization comes before filter validation.
    response = describe(admin, [("", 7, "x")], strict=False)
    assert (response.error_code, response.error_message, response.entries) == (
        CLUSTER_AUTHORIZATION_FAILED,
        None,
        None,
    )

    entries = [
        entry([("user", "new")], [(PBR, 1.0, False)]),
        entry(VALID, [(PBR, 0.0, True)]),
        entry([], [(PBR, 1.0, False)]),
        entry([("group", "g"), ("user", None)], [(PBR, -1.0, False)]),
        entry([("user", "new")], [(PBR, 2.0, False)]),  # echoed again: one result per entry
    ]
    for validate_only in (False, True):
        results = alter(admin, entries, validate_only=validate_only)
        assert results == [
            (key(pairs), CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
            for pairs in (
                [("user", "new")],
                VALID,
                [],
                [("group", "g"), ("user", None)],
                [("user", "new")],
            )
        ]
    assert asked == ["DESCRIBE_CONFIGS", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALTER_CONFIGS"]

    monkeypatch.undo()
    assert everything(admin) == before


def test_unauthorized_alter_echoes_entity_components_as_sent(
    sync_cluster: MockCluster, admin: KafkaAdminClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync_cluster.authorizer, "authorize_cluster", lambda principal, op, host="*": False)
    request = AlterClientQuotasRequest(
        entries=[entry([("client-id", "c"), ("user", "u"), ("user", "v")], [(PBR, 1.0, False)])],
        validate_only=False,
    )
    response = send(admin, request)
    (only,) = response.entries
    assert [(e.entity_type, e.entity_name) for e in only.entity] == [
        ("client-id", "c"),
        ("user", "u"),
        ("user", "v"),
    ]
    assert (only.error_code, only.error_message) == (
        CLUSTER_AUTHORIZATION_FAILED,
        "Cluster authorization failed.",
    )
