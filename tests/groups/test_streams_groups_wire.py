"""Streams groups (KIP-1071) in raw frames: what Kafka Streams relies on but does not
show on its own — the internal topics the broker creates (with the partition counts it
decides and the configs the topology asks for), the statuses a member sees on the way,
revoke-before-assign between two processes, standby tasks, CREATE refused, offset commits
checked against the member's epoch — and the sticky assignor's arithmetic."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.consumer import JoinGroupRequest

from broker import MockCluster
from broker.state.streams_groups import (
    EMPTY_TARGET,
    INCORRECTLY_PARTITIONED_TOPICS,
    Target,
    configure,
    sticky_assign,
)
from broker.state.streams_groups import Subtopology as StreamsSubtopology
from broker.state.streams_groups import TopicInfo as StreamsTopicInfo
from broker.state.streams_groups import Topology as StreamsTopology
from messages.registry import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.support.wire import Connection

Heartbeat = request_class(ApiKey.STREAMS_GROUP_HEARTBEAT)
Describe = request_class(ApiKey.STREAMS_GROUP_DESCRIBE)
OffsetCommitRequest = request_class(ApiKey.OFFSET_COMMIT)
Topology = Heartbeat.Topology
Subtopology = Topology.Subtopology
TopicInfo = Subtopology.TopicInfo
KeyValue = TopicInfo.KeyValue
TaskIds = Heartbeat.TaskIds
MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS = 1, 3
CHANGELOG = "app-store-changelog"


def topology(source: str = "input") -> Any:
    """A stateful subtopology reading `source`, its store's changelog compacted."""
    changelog = TopicInfo(
        name=CHANGELOG,
        partitions=0,
        replication_factor=0,
        topic_configs=[KeyValue(key="cleanup.policy", value="compact")],
    )
    return Topology(
        epoch=1,
        subtopologies=[
            Subtopology(
                subtopology_id="0",
                source_topics=[source],
                source_topic_regex=[],
                state_changelog_topics=[changelog],
                repartition_sink_topics=[],
                repartition_source_topics=[],
                copartition_groups=[],
            )
        ],
    )


class Member(Connection):
    """One member of group "app" on its own connection, reporting the tasks it was given."""

    def __init__(self, cluster: MockCluster, member_id: str, process_id: str, group: str = "app") -> None:
        super().__init__(cluster.bootstrap_servers)
        self.member_id, self.process_id, self.group = member_id, process_id, group
        self.epoch = 0
        self.active: dict[str, list[int]] = {}
        self.standby: dict[str, list[int]] = {}

    def heartbeat(self, epoch: int | None = None, **fields: Any) -> Any:
        """A heartbeat at the member's epoch (or `epoch`: -1 leaves)."""
        joining = self.epoch == 0
        answer = self(
            Heartbeat[1](
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=self.epoch if epoch is None else epoch,
                endpoint_information_epoch=0,
                rebalance_timeout_ms=30000 if joining else -1,
                topology=fields.pop("topology", topology() if joining else None),
                active_tasks=_ids(self.active),
                standby_tasks=_ids(self.standby),
                warmup_tasks=[],
                process_id=self.process_id if joining else None,
                client_tags=[] if joining else None,
                **fields,
            )
        )
        if answer.error_code == ErrorCode.NONE:
            self.epoch = answer.member_epoch
            if answer.active_tasks is not None:
                self.active = {t.subtopology_id: list(t.partitions) for t in answer.active_tasks}
                self.standby = {t.subtopology_id: list(t.partitions) for t in answer.standby_tasks}
        return answer


def _ids(tasks: dict[str, list[int]]) -> list[Any]:
    return [TaskIds(subtopology_id=s, partitions=p) for s, p in sorted(tasks.items())]


def statuses(answer: Any) -> list[int]:
    return [s.status_code for s in answer.status or []]


# no initial rebalance delay, no least interval between assignments
FAST_ASSIGNMENT = {"group.streams.initial.rebalance.delay.ms": 0, "group.streams.assignment.interval.ms": 0}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config=FAST_ASSIGNMENT) as cluster:
        yield cluster


def test_the_broker_creates_the_internal_topics_then_assigns(cluster: MockCluster) -> None:
    early = Member(cluster, "m0", "p0", group="early")
    missing = early.heartbeat(topology=topology("nowhere"))
    assert statuses(missing) == [MISSING_SOURCE_TOPICS]
    assert missing.status[0].status_detail == "Source topics nowhere are missing."
    # the group keeps its topology: another one, at the same epoch, is refused
    assert early.heartbeat(epoch=-1).error_code == ErrorCode.NONE
    early.epoch = 0
    assert early.heartbeat().error_message == "Topology updates are not supported yet."
    early.close()
    member = Member(cluster, "m1", "p1")
    try:
        cluster.create_topic("input", partitions=3)
        first = member.heartbeat()
        assert statuses(first) == [MISSING_INTERNAL_TOPICS]
        assert first.status[0].status_detail == f"Internal topics are missing: {CHANGELOG}"
        assert first.active_tasks == []  # nothing to run before its topics exist
        # created after the answer: as many partitions as the input, the configs asked for
        changelog = cluster.on_loop(lambda: cluster.state.topics.get(CHANGELOG))
        assert changelog is not None and len(changelog.partitions) == 3
        assert changelog.configs == {"cleanup.policy": "compact"}
        second = member.heartbeat()
        assert statuses(second) == [] and member.active == {"0": [0, 1, 2]}
        assert second.member_epoch > first.member_epoch
    finally:
        member.close()


def test_tasks_move_to_a_new_process_only_once_revoked(cluster: MockCluster) -> None:
    cluster.create_topic("input", partitions=4)
    cluster.create_topic(CHANGELOG, partitions=4, config={"cleanup.policy": "compact"})
    one, two = Member(cluster, "m1", "p1"), Member(cluster, "m2", "p2")
    try:
        one.heartbeat()
        assert one.active == {"0": [0, 1, 2, 3]}
        two.heartbeat()  # joins: half the tasks are its target, still one's
        assert two.active == {}
        revoking = one.heartbeat()  # told to give two up: its epoch stays until it has
        assert len(one.active["0"]) == 2 and revoking.member_epoch == one.epoch
        assert two.heartbeat().active_tasks is None and two.active == {}  # not released yet
        one.heartbeat()  # reports only what it kept: revoked
        two.heartbeat()
        assert sorted(one.active["0"] + two.active["0"]) == [0, 1, 2, 3]
        assert len(two.active["0"]) == 2
        described = one(
            Describe[1](
                group_ids=["app"], include_authorized_operations=False, include_topology_description=False
            )
        ).groups[0]
        assert (described.group_state, described.group_epoch) == ("Stable", described.assignment_epoch)
    finally:
        one.close()
        two.close()


def test_standby_tasks_go_to_another_process(cluster: MockCluster) -> None:
    cluster.create_topic("input", partitions=2)
    cluster.create_topic(CHANGELOG, partitions=2, config={"cleanup.policy": "compact"})
    cluster.on_loop(
        lambda: cluster.state.group_configs.setdefault("app", {}).update(
            {"streams.num.standby.replicas": "1"}
        )
    )
    one, two = Member(cluster, "m1", "p1"), Member(cluster, "m2", "p2")
    try:
        for _ in range(4):
            one.heartbeat()
            two.heartbeat()
        for member, other in ((one, two), (two, one)):
            assert member.standby["0"] == other.active["0"]  # never where the task runs
        assert sorted(one.active["0"] + two.active["0"]) == [0, 1]
    finally:
        one.close()
        two.close()


def test_streams_heartbeats_are_authorized() -> None:
    """READ on the group, DESCRIBE on every topic of the topology (KafkaApis); internal
    topics the principal may not CREATE are named in the status, and not created."""
    config = {
        **FAST_ASSIGNMENT,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
    }
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("input", 1)
        cluster.acls.add("User:ANONYMOUS", "READ", "GROUP", "app")
        cluster.acls.add("User:ANONYMOUS", "DESCRIBE", "TOPIC", "input")
        member = Member(cluster, "m1", "p1")
        try:
            assert member.heartbeat().error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # the changelog
            cluster.acls.add("User:ANONYMOUS", "DESCRIBE", "TOPIC", CHANGELOG)
            answer = member.heartbeat()
            assert statuses(answer) == [MISSING_INTERNAL_TOPICS]
            assert answer.status[0].status_detail == (
                f"Internal topics are missing: {CHANGELOG}; Unauthorized to CREATE on topics {CHANGELOG}."
            )
            assert cluster.on_loop(lambda: CHANGELOG not in cluster.state.topics)
            cluster.acls.add("User:ANONYMOUS", "CREATE", "TOPIC", CHANGELOG)
            assert statuses(member.heartbeat()) == [MISSING_INTERNAL_TOPICS]  # now created
            assert cluster.on_loop(lambda: CHANGELOG in cluster.state.topics)
            other = Member(cluster, "m2", "p2")
            refused = other(
                Heartbeat[1](
                    group_id="elsewhere",
                    member_id="m2",
                    member_epoch=0,
                    endpoint_information_epoch=0,
                    rebalance_timeout_ms=30000,
                    topology=topology(),
                    active_tasks=[],
                    standby_tasks=[],
                    warmup_tasks=[],
                    process_id="p2",
                    client_tags=[],
                )
            )
            assert refused.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
            other.close()
        finally:
            member.close()


def test_offset_commits_are_checked_against_the_members_epoch(cluster: MockCluster) -> None:
    cluster.create_topic("input", partitions=1)
    cluster.create_topic(CHANGELOG, partitions=1, config={"cleanup.policy": "compact"})
    member = Member(cluster, "m1", "p1")
    try:
        member.heartbeat()
        assert member.active == {"0": [0]}

        def commit(epoch: int, version: int = 9) -> int:
            topic = OffsetCommitRequest[version].OffsetCommitRequestTopic
            answer = member(
                OffsetCommitRequest[version](
                    group_id="app",
                    generation_id_or_member_epoch=epoch,
                    member_id="m1",
                    group_instance_id=None,
                    topics=[
                        topic(
                            name="input",
                            partitions=[
                                topic.OffsetCommitRequestPartition(
                                    partition_index=0,
                                    committed_offset=5,
                                    committed_leader_epoch=-1,
                                    committed_metadata="",
                                )
                            ],
                        )
                    ],
                )
            )
            return int(answer.topics[0].partitions[0].error_code)

        assert commit(member.epoch) == ErrorCode.NONE
        assert commit(member.epoch + 1) == ErrorCode.STALE_MEMBER_EPOCH
        assert commit(member.epoch, version=8) == ErrorCode.UNSUPPORTED_VERSION  # streams members commit v9+
    finally:
        member.close()


def test_the_sticky_assignor_keeps_tasks_where_they_ran() -> None:
    tasks = {"0": 4, "1": 2}
    first = sticky_assign({"a": ("p1", EMPTY_TARGET), "b": ("p2", EMPTY_TARGET)}, tasks, {"1"}, 1)
    active = sorted((s, p) for t in first.values() for s, ps in t.active.items() for p in ps)
    assert active == [("0", 0), ("0", 1), ("0", 2), ("0", 3), ("1", 0), ("1", 1)]
    assert all(sum(map(len, t.active.values())) == 3 for t in first.values())
    for member, other in (("a", "b"), ("b", "a")):
        assert first[member].standby.get("1", frozenset()) <= first[other].active.get("1", frozenset())
    # a third process joins: the two keep what they can of their tasks
    again = sticky_assign(
        {"a": ("p1", first["a"]), "b": ("p2", first["b"]), "c": ("p3", EMPTY_TARGET)}, tasks, {"1"}, 1
    )
    kept = sum(
        len(again[m].active.get(s, frozenset()) & first[m].active.get(s, frozenset()))
        for m in "ab"
        for s in tasks
    )
    assert kept == 4 and all(sum(map(len, again[m].active.values())) == 2 for m in "abc")
    assert isinstance(again["c"], Target)


def _cluster_with(**topics: int) -> Any:
    """What `configure` reads of a cluster: topics and their partition counts."""
    return SimpleNamespace(
        topics={name: SimpleNamespace(partitions=[None] * n) for name, n in topics.items()}
    )


def test_the_broker_decides_the_internal_topics_partition_counts() -> None:
    """InternalTopicManager: a repartition topic gets the partitions of what feeds it, a
    changelog its subtopology's input's; co-partitioned sources must agree, and an
    existing internal topic must have the count decided."""
    feeding = sub("0", sources=("orders",), sinks=("app-repartition",))
    reading = sub(
        "1",
        repartition_sources=(info("app-repartition"),),
        changelogs=(info("app-store-changelog"),),
    )
    topology_ = StreamsTopology(1, (feeding, reading))
    configured = configure(topology_, _cluster_with(orders=6))
    assert configured.tasks == {"0": 6, "1": 6}
    assert {n: t.partitions for n, t in configured.to_create.items()} == {
        "app-repartition": 6,
        "app-store-changelog": 6,
    }
    assert configured.error is not None and configured.error.status == MISSING_INTERNAL_TOPICS
    wrong = configure(topology_, _cluster_with(orders=6, **{"app-store-changelog": 2}))
    assert wrong.error is not None and (wrong.error.status, wrong.error.message) == (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Existing topic app-store-changelog has different number of partitions: expected 6, found 2",
    )
    joined = StreamsTopology(1, (sub("0", sources=("left", "right"), copartition=(((0, 1), ()),)),))
    mismatch = configure(joined, _cluster_with(left=3, right=4))
    assert mismatch.error is not None and (mismatch.error.status, mismatch.error.message) == (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Following topics do not have the same number of partitions: [{left=3, right=4}]",
    )
    assert configure(joined, _cluster_with(left=4, right=4)).ready


def sub(
    sid: str,
    sources: tuple[str, ...] = (),
    sinks: tuple[str, ...] = (),
    repartition_sources: tuple[StreamsTopicInfo, ...] = (),
    changelogs: tuple[StreamsTopicInfo, ...] = (),
    copartition: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = (),
) -> StreamsSubtopology:
    return StreamsSubtopology(sid, sources, sinks, changelogs, repartition_sources, copartition)


def info(name: str) -> StreamsTopicInfo:
    return StreamsTopicInfo(name)


def test_a_topology_description_is_refused_without_a_plugin(cluster: MockCluster) -> None:
    """StreamsGroupTopologyDescriptionUpdate as on a Kafka broker without a topology
    description plugin (the default): refused, whatever the group."""
    update = request_class(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE)
    description = update.TopologyDescription(subtopologies=[], global_stores=[])
    member = Member(cluster, "m1", "p1")
    try:
        answer = member(
            update[0](group_id="app", member_id="m1", topology_epoch=1, topology_description=description)
        )
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.UNSUPPORTED_VERSION,
            "The broker has no streams group topology description plugin configured.",
        )
    finally:
        member.close()


def test_a_classic_join_to_a_streams_group(cluster: MockCluster) -> None:
    """GroupMetadataManager.classicGroupJoin: refused while the streams group has members
    (INCONSISTENT_GROUP_PROTOCOL); an empty one becomes a classic group."""
    cluster.create_topic("input", partitions=1)
    member = Member(cluster, "m1", "p1")
    try:
        member.heartbeat()

        def join() -> Any:
            return member(
                JoinGroupRequest[5](
                    group_id="app",
                    session_timeout_ms=10_000,
                    rebalance_timeout_ms=10_000,
                    member_id="",
                    group_instance_id="classic",
                    protocol_type="consumer",
                    protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
                )
            )

        refused = join()
        assert (refused.error_code, refused.member_id) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
        member.heartbeat(epoch=-1)
        assert join().error_code == ErrorCode.NONE
        described = cluster.describe_group("app")
        assert described is not None and described["type"] == "classic"
    finally:
        member.close()


def test_a_static_member_comes_back_under_a_new_member_id(cluster: MockCluster) -> None:
    """Static membership (an instance id): leaving with epoch -2 keeps the member's tasks;
    a new member id with the instance id takes them over without a rebalance; an
    instance id still in use is refused, and the replaced member id is fenced."""
    cluster.create_topic("input", partitions=2)
    cluster.create_topic(CHANGELOG, partitions=2, config={"cleanup.policy": "compact"})
    first = Member(cluster, "m1", "p1")
    second = Member(cluster, "m2", "p1")
    try:
        first.heartbeat(instance_id="i1")
        assert first.active == {"0": [0, 1]}
        taken = second.heartbeat(instance_id="i1")
        assert (taken.error_code, taken.error_message) == (
            ErrorCode.UNRELEASED_INSTANCE_ID,
            "Static member m2 with instance id i1 cannot join the group because the instance id is owned by m1 member.",
        )
        epoch = cluster.describe_group("app")["group_epoch"]  # type: ignore[index]
        left = first.heartbeat(epoch=-2, instance_id="i1")
        assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -2)
        back = second.heartbeat(instance_id="i1")
        assert back.error_code == ErrorCode.NONE and second.active == {"0": [0, 1]}
        assert cluster.describe_group("app")["group_epoch"] == epoch  # type: ignore[index]
        fenced = first.heartbeat(epoch=first.epoch, instance_id="i1")
        assert (fenced.error_code, fenced.error_message) == (
            ErrorCode.FENCED_INSTANCE_ID,
            "Static member m1 with instance id i1 was fenced by member m2.",
        )
    finally:
        first.close()
        second.close()


def test_task_offsets_members_report_are_described(cluster: MockCluster) -> None:
    """A member's task offsets and end offsets (KIP-1071's lag reporting) replace its last
    report and show in StreamsGroupDescribe; a duplicate entry is INVALID_REQUEST."""
    cluster.create_topic("input", partitions=1)
    cluster.create_topic(CHANGELOG, partitions=1, config={"cleanup.policy": "compact"})
    offset = Heartbeat.TaskOffset
    member = Member(cluster, "m1", "p1")
    try:
        member.heartbeat()
        duplicate = member.heartbeat(
            task_offsets=[offset(subtopology_id="0", partition=0, offset=1)] * 2, task_end_offsets=None
        )
        assert (duplicate.error_code, duplicate.error_message) == (
            ErrorCode.INVALID_REQUEST,
            "Task offsets contain a duplicate entry for subtopology 0 and partition 0.",
        )
        member.heartbeat(
            task_offsets=[offset(subtopology_id="0", partition=0, offset=7)],
            task_end_offsets=[offset(subtopology_id="0", partition=0, offset=9)],
        )
        member.heartbeat()  # reports nothing: the last report stands
        described = (
            member(
                Describe[1](
                    group_ids=["app"], include_authorized_operations=False, include_topology_description=False
                )
            )
            .groups[0]
            .members[0]
        )
        assert [(o.subtopology_id, o.partition, o.offset) for o in described.task_offsets] == [("0", 0, 7)]
        assert [(o.subtopology_id, o.partition, o.offset) for o in described.task_end_offsets] == [
            ("0", 0, 9)
        ]
    finally:
        member.close()
