"""Metadata, CreateTopics, DeleteTopics and CreatePartitions with valid and invalid input:
empty, duplicate, unknown, overlong (250 characters) and illegal names; out-of-range
partition counts and replication factors; manual assignments; topic configs; validate-only.
Every topic name is the scenario's own, so scenarios share the family's clusters freely.
A created topic is deleted by the scenario's last step (compared too)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.differential.model import Scenario, Step

FAMILY = "topics"
CREATE, DELETE, PARTITIONS, METADATA = 19, 20, 37, 3
CREATE_VERSIONS = (2, 4, 5, 7)
SETTLE = 2.0  # Kafka's broker applies the controller's metadata a moment after the answer


def create(name: str, partitions: int = 1, rf: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": extra.pop("assignments", []),
        "configs": [{"name": k, "value": v} for k, v in extra.pop("configs", {}).items()],
    }


def create_step(version: int, topics: list[dict[str, Any]], validate_only: bool = False, **kw: Any) -> Step:
    return Step(CREATE, version, {"topics": topics, "timeout_ms": 5000, "validate_only": validate_only}, **kw)


def metadata(names: list[str], version: int = 12, **kw: Any) -> Step:
    return Step(
        METADATA,
        version,
        {
            "topics": [{"name": n} for n in names],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
        **kw,
    )


def delete(names: list[str], version: int = 6, **kw: Any) -> Step:
    fields: dict[str, Any] = {"timeout_ms": 5000}
    if version >= 6:
        fields["topics"] = [{"name": n} for n in names]
    else:
        fields["topic_names"] = names
    return Step(DELETE, version, fields, **kw)


# (case, topic spec builder given a unique name, whether it creates something)
def create_cases() -> list[tuple[str, Any, bool]]:
    return [
        ("valid", lambda n: [create(n)], True),
        ("three-partitions", lambda n: [create(n, 3)], True),
        ("default-partitions-rf", lambda n: [create(n, -1, -1)], True),
        ("name-249", lambda n: [create(n + "x" * (249 - len(n)))], True),
        ("name-250", lambda n: [create(n + "x" * (250 - len(n)))], False),
        ("name-empty", lambda n: [create("")], False),
        ("name-dot", lambda n: [create(".")], False),
        ("name-dotdot", lambda n: [create("..")], False),
        ("name-space", lambda n: [create(n + " x")], False),
        ("name-slash", lambda n: [create(n + "/x")], False),
        ("name-unicode", lambda n: [create(n + "é")], False),
        ("name-duplicate", lambda n: [create(n), create(n)], False),
        ("partitions-zero", lambda n: [create(n, 0)], False),
        ("partitions-minus-two", lambda n: [create(n, -2)], False),
        ("rf-zero", lambda n: [create(n, 1, 0)], False),
        ("rf-two", lambda n: [create(n, 1, 2)], False),
        ("rf-minus-two", lambda n: [create(n, 1, -2)], False),
        ("assignment", lambda n: [create(n, -1, -1, assignments=[{"partition_index": 0, "broker_ids": [0]}])], True),
        (
            "assignment-with-count",
            lambda n: [create(n, 1, -1, assignments=[{"partition_index": 0, "broker_ids": [0]}])],
            False,
        ),
        (
            "assignment-unknown-broker",
            lambda n: [create(n, -1, -1, assignments=[{"partition_index": 0, "broker_ids": [7]}])],
            False,
        ),
        (
            "assignment-gap",
            lambda n: [create(n, -1, -1, assignments=[{"partition_index": 1, "broker_ids": [0]}])],
            False,
        ),
        (
            "assignment-duplicate-broker",
            lambda n: [create(n, -1, -1, assignments=[{"partition_index": 0, "broker_ids": [0, 0]}])],
            False,
        ),
        ("config-retention", lambda n: [create(n, configs={"retention.ms": "3600000"})], True),
        ("config-compact", lambda n: [create(n, configs={"cleanup.policy": "compact"})], True),
        ("config-unknown", lambda n: [create(n, configs={"no.such.config": "1"})], False),
        ("config-bad-number", lambda n: [create(n, configs={"retention.ms": "soon"})], False),
        ("config-bad-policy", lambda n: [create(n, configs={"cleanup.policy": "shred"})], False),
        ("config-min-isr-above-rf", lambda n: [create(n, configs={"min.insync.replicas": "2"})], True),
        ("config-null-value", lambda n: [create(n, configs={"retention.ms": None})], True),
        ("internal-name", lambda n: [create("__consumer_offsets")], False),
    ]


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for case, topics, creates in create_cases():
        for version in CREATE_VERSIONS:
            for validate_only in (True, False):
                name = f"topics-create-{case}-v{version}{'-validate' if validate_only else ''}"
                spec = topics(name)
                steps = [create_step(version, spec, validate_only)]
                if creates and not validate_only:
                    real = spec[0]["name"]
                    steps.append(metadata([real], settle=SETTLE))
                    steps.append(delete([real]))
                elif spec[0]["name"] and not spec[0]["name"].startswith("__"):
                    steps.append(metadata([spec[0]["name"]], label="Metadata-after"))
                out.append(Scenario(name, FAMILY, tuple(steps)))
    # existing topic: create again, delete twice, metadata at every version
    for version in CREATE_VERSIONS:
        name = f"topics-create-existing-v{version}"
        out.append(
            Scenario(
                name,
                FAMILY,
                (
                    create_step(7, [create(name)], compare=False),
                    metadata([name], settle=SETTLE, compare=False),
                    create_step(version, [create(name)], label="CreateTopics-again"),
                    delete([name]),
                ),
            )
        )
    for version in range(1, 7):
        name = f"topics-delete-v{version}"
        out.append(
            Scenario(
                name,
                FAMILY,
                (
                    create_step(7, [create(name, 2)], compare=False),
                    metadata([name], settle=SETTLE, compare=False),
                    delete([name], version, label="DeleteTopics-existing"),
                    delete([name], version, label="DeleteTopics-again", settle=SETTLE),
                    delete([name + "-unknown"], version, label="DeleteTopics-unknown"),
                    delete([""], version, label="DeleteTopics-empty"),
                    delete([name + "-dup", name + "-dup"], version, label="DeleteTopics-duplicate"),
                ),
            )
        )
    for version in (6,):
        out.append(
            Scenario(
                f"topics-delete-by-unknown-id-v{version}",
                FAMILY,
                (
                    Step(
                        DELETE,
                        version,
                        {"topics": [{"name": None, "topic_id": uuid.UUID(int=12345)}], "timeout_ms": 5000},
                    ),
                ),
            )
        )
    for version in range(0, 14):
        name = f"topics-metadata-v{version}"
        # v0-3 have no allow_auto_topic_creation: an unknown topic named there is created
        # in the background on both sides, so only v4+ name one (settle repeats could
        # otherwise see Kafka's creation finish and the mock's first answer not)
        named = (name, name + "-unknown") if version >= 4 else (name,)
        topics_field: Any = [{"name": n} for n in named]
        fields: dict[str, Any] = {"topics": topics_field, "allow_auto_topic_creation": False}
        out.append(
            Scenario(
                name,
                FAMILY,
                (
                    create_step(7, [create(name, 3)], compare=False),
                    Step(METADATA, version, fields, settle=SETTLE),
                    delete([name]),
                ),
            )
        )
    for case, names in (("empty", [""]), ("illegal", ["a b"]), ("overlong", ["y" * 250])):
        for version in (1, 4, 12):
            out.append(
                Scenario(
                    f"topics-metadata-{case}-v{version}",
                    FAMILY,
                    (Step(METADATA, version, {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": False}),),
                )
            )
    out.append(
        Scenario(
            "topics-metadata-unknown-id-v12",
            FAMILY,
            (Step(METADATA, 12, {"topics": [{"name": None, "topic_id": uuid.UUID(int=999)}]}),),
        )
    )
    partition_cases: list[tuple[str, int, Any, bool]] = [
        ("grow", 3, None, False),
        ("grow-validate", 3, None, True),
        ("same", 2, None, False),
        ("shrink", 1, None, False),
        ("grow-assigned", 3, [{"broker_ids": [0]}], False),
        ("grow-assignment-count-wrong", 4, [{"broker_ids": [0]}], False),
        ("grow-assignment-unknown-broker", 3, [{"broker_ids": [5]}], False),
        ("grow-assignment-empty", 3, [{"broker_ids": []}], False),
    ]
    for case, count, assignments, validate_only in partition_cases:
        for version in range(0, 4):
            name = f"topics-partitions-{case}-v{version}"
            request = {
                "topics": [{"name": name, "count": count, "assignments": assignments}],
                "timeout_ms": 5000,
                "validate_only": validate_only,
            }
            out.append(
                Scenario(
                    name,
                    FAMILY,
                    (
                        create_step(7, [create(name, 2)], compare=False),
                        metadata([name], settle=SETTLE, compare=False),
                        Step(PARTITIONS, version, request),
                        metadata([name], settle=SETTLE),
                        delete([name], compare=False),
                    ),
                )
            )
    for version in range(0, 4):
        for case, topics in (
            ("unknown", [{"name": "topics-partitions-nope", "count": 2, "assignments": None}]),
            ("duplicate", [{"name": "topics-partitions-dup", "count": 2, "assignments": None}] * 2),
        ):
            out.append(
                Scenario(
                    f"topics-partitions-{case}-v{version}",
                    FAMILY,
                    (Step(PARTITIONS, version, {"topics": topics, "timeout_ms": 5000, "validate_only": False}),),
                )
            )
    return out
