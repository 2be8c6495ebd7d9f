"""The group API handlers, version by version, without sockets.

Each request is encoded and decoded at its version (so fields a version lacks really
are absent), handed to the broker's handler with a real RequestContext, and the
response is encoded and decoded back at that version before it is inspected.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest

from broker import MockCluster
from broker.context import RequestContext
from broker.handlers import HANDLERS
from broker.state.groups import DEAD, OffsetCommit
from messages.registry import request_class, response_class
from protocol.errors import ErrorCode
from quotas.callback import ANONYMOUS

Protocol = JoinGroupRequest.JoinGroupRequestProtocol
CommitTopic = OffsetCommitRequest.OffsetCommitRequestTopic
CommitPartition = CommitTopic.OffsetCommitRequestPartition
FetchTopic = OffsetFetchRequest.OffsetFetchRequestTopic
FetchGroup = OffsetFetchRequest.OffsetFetchRequestGroup
FetchGroupTopic = FetchGroup.OffsetFetchRequestTopics
Identity = LeaveGroupRequest.MemberIdentity


class FakeConnection:
    listener = "PLAINTEXT"
    peer = ("10.1.2.3", 40000)
    principal = ANONYMOUS


@pytest.fixture
async def cluster() -> AsyncIterator[MockCluster]:
    async with MockCluster(
        brokers=3, config={"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "10"}
    ) as mock:
        mock.create_topic("t", 3)
        yield mock


async def call(
    cluster: MockCluster, node_id: int, request: Any, version: int, client_id: str = "tester"
) -> Any:
    api_key = request.API_KEY
    body = request_class(api_key).decode(memoryview(bytes(request.encode(version=version))), version=version)
    broker = next(b for b in cluster.brokers if b.node_id == node_id)
    ctx = RequestContext(broker, FakeConnection(), api_key, version, 1, client_id, 0, 0)  # type: ignore[arg-type]
    result = HANDLERS[api_key].handler(ctx, body)
    if inspect.iscoroutine(result):
        result = await result
    encoded = bytes(result.encode(version=version))
    return response_class(api_key).decode(memoryview(encoded), version=version)


def group_on(cluster: MockCluster, node_id: int, prefix: str = "group") -> str:
    """A group id whose coordinator is `node_id`."""
    for i in range(1000):
        if cluster.groups.coordinator_for(f"{prefix}-{i}") == node_id:
            return f"{prefix}-{i}"
    raise AssertionError("no group id maps to that broker")


def join_request(group: str, member_id: str = "", instance_id: str | None = None) -> Any:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=1000,
        rebalance_timeout_ms=1000,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type="consumer",
        protocols=[Protocol(name="range", metadata=b"meta")],
        reason=None,
    )


async def stable_member(cluster: MockCluster, group: str) -> tuple[str, int]:
    node = cluster.groups.coordinator_for(group)
    first = await call(cluster, node, join_request(group), 9)
    joined = await call(cluster, node, join_request(group, first.member_id), 9)
    sync = SyncGroupRequest(
        group_id=group,
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"a")
        ],
    )
    assert (await call(cluster, node, sync, 5)).error_code == ErrorCode.NONE
    return joined.member_id, joined.generation_id


# -- FindCoordinator ----------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2, 3])
async def test_find_coordinator_single_key(cluster: MockCluster, version: int) -> None:
    group = group_on(cluster, 2)
    response = await call(cluster, 0, FindCoordinatorRequest(key=group, key_type=0), version)
    broker = cluster.state.brokers[2]
    assert (response.error_code, response.node_id) == (ErrorCode.NONE, 2)
    assert (response.host, response.port) == broker.endpoint("PLAINTEXT")
    if version >= 1:
        assert response.error_message == "NONE"


async def test_find_coordinator_batched_and_unsupported_key_types(cluster: MockCluster) -> None:
    keys = [group_on(cluster, 0), group_on(cluster, 1)]
    response = await call(cluster, 2, FindCoordinatorRequest(key_type=0, coordinator_keys=keys), 4)
    assert [(c.key, c.node_id, c.error_code) for c in response.coordinators] == [
        (keys[0], 0, ErrorCode.NONE),
        (keys[1], 1, ErrorCode.NONE),
    ]
    txn = await call(cluster, 0, FindCoordinatorRequest(key_type=1, coordinator_keys=["tx"]), 4)
    assert [(c.error_code, c.node_id) for c in txn.coordinators] == [
        (ErrorCode.NONE, cluster.transactions.coordinator_for("tx"))
    ]
    bogus = await call(cluster, 0, FindCoordinatorRequest(key="g", key_type=7), 3)
    assert (bogus.error_code, bogus.node_id) == (ErrorCode.INVALID_REQUEST, -1)


async def test_find_coordinator_moves_when_the_coordinator_stops(cluster: MockCluster) -> None:
    group = group_on(cluster, 1)
    await cluster.brokers[1].stop()
    response = await call(cluster, 0, FindCoordinatorRequest(key=group, key_type=0), 3)
    assert (
        response.error_code == ErrorCode.NONE
        and response.node_id == cluster.groups.coordinator_for(group) != 1
    )


# -- routing ------------------------------------------------------------------------------
async def test_group_requests_at_the_wrong_broker_get_not_coordinator(cluster: MockCluster) -> None:
    group = group_on(cluster, 1)
    join = await call(cluster, 0, join_request(group), 5)
    assert (join.error_code, join.member_id, join.generation_id, join.protocol_name) == (
        ErrorCode.NOT_COORDINATOR,
        "",
        -1,
        "",
    )
    heartbeat = HeartbeatRequest(group_id=group, generation_id=1, member_id="m", group_instance_id=None)
    assert (await call(cluster, 2, heartbeat, 4)).error_code == ErrorCode.NOT_COORDINATOR
    leave = LeaveGroupRequest(
        group_id=group, members=[Identity(member_id="m", group_instance_id=None, reason=None)]
    )
    assert (await call(cluster, 0, leave, 5)).error_code == ErrorCode.NOT_COORDINATOR

    commit = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            CommitTopic(
                name=name,
                partitions=[
                    CommitPartition(
                        partition_index=0,
                        committed_offset=1,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                ],
            )
            for name in ("t", "missing")
        ],
    )
    errors = {t.name: t.partitions[0].error_code for t in (await call(cluster, 0, commit, 8)).topics}
    assert errors == {"t": ErrorCode.NOT_COORDINATOR, "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}

    fetch_v1 = OffsetFetchRequest(group_id=group, topics=[FetchTopic(name="t", partition_indexes=[0, 1])])
    v1 = await call(cluster, 0, fetch_v1, 1)
    assert [p.error_code for p in v1.topics[0].partitions] == [
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_COORDINATOR,
    ]
    v7 = await call(cluster, 0, OffsetFetchRequest(group_id=group, topics=None, require_stable=False), 7)
    assert (v7.error_code, v7.topics) == (ErrorCode.NOT_COORDINATOR, [])
    v8 = await call(
        cluster,
        0,
        OffsetFetchRequest(groups=[FetchGroup(group_id=group, topics=None)], require_stable=False),
        8,
    )
    assert [(g.group_id, g.error_code) for g in v8.groups] == [(group, ErrorCode.NOT_COORDINATOR)]

    described = await call(
        cluster, 0, DescribeGroupsRequest(groups=[group], include_authorized_operations=False), 5
    )
    assert described.groups[0].error_code == ErrorCode.NOT_COORDINATOR
    deleted = await call(cluster, 0, DeleteGroupsRequest(groups_names=[group]), 2)
    assert [(r.group_id, r.error_code) for r in deleted.results] == [(group, ErrorCode.NOT_COORDINATOR)]


async def test_empty_group_id_is_invalid_before_routing(cluster: MockCluster) -> None:
    assert (await call(cluster, 0, join_request(""), 5)).error_code == ErrorCode.INVALID_GROUP_ID
    heartbeat = HeartbeatRequest(group_id="", generation_id=1, member_id="m", group_instance_id=None)
    assert (await call(cluster, 1, heartbeat, 4)).error_code == ErrorCode.INVALID_GROUP_ID


# -- JoinGroup / SyncGroup / LeaveGroup versions --------------------------------------------
async def test_join_group_versions(cluster: MockCluster) -> None:
    group = group_on(cluster, 0)
    old = await call(cluster, 0, join_request(group), 3, client_id="old-client")
    assert old.error_code == ErrorCode.NONE and old.member_id.startswith(
        "old-client-"
    )  # no KIP-394 before v4
    assert (old.generation_id, old.protocol_name, old.leader) == (1, "range", old.member_id)
    assert [(m.member_id, m.metadata) for m in old.members] == [(old.member_id, b"meta")]

    other = group_on(cluster, 0, "fresh")
    required = await call(cluster, 0, join_request(other), 4)
    assert required.error_code == ErrorCode.MEMBER_ID_REQUIRED and required.member_id
    joined = await call(cluster, 0, join_request(other, required.member_id), 7)
    assert (joined.protocol_type, joined.protocol_name) == ("consumer", "range")
    described = cluster.groups.describe_group(other)
    assert described is not None and described.members[0].client_host == "/10.1.2.3"


async def test_sync_group_v5_requires_protocol_type_and_name(cluster: MockCluster) -> None:
    group = group_on(cluster, 0)
    sync = SyncGroupRequest(
        group_id=group,
        generation_id=1,
        member_id="m",
        group_instance_id=None,
        protocol_type=None,
        protocol_name="range",
        assignments=[],
    )
    assert (await call(cluster, 0, sync, 5)).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert (await call(cluster, 0, sync, 4)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


async def test_leave_group_single_and_batched(cluster: MockCluster) -> None:
    group = group_on(cluster, 0)
    member_id, _ = await stable_member(cluster, group)
    v1 = await call(cluster, 0, LeaveGroupRequest(group_id=group, member_id="stranger"), 1)
    assert v1.error_code == ErrorCode.UNKNOWN_MEMBER_ID  # the member's error, at the top level
    batch = LeaveGroupRequest(
        group_id=group,
        members=[
            Identity(member_id=member_id, group_instance_id=None, reason="bye"),
            Identity(member_id="stranger", group_instance_id=None, reason=None),
        ],
    )
    v5 = await call(cluster, 0, batch, 5)
    assert v5.error_code == ErrorCode.NONE
    assert [(m.member_id, m.error_code) for m in v5.members] == [
        (member_id, ErrorCode.NONE),
        ("stranger", ErrorCode.UNKNOWN_MEMBER_ID),
    ]
    assert cluster.groups.describe_group(group).state == "Empty"  # type: ignore[union-attr]


# -- offsets ----------------------------------------------------------------------------------
async def test_offset_commit_and_fetch_by_topic_id(cluster: MockCluster) -> None:
    group = group_on(cluster, 0)
    topic_id = cluster.state.topics["t"].topic_id
    unknown_id = uuid.uuid4()
    commit = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            CommitTopic(
                topic_id=topic_id,
                partitions=[
                    CommitPartition(
                        partition_index=i,
                        committed_offset=10 + i,
                        committed_leader_epoch=0,
                        committed_metadata="m",
                    )
                    for i in (0, 1, 7)
                ],
            ),
            CommitTopic(
                topic_id=unknown_id,
                partitions=[
                    CommitPartition(
                        partition_index=0, committed_offset=1, committed_leader_epoch=0, committed_metadata=""
                    )
                ],
            ),
        ],
    )
    committed = await call(cluster, 0, commit, 10)
    assert [
        (t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in committed.topics
    ] == [
        (topic_id, [(0, ErrorCode.NONE), (1, ErrorCode.NONE), (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
        (unknown_id, [(0, ErrorCode.UNKNOWN_TOPIC_ID)]),
    ]

    fetch = OffsetFetchRequest(
        groups=[
            FetchGroup(
                group_id=group,
                member_id=None,
                member_epoch=-1,
                topics=[
                    FetchGroupTopic(topic_id=topic_id, partition_indexes=[0, 2]),
                    FetchGroupTopic(topic_id=unknown_id, partition_indexes=[0]),
                ],
            ),
            FetchGroup(group_id=group, member_id=None, member_epoch=-1, topics=None),
        ],
        require_stable=True,
    )
    fetched = await call(cluster, 0, fetch, 10)
    wanted, everything = fetched.groups
    assert [
        (t.topic_id, [(p.partition_index, p.committed_offset, p.error_code) for p in t.partitions])
        for t in wanted.topics
    ] == [
        (topic_id, [(0, 10, ErrorCode.NONE), (2, -1, ErrorCode.NONE)]),
        (unknown_id, [(0, -1, ErrorCode.UNKNOWN_TOPIC_ID)]),
    ]
    assert [
        (
            t.topic_id,
            [
                (p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
                for p in t.partitions
            ],
        )
        for t in everything.topics
    ] == [(topic_id, [(0, 10, 0, "m"), (1, 11, 0, "m")])]


async def test_offset_fetch_by_name_versions(cluster: MockCluster) -> None:
    group = group_on(cluster, 1)
    cluster.groups.commit_offsets(group, -1, "", [OffsetCommit("t", 2, 99, 4, "x")])
    v1 = await call(
        cluster,
        1,
        OffsetFetchRequest(group_id=group, topics=[FetchTopic(name="t", partition_indexes=[2])]),
        1,
    )
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in v1.topics[0].partitions] == [
        (2, 99, "x")
    ]
    v5 = await call(cluster, 1, OffsetFetchRequest(group_id=group, topics=None), 5)
    assert [
        (t.name, p.committed_offset, p.committed_leader_epoch) for t in v5.topics for p in t.partitions
    ] == [("t", 99, 4)]
    missing = await call(
        cluster, 1, OffsetFetchRequest(group_id=group_on(cluster, 1, "nobody"), topics=None), 5
    )
    assert (missing.error_code, missing.topics) == (ErrorCode.NONE, [])


# -- admin ------------------------------------------------------------------------------------
async def test_describe_groups_versions(cluster: MockCluster) -> None:
    group = group_on(cluster, 0)
    member_id, _ = await stable_member(cluster, group)
    missing = group_on(cluster, 0, "missing")
    request = DescribeGroupsRequest(groups=[group, missing], include_authorized_operations=True)
    v5 = await call(cluster, 0, request, 5)
    found, dead = v5.groups
    assert (found.error_code, found.group_state, found.protocol_type, found.protocol_data) == (
        ErrorCode.NONE,
        "Stable",
        "consumer",
        "range",
    )
    assert [(m.member_id, m.client_id, m.member_metadata, m.member_assignment) for m in found.members] == [
        (member_id, "tester", b"meta", b"a")
    ]
    assert found.authorized_operations == {
        3,
        6,
        8,
        10,
        11,
    }  # READ, DELETE, DESCRIBE, (DESCRIBE|ALTER)_CONFIGS (4.x)
    assert (dead.error_code, dead.group_state) == (ErrorCode.NONE, DEAD)
    v6 = await call(cluster, 0, request, 6)
    assert (v6.groups[1].error_code, v6.groups[1].group_state) == (ErrorCode.GROUP_ID_NOT_FOUND, DEAD)
    assert v6.groups[1].error_message == f"Group {missing} not found."


async def test_list_groups_per_broker_with_filters(cluster: MockCluster) -> None:
    stable = group_on(cluster, 2, "stable")
    await stable_member(cluster, stable)
    empty = group_on(cluster, 2, "empty")
    cluster.groups.commit_offsets(empty, -1, "", [OffsetCommit("t", 0, 1)])
    elsewhere = group_on(cluster, 0, "elsewhere")
    cluster.groups.commit_offsets(elsewhere, -1, "", [OffsetCommit("t", 0, 1)])

    v0 = await call(cluster, 2, ListGroupsRequest(), 0)
    assert sorted((g.group_id, g.protocol_type) for g in v0.groups) == sorted(
        [(stable, "consumer"), (empty, "")]
    )
    v4 = await call(cluster, 2, ListGroupsRequest(states_filter=["Stable"]), 4)
    assert [(g.group_id, g.group_state) for g in v4.groups] == [(stable, "Stable")]
    v5 = await call(cluster, 2, ListGroupsRequest(states_filter=[], types_filter=["consumer"]), 5)
    assert v5.groups == []
    v5 = await call(cluster, 0, ListGroupsRequest(states_filter=[], types_filter=["classic"]), 5)
    assert [(g.group_id, g.group_type) for g in v5.groups] == [(elsewhere, "classic")]


async def test_delete_groups(cluster: MockCluster) -> None:
    busy = group_on(cluster, 1, "busy")
    await stable_member(cluster, busy)
    idle = group_on(cluster, 1, "idle")
    cluster.groups.commit_offsets(idle, -1, "", [OffsetCommit("t", 0, 1)])
    never = group_on(cluster, 1, "never")
    response = await call(cluster, 1, DeleteGroupsRequest(groups_names=[busy, idle, never, idle]), 2)
    results = {r.group_id: r.error_code for r in response.results}
    assert results[busy] == 68  # NON_EMPTY_GROUP
    assert results[idle] == ErrorCode.NONE
    assert results[never] == ErrorCode.GROUP_ID_NOT_FOUND
    assert len(response.results) == len(results)  # duplicates answered once
    assert cluster.groups.fetch_offsets(idle) == {}
