"""The client quota KIPs (KIP-546's DescribeClientQuotas/AlterClientQuotas, KIP-599's
controller mutation rate, KIP-612's per-IP connection rate): every entity combination
(user, client-id, ip; named and default; user with client-id; the combinations Kafka
refuses), every quota key and unknown ones, bad values (negative, zero, NaN, infinite,
fractional where a whole number is needed), validate-only, removals, and what
DescribeClientQuotas then answers under exact, default and any matches, strict and not.
Error codes and error messages are compared. Every scenario starts with no quotas on
either side (`reset`)."""

from __future__ import annotations

import time
from typing import Any

from tests.differential.model import Scenario, Step

FAMILY = "quotas"
DESCRIBE, ALTER = 48, 49
SETTLE = 2.0  # the broker applies the controller's quota records a moment after the answer

Entity = list[tuple[str, str | None]]

ENTITIES: dict[str, Entity] = {
    "user": [("user", "alice")],
    "user-default": [("user", None)],
    "client": [("client-id", "app")],
    "client-default": [("client-id", None)],
    "user-client": [("user", "alice"), ("client-id", "app")],
    "user-default-client": [("user", None), ("client-id", "app")],
    "user-client-default": [("user", "alice"), ("client-id", None)],
    "user-default-client-default": [("user", None), ("client-id", None)],
    "ip": [("ip", "127.0.0.1")],
    "ip-v6": [("ip", "::1")],
    "ip-default": [("ip", None)],
    "ip-bad": [("ip", "not-an-ip")],
    "user-ip": [("user", "alice"), ("ip", "127.0.0.1")],
    "client-ip": [("client-id", "app"), ("ip", "127.0.0.1")],
    "unknown-type": [("group", "g")],
    "empty": [],
    "user-twice": [("user", "alice"), ("user", "bob")],
    "user-empty-name": [("user", "")],
}

CLIENT_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
VALUES: dict[str, float] = {
    "value": 1024.0,
    "zero": 0.0,
    "negative": -1.0,
    "fraction": 1.5,
    "nan": float("nan"),
    "infinite": float("inf"),
    "huge": 1e20,
}


def entity(parts: Entity) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in parts]


def alter(parts: Entity, ops: dict[str, float | None], version: int = 1, validate_only: bool = False, **kw: Any) -> Step:
    return Step(
        ALTER,
        version,
        {
            "entries": [
                {
                    "entity": entity(parts),
                    "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None} for k, v in ops.items()],
                }
            ],
            "validate_only": validate_only,
        },
        **kw,
    )


def describe(components: list[tuple[str, int, str | None]], strict: bool, version: int = 1, **kw: Any) -> Step:
    return Step(
        DESCRIBE,
        version,
        {"components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components], "strict": strict},
        **kw,
    )


def filters_for(parts: Entity) -> list[tuple[str, list[tuple[str, int, str | None]], bool]]:
    """Describe filters that should find `parts`' entry: exact/default per component,
    strict and not; and any-match on its first type."""
    exact = [(t, 1 if n is None else 0, n) for t, n in parts]
    out = [("exact-strict", exact, True), ("exact", exact, False)]
    if parts:
        out.append(("any", [(parts[0][0], 2, None)], False))
    out.append(("all", [], False))
    return out


def reset(side: Any) -> None:
    """Removes every quota on one side (tests/differential/runner.Connections), then waits
    until DescribeClientQuotas lists none."""
    deadline = time.monotonic() + 10
    while True:
        answer = side.send(describe([], False))
        entries = [] if isinstance(answer, dict) else list(answer.entries or [])
        if not entries:
            break
        for entry in entries:
            parts = [(e.entity_type, e.entity_name) for e in entry.entity]
            side.send(alter(parts, {v.key: None for v in entry.values}))
        if time.monotonic() > deadline:
            raise RuntimeError(f"quotas still listed after reset: {answer}")
        time.sleep(0.1)
    side.close()


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    # Every entity combination with each key (the valid ones, those Kafka refuses for the
    # entity, and an unknown key), then the describe filters that should find it.
    keys = (*CLIENT_KEYS, "connection_creation_rate", "no_such_quota")
    for name, parts in ENTITIES.items():
        for key in keys:
            for version in (0, 1):
                steps = [alter(parts, {key: 1024.0}, version)]
                for label, components, strict in filters_for(parts):
                    steps.append(describe(components, strict, version, settle=SETTLE, label=f"Describe-{label}"))
                out.append(Scenario(f"quotas-{name}-{key}-v{version}", FAMILY, tuple(steps)))
    # Bad values per key, on a named user (or ip for the connection rate), validate-only too.
    for key in (*CLIENT_KEYS, "connection_creation_rate"):
        # not the address the runner connects from: a bad quota accepted there would
        # refuse the runner's own connections for the rest of the family
        parts = [("ip", "192.0.2.1")] if key == "connection_creation_rate" else ENTITIES["user"]
        for value_name, value in VALUES.items():
            for validate_only in (False, True):
                suffix = "-validate" if validate_only else ""
                out.append(
                    Scenario(
                        f"quotas-value-{key}-{value_name}{suffix}",
                        FAMILY,
                        (
                            alter(parts, {key: value}, validate_only=validate_only),
                            describe([], False, settle=SETTLE, label="Describe-all"),
                        ),
                    )
                )
    # Set, change, remove one key of two, remove all; remove what was never set.
    for name in ("user", "client", "user-client", "ip", "user-default", "client-default"):
        parts = ENTITIES[name]
        key = "connection_creation_rate" if name.startswith("ip") else "producer_byte_rate"
        other = "connection_creation_rate" if name.startswith("ip") else "consumer_byte_rate"
        out.append(
            Scenario(
                f"quotas-lifecycle-{name}",
                FAMILY,
                (
                    alter(parts, {key: 100.0, other: 200.0} if key != other else {key: 100.0}, label="Alter-set"),
                    describe([], False, settle=SETTLE, label="Describe-set"),
                    alter(parts, {key: 300.0}, label="Alter-change"),
                    describe([], False, settle=SETTLE, label="Describe-changed"),
                    alter(parts, {key: None}, label="Alter-remove-one"),
                    describe([], False, settle=SETTLE, label="Describe-removed-one"),
                    alter(parts, {key: None, other: None}, label="Alter-remove-all"),
                    describe([], False, settle=SETTLE, label="Describe-removed-all"),
                    alter(parts, {key: None}, label="Alter-remove-unset"),
                ),
            )
        )
    # Two ops on one key in one entry; two entries for one entity; set and remove at once.
    out.append(
        Scenario(
            "quotas-same-key-twice",
            FAMILY,
            (
                Step(
                    ALTER,
                    1,
                    {
                        "entries": [
                            {
                                "entity": entity(ENTITIES["user"]),
                                "ops": [
                                    {"key": "producer_byte_rate", "value": 1.0, "remove": False},
                                    {"key": "producer_byte_rate", "value": 2.0, "remove": False},
                                ],
                            }
                        ],
                        "validate_only": False,
                    },
                ),
                describe([], False, settle=SETTLE),
            ),
        )
    )
    out.append(
        Scenario(
            "quotas-entity-twice",
            FAMILY,
            (
                Step(
                    ALTER,
                    1,
                    {
                        "entries": [
                            {"entity": entity(ENTITIES["user"]), "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}]},
                            {"entity": entity(ENTITIES["user"]), "ops": [{"key": "consumer_byte_rate", "value": 2.0, "remove": False}]},
                        ],
                        "validate_only": False,
                    },
                ),
                describe([], False, settle=SETTLE),
            ),
        )
    )
    # Describe filters on a populated store: every match type per entity type, strict and
    # not, and the filters Kafka refuses.
    populate = [
        alter(ENTITIES[name], {"producer_byte_rate": 1000.0 + i}, compare=False)
        for i, name in enumerate(
            ("user", "user-default", "client", "client-default", "user-client", "user-default-client", "ip", "ip-default")
        )
    ]
    filters: dict[str, list[tuple[str, int, str | None]]] = {
        "user-exact": [("user", 0, "alice")],
        "user-default": [("user", 1, None)],
        "user-any": [("user", 2, None)],
        "client-exact": [("client-id", 0, "app")],
        "client-default": [("client-id", 1, None)],
        "client-any": [("client-id", 2, None)],
        "ip-exact": [("ip", 0, "127.0.0.1")],
        "ip-default": [("ip", 1, None)],
        "ip-any": [("ip", 2, None)],
        "user-any-client-any": [("user", 2, None), ("client-id", 2, None)],
        "user-exact-client-exact": [("user", 0, "alice"), ("client-id", 0, "app")],
        "user-default-client-exact": [("user", 1, None), ("client-id", 0, "app")],
        "user-exact-unknown": [("user", 0, "nobody")],
        "exact-null-name": [("user", 0, None)],
        "default-with-name": [("user", 1, "alice")],
        "bad-match-type": [("user", 7, None)],
        "unknown-type": [("group", 2, None)],
        "type-twice": [("user", 2, None), ("user", 0, "alice")],
        "user-ip": [("user", 2, None), ("ip", 2, None)],
        "all": [],
    }
    for name, components in filters.items():
        for strict in (False, True):
            for version in (0, 1):
                out.append(
                    Scenario(
                        f"quotas-describe-{name}{'-strict' if strict else ''}-v{version}",
                        FAMILY,
                        (*populate, describe(components, strict, version, settle=SETTLE)),
                    )
                )
    return out
