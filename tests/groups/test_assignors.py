"""The server-side assignors as pure functions: balance, stickiness and Kafka's range order."""

from __future__ import annotations

import uuid

from broker.state.assignors import MemberSpec, RangeAssignor, TopicSpec, UniformAssignor

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {T1: TopicSpec(T1, "a", 6), T2: TopicSpec(T2, "b", 3)}


def member(
    member_id: str,
    topics: set[uuid.UUID],
    current: dict[uuid.UUID, set[int]] | None = None,
    instance_id: str | None = None,
) -> MemberSpec:
    return MemberSpec(
        member_id, frozenset(topics), {t: frozenset(ps) for t, ps in (current or {}).items()}, instance_id
    )


def flat(assignment: dict[uuid.UUID, set[int]]) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def test_uniform_spreads_evenly_and_keeps_what_members_hold() -> None:
    first = UniformAssignor().assign([member("x", {T1, T2}), member("y", {T1, T2})], TOPICS)
    assert sorted(len(flat(a)) for a in first.values()) == [4, 5]
    assert flat(first["x"]) | flat(first["y"]) == {(T1, p) for p in range(6)} | {(T2, p) for p in range(3)}
    # A third member takes three partitions; the others give up only what they must.
    again = UniformAssignor().assign(
        [member("x", {T1, T2}, first["x"]), member("y", {T1, T2}, first["y"]), member("z", {T1, T2})], TOPICS
    )
    assert [len(flat(again[m])) for m in "xyz"] == [3, 3, 3]
    assert flat(again["x"]) <= flat(first["x"]) and flat(again["y"]) <= flat(first["y"])


def test_uniform_with_different_subscriptions_gives_each_topic_to_its_subscribers() -> None:
    result = UniformAssignor().assign([member("x", {T1}), member("y", {T1, T2})], TOPICS)
    assert {t for t, _ in flat(result["x"])} == {T1}
    assert {(T2, p) for p in range(3)} <= flat(result["y"])
    assert len(flat(result["x"])) + len(flat(result["y"])) == 9
    assert abs(len(flat(result["x"])) - len(flat(result["y"]))) <= 1


def test_range_orders_static_members_first_then_member_ids() -> None:
    result = RangeAssignor().assign(
        [member("b", {T1, T2}), member("a", {T1, T2}), member("z", {T1, T2}, instance_id="i")], TOPICS
    )
    assert result["z"] == {T1: {0, 1}, T2: {0}}
    assert result["a"] == {T1: {2, 3}, T2: {1}}
    assert result["b"] == {T1: {4, 5}, T2: {2}}
