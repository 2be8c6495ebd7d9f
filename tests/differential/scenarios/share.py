"""Share groups (KIP-932): ShareGroupHeartbeat through a member's life and with bad
input (empty and over-long member ids, no subscription, bad epochs, unknown groups and
members, a group id of another type); ShareGroupDescribe, ListGroups and DescribeGroups of
a share group; ShareFetch and ShareAcknowledge: records acquired by a group set to start
at the earliest offset, accepted, released and delivered again, acknowledgements of
records not acquired, and the share session's epochs (not found, wrong, acknowledgements
in an opening request, epoch 0 for ShareAcknowledge, the final epoch, a closed session);
FindCoordinator for share-partition keys; DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets through a group's life, for missing
groups and another type's, and under StandardAuthorizer.

Kafka assigns a share partition in the background once it is initialized, so the member
heartbeats, and the first fetch is repeated, on each side (`Step.until`) until it is
assigned and acquires."""

from __future__ import annotations

from typing import Any

from tests.differential.model import Later, Scenario, Step
from tests.differential.scenarios import acls
from tests.differential.scenarios.configs import incremental
from tests.differential.scenarios.groups import delete_groups, describe_groups, step, with_topic
from tests.differential.scenarios.records import batch, produce, records

FAMILY = "share"
SETTLE = 2.0
SGH, SGD, SHARE_FETCH, SHARE_ACK, LIST = 76, 77, 78, 79, 16
GROUP_RESOURCE, SET = 32, 0
MEMBER = "share-member-0000000000000000000000"  # 36 characters: the longest Kafka takes
KEEP = {"epoch": "member_epoch"}
ACCEPT, RELEASE = 1, 2


def heartbeat(group: str, member: str, epoch: Any, topics: list[str] | None = None, **kw: Any) -> Step:
    fields = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "rack_id": None,
        "subscribed_topic_names": topics,
    }
    return step(SGH, 1, fields, **kw)


def share_fetch(
    group: str,
    epoch: int,
    partitions: list[int] | None = None,
    acks: list[tuple[int, int, list[int]]] | None = None,
    version: int = 2,
    **kw: Any,
) -> Step:
    """A ShareFetch of `partitions` of the scenario's topic (its id kept as `topic_id`),
    acknowledging `acks` on partition 0."""
    topic_partitions = [{"partition_index": p, "acknowledgement_batches": []} for p in (partitions or [])]
    if acks:
        ack_batches = [
            {"first_offset": f, "last_offset": last, "acknowledge_types": t} for f, last, t in acks
        ]
        if topic_partitions:
            topic_partitions[0]["acknowledgement_batches"] = ack_batches
        else:
            topic_partitions = [{"partition_index": 0, "acknowledgement_batches": ack_batches}]
    topics = (
        [{"topic_id": Later(lambda c: c["topic_id"], "<topic_id>"), "partitions": topic_partitions}]
        if topic_partitions
        else []
    )
    fields = {
        "group_id": group,
        "member_id": kw.pop("member", MEMBER),
        "share_session_epoch": epoch,
        "max_wait_ms": kw.pop("max_wait_ms", 0),
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 500,
        "batch_size": 500,
        "share_acquire_mode": 0,
        "is_renew_ack": False,
        "topics": topics,
        "forgotten_topics_data": [],
    }
    return step(SHARE_FETCH, version, fields, **kw)


def share_acknowledge(group: str, epoch: int, acks: list[tuple[int, int, list[int]]], **kw: Any) -> Step:
    partitions = (
        [
            {
                "partition_index": 0,
                "acknowledgement_batches": [
                    {"first_offset": f, "last_offset": last, "acknowledge_types": t} for f, last, t in acks
                ],
            }
        ]
        if acks
        else []
    )
    fields = {
        "group_id": group,
        "member_id": MEMBER,
        "share_session_epoch": epoch,
        "is_renew_ack": False,
        "topics": [{"topic_id": Later(lambda c: c["topic_id"], "<topic_id>"), "partitions": partitions}]
        if partitions
        else [],
    }
    return step(SHARE_ACK, 2, fields, **kw)


def assigned(answer: Any) -> bool:
    """Whether a normalised ShareGroupHeartbeat answer assigns partitions."""
    return bool((answer.get("assignment") or {}).get("topic_partitions"))


def acquired(answer: Any) -> bool:
    """Whether a normalised ShareFetch answer acquired records (anywhere in its tree)."""
    if isinstance(answer, dict):
        return bool(answer.get("acquired_records")) or any(acquired(v) for v in answer.values())
    if isinstance(answer, list):
        return any(acquired(v) for v in answer)
    return False


def scenarios() -> list[Scenario]:
    g = "share-life"
    ahead = Later(lambda c: (c.get("epoch") or 0) + 2, "<epoch + 2>")
    life = with_topic(
        g,
        partitions=1,
        family=FAMILY,
        steps=[
            incremental([(GROUP_RESOURCE, g, [("share.auto.offset.reset", SET, "earliest")])], compare=False),
            heartbeat(g, MEMBER, 0, [g], label="ShareGroupHeartbeat-join", keep=KEEP, compare=False),
            # until the member is assigned the partition (Kafka: once initialized, later)
            heartbeat(
                g,
                MEMBER,
                Later(lambda c: c.get("epoch"), "<epoch>"),
                [g],
                label="ShareGroupHeartbeat-assigned",
                keep=KEEP,
                until=assigned,
                settle=15.0,
                compare=False,
            ),
            produce(g, batch(records(3)), compare=False),
            heartbeat(g, MEMBER, ahead, label="ShareGroupHeartbeat-fenced"),
            heartbeat(g, "share-unknown-member", 1, label="ShareGroupHeartbeat-unknown-member"),
            step(LIST, 5, {"states_filter": [], "types_filter": ["share"]}, label="ListGroups-share"),
            describe_groups([g], 5, label="DescribeGroups-share-v5"),
            describe_groups([g], 6, label="DescribeGroups-share-v6"),
            step(
                SGD,
                1,
                {"group_ids": ["share-no-such-group", ""], "include_authorized_operations": False},
                label="ShareGroupDescribe-missing",
            ),
            share_fetch(g, 3, [0], label="ShareFetch-no-session"),
            share_fetch(g, 0, [0], acks=[(0, 0, [ACCEPT])], label="ShareFetch-opening-with-acks"),
            share_fetch(g, 0, [0], max_wait_ms=200, label="ShareFetch-open", until=acquired, settle=10.0),
            share_fetch(g, 7, label="ShareFetch-wrong-epoch"),
            share_fetch(g, 1, acks=[(0, 1, [ACCEPT])], label="ShareFetch-accept"),
            share_acknowledge(g, 0, [], label="ShareAcknowledge-epoch-0"),
            share_acknowledge(g, 2, [(0, 0, [ACCEPT])], label="ShareAcknowledge-not-acquired"),
            share_acknowledge(g, 3, [(2, 2, [RELEASE])], label="ShareAcknowledge-release"),
            share_fetch(g, 4, label="ShareFetch-redelivered", until=acquired, settle=10.0),
            share_acknowledge(g, 5, [(2, 2, [ACCEPT])], label="ShareAcknowledge-accept"),
            share_acknowledge(g, -1, [], label="ShareAcknowledge-final"),
            share_fetch(g, 4, label="ShareFetch-closed"),
            delete_groups([g], label="DeleteGroups-non-empty"),
            heartbeat(g, MEMBER, -1, label="ShareGroupHeartbeat-leave"),
            step(
                SGD,
                1,
                {"group_ids": [g], "include_authorized_operations": False},
                label="ShareGroupDescribe-left",
            ),
            delete_groups([g], label="DeleteGroups-empty"),
        ],
    )
    out = [life, *offsets_scenarios()]
    cases: list[tuple[str, Step]] = [
        ("empty-group", heartbeat("", MEMBER, 0, ["x"])),
        ("empty-member", heartbeat("share-hb-em", "", 0, ["x"])),
        ("long-member", heartbeat("share-hb-lm", MEMBER + "x", 0, ["x"])),
        ("blank-member", heartbeat("share-hb-bm", "   ", 0, ["x"])),
        ("no-subscription", heartbeat("share-hb-ns", MEMBER, 0, None)),
        ("empty-subscription", heartbeat("share-hb-es", MEMBER, 0, [])),
        ("unknown-group", heartbeat("share-hb-ug", MEMBER, 3)),
        ("leave-unknown", heartbeat("share-hb-lu", MEMBER, -1)),
        ("bad-epoch", heartbeat("share-hb-be", MEMBER, -2, ["x"])),
        ("unknown-topic", heartbeat("share-hb-ut", MEMBER, 0, ["share-no-such-topic"])),
    ]
    for case, first in cases:
        group = str(first.fields["group_id"])
        tail = (
            [heartbeat(group, MEMBER, -1, compare=False), delete_groups([group], compare=False)]
            if group
            else []
        )
        out.append(Scenario(f"share-heartbeat-{case}", FAMILY, (first, *tail)))
    for case, key in (
        ("share-key", "share-life:AAAAAAAAAAAAAAAAAAAAAQ:0"),
        ("share-key-other", "share-other:zMt5X8uJQq2mVsTS7YbDOw:7"),
        ("share-key-malformed", "share-life:not-an-id:0"),
        ("share-key-two-parts", "share-life:0"),
    ):
        fields = {"key": key, "key_type": 2, "coordinator_keys": [key]}
        # Kafka answers COORDINATOR_NOT_AVAILABLE while it creates __share_group_state
        out.append(Scenario(f"share-find-{case}-v6", FAMILY, (step(10, 6, fields, settle=15.0),)))
    consumer = "share-consumer-group"
    out.append(
        Scenario(
            "share-heartbeat-consumer-group",
            FAMILY,
            (
                step(
                    68,
                    1,
                    {
                        "group_id": consumer,
                        "member_id": MEMBER,
                        "member_epoch": 0,
                        "instance_id": None,
                        "rack_id": None,
                        "rebalance_timeout_ms": 30000,
                        "subscribed_topic_names": ["x"],
                        "subscribed_topic_regex": None,
                        "server_assignor": None,
                        "topic_partitions": [],
                    },
                    compare=False,
                ),
                heartbeat(consumer, MEMBER, 0, ["x"]),
                step(SGD, 1, {"group_ids": [consumer], "include_authorized_operations": False}),
                share_fetch(consumer, 0, member="", label="ShareFetch-empty-member"),
                step(
                    68,
                    1,
                    {
                        "group_id": consumer,
                        "member_id": MEMBER,
                        "member_epoch": -1,
                        "instance_id": None,
                        "rack_id": None,
                        "rebalance_timeout_ms": -1,
                        "subscribed_topic_names": None,
                        "subscribed_topic_regex": None,
                        "server_assignor": None,
                        "topic_partitions": None,
                    },
                    compare=False,
                ),
                delete_groups([consumer], compare=False),
            ),
        )
    )
    return out


# -- share-group offsets: DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
NO_TOPIC = "share-offsets-no-such-topic"


def describe_offsets(
    group: str, topics: list[tuple[str, list[int]]] | None, version: int = 1, **kw: Any
) -> Step:
    wanted = None if topics is None else [{"topic_name": t, "partitions": ps} for t, ps in topics]
    return step(DESCRIBE_OFFSETS, version, {"groups": [{"group_id": group, "topics": wanted}]}, **kw)


def alter_offsets(group: str, topics: list[tuple[str, list[tuple[int, int]]]], **kw: Any) -> Step:
    wanted = [
        {"topic_name": t, "partitions": [{"partition_index": p, "start_offset": o} for p, o in ps]}
        for t, ps in topics
    ]
    return step(ALTER_OFFSETS, 0, {"group_id": group, "topics": wanted}, **kw)


def delete_offsets(group: str, topics: list[str], **kw: Any) -> Step:
    return step(DELETE_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": t} for t in topics]}, **kw)


def share_state_ready(group: str) -> Step:
    """FindCoordinator for a share-partition key, repeated until the share coordinator
    answers (Kafka creates __share_group_state when it is first asked)."""
    key = f"{group}:AAAAAAAAAAAAAAAAAAAAAQ:0"
    return step(10, 6, {"key": key, "key_type": 2, "coordinator_keys": [key]}, settle=30.0, compare=False)


def offsets_scenarios() -> list[Scenario]:
    """A share group's offsets through its life: before any state (-1), while a member
    holds the partitions (alter and delete refused), after records were accepted and the
    member left (start offset and lag), altered (created partitions, unknown topics and
    partitions), deleted; and the refusals of groups that are missing or of another type."""
    g = "share-offsets"
    life = with_topic(
        g,
        partitions=2,
        family=FAMILY,
        steps=[
            incremental([(GROUP_RESOURCE, g, [("share.auto.offset.reset", SET, "earliest")])], compare=False),
            produce(g, batch(records(3)), compare=False),
            # Kafka creates __share_group_state at the share coordinator's first use
            share_state_ready(g),
            describe_offsets(
                g, [(g, [0, 1]), (NO_TOPIC, [0])], label="DescribeShareGroupOffsets-no-group", settle=30.0
            ),
            describe_offsets(g, None, label="DescribeShareGroupOffsets-all-no-group"),
            describe_offsets(g, [], label="DescribeShareGroupOffsets-no-topics"),
            heartbeat(g, MEMBER, 0, [g], keep=KEEP, compare=False),
            heartbeat(
                g,
                MEMBER,
                Later(lambda c: c.get("epoch"), "<epoch>"),
                [g],
                keep=KEEP,
                until=assigned,
                settle=15.0,
                compare=False,
            ),
            describe_offsets(g, [(g, [0, 1])], label="DescribeShareGroupOffsets-assigned"),
            alter_offsets(g, [(g, [(0, 1)])], label="AlterShareGroupOffsets-non-empty"),
            delete_offsets(g, [g], label="DeleteShareGroupOffsets-non-empty"),
            share_fetch(g, 0, [0], max_wait_ms=200, until=acquired, settle=10.0, compare=False),
            share_fetch(g, 1, acks=[(0, 1, [ACCEPT])], compare=False),
            share_acknowledge(g, -1, [], compare=False),
            describe_offsets(g, [(g, [0, 1])], label="DescribeShareGroupOffsets-acknowledged", settle=10.0),
            heartbeat(g, MEMBER, -1, compare=False),
            describe_offsets(g, [(g, [0, 1])], version=0, label="DescribeShareGroupOffsets-v0", settle=10.0),
            describe_offsets(g, None, label="DescribeShareGroupOffsets-all", settle=10.0),
            alter_offsets(
                g,
                [(g, [(0, 1), (1, 0), (7, 5)]), (NO_TOPIC, [(0, 0)])],
                label="AlterShareGroupOffsets-empty",
            ),
            describe_offsets(g, [(g, [0, 1])], label="DescribeShareGroupOffsets-altered", settle=10.0),
            step(
                SGD,
                1,
                {"group_ids": [g], "include_authorized_operations": False},
                label="ShareGroupDescribe-altered",
            ),
            delete_offsets(g, [g, NO_TOPIC], label="DeleteShareGroupOffsets-empty"),
            delete_offsets(g, [g], label="DeleteShareGroupOffsets-again"),
            describe_offsets(g, None, label="DescribeShareGroupOffsets-all-deleted", settle=10.0),
            describe_offsets(g, [(g, [0])], label="DescribeShareGroupOffsets-deleted", settle=10.0),
            step(
                SGD,
                1,
                {"group_ids": [g], "include_authorized_operations": False},
                label="ShareGroupDescribe-deleted",
            ),
            delete_groups([g], compare=False),
        ],
    )
    created = "share-offsets-created"
    create = with_topic(
        created,
        partitions=1,
        family=FAMILY,
        steps=[
            alter_offsets(created, [(NO_TOPIC, [(0, 0)])], label="AlterShareGroupOffsets-unknown-topic-only"),
            step(
                SGD,
                1,
                {"group_ids": [created], "include_authorized_operations": False},
                label="ShareGroupDescribe-not-created",
            ),
            alter_offsets(
                created,
                [(created, [(0, 4)])],
                label="AlterShareGroupOffsets-new-group",
                # until Kafka's group and share coordinators see the new topic
                settle=15.0,
            ),
            step(
                SGD,
                1,
                {"group_ids": [created], "include_authorized_operations": False},
                label="ShareGroupDescribe-created",
            ),
            describe_offsets(
                created, [(created, [0])], label="DescribeShareGroupOffsets-beyond-end", settle=10.0
            ),
            delete_groups([created], label="DeleteGroups-created"),
        ],
    )
    beyond = "share-offsets-beyond"
    partition_beyond = with_topic(
        beyond,
        partitions=1,
        family=FAMILY,
        steps=[describe_offsets(beyond, [(beyond, [5])], label="DescribeShareGroupOffsets-partition-beyond")],
    )
    negative = "share-offsets-negative"
    negative_partition = with_topic(
        negative,
        partitions=1,
        family=FAMILY,
        steps=[
            share_state_ready(negative),
            alter_offsets(
                negative,
                [(negative, [(0, 1), (-1, 0)])],
                label="AlterShareGroupOffsets-negative-partition",
                settle=15.0,
            ),
            step(
                SGD,
                1,
                {"group_ids": [negative], "include_authorized_operations": False},
                label="ShareGroupDescribe-negative-partition",
            ),
            describe_offsets(negative, [(negative, [0])], label="DescribeShareGroupOffsets-negative-named"),
            describe_offsets(negative, None, label="DescribeShareGroupOffsets-negative-all"),
            describe_offsets(
                negative, [(negative, [-1])], label="DescribeShareGroupOffsets-negative-partition"
            ),
            describe_offsets(negative, [(negative, [])], label="DescribeShareGroupOffsets-no-partitions"),
            delete_groups([negative], compare=False),
        ],
    )
    out = [life, create, partition_beyond, negative_partition, authorized_scenario()]
    missing = "share-offsets-missing"
    for label, first in (
        ("delete-missing", delete_offsets(missing, [missing])),
        ("delete-empty-id", delete_offsets("", [missing])),
        ("alter-empty-id", alter_offsets("", [(missing, [(0, 0)])])),
        ("describe-empty-id", describe_offsets("", [(missing, [0])])),
    ):
        out.append(Scenario(f"share-offsets-{label}", FAMILY, (first,)))
    consumer = "share-offsets-consumer"
    out.append(
        Scenario(
            "share-offsets-consumer-group",
            FAMILY,
            (
                consumer_heartbeat(consumer, 0, ["x"]),
                alter_offsets(
                    consumer, [(consumer, [(0, 0)])], label="AlterShareGroupOffsets-consumer-group"
                ),
                delete_offsets(consumer, [consumer], label="DeleteShareGroupOffsets-consumer-group"),
                describe_offsets(consumer, None, label="DescribeShareGroupOffsets-all-consumer-group"),
                describe_offsets(
                    consumer, [(consumer, [0])], label="DescribeShareGroupOffsets-consumer-group"
                ),
                consumer_heartbeat(consumer, -1, None),
                delete_groups([consumer], compare=False),
            ),
        )
    )
    return out


def authorized_scenario() -> Scenario:
    """The offset APIs under StandardAuthorizer (the acls family's layout): alice without
    ACLs on the group, then on the group but not the topic, then on both."""
    g = "share-offsets-acl"
    alice: dict[str, Any] = {"user": acls.USER}

    def grant(operations: list[tuple[int, str, int]]) -> Step:
        return acls.create_acls([acls.acl(kind, name, op) for kind, name, op in operations], compare=False)

    steps = [
        *acls.create_topic(g),
        share_state_ready(g),
        describe_offsets(g, None, label="DescribeShareGroupOffsets-no-group-acl", **alice),
        alter_offsets(g, [(g, [(0, 0)])], label="AlterShareGroupOffsets-no-group-acl", **alice),
        delete_offsets(g, [g], label="DeleteShareGroupOffsets-no-group-acl", **alice),
        grant([(acls.GROUP, g, acls.DESCRIBE), (acls.GROUP, g, acls.READ), (acls.GROUP, g, acls.DELETE)]),
        describe_offsets(
            g, [(g, [0])], label="DescribeShareGroupOffsets-no-topic-acl", settle=acls.SETTLE, **alice
        ),
        describe_offsets(g, None, label="DescribeShareGroupOffsets-all-no-topic-acl", **alice),
        alter_offsets(g, [(g, [(0, 0)])], label="AlterShareGroupOffsets-no-topic-acl", **alice),
        delete_offsets(g, [g], label="DeleteShareGroupOffsets-no-topic-acl", **alice),
        grant([(acls.TOPIC, g, acls.DESCRIBE), (acls.TOPIC, g, acls.READ)]),
        alter_offsets(g, [(g, [(0, 0)])], label="AlterShareGroupOffsets-granted", settle=15.0, **alice),
        describe_offsets(g, None, label="DescribeShareGroupOffsets-granted", settle=acls.SETTLE, **alice),
        delete_offsets(g, [g], label="DeleteShareGroupOffsets-granted", **alice),
        delete_groups([g], compare=False),
    ]
    return Scenario(g, FAMILY, tuple(steps), config=acls.CONFIG)


def consumer_heartbeat(group: str, epoch: int, topics: list[str] | None) -> Step:
    """A consumer-protocol member joining (epoch 0) or leaving (-1): the group id is then
    a consumer group's."""
    fields = {
        "group_id": group,
        "member_id": MEMBER,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30000 if epoch == 0 else -1,
        "subscribed_topic_names": topics,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [] if epoch == 0 else None,
    }
    return step(68, 1, fields, compare=False)
