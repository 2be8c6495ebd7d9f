"""GroupCoordinator driven directly (no sockets): joins, rebalances, sessions, offsets.

Timeouts are tens of milliseconds and the initial rebalance delay is 0 unless a test is
about it, so the whole module runs in about a second.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence

import pytest

from broker.config.broker_config import BrokerConfig
from broker.state.classic_groups import COMPLETING_REBALANCE, EMPTY, PREPARING_REBALANCE, STABLE, JoinResult
from broker.state.cluster import BrokerNode, ClusterState
from broker.state.groups import GroupCoordinator, OffsetCommit, java_string_hash, kafka_abs
from protocol.errors import ErrorCode

RANGE = [("range", b"range-meta")]
SESSION_MS = 200
REBALANCE_MS = 300


def make_cluster(brokers: int = 1, **config: str) -> ClusterState:
    values = {
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "10",
        "group.max.session.timeout.ms": "60000",
    }
    values.update({key.replace("_", "."): value for key, value in config.items()})
    cluster = ClusterState(BrokerConfig(values))
    for node_id in range(brokers):
        cluster.brokers[node_id] = BrokerNode(node_id, {"PLAINTEXT": ("127.0.0.1", 9092 + node_id)})
    cluster.create_topic("t", 6)
    return cluster


@pytest.fixture
async def coordinator() -> AsyncIterator[GroupCoordinator]:
    coord = GroupCoordinator(make_cluster())
    yield coord
    coord.close()


async def join(
    coord: GroupCoordinator,
    member_id: str = "",
    group: str = "g",
    protocols: Sequence[tuple[str, bytes]] = RANGE,
    session_ms: int = SESSION_MS,
    rebalance_ms: int = REBALANCE_MS,
    instance_id: str | None = None,
    protocol_type: str = "consumer",
    client_id: str = "client",
) -> JoinResult:
    return await coord.join_group(
        group,
        member_id,
        protocol_type,
        protocols,
        session_ms,
        rebalance_ms,
        group_instance_id=instance_id,
        client_id=client_id,
        client_host="/127.0.0.1",
    )


async def join_new(coord: GroupCoordinator, group: str = "g", **kwargs: object) -> JoinResult:
    """A v4+ first join: MEMBER_ID_REQUIRED, then the real join with the given id."""
    first = await join(coord, "", group, **kwargs)  # type: ignore[arg-type]
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    return await join(coord, first.member_id, group, **kwargs)  # type: ignore[arg-type]


async def stable_group(coord: GroupCoordinator, group: str = "g") -> JoinResult:
    """One member joined and synced: the group is Stable at generation 1."""
    joined = await join_new(coord, group)
    synced = await coord.sync_group(
        group, joined.generation_id, joined.member_id, [(joined.member_id, b"a1")]
    )
    assert synced.error == ErrorCode.NONE and synced.assignment == b"a1"
    return joined


def state(coord: GroupCoordinator, group: str = "g") -> str:
    return coord.groups[group].state


# -- placement -----------------------------------------------------------------------
def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("\U0001f600") == java_string_hash(
        "\ud83d\ude00".encode("utf-16", "surrogatepass").decode("utf-16")
    )
    assert kafka_abs(-(2**31)) == 0


def test_coordinator_for_uses_offsets_partition_over_live_brokers() -> None:
    cluster = make_cluster(brokers=3)
    coord = GroupCoordinator(cluster)
    assert coord.partition_for("hello") == 99162322 % 50
    assert coord.coordinator_for("hello") == (99162322 % 50) % 3
    assert coord.partition_for("polygenelubricants") == 0
    cluster.brokers[0].up = False
    assert coord.coordinator_for("polygenelubricants") == 1  # partition 0: its leader 0 is down, 1 is next
    for node in cluster.brokers.values():
        node.up = False
    assert coord.coordinator_for("hello") == -1


# -- joining -------------------------------------------------------------------------
async def test_first_join_requires_member_id_then_forms_generation(coordinator: GroupCoordinator) -> None:
    first = await join(coordinator, client_id="my-client")
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("my-client-")
    uuid.UUID(first.member_id[len("my-client-") :])
    joined = await join(coordinator, first.member_id)
    assert joined.error == ErrorCode.NONE
    assert joined.generation_id == 1
    assert joined.leader == joined.member_id
    assert joined.protocol_type == "consumer" and joined.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in joined.members] == [(joined.member_id, b"range-meta")]
    assert state(coordinator) == COMPLETING_REBALANCE
    synced = await coordinator.sync_group("g", 1, joined.member_id, [(joined.member_id, b"assignment")])
    assert (synced.error, synced.assignment, synced.protocol_name) == (ErrorCode.NONE, b"assignment", "range")
    assert state(coordinator) == STABLE


async def test_join_without_member_id_requirement_joins_at_once(coordinator: GroupCoordinator) -> None:
    result = await coordinator.join_group(
        "g", "", "consumer", RANGE, SESSION_MS, REBALANCE_MS, require_known_member_id=False
    )
    assert result.error == ErrorCode.NONE and result.generation_id == 1


async def test_join_validation_errors(coordinator: GroupCoordinator) -> None:
    assert (await join(coordinator, group="")).error == ErrorCode.INVALID_GROUP_ID
    assert (await join(coordinator, session_ms=5)).error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert (await join(coordinator, session_ms=60001)).error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert (await join(coordinator, protocol_type="")).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert (await join(coordinator, protocols=[])).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert (await join(coordinator, "someone", group="unknown")).error == ErrorCode.UNKNOWN_MEMBER_ID
    await stable_group(coordinator)
    assert (
        await join(coordinator, protocols=[("roundrobin", b"")])
    ).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert (await join(coordinator, protocol_type="connect")).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


async def test_second_member_triggers_rebalance_and_leader_gets_all_metadata(
    coordinator: GroupCoordinator,
) -> None:
    a = await stable_group(coordinator)
    b_join = asyncio.create_task(join_new(coordinator))
    await asyncio.sleep(0.01)
    assert state(coordinator) == PREPARING_REBALANCE
    # A learns of the rebalance from its heartbeat, and SyncGroup is refused meanwhile.
    assert coordinator.heartbeat("g", 1, a.member_id) == ErrorCode.REBALANCE_IN_PROGRESS
    assert (await coordinator.sync_group("g", 1, a.member_id)).error == ErrorCode.REBALANCE_IN_PROGRESS
    a2 = await join(coordinator, a.member_id)
    b = await b_join
    assert a2.generation_id == b.generation_id == 2
    assert a2.leader == b.leader == a.member_id
    assert {m.member_id for m in a2.members} == {a.member_id, b.member_id}
    assert b.members == []
    # The follower's SyncGroup waits for the leader's.
    b_sync = asyncio.create_task(coordinator.sync_group("g", 2, b.member_id))
    await asyncio.sleep(0.01)
    assert not b_sync.done()
    a_sync = await coordinator.sync_group("g", 2, a.member_id, [(a.member_id, b"A"), (b.member_id, b"B")])
    assert a_sync.assignment == b"A"
    assert (await b_sync).assignment == b"B"
    assert state(coordinator) == STABLE
    assert coordinator.heartbeat("g", 2, b.member_id) == ErrorCode.NONE


async def test_leave_triggers_rebalance_for_the_rest(coordinator: GroupCoordinator) -> None:
    a = await stable_group(coordinator)
    b_task = asyncio.create_task(join_new(coordinator))
    await asyncio.sleep(0.01)
    await join(coordinator, a.member_id)
    b = await b_task
    await asyncio.gather(
        coordinator.sync_group("g", 2, a.member_id, [(a.member_id, b"A"), (b.member_id, b"B")]),
        coordinator.sync_group("g", 2, b.member_id),
    )
    assert coordinator.leave_group("g", [(a.member_id, None)]) == (ErrorCode.NONE, [ErrorCode.NONE])
    assert state(coordinator) == PREPARING_REBALANCE
    assert coordinator.heartbeat("g", 2, b.member_id) == ErrorCode.REBALANCE_IN_PROGRESS
    b3 = await join(coordinator, b.member_id)
    assert (b3.generation_id, b3.leader, len(b3.members)) == (3, b.member_id, 1)
    # The last member leaving empties the group.
    await coordinator.sync_group("g", 3, b.member_id, [(b.member_id, b"all")])
    assert coordinator.leave_group("g", [(b.member_id, None), ("ghost", None)]) == (
        ErrorCode.NONE,
        [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID],
    )
    assert state(coordinator) == EMPTY
    assert coordinator.groups["g"].generation_id == 4
    assert coordinator.leave_group("nope", [("x", None)]) == (ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID])


async def test_session_expiry_removes_member_and_rebalances(coordinator: GroupCoordinator) -> None:
    a = await stable_group(coordinator)
    b_task = asyncio.create_task(join_new(coordinator, session_ms=100))
    await asyncio.sleep(0.01)
    await join(coordinator, a.member_id, session_ms=100)
    b = await b_task
    await asyncio.gather(
        coordinator.sync_group("g", 2, a.member_id, [(a.member_id, b"A")]),
        coordinator.sync_group("g", 2, b.member_id),
    )
    # Only A keeps heartbeating; B's session (100 ms) runs out.
    for _ in range(6):
        await asyncio.sleep(0.04)
        error = coordinator.heartbeat("g", 2, a.member_id)
        if error != ErrorCode.NONE:
            break
    assert error == ErrorCode.REBALANCE_IN_PROGRESS
    assert b.member_id not in coordinator.groups["g"].members
    assert coordinator.heartbeat("g", 2, b.member_id) == ErrorCode.UNKNOWN_MEMBER_ID
    a3 = await join(coordinator, a.member_id, session_ms=100)
    assert a3.generation_id == 3 and [m.member_id for m in a3.members] == [a.member_id]


async def test_member_not_rejoining_is_dropped_after_rebalance_timeout(coordinator: GroupCoordinator) -> None:
    a = await stable_group(coordinator)
    loop = asyncio.get_running_loop()
    started = loop.time()
    b = await join_new(coordinator, rebalance_ms=100)  # A never rejoins
    elapsed = loop.time() - started
    assert 0.08 <= elapsed < 5.0  # dropped after its 100 ms, not kept waiting
    assert b.generation_id == 2 and b.leader == b.member_id
    assert [m.member_id for m in b.members] == [b.member_id]
    assert a.member_id not in coordinator.groups["g"].members
    assert coordinator.heartbeat("g", 1, a.member_id) == ErrorCode.UNKNOWN_MEMBER_ID


async def test_generation_and_member_checks(coordinator: GroupCoordinator) -> None:
    a = await stable_group(coordinator)
    assert coordinator.heartbeat("g", 0, a.member_id) == ErrorCode.ILLEGAL_GENERATION
    assert coordinator.heartbeat("g", 1, "stranger") == ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.heartbeat("other", 1, a.member_id) == ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.heartbeat("", 1, a.member_id) == ErrorCode.INVALID_GROUP_ID
    assert (await coordinator.sync_group("g", 7, a.member_id)).error == ErrorCode.ILLEGAL_GENERATION
    assert (await coordinator.sync_group("g", 1, "stranger")).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert (
        await coordinator.sync_group("g", 1, a.member_id, protocol_name="other")
    ).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # Stable: SyncGroup returns the current assignment again.
    again = await coordinator.sync_group("g", 1, a.member_id, protocol_type="consumer", protocol_name="range")
    assert (again.error, again.assignment) == (ErrorCode.NONE, b"a1")
    # A follower re-joining unchanged in Stable gets the current generation back.
    assert coordinator.groups["g"].is_leader(a.member_id)


async def test_protocol_chosen_by_votes_among_common_protocols(coordinator: GroupCoordinator) -> None:
    # "sticky" is not supported by everyone; of the rest, "roundrobin" has two first votes.
    results = await asyncio.gather(
        join_new(coordinator, protocols=[("range", b"1"), ("roundrobin", b"1"), ("sticky", b"1")]),
        join_new(coordinator, protocols=[("roundrobin", b"2"), ("range", b"2")]),
        join_new(coordinator, protocols=[("roundrobin", b"3"), ("sticky", b"3"), ("range", b"3")]),
    )
    assert {(r.generation_id, r.protocol_name) for r in results} == {(1, "roundrobin")}
    leaders = [r for r in results if r.members]
    assert len(leaders) == 1 and leaders[0].leader == leaders[0].member_id
    assert sorted(m.metadata for m in leaders[0].members) == [b"1", b"2", b"3"]


async def test_initial_delay_gathers_members_into_one_generation() -> None:
    coord = GroupCoordinator(make_cluster(group_initial_rebalance_delay_ms="150"))
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        a_task = asyncio.create_task(join_new(coord, rebalance_ms=2000))
        await asyncio.sleep(0.1)
        b_task = asyncio.create_task(join_new(coord, rebalance_ms=2000))
        a, b = await a_task, await b_task
        # B arrived during the delay, so the delay was extended once: 2 x 150 ms.
        assert loop.time() - started >= 0.28
        assert a.generation_id == b.generation_id == 1
        assert len(a.members) + len(b.members) == 2
    finally:
        coord.close()


async def test_initial_delay_is_not_extended_past_rebalance_timeout() -> None:
    coord = GroupCoordinator(make_cluster(group_initial_rebalance_delay_ms="1000"))
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        a_task = asyncio.create_task(join_new(coord, rebalance_ms=500))
        await asyncio.sleep(0.5)
        b = await join_new(coord, rebalance_ms=500)
        a = await a_task
        # The first delay runs in full; no time remains under the rebalance timeout to
        # extend it (an extension would end at 2 s or later).
        assert 0.99 <= loop.time() - started < 1.9
        assert a.generation_id == b.generation_id == 1
    finally:
        coord.close()


async def test_pending_member_expires_after_session_timeout(coordinator: GroupCoordinator) -> None:
    first = await join(coordinator, session_ms=50)
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id in coordinator.groups["g"].pending_join_members
    await asyncio.sleep(0.1)
    assert first.member_id not in coordinator.groups["g"].pending_join_members
    assert (await join(coordinator, first.member_id)).error == ErrorCode.UNKNOWN_MEMBER_ID


async def test_unsynced_member_is_removed_after_rebalance_timeout(coordinator: GroupCoordinator) -> None:
    joined = await join_new(coordinator, rebalance_ms=80)
    assert state(coordinator) == COMPLETING_REBALANCE
    await asyncio.sleep(0.15)  # never sends SyncGroup
    assert joined.member_id not in coordinator.groups["g"].members
    assert state(coordinator) == EMPTY


# -- static membership ---------------------------------------------------------------
async def test_static_member_rejoin_replaces_member_id_without_rebalance(
    coordinator: GroupCoordinator,
) -> None:
    first = await join(coordinator, instance_id="instance-1")
    assert first.error == ErrorCode.NONE and first.member_id.startswith(
        "instance-1-"
    )  # no MEMBER_ID_REQUIRED
    await coordinator.sync_group(
        "g", 1, first.member_id, [(first.member_id, b"mine")], group_instance_id="instance-1"
    )
    # The process restarts and joins with its instance id but no member id.
    again = await join(coordinator, instance_id="instance-1")
    assert again.error == ErrorCode.NONE and again.member_id != first.member_id
    assert again.generation_id == 1 and state(coordinator) == STABLE
    assert again.skip_assignment and [m.member_id for m in again.members] == [again.member_id]
    assert coordinator.heartbeat("g", 1, first.member_id, "instance-1") == ErrorCode.FENCED_INSTANCE_ID
    synced = await coordinator.sync_group("g", 1, again.member_id, group_instance_id="instance-1")
    assert synced.assignment == b"mine"
    # Administrative removal by instance id alone.
    assert coordinator.leave_group("g", [("", "instance-1")]) == (ErrorCode.NONE, [ErrorCode.NONE])
    assert state(coordinator) == EMPTY


# -- offsets -------------------------------------------------------------------------
async def test_simple_commit_creates_group_and_fetch_returns_it(coordinator: GroupCoordinator) -> None:
    commits = [OffsetCommit("t", 0, 42, 3, "meta"), OffsetCommit("t", 1, 7)]
    assert coordinator.commit_offsets("simple", -1, "", commits) == [ErrorCode.NONE, ErrorCode.NONE]
    assert state(coordinator, "simple") == EMPTY
    fetched = coordinator.fetch_offsets("simple", [("t", 0), ("t", 1), ("t", 2)])
    assert fetched[("t", 2)] is None
    first = fetched[("t", 0)]
    second = fetched[("t", 1)]
    assert first is not None and (first.offset, first.leader_epoch, first.metadata) == (42, 3, "meta")
    assert second is not None and (second.offset, second.leader_epoch, second.metadata) == (7, -1, "")
    assert sorted(coordinator.fetch_offsets("simple")) == [("t", 0), ("t", 1)]
    assert coordinator.fetch_offsets("nobody") == {}
    assert coordinator.fetch_offsets("nobody", [("t", 0)]) == {("t", 0): None}


async def test_commit_checks_generation_and_member(coordinator: GroupCoordinator) -> None:
    commit = [OffsetCommit("t", 0, 1)]
    assert coordinator.commit_offsets("g", 1, "m", commit) == [ErrorCode.GROUP_ID_NOT_FOUND]
    assert coordinator.commit_offsets("g", 1, "m", commit, api_version=8) == [ErrorCode.ILLEGAL_GENERATION]
    joined = await join_new(coordinator)
    # Joined but not yet synced: the consumer must finish the rebalance first.
    assert coordinator.commit_offsets("g", 1, joined.member_id, commit) == [ErrorCode.REBALANCE_IN_PROGRESS]
    await coordinator.sync_group("g", 1, joined.member_id, [(joined.member_id, b"")])
    assert coordinator.commit_offsets("g", 1, joined.member_id, commit) == [ErrorCode.NONE]
    assert coordinator.commit_offsets("g", 0, joined.member_id, commit) == [ErrorCode.ILLEGAL_GENERATION]
    assert coordinator.commit_offsets("g", 1, "stranger", commit) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert coordinator.commit_offsets("g", -1, "", commit) == [
        ErrorCode.UNKNOWN_MEMBER_ID
    ]  # simple commit, busy group
    too_big = [OffsetCommit("t", 1, 5, metadata="x" * 4097), OffsetCommit("t", 2, 5, metadata="x" * 4096)]
    assert coordinator.commit_offsets("g", 1, joined.member_id, too_big) == [
        ErrorCode.OFFSET_METADATA_TOO_LARGE,
        ErrorCode.NONE,
    ]


async def test_offsets_of_deleted_topics_disappear(coordinator: GroupCoordinator) -> None:
    cluster = coordinator.cluster
    coordinator.commit_offsets("g", -1, "", [OffsetCommit("t", 0, 5)])
    cluster.delete_topic("t")
    assert coordinator.fetch_offsets("g") == {}
    cluster.create_topic("t", 6)
    assert coordinator.fetch_offsets("g", [("t", 0)]) == {("t", 0): None}


# -- admin ---------------------------------------------------------------------------
async def test_describe_list_and_delete_groups(coordinator: GroupCoordinator) -> None:
    joined = await stable_group(coordinator)
    coordinator.commit_offsets("done", -1, "", [OffsetCommit("t", 0, 1)])
    description = coordinator.describe_group("g")
    assert description is not None
    assert (description.state, description.protocol_type, description.protocol_data) == (
        STABLE,
        "consumer",
        "range",
    )
    member = description.members[0]
    assert (member.member_id, member.client_id, member.client_host) == (
        joined.member_id,
        "client",
        "/127.0.0.1",
    )
    assert (member.metadata, member.assignment) == (b"range-meta", b"a1")
    assert coordinator.describe_group("missing") is None

    listed = {g.group_id: (g.protocol_type, g.state, g.group_type) for g in coordinator.list_groups()}
    assert listed == {"g": ("consumer", STABLE, "classic"), "done": ("", EMPTY, "classic")}
    assert [g.group_id for g in coordinator.list_groups(states=["empty"])] == ["done"]
    assert coordinator.list_groups(types=["consumer"]) == []
    assert len(coordinator.list_groups(types=["Classic"])) == 2
    assert coordinator.list_groups(coordinator=1) == []

    assert coordinator.delete_groups(["g", "done", "missing", "done"]) == {
        "g": ErrorCode.NON_EMPTY_GROUP,
        "done": ErrorCode.NONE,
        "missing": ErrorCode.GROUP_ID_NOT_FOUND,
    }
    assert "done" not in coordinator.groups and coordinator.fetch_offsets("done") == {}
    assert coordinator.delete_groups(["done"]) == {"done": ErrorCode.GROUP_ID_NOT_FOUND}


async def test_close_answers_parked_joins_and_cancels_timers() -> None:
    coord = GroupCoordinator(make_cluster())
    a = await stable_group(coord)
    waiting = asyncio.create_task(join_new(coord))
    await asyncio.sleep(0.01)
    assert len(coord.timers) > 0
    coord.close()
    result = await asyncio.wait_for(waiting, 1)
    assert result.error != ErrorCode.NONE
    assert len(coord.timers) == 0
    assert a.member_id in coord.groups["g"].members
