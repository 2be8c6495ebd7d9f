"""Consumer groups, classic and KIP-848's: FindCoordinator; JoinGroup, SyncGroup,
Heartbeat and LeaveGroup at every version served, through a member's life and with bad
input (empty group id, unknown member id, wrong generation, session timeouts out of the
group.min/max.session.timeout.ms range, mismatched protocols, static members with
group.instance.id, the member id required from JoinGroup v4); OffsetCommit, OffsetFetch
and OffsetDelete (unknown topics, simple-consumer commits with generation -1, metadata over
offset.metadata.max.bytes, several groups at once from OffsetFetch v8, topic ids from v10);
ListGroups with state and type filters; DescribeGroups and DeleteGroups for unknown, empty,
dead and non-empty groups; ConsumerGroupHeartbeat and ConsumerGroupDescribe (joining with
epoch 0, unknown member ids, fenced epochs, unknown assignors, regex subscriptions, leaving
with epoch -1).

Each scenario has its own group and topic names and leaves no group behind (members leave,
the group is deleted: not compared), so ListGroups sees only the scenario's own groups. The
member ids a broker generates are captured per side (`keep`, `Later`) and sent back to it;
the normaliser makes them equal in the answers."""

from __future__ import annotations

import uuid
from typing import Any

from tests.differential.model import Later, Scenario, Step
from tests.differential.scenarios.configs import fit
from tests.differential.scenarios.topics import create, create_step, delete, metadata

FAMILY = "groups"
SETTLE = 2.0
FIND, JOIN, SYNC, HEARTBEAT, LEAVE = 10, 11, 14, 12, 13
COMMIT, FETCH, OFFSET_DELETE, LIST, DESCRIBE, DELETE = 8, 9, 47, 16, 15, 42
CGH, CGD = 68, 69
JOIN_VERSIONS = range(0, 10)
UNKNOWN_ID = uuid.UUID(int=4242)  # no topic's id


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: the topics a classic consumer member subscribes to."""
    out = b"\x00\x00" + len(topics).to_bytes(4, "big")
    for topic in topics:
        out += len(topic).to_bytes(2, "big") + topic.encode()
    return out + b"\xff\xff\xff\xff"  # no user data


PROTOCOL = [{"name": "range", "metadata": subscription("groups-subscribed")}]


# a KIP-848 member's id and epoch, as its side answered them
KEEP = {"m": "member_id", "epoch": "member_epoch"}


def later(name: str) -> Later:
    """The value this side kept as `name` (a member id it generated)."""
    return Later(lambda captured: captured.get(name), f"<{name}>")


def step(api_key: int, version: int, fields: dict[str, Any], **kw: Any) -> Step:
    return Step(api_key, version, fit(api_key, version, fields), **kw)


def join(
    group: str,
    version: int,
    member: Any = "",
    instance: str | None = None,
    session_ms: int = 10000,
    protocol_type: str = "consumer",
    protocols: list[dict[str, Any]] | None = None,
    **kw: Any,
) -> Step:
    fields = {
        "group_id": group,
        "session_timeout_ms": session_ms,
        "rebalance_timeout_ms": 3000,
        "member_id": member,
        "group_instance_id": instance,
        "protocol_type": protocol_type,
        "protocols": PROTOCOL if protocols is None else protocols,
        "reason": None,
    }
    return step(JOIN, version, fields, **kw)


def joined(group: str, version: int, name: str = "m", instance: str | None = None, **kw: Any) -> list[Step]:
    """A member joining (v4+: MEMBER_ID_REQUIRED first, then again with the id given),
    its member id kept as `name`."""
    if version < 4 or instance is not None:
        return [join(group, version, instance=instance, keep={name: "member_id"}, **kw)]
    return [
        join(group, version, keep={name: "member_id"}, label="JoinGroup-first", **kw),
        join(group, version, later(name), label="JoinGroup-again", **kw),
    ]


def sync(
    group: str, version: int, generation: int = 1, member: Any = None, assign: bool = True, **kw: Any
) -> Step:
    member = later("m") if member is None else member
    assignments = [{"member_id": member, "assignment": b"\x00\x00assigned"}] if assign else []
    fields = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": assignments,
    }
    return step(SYNC, version, fields, **kw)


def heartbeat(group: str, version: int, generation: int = 1, member: Any = None, **kw: Any) -> Step:
    fields = {
        "group_id": group,
        "generation_id": generation,
        "member_id": later("m") if member is None else member,
        "group_instance_id": None,
    }
    return step(HEARTBEAT, version, fields, **kw)


def leave(group: str, version: int, member: Any = None, instance: str | None = None, **kw: Any) -> Step:
    member = later("m") if member is None else member
    fields = {
        "group_id": group,
        "member_id": member,
        "members": [{"member_id": member, "group_instance_id": instance, "reason": None}],
    }
    return step(LEAVE, version, fields, **kw)


def describe_groups(groups: list[str], version: int = 5, **kw: Any) -> Step:
    return step(DESCRIBE, version, {"groups": groups, "include_authorized_operations": False}, **kw)


def delete_groups(groups: list[str], version: int = 2, **kw: Any) -> Step:
    return step(DELETE, version, {"groups_names": groups}, **kw)


def cleanup(group: str, classic: bool = True) -> list[Step]:
    """The group's members leave and the group is deleted (answers not compared)."""
    member = Later(lambda captured: captured.get("m") or "", "<m>")  # "": no member joined
    steps = [leave(group, 5, member=member, compare=False)] if classic else []
    return [*steps, delete_groups([group], compare=False)]


def commit(
    group: str,
    version: int,
    topic: str,
    generation: int = -1,
    member: Any = "",
    metadata: str | None = "",
    topic_id: Any = None,
    **kw: Any,
) -> Step:
    fields = {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 5,
                        "committed_leader_epoch": -1,
                        "committed_metadata": metadata,
                    }
                ],
            }
        ],
    }
    return step(COMMIT, version, fields, **kw)


def fetch(groups: list[str], version: int, topic: str | None, topic_id: Any = None, **kw: Any) -> Step:
    topics = None if topic is None else [{"name": topic, "topic_id": topic_id, "partition_indexes": [0, 1]}]
    if version < 8:
        fields: dict[str, Any] = {"group_id": groups[0], "topics": topics, "require_stable": False}
    else:
        fields = {
            "groups": [
                {"group_id": g, "member_id": None, "member_epoch": -1, "topics": topics} for g in groups
            ],
            "require_stable": False,
        }
    return step(FETCH, version, fields, **kw)


def with_topic(name: str, steps: list[Step], partitions: int = 2, family: str = FAMILY) -> Scenario:
    """A scenario with topic `name` (its id kept as `topic_id`), deleted at the end."""
    return Scenario(
        name,
        family,
        (
            create_step(7, [create(name, partitions)], compare=False),
            metadata([name], settle=SETTLE, compare=False, keep={"topic_id": "topics.0.topic_id"}),
            *steps,
            delete([name], compare=False),
        ),
    )


def classic_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for v in JOIN_VERSIONS:
        sv, hv, lv, dv = min(v, 5), min(v, 4), min(v, 5), min(v, 6)
        g = f"groups-classic-life-v{v}"
        out.append(
            Scenario(
                g,
                FAMILY,
                (
                    *joined(g, v),
                    describe_groups([g], dv, label="DescribeGroups-joined"),
                    sync(g, sv),
                    heartbeat(g, hv),
                    heartbeat(g, hv, generation=2, label="Heartbeat-wrong-generation"),
                    heartbeat(g, hv, member="groups-unknown-member", label="Heartbeat-unknown-member"),
                    sync(g, sv, generation=7, label="SyncGroup-wrong-generation"),
                    sync(g, sv, member="groups-unknown-member", label="SyncGroup-unknown-member"),
                    describe_groups([g], dv, label="DescribeGroups-stable"),
                    delete_groups([g], label="DeleteGroups-non-empty"),
                    leave(g, lv, member="groups-unknown-member", label="LeaveGroup-unknown-member"),
                    leave(g, lv),
                    describe_groups([g], dv, label="DescribeGroups-left"),
                    delete_groups([g], label="DeleteGroups-empty"),
                    describe_groups([g], dv, label="DescribeGroups-deleted"),
                ),
            )
        )
        cases: list[tuple[str, list[Step]]] = [
            ("empty-group-id", [join("", v)]),
            ("session-timeout-low", [join(f"groups-stl-v{v}", v, session_ms=1000)]),
            ("session-timeout-high", [join(f"groups-sth-v{v}", v, session_ms=2_000_000)]),
            ("unknown-member", [join(f"groups-um-v{v}", v, "groups-unknown-member")]),
            ("empty-protocol-type", [join(f"groups-ept-v{v}", v, protocol_type="")]),
            ("no-protocols", [join(f"groups-np-v{v}", v, protocols=[])]),
        ]
        for case, steps in cases:
            g = str(steps[0].fields["group_id"])
            out.append(Scenario(f"groups-join-{case}-v{v}", FAMILY, (*steps, *(cleanup(g) if g else []))))
        for case, kwargs in (
            ("protocol-type-mismatch", {"protocol_type": "connect"}),
            ("protocol-mismatch", {"protocols": [{"name": "roundrobin", "metadata": b""}]}),
        ):
            g = f"groups-join-{case}-v{v}"
            out.append(
                Scenario(
                    g,
                    FAMILY,
                    (
                        *joined(g, 5, compare=False),
                        sync(g, 5, compare=False),
                        join(g, v, label="JoinGroup-second", **kwargs),
                        *cleanup(g),
                    ),
                )
            )
        if v >= 5:
            g = f"groups-join-static-v{v}"
            out.append(
                Scenario(
                    g,
                    FAMILY,
                    (
                        join(g, v, instance="instance-1", keep={"m": "member_id"}, label="JoinGroup-static"),
                        sync(g, sv),
                        join(
                            g, v, instance="instance-1", keep={"m2": "member_id"}, label="JoinGroup-replacing"
                        ),
                        heartbeat(g, hv, member=later("m"), label="Heartbeat-fenced"),
                        step(
                            HEARTBEAT,
                            hv,
                            {
                                "group_id": g,
                                "generation_id": 1,
                                "member_id": later("m2"),
                                "group_instance_id": "instance-1",
                            },
                            label="Heartbeat-static",
                        ),
                        describe_groups([g], dv),
                        leave(g, lv, member="", instance="instance-1", label="LeaveGroup-static"),
                        *cleanup(g),
                    ),
                )
            )
    for version in range(0, 5):
        out.append(
            Scenario(
                f"groups-heartbeat-unknown-group-v{version}",
                FAMILY,
                (heartbeat("groups-no-such-group", version, member="groups-unknown-member"),),
            )
        )
        out.append(
            Scenario(
                f"groups-heartbeat-empty-group-v{version}",
                FAMILY,
                (heartbeat("", version, member="groups-unknown-member"),),
            )
        )
    for version in range(0, 6):
        out.append(
            Scenario(
                f"groups-sync-unknown-group-v{version}",
                FAMILY,
                (sync("groups-no-such-group", version, member="groups-unknown-member"),),
            )
        )
        out.append(
            Scenario(
                f"groups-leave-unknown-group-v{version}",
                FAMILY,
                (leave("groups-no-such-group", version, member="groups-unknown-member"),),
            )
        )
    return out


def offset_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for v in range(2, 11):
        fv = min(v, 10)
        t = f"groups-commit-v{v}"
        g = t
        topic_id = later("topic_id") if v >= 10 else None
        out.append(
            with_topic(
                t,
                [
                    commit(g, v, t, topic_id=topic_id, label="OffsetCommit-simple"),
                    fetch([g], fv, t, topic_id=topic_id, label="OffsetFetch-committed"),
                    commit(
                        g,
                        v,
                        t,
                        metadata="x" * 5000,
                        topic_id=topic_id,
                        label="OffsetCommit-metadata-too-large",
                    ),
                    commit(
                        g,
                        v,
                        t,
                        generation=3,
                        member="groups-unknown-member",
                        topic_id=topic_id,
                        label="OffsetCommit-unknown-member",
                    ),
                    commit(
                        g,
                        v,
                        t + "-unknown",
                        topic_id=None if v < 10 else UNKNOWN_ID,
                        label="OffsetCommit-unknown-topic",
                    ),
                    commit("", v, t, topic_id=topic_id, label="OffsetCommit-empty-group"),
                    fetch([g], fv, None, label="OffsetFetch-all") if fv >= 2 else fetch([g], fv, t),
                    *cleanup(g, classic=False),
                ],
            )
        )
        if v >= 4:
            # a member's commit: its generation, a wrong one
            g = f"groups-member-commit-v{v}"
            out.append(
                with_topic(
                    g,
                    [
                        *joined(
                            g, 5, compare=False, protocols=[{"name": "range", "metadata": subscription(g)}]
                        ),
                        sync(g, 5, compare=False),
                        commit(
                            g,
                            v,
                            g,
                            generation=1,
                            member=later("m"),
                            topic_id=topic_id,
                            label="OffsetCommit-member",
                        ),
                        commit(
                            g,
                            v,
                            g,
                            generation=2,
                            member=later("m"),
                            topic_id=topic_id,
                            label="OffsetCommit-wrong-generation",
                        ),
                        commit(g, v, g, topic_id=topic_id, label="OffsetCommit-simple-in-live-group"),
                        step(
                            OFFSET_DELETE,
                            0,
                            {"group_id": g, "topics": [{"name": g, "partitions": [{"partition_index": 0}]}]},
                            label="OffsetDelete-subscribed",
                        ),
                        *cleanup(g),
                    ],
                )
            )
    for v in range(1, 11):
        g = f"groups-fetch-v{v}"
        out.append(
            with_topic(
                g,
                [
                    commit(g, 7, g, compare=False),
                    fetch([g], v, g, topic_id=later("topic_id"), label="OffsetFetch-known"),
                    fetch(
                        ["groups-no-such-group"],
                        v,
                        g,
                        topic_id=later("topic_id"),
                        label="OffsetFetch-unknown-group",
                    ),
                    fetch([g], v, g + "-unknown", topic_id=UNKNOWN_ID, label="OffsetFetch-unknown-topic"),
                    fetch([""], v, g, topic_id=later("topic_id"), label="OffsetFetch-empty-group"),
                    *(
                        [
                            fetch(
                                [g, "groups-no-such-group", g + "-2"],
                                v,
                                g,
                                topic_id=later("topic_id"),
                                label="OffsetFetch-several",
                            )
                        ]
                        if v >= 8
                        else []
                    ),
                    *(
                        [fetch([g, g], v, g, topic_id=later("topic_id"), label="OffsetFetch-duplicate")]
                        if v >= 8
                        else []
                    ),
                    *cleanup(g, classic=False),
                ],
            )
        )
    g = "groups-offset-delete"
    out.append(
        with_topic(
            g,
            [
                commit(g, 7, g, compare=False),
                step(
                    OFFSET_DELETE,
                    0,
                    {"group_id": g, "topics": [{"name": g, "partitions": [{"partition_index": 0}]}]},
                    label="OffsetDelete-committed",
                ),
                fetch([g], 7, g, label="OffsetFetch-after"),
                step(
                    OFFSET_DELETE,
                    0,
                    {
                        "group_id": g,
                        "topics": [{"name": g + "-unknown", "partitions": [{"partition_index": 0}]}],
                    },
                    label="OffsetDelete-unknown-topic",
                ),
                step(
                    OFFSET_DELETE,
                    0,
                    {
                        "group_id": "groups-no-such-group",
                        "topics": [{"name": g, "partitions": [{"partition_index": 0}]}],
                    },
                    label="OffsetDelete-unknown-group",
                ),
                step(OFFSET_DELETE, 0, {"group_id": "", "topics": []}, label="OffsetDelete-empty-group"),
                *cleanup(g, classic=False),
            ],
        )
    )
    return out


def listing_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for v in range(0, 6):
        g = f"groups-list-v{v}"
        filters: list[tuple[str, list[str], list[str]]] = [("all", [], [])]
        if v >= 4:
            filters += [
                ("stable", ["Stable"], []),
                ("empty", ["Empty"], []),
                ("unknown-state", ["Sleeping"], []),
            ]
        if v >= 5:
            filters += [
                ("classic", [], ["classic"]),
                ("consumer", [], ["consumer"]),
                ("unknown-type", [], ["share"]),
            ]
        steps = [
            commit(g + "-simple", 7, g, compare=False),
            *joined(g, 5, compare=False),
            sync(g, 5, compare=False),
        ]
        for case, states, types in filters:
            steps.append(
                step(LIST, v, {"states_filter": states, "types_filter": types}, label=f"ListGroups-{case}")
            )
        steps += [*cleanup(g), *cleanup(g + "-simple", classic=False)]
        out.append(with_topic(g, steps))
    for v in range(0, 7):
        g = f"groups-describe-v{v}"
        out.append(
            Scenario(
                g,
                FAMILY,
                (
                    commit(g + "-simple", 7, "groups-no-topic", compare=False),
                    describe_groups([g + "-simple", "groups-no-such-group", ""], v),
                    describe_groups([g + "-simple", g + "-simple"], v, label="DescribeGroups-duplicate"),
                    *cleanup(g + "-simple", classic=False),
                ),
            )
        )
    for v in range(0, 3):
        g = f"groups-delete-v{v}"
        out.append(
            Scenario(
                g,
                FAMILY,
                (
                    commit(g, 7, "groups-no-topic", compare=False),
                    delete_groups([g, "groups-no-such-group", ""], v),
                    delete_groups([g], v, label="DeleteGroups-again"),
                    delete_groups([g + "-dup", g + "-dup"], v, label="DeleteGroups-duplicate"),
                ),
            )
        )
    for v in range(0, 7):
        cases = [("group", "groups-find-coordinator"), ("empty", ""), ("overlong", "g" * 300)]
        for case, key in cases:
            fields = {"key": key, "key_type": 0, "coordinator_keys": [key]}
            out.append(Scenario(f"groups-find-{case}-v{v}", FAMILY, (step(FIND, v, fields),)))
        if v >= 1:
            fields = {"key": "x", "key_type": 5, "coordinator_keys": ["x"]}
            out.append(Scenario(f"groups-find-bad-key-type-v{v}", FAMILY, (step(FIND, v, fields),)))
    return out


def cgh(
    group: str, version: int, member: Any, epoch: Any, topics: list[str] | None = None, **kw: Any
) -> Step:
    fields = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "instance_id": kw.pop("instance", None),
        "rack_id": None,
        "rebalance_timeout_ms": kw.pop("rebalance_timeout_ms", 30000 if epoch == 0 else -1),
        "subscribed_topic_names": topics,
        "subscribed_topic_regex": kw.pop("regex", None),
        "server_assignor": kw.pop("assignor", None),
        "topic_partitions": [] if epoch == 0 else None,
    }
    return step(CGH, version, fields, **kw)


def consumer_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    member = "groups-consumer-member-0000"
    ahead = Later(lambda captured: (captured.get("epoch") or 0) + 2, "<epoch + 2>")
    for v in (0, 1):
        for dv in (0, 1):
            g = f"groups-consumer-life-v{v}-describe-v{dv}"
            describe = step(
                CGD,
                dv,
                {"group_ids": [g, "groups-no-such-group", ""], "include_authorized_operations": False},
            )
            out.append(
                with_topic(
                    g,
                    [
                        cgh(g, v, member, 0, [g], label="ConsumerGroupHeartbeat-join", keep=KEEP),
                        cgh(
                            g,
                            v,
                            later("m"),
                            later("epoch"),
                            label="ConsumerGroupHeartbeat-steady",
                        ),
                        describe,
                        cgh(g, v, later("m"), ahead, label="ConsumerGroupHeartbeat-fenced"),
                        cgh(g, v, "groups-unknown-member", 1, label="ConsumerGroupHeartbeat-unknown-member"),
                        describe_groups([g], 5, label="DescribeGroups-consumer"),
                        step(
                            LIST,
                            5,
                            {"states_filter": [], "types_filter": ["consumer"]},
                            label="ListGroups-consumer",
                        ),
                        delete_groups([g], label="DeleteGroups-non-empty"),
                        cgh(g, v, later("m"), -1, label="ConsumerGroupHeartbeat-leave"),
                        step(
                            CGD,
                            dv,
                            {"group_ids": [g], "include_authorized_operations": False},
                            label="ConsumerGroupDescribe-left",
                        ),
                        delete_groups([g], label="DeleteGroups-empty"),
                    ],
                )
            )
        cases: list[tuple[str, Step]] = [
            ("empty-group", cgh("", v, member, 0, ["x"])),
            ("empty-member", cgh(f"groups-cgh-em-v{v}", v, "", 0, ["x"])),
            ("unknown-member", cgh(f"groups-cgh-um-v{v}", v, member, 5)),
            ("no-subscription", cgh(f"groups-cgh-ns-v{v}", v, member, 0, None)),
            (
                "no-rebalance-timeout",
                cgh(f"groups-cgh-nrt-v{v}", v, member, 0, ["x"], rebalance_timeout_ms=-1),
            ),
            ("unknown-assignor", cgh(f"groups-cgh-ua-v{v}", v, member, 0, ["x"], assignor="nope")),
            ("range-assignor", cgh(f"groups-cgh-ra-v{v}", v, member, 0, ["x"], assignor="range")),
            ("unknown-topic", cgh(f"groups-cgh-ut-v{v}", v, member, 0, ["groups-no-such-topic"])),
            ("static", cgh(f"groups-cgh-st-v{v}", v, member, 0, ["x"], instance="instance-1")),
            ("leave-unknown", cgh(f"groups-cgh-lu-v{v}", v, member, -1)),
            ("leave-static-unknown", cgh(f"groups-cgh-lsu-v{v}", v, member, -2, instance="instance-1")),
            ("bad-epoch", cgh(f"groups-cgh-be-v{v}", v, member, -3, ["x"])),
        ]
        if v >= 1:
            cases += [
                ("regex", cgh(f"groups-cgh-re-v{v}", v, member, 0, None, regex="groups-cgh-re.*")),
                ("bad-regex", cgh(f"groups-cgh-br-v{v}", v, member, 0, None, regex="(unclosed")),
                ("regex-and-names", cgh(f"groups-cgh-rn-v{v}", v, member, 0, ["x"], regex="x.*")),
            ]
        for case, first in cases:
            g = str(first.fields["group_id"])
            leave_step = cgh(g, v, member, -1, compare=False)
            tail = [leave_step, delete_groups([g], compare=False)] if g else []
            out.append(Scenario(f"groups-consumer-{case}-v{v}", FAMILY, (first, *tail)))
    for dv in (0, 1):
        out.append(
            Scenario(
                f"groups-consumer-describe-classic-v{dv}",
                FAMILY,
                (
                    commit("groups-cgd-simple", 7, "groups-no-topic", compare=False),
                    step(
                        CGD, dv, {"group_ids": ["groups-cgd-simple"], "include_authorized_operations": True}
                    ),
                    delete_groups(["groups-cgd-simple"], compare=False),
                ),
            )
        )
    return out


def scenarios() -> list[Scenario]:
    return [*classic_scenarios(), *offset_scenarios(), *listing_scenarios(), *consumer_scenarios()]
