"""Streams groups (KIP-1071): StreamsGroupHeartbeat through a member's life (a topology
whose source topic is missing, then one whose changelog topic the broker creates, tasks
assigned, a fenced epoch, an unknown member, leaving) and with bad input (the request
checks of GroupCoordinatorService and KafkaApis, in their order); StreamsGroupDescribe,
ListGroups, DescribeGroups and DeleteGroups of a streams group; a consumer group's id;
StreamsGroupTopologyDescriptionUpdate without a topology description plugin.

Kafka creates the internal topics and initializes a new group in the background, so the
member heartbeats on each side (`Step.until`) until it has tasks."""

from __future__ import annotations

from typing import Any

from tests.differential.model import Later, Scenario, Step
from tests.differential.scenarios.configs import describe as describe_configs
from tests.differential.scenarios.configs import incremental
from tests.differential.scenarios.groups import delete_groups, describe_groups, step, with_topic
from tests.differential.scenarios.share import consumer_heartbeat

FAMILY = "streams"
SGH, SGD, TOPOLOGY_UPDATE, LIST = 88, 89, 93, 16
GROUP_RESOURCE, SET = 32, 0
MEMBER = "streams-member-000000000000000000000"
PROCESS = "process-00000000000000000000000000000"
OTHER = "streams-member-111111111111111111111"
KEEP = {"epoch": "member_epoch"}


def topology(source: str, changelog: str | None = None, partitions: int = 0, **extra: Any) -> dict[str, Any]:
    """One subtopology reading `source`, with a store whose changelog is `changelog`."""
    changelogs = (
        [{"name": changelog, "partitions": partitions, "replication_factor": 0, "topic_configs": []}]
        if changelog
        else []
    )
    subtopology = {
        "subtopology_id": "0",
        "source_topics": [source],
        "source_topic_regex": [],
        "state_changelog_topics": changelogs,
        "repartition_sink_topics": [],
        "repartition_source_topics": [],
        "copartition_groups": [],
        **extra,
    }
    return {"epoch": 1, "subtopologies": [subtopology]}


def heartbeat(
    group: str,
    epoch: Any,
    top: dict[str, Any] | None = None,
    version: int = 1,
    fields: dict[str, Any] | None = None,
    **kw: Any,
) -> Step:
    """A heartbeat of MEMBER (or `member`); `fields` override the request's."""
    joining = epoch == 0
    request = {
        "group_id": group,
        "member_id": kw.pop("member", MEMBER),
        "member_epoch": epoch,
        "endpoint_information_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": kw.pop("rebalance_timeout_ms", 30000 if joining else -1),
        "topology": top,
        "active_tasks": kw.pop("active_tasks", [] if joining else None),
        "standby_tasks": kw.pop("standby_tasks", [] if joining else None),
        "warmup_tasks": kw.pop("warmup_tasks", [] if joining else None),
        "process_id": PROCESS if joining else None,
        "user_endpoint": None,
        "client_tags": [] if joining else None,
        "task_offsets": None,
        "task_end_offsets": None,
        "shutdown_application": False,
        **(fields or {}),
    }
    return step(SGH, version, request, **kw)


def has_tasks(answer: Any) -> bool:
    """Whether a normalised StreamsGroupHeartbeat answer gives active tasks."""
    return bool(answer.get("active_tasks"))


def describe(groups: list[str], version: int = 1, **kw: Any) -> Step:
    fields = {
        "group_ids": groups,
        "include_authorized_operations": False,
        "include_topology_description": True,
    }
    return step(SGD, version, fields, **kw)


def scenarios() -> list[Scenario]:
    g = "streams-life"
    changelog = f"{g}-store-changelog"
    epoch = Later(lambda c: c.get("epoch"), "<epoch>")
    ahead = Later(lambda c: (c.get("epoch") or 0) + 2, "<epoch + 2>")
    life = with_topic(
        g,
        partitions=2,
        family=FAMILY,
        steps=[
            # no wait for more members: the first assignment comes as soon as it can
            incremental(
                [(GROUP_RESOURCE, g, [("streams.initial.rebalance.delay.ms", SET, "0")])], compare=False
            ),
            # Kafka applies the group config from its metadata a moment later: until it shows
            describe_configs(
                [(GROUP_RESOURCE, g, ["streams.initial.rebalance.delay.ms"])], settle=15.0, compare=False
            ),
            heartbeat(g, 0, topology("streams-no-such-topic"), label="StreamsGroupHeartbeat-missing-source"),
            heartbeat(g, -1, label="StreamsGroupHeartbeat-leave-missing", compare=False),
            delete_groups([g], compare=False),
            heartbeat(
                g, 0, topology(g, changelog), label="StreamsGroupHeartbeat-join", keep=KEEP, compare=False
            ),
            # until the broker created the changelog topic and assigned the tasks
            heartbeat(
                g,
                epoch,
                label="StreamsGroupHeartbeat-assigned",
                keep=KEEP,
                until=has_tasks,
                settle=20.0,
                compare=False,
            ),
            heartbeat(g, ahead, label="StreamsGroupHeartbeat-fenced"),
            heartbeat(g, 1, member="streams-unknown-member", label="StreamsGroupHeartbeat-unknown-member"),
            step(LIST, 5, {"states_filter": [], "types_filter": ["streams"]}, label="ListGroups-streams"),
            describe_groups([g], 6, label="DescribeGroups-streams"),
            describe(["streams-no-such-group", ""], label="StreamsGroupDescribe-missing"),
            delete_groups([g], label="DeleteGroups-non-empty"),
            step(
                TOPOLOGY_UPDATE,
                0,
                {
                    "group_id": g,
                    "member_id": MEMBER,
                    "topology_epoch": 1,
                    "topology_description": _description(),
                },
                label="StreamsGroupTopologyDescriptionUpdate",
            ),
            heartbeat(g, -1, label="StreamsGroupHeartbeat-leave"),
            describe([g], 0, label="StreamsGroupDescribe-left-v0"),
            delete_groups([g], label="DeleteGroups-empty"),
        ],
    )
    out = [life]
    with_internal = topology("x", None, 0)
    with_internal["subtopologies"][0]["source_topics"] = ["__consumer_offsets"]
    bad_name = topology("not a topic!")
    regex = topology("x", source_topic_regex=["x.*"])
    cases: list[tuple[str, Step]] = [
        ("join-missing-source", heartbeat("streams-hb-jm", 0, topology("streams-no-such-topic"))),
        ("empty-group", heartbeat("", 0, topology("x"))),
        ("empty-member", heartbeat("streams-hb-em", 0, topology("x"), member="")),
        ("no-rebalance-timeout", heartbeat("streams-hb-nr", 0, topology("x"), rebalance_timeout_ms=-1)),
        (
            "tasks-on-join",
            heartbeat(
                "streams-hb-tj", 0, topology("x"), active_tasks=[{"subtopology_id": "0", "partitions": [0]}]
            ),
        ),
        ("no-topology", heartbeat("streams-hb-nt", 0, None)),
        ("changelog-partitions", heartbeat("streams-hb-cp", 0, topology("x", "streams-hb-cp-changelog", 3))),
        ("bad-epoch", heartbeat("streams-hb-be", -3)),
        ("static-leave-without-instance", heartbeat("streams-hb-sl", -2)),
        ("topology-after-join", heartbeat("streams-hb-tp", 1, topology("x"))),
        ("one-task-type", heartbeat("streams-hb-ot", 1, active_tasks=[])),
        ("internal-topic", heartbeat("streams-hb-it", 0, with_internal)),
        ("invalid-topic", heartbeat("streams-hb-iv", 0, bad_name)),
        ("source-regex", heartbeat("streams-hb-rx", 0, regex)),
        ("unknown-group", heartbeat("streams-hb-ug", 3)),
        ("leave-unknown", heartbeat("streams-hb-lu", -1)),
    ]
    for case, first in cases:
        group = str(first.fields["group_id"])
        out.append(
            Scenario(
                f"streams-heartbeat-{case}",
                FAMILY,
                (first, describe([group], label="StreamsGroupDescribe-after")),
            )
        )
    out.append(
        Scenario(
            "streams-topology-update-unknown-group",
            FAMILY,
            (
                step(
                    TOPOLOGY_UPDATE,
                    0,
                    {
                        "group_id": "streams-tu-none",
                        "member_id": MEMBER,
                        "topology_epoch": 1,
                        "topology_description": _description(),
                    },
                ),
            ),
        )
    )
    static = "streams-static"
    fields = {"instance_id": "instance-1"}
    out.append(
        Scenario(
            static,
            FAMILY,
            (
                heartbeat(
                    static,
                    0,
                    topology("streams-no-such-topic"),
                    fields=fields,
                    label="StreamsGroupHeartbeat-join-a",
                    compare=False,
                ),
                heartbeat(
                    static,
                    0,
                    topology("streams-no-such-topic"),
                    fields=fields,
                    member=OTHER,
                    label="StreamsGroupHeartbeat-join-b-taken",
                ),
                heartbeat(static, -2, fields=fields, label="StreamsGroupHeartbeat-leave-a-for-now"),
                heartbeat(
                    static,
                    0,
                    topology("streams-no-such-topic"),
                    fields=fields,
                    member=OTHER,
                    label="StreamsGroupHeartbeat-join-b",
                ),
                heartbeat(static, 1, fields=fields, label="StreamsGroupHeartbeat-a-fenced"),
                heartbeat(static, -1, fields=fields, member=OTHER, label="StreamsGroupHeartbeat-leave-b"),
                delete_groups([static], compare=False),
            ),
        )
    )
    offsets = "streams-task-offsets"
    reported = {"task_offsets": [{"subtopology_id": "0", "partition": 0, "offset": 7}]}
    twice = {"task_offsets": reported["task_offsets"] * 2}
    out.append(
        Scenario(
            offsets,
            FAMILY,
            (
                heartbeat(offsets, 0, topology("streams-no-such-topic"), keep=KEEP, compare=False),
                heartbeat(offsets, epoch, fields=twice, label="StreamsGroupHeartbeat-duplicate-offsets"),
                heartbeat(
                    offsets, epoch, fields=reported, label="StreamsGroupHeartbeat-offsets", compare=False
                ),
                describe([offsets], label="StreamsGroupDescribe-offsets"),
                heartbeat(offsets, -1, compare=False),
                delete_groups([offsets], compare=False),
            ),
        )
    )
    consumer = "streams-consumer-group"
    out.append(
        Scenario(
            "streams-heartbeat-consumer-group",
            FAMILY,
            (
                consumer_heartbeat(consumer, 0, ["x"]),
                heartbeat(consumer, 0, topology("x")),
                describe([consumer]),
                consumer_heartbeat(consumer, -1, None),
                delete_groups([consumer], compare=False),
            ),
        )
    )
    return out


def _description() -> dict[str, Any]:
    node = {"name": "KSTREAM-SOURCE-0", "node_type": 0, "source_topics": ["x"], "sink_topic": None}
    return {
        "subtopologies": [{"subtopology_id": "0", "nodes": [{**node, "stores": [], "successors": []}]}],
        "global_stores": [],
    }
