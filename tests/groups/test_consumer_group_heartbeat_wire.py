"""ConsumerGroupHeartbeat and ConsumerGroupDescribe in raw frames: the reconciliation
steps and the error paths no client sends on purpose (stale epochs, unknown members,
unsupported assignors, bad regexes, released and unreleased static instance ids)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from broker import MockCluster
from messages.registry import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.support.wire import Connection

ConsumerGroupHeartbeatRequest = request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT)
ConsumerGroupDescribeRequest = request_class(ApiKey.CONSUMER_GROUP_DESCRIBE)

CONFIG = {"group.consumer.max.size": "3"}
Owned = ConsumerGroupHeartbeatRequest.TopicPartitions


class Wire(Connection):
    def __init__(self, cluster: MockCluster) -> None:
        super().__init__(cluster.bootstrap_servers)

    def heartbeat(self, version: int = 1, **fields: Any) -> Any:
        values: dict[str, Any] = {"group_id": "g", "rebalance_timeout_ms": -1, **fields}
        return self(ConsumerGroupHeartbeatRequest[version](**values))

    def join(self, member_id: str, topics: list[str] | None = None, **fields: Any) -> Any:
        return self.heartbeat(
            member_id=member_id,
            member_epoch=0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=["t"] if topics is None else topics,
            topic_partitions=[],
            **fields,
        )


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config=CONFIG) as running:
        running.create_topic("t", 2)
        yield running


@pytest.fixture
def wire(cluster: MockCluster) -> Iterator[Wire]:
    connection = Wire(cluster)
    yield connection
    connection.sock.close()


def partitions(response: Any) -> dict[uuid.UUID, list[int]] | None:
    if response.assignment is None:
        return None
    return {t.topic_id: sorted(t.partitions) for t in response.assignment.topic_partitions}


def test_partitions_are_revoked_before_they_are_assigned_elsewhere(cluster: MockCluster, wire: Wire) -> None:
    topic_id = cluster.groups.cluster.topics["t"].topic_id
    first = wire.join("a")
    # a new group starts at epoch 1 (Kafka 4.4): the first member's join makes it 2
    assert (first.error_code, first.member_epoch, partitions(first)) == (0, 2, {topic_id: [0, 1]})
    steady = wire.heartbeat(
        member_id="a", member_epoch=2, topic_partitions=[Owned(topic_id=topic_id, partitions=[0, 1])]
    )
    assert (steady.member_epoch, steady.assignment) == (2, None)  # nothing new: no assignment sent
    second = wire.join("b")
    # b is at the new epoch but gets nothing yet: both partitions are still a's.
    assert (second.member_epoch, partitions(second)) == (3, {})
    revoke = wire.heartbeat(
        member_id="a", member_epoch=2, topic_partitions=[Owned(topic_id=topic_id, partitions=[0, 1])]
    )
    assert (revoke.member_epoch, len(partitions(revoke) or {topic_id: []}[topic_id])) == (2, 1)
    kept = partitions(revoke)[topic_id]  # type: ignore[index]
    waiting = wire.heartbeat(member_id="b", member_epoch=3)
    assert waiting.assignment is None  # still unreleased
    released = wire.heartbeat(
        member_id="a", member_epoch=2, topic_partitions=[Owned(topic_id=topic_id, partitions=kept)]
    )
    assert (released.member_epoch, released.assignment) == (3, None)
    taken = wire.heartbeat(member_id="b", member_epoch=3)
    assert partitions(taken) == {topic_id: [p for p in (0, 1) if p not in kept]}
    group = cluster.groups.consumer.groups["g"]
    assert (group.state, group.group_epoch, group.assignment_epoch) == ("Stable", 3, 3)


def test_epochs_out_of_step_are_fenced(wire: Wire) -> None:
    wire.join("a")
    ahead = wire.heartbeat(member_id="a", member_epoch=5)
    assert ahead.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert ahead.error_message.startswith("The consumer group member has a greater member epoch (5)")
    wire.join("b")  # epoch 3 for the group; a is still at 2 until it heartbeats
    behind = wire.heartbeat(member_id="b", member_epoch=2, topic_partitions=[])
    assert behind.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    # A fenced member rejoins under its own id with epoch 0 (KIP-1082).
    assert wire.join("b").error_code == ErrorCode.NONE


def test_unknown_members_groups_and_assignors(wire: Wire) -> None:
    missing = wire.heartbeat(member_id="a", member_epoch=1)
    assert (missing.error_code, missing.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Consumer group g not found.",
    )
    wire.join("a")
    stranger = wire.heartbeat(member_id="x", member_epoch=1)
    assert (stranger.error_code, stranger.error_message) == (
        ErrorCode.UNKNOWN_MEMBER_ID,
        "Member x is not a member of group g.",
    )
    assert wire.heartbeat(member_id="x", member_epoch=-1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    sticky = wire.join("b", server_assignor="sticky")
    assert (sticky.error_code, sticky.error_message) == (
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
    )


def test_a_bad_regex_is_refused(wire: Wire) -> None:
    response = wire.heartbeat(
        member_id="a",
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_regex="t(",
        topic_partitions=[],
    )
    assert response.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert response.error_message.startswith("SubscribedTopicRegex `t(` is not a valid regular expression")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"member_id": "", "member_epoch": 1}, "MemberId can't be empty."),
        (
            {"member_id": "a", "member_epoch": 0, "subscribed_topic_names": ["t"], "topic_partitions": []},
            "RebalanceTimeoutMs must be provided in first request.",
        ),
        (
            {
                "member_id": "a",
                "member_epoch": 0,
                "rebalance_timeout_ms": 1000,
                "subscribed_topic_names": ["t"],
            },
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            {"member_id": "a", "member_epoch": 0, "rebalance_timeout_ms": 1000, "topic_partitions": []},
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        ({"member_id": "a", "member_epoch": -2}, "InstanceId can't be null."),
        ({"member_id": "a", "member_epoch": -3}, "MemberEpoch is invalid."),
        ({"member_id": "a", "member_epoch": 1, "group_id": " "}, "GroupId can't be empty."),
    ],
)
def test_invalid_requests(wire: Wire, fields: dict[str, Any], message: str) -> None:
    response = wire.heartbeat(**fields)
    assert (response.error_code, response.error_message) == (ErrorCode.INVALID_REQUEST, message)


def test_v0_lets_the_coordinator_name_the_member(wire: Wire) -> None:
    response = wire.heartbeat(
        version=0,
        member_id="",
        member_epoch=0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    assert response.error_code == ErrorCode.NONE and len(response.member_id) > 0


def test_static_instance_ids(cluster: MockCluster, wire: Wire) -> None:
    assert wire.join("a", instance_id="i").member_epoch == 2
    taken = wire.join("b", instance_id="i")
    assert (taken.error_code, taken.error_message) == (
        ErrorCode.UNRELEASED_INSTANCE_ID,
        "Static member b with instance id i cannot join the group because the instance id is owned by a member.",
    )
    fenced = wire.heartbeat(member_id="b", member_epoch=2, instance_id="i")
    assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID
    left = wire.heartbeat(member_id="a", member_epoch=-2, instance_id="i")
    assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -2)
    back = wire.join("b", instance_id="i")  # released: the new id takes over at the same epoch
    assert (back.error_code, back.member_epoch, len(partitions(back) or {})) == (ErrorCode.NONE, 2, 1)
    assert list(cluster.groups.consumer.groups["g"].members) == ["b"]


def test_group_max_size(wire: Wire) -> None:
    for member in ("a", "b", "c"):
        assert wire.join(member).error_code == ErrorCode.NONE
    full = wire.join("d")
    assert (full.error_code, full.error_message) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The consumer group has reached its maximum capacity of 3 members.",
    )


def test_offsets_are_committed_and_fetched_with_the_member_epoch(cluster: MockCluster, wire: Wire) -> None:
    wire.join("a")

    def commit(version: int, epoch: int) -> int:
        topic = OffsetCommitRequest.OffsetCommitRequestTopic
        response = wire(
            OffsetCommitRequest[version](
                group_id="g",
                generation_id_or_member_epoch=epoch,
                member_id="a",
                topics=[
                    topic(
                        name="t",
                        partitions=[
                            topic.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)
                        ],
                    )
                ],
            )
        )
        return int(response.topics[0].partitions[0].error_code)

    assert commit(9, 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(8, 2) == ErrorCode.UNSUPPORTED_VERSION  # consumer-protocol members commit with v9+
    assert commit(9, 2) == ErrorCode.NONE

    def fetch(member_id: str | None, epoch: int) -> int:
        group = OffsetFetchRequest.OffsetFetchRequestGroup
        response = wire(
            OffsetFetchRequest[9](
                groups=[group(group_id="g", member_id=member_id, member_epoch=epoch, topics=None)],
                require_stable=False,
            )
        )
        return int(response.groups[0].error_code)

    assert fetch("a", 3) == ErrorCode.STALE_MEMBER_EPOCH
    assert fetch("nobody", 2) == ErrorCode.UNKNOWN_MEMBER_ID
    assert fetch("a", 2) == fetch(None, -1) == ErrorCode.NONE
    assert cluster.groups.fetch_offsets("g")[("t", 0)].offset == 5  # type: ignore[union-attr]


def test_describe_and_list_tell_the_group_types_apart(cluster: MockCluster, wire: Wire) -> None:
    wire.join("a", instance_id="i", rack_id="r1")
    described = wire(
        ConsumerGroupDescribeRequest[1](group_ids=["g", "nope", ""], include_authorized_operations=True)
    )
    group, missing, empty = described.groups
    assert (
        group.error_code,
        group.group_state,
        group.group_epoch,
        group.assignment_epoch,
        group.assignor_name,
    ) == (0, "Stable", 2, 2, "uniform")
    [member] = group.members
    assert (
        member.member_id,
        member.instance_id,
        member.rack_id,
        member.member_epoch,
        member.member_type,
    ) == ("a", "i", "r1", 2, 1)
    assert member.subscribed_topic_regex == ""  # as Kafka answers a member without a regex
    assert [(t.topic_name, t.partitions) for t in member.assignment.topic_partitions] == [("t", [0, 1])]
    assert group.authorized_operations == {
        3,
        6,
        8,
        10,
        11,
    }  # READ DELETE DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
    assert (missing.error_code, missing.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
    )
    assert empty.error_code == ErrorCode.INVALID_GROUP_ID
    classic = wire(DescribeGroupsRequest[6](groups=["g"], include_authorized_operations=False)).groups[0]
    assert (classic.error_code, classic.group_state, classic.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Dead",
        "Group g is not a classic group.",
    )
    listed = wire(ListGroupsRequest[5](states_filter=["stable"], types_filter=["consumer"])).groups
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed] == [
        ("g", "consumer", "Stable", "consumer")
    ]
    assert wire(ListGroupsRequest[5](states_filter=[], types_filter=["classic"])).groups == []


def test_a_member_that_never_revokes_is_fenced_after_its_rebalance_timeout(
    cluster: MockCluster, wire: Wire
) -> None:
    topic_id = cluster.state.topics["t"].topic_id
    wire.heartbeat(
        member_id="slow",
        member_epoch=0,
        rebalance_timeout_ms=200,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    wire.join("b")
    # slow is asked to give one partition up and keeps reporting both.
    owned = [Owned(topic_id=topic_id, partitions=[0, 1])]
    assert wire.heartbeat(member_id="slow", member_epoch=2, topic_partitions=owned).member_epoch == 2
    group = cluster.groups.consumer.groups["g"]
    deadline = time.monotonic() + 10
    while "slow" in cluster.on_loop(lambda: list(group.members)):
        assert time.monotonic() < deadline, "not fenced"
        time.sleep(0.05)
    fenced = wire.heartbeat(member_id="slow", member_epoch=2, topic_partitions=owned)
    assert fenced.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert partitions(wire.heartbeat(member_id="b", member_epoch=3)) == {topic_id: [0, 1]}


def test_new_partitions_and_deleted_topics_change_the_assignment(cluster: MockCluster, wire: Wire) -> None:
    cluster.create_topic("u", 1)
    ids = {name: cluster.state.topics[name].topic_id for name in ("t", "u")}
    first = wire.join("a", topics=["t", "u"])
    assert partitions(first) == {ids["t"]: [0, 1], ids["u"]: [0]}
    cluster.on_loop(lambda: cluster.state.create_partitions("t", 3))
    grown = wire.heartbeat(member_id="a", member_epoch=2)
    assert (grown.member_epoch, partitions(grown)) == (3, {ids["t"]: [0, 1, 2], ids["u"]: [0]})
    cluster.on_loop(lambda: cluster.state.delete_topic("u"))
    shrunk = wire.heartbeat(member_id="a", member_epoch=3)
    # The deleted topic's partition is revoked first (the member has not said it let go).
    assert (shrunk.member_epoch, partitions(shrunk)) == (3, {ids["t"]: [0, 1, 2]})
    owned = [Owned(topic_id=ids["t"], partitions=[0, 1, 2])]
    assert wire.heartbeat(member_id="a", member_epoch=3, topic_partitions=owned).member_epoch == 4


def test_the_range_assignor_is_chosen_by_the_members(cluster: MockCluster, wire: Wire) -> None:
    wire.join("a", server_assignor="range")
    wire.join("b", server_assignor="range")
    described = wire(ConsumerGroupDescribeRequest[1](group_ids=["g"], include_authorized_operations=False))
    assert described.groups[0].assignor_name == "range"
    group = cluster.groups.consumer.groups["g"]
    assert {
        member: sorted(p for ps in target.values() for p in ps) for member, target in group.target.items()
    } == {
        "a": [0],
        "b": [1],
    }


def classic_member(
    wire: Wire,
    protocol_type: str = "consumer",
    instance_id: str | None = None,
    rebalance_timeout_ms: int = 10_000,
) -> Any:
    """A classic member (JoinGroup v5 parks until the group forms)."""
    subscription = ConsumerProtocolSubscription(version=0, topics=["t"], user_data=None)
    joined = wire(
        JoinGroupRequest[5](
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=rebalance_timeout_ms,
            member_id="",
            group_instance_id=instance_id or "classic",
            protocol_type=protocol_type,
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=bytes(subscription.encode()))
            ],
        )
    )
    assert joined.error_code == ErrorCode.NONE
    return joined


@pytest.mark.parametrize(
    ("config", "protocol_type", "why"),
    [
        ({"group.consumer.migration.policy": "downgrade"}, "consumer", "online upgrade is disabled"),
        ({}, "connect", "the group does not use the consumer embedded protocol"),
    ],
)
def test_classic_groups_that_cannot_be_upgraded(config: dict[str, str], protocol_type: str, why: str) -> None:
    with MockCluster(
        brokers=1, config={**CONFIG, "group.initial.rebalance.delay.ms": "0", **config}
    ) as running:
        running.create_topic("t", 2)
        wire = Wire(running)
        classic_member(wire, protocol_type)
        refused = wire.join("modern")
        assert (refused.error_code, refused.error_message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group g to consumer group because {why}.",
        )
        assert "g" in running.groups.groups and "g" not in running.groups.consumer.groups


def test_heartbeats_need_read_on_the_group_and_describe_on_the_topics() -> None:
    secured = {**CONFIG, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1, config=secured) as running:
        running.create_topic("t", 1)
        wire = Wire(running)
        assert wire.join("a").error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        running.acls.add("User:ANONYMOUS", "READ", "GROUP", "g")
        assert wire.join("a").error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        running.acls.add("User:ANONYMOUS", "DESCRIBE", "TOPIC", "t")
        assert wire.join("a").error_code == ErrorCode.NONE


def test_without_the_consumer_protocol_the_apis_are_neither_advertised_nor_served() -> None:
    with MockCluster(brokers=1, config={"group.coordinator.rebalance.protocols": "classic"}) as running:
        advertised = running.brokers[0].advertised_apis
        assert 68 not in advertised and 69 not in advertised and 11 in advertised
        wire = Wire(running)
        with pytest.raises(ConnectionError):  # an API not enabled closes the connection, as in Kafka
            wire.join("a")


def test_a_null_topic_name_is_refused_and_leaves_no_group(cluster: MockCluster, wire: Wire) -> None:
    # SubscribedTopicNames' elements are non-nullable strings: Kafka's generated reader
    # fails to parse the request and the connection is closed unanswered.
    with pytest.raises(ConnectionError):
        wire.join("a", topics=["t", None])  # type: ignore[list-item]
    fresh = Wire(cluster)
    try:
        assert fresh.join("b", subscribed_topic_regex="t(").error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    finally:
        fresh.sock.close()
    assert cluster.groups.consumer.groups == {}  # failed first joins create nothing


def test_a_failed_static_rejoin_changes_nothing(cluster: MockCluster, wire: Wire) -> None:
    wire.join("a", instance_id="i")
    wire.heartbeat(member_id="a", member_epoch=-2, instance_id="i")
    refused = wire.join("b", instance_id="i", subscribed_topic_regex="t(")
    assert refused.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    group = cluster.groups.consumer.groups["g"]
    assert list(group.members) == ["a"] and group.members["a"].member_epoch == -2
    assert sorted(p for ps in group.target["a"].values() for p in ps) == [0, 1]


def test_a_failed_upgrade_leaves_the_classic_group_alone() -> None:
    with MockCluster(
        brokers=1, config={"group.consumer.max.size": "1", "group.initial.rebalance.delay.ms": "0"}
    ) as running:
        running.create_topic("t", 2)
        wire = Wire(running)
        classic_member(wire)
        assert wire.join("modern").error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
        assert "g" in running.groups.groups and "g" not in running.groups.consumer.groups


def test_a_consumer_protocol_member_takes_over_a_classic_static_member() -> None:
    with MockCluster(brokers=1, config={"group.initial.rebalance.delay.ms": "0"}) as running:
        running.create_topic("t", 2)
        wire = Wire(running)
        old = classic_member(wire, instance_id="i")
        joined = wire.join("modern", instance_id="i")  # a rolling upgrade of a static consumer
        assert joined.error_code == ErrorCode.NONE and len(partitions(joined) or {}) == 1
        group = running.groups.consumer.groups["g"]
        assert list(group.members) == ["modern"] and old.member_id not in group.members


def test_a_classic_member_that_does_not_rejoin_is_fenced_after_its_rebalance_timeout() -> None:
    with MockCluster(brokers=1, config={"group.initial.rebalance.delay.ms": "0"}) as running:
        running.create_topic("t", 2)
        wire = Wire(running)
        old = classic_member(wire, rebalance_timeout_ms=300)
        assert wire.join("modern").error_code == ErrorCode.NONE  # upgrades the group
        beat = wire(
            HeartbeatRequest[3](group_id="g", generation_id=old.generation_id, member_id=old.member_id)
        )
        assert beat.error_code == ErrorCode.REBALANCE_IN_PROGRESS  # ... and it never joins again
        group = running.groups.consumer.groups["g"]
        deadline = time.monotonic() + 10
        while running.on_loop(lambda: old.member_id in group.members):
            assert time.monotonic() < deadline, "not fenced"
            time.sleep(0.05)


def test_unknown_assignors_and_policies_are_refused_at_start() -> None:
    with pytest.raises(ValueError, match="group.consumer.assignors: Class sticky cannot be found"):
        MockCluster(brokers=1, config={"group.consumer.assignors": "uniform,sticky"})
    with pytest.raises(ValueError, match="group.consumer.migration.policy"):
        MockCluster(brokers=1, config={"group.consumer.migration.policy": "sideways"})
    with pytest.raises(ValueError, match="must be less than group.consumer.session.timeout.ms"):
        MockCluster(
            brokers=1,
            config={
                "group.consumer.heartbeat.interval.ms": "50000",
                "group.consumer.max.heartbeat.interval.ms": "60000",
            },
        )


def test_describe_refuses_a_group_whose_topics_the_caller_cannot_see() -> None:
    secured = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1, config=secured) as running:
        running.create_topic("t", 1)
        running.acls.add("User:ANONYMOUS", "READ", "GROUP", "g")
        running.acls.add("User:ANONYMOUS", "DESCRIBE", "TOPIC", "t")
        wire = Wire(running)
        assert wire.join("a").error_code == ErrorCode.NONE
        running.acls.remove(principal="User:ANONYMOUS", operation="DESCRIBE", resource_type="TOPIC", name="t")
        described = wire(
            ConsumerGroupDescribeRequest[1](group_ids=["g"], include_authorized_operations=False)
        )
        assert (described.groups[0].error_code, described.groups[0].members) == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            [],
        )
