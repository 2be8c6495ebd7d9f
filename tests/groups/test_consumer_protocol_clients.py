"""KIP-848 consumer groups through librdkafka (confluent-kafka, `group.protocol=consumer`).

The broker assigns partitions (uniform assignor), members reconcile towards it one
heartbeat at a time, and offsets are committed with the member epoch. Heartbeats are
fast (300 ms) and sessions short (3 s) so that rebalances and expiries take seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from broker import MockCluster
from protocol.errors import ErrorCode

CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.session.timeout.ms": "3000",
    "group.consumer.min.session.timeout.ms": "1000",
}
TIMEOUT = 30.0


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config=CONFIG) as running:
        yield running


_opened: list[Consumer] = []


@pytest.fixture(autouse=True)
def close_leftovers(cluster: MockCluster) -> Iterator[None]:
    """Closes the consumers a failed test left open, while the cluster still runs: an
    unclosed librdkafka consumer blocks whoever garbage-collects it later, waiting to
    leave a group on a gone broker."""
    yield
    while _opened:
        try:
            _opened.pop().close()
        except RuntimeError:  # already closed
            pass


def consumer(cluster: MockCluster, group: str, **settings: Any) -> Consumer:
    made = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **settings,
        }
    )
    _opened.append(made)
    return made


def produce(cluster: MockCluster, topic: str, count: int, partitions: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(start, start + count):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(10) == 0


def owned(member: Consumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in member.assignment()}


def poll_until(
    members: list[Consumer],
    done: Callable[[], bool],
    what: str,
    on_message: Callable[[Consumer, Any], None] | None = None,
) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {[sorted(owned(m)) for m in members]}")
        for member in members:
            message = member.poll(0.05)
            if message is None:
                continue
            assert message.error() is None, message.error()
            if on_message is not None:
                on_message(member, message)


def test_three_members_split_six_partitions_and_take_over_from_one_that_leaves(cluster: MockCluster) -> None:
    cluster.create_topic("six", 6)
    produce(cluster, "six", 300, 6)
    members = [consumer(cluster, "trio") for _ in range(3)]
    consumed: list[tuple[int, int]] = []
    # A commit racing a new member epoch is refused (STALE_MEMBER_EPOCH, as in Kafka; a
    # manual commit is not retried by librdkafka): that record may be read again.
    refused: dict[tuple[int, int], int] = {}

    def process(member: Consumer, message: Any) -> None:
        consumed.append((message.partition(), message.offset()))
        try:
            member.commit(message=message, asynchronous=False)
        except KafkaException as exc:
            refused[(message.partition(), message.offset())] = exc.args[0].code()

    try:
        for member in members:
            member.subscribe(["six"])
        poll_until(
            members,
            lambda: [len(owned(m)) for m in members] == [2, 2, 2] and len(set(consumed)) >= 150,
            "a 2/2/2 split",
            process,
        )
        assert set().union(*(owned(m) for m in members)) == {("six", p) for p in range(6)}
        leaving = members.pop(0)
        left_with = owned(leaving)
        leaving.close()  # commits nothing new (manual commits), then leaves with epoch -1
        produce(cluster, "six", 300, 6, start=300)
        poll_until(
            members,
            lambda: [len(owned(m)) for m in members] == [3, 3] and len(set(consumed)) == 600,
            "the survivors to take over and consume everything",
            process,
        )
        assert left_with <= owned(members[0]) | owned(members[1])
    finally:
        for member in members:
            member.close()
    # Every record, once unless its commit was refused; no gaps in the committed progress.
    assert set(refused.values()) <= {ErrorCode.STALE_MEMBER_EPOCH}
    assert sorted(set(consumed)) == sorted((p, o) for p in range(6) for o in range(100))
    assert {key for key in consumed if consumed.count(key) > 1} <= set(refused)
    committed = cluster.groups.fetch_offsets("trio")
    assert {key: c.offset for key, c in committed.items() if c is not None} == {
        ("six", p): 100 for p in range(6)
    }
    group = cluster.groups.consumer.groups["trio"]
    assert group.state == "Empty" and group.group_epoch >= 4


def test_regex_subscription_picks_up_a_topic_created_later(cluster: MockCluster) -> None:
    cluster.create_topic("rx-first", 2)
    cluster.create_topic("other", 2)
    produce(cluster, "rx-first", 4, 2)
    member = consumer(cluster, "regex")
    seen: set[str] = set()
    try:
        member.subscribe(["^rx-.*"])
        poll_until(
            [member],
            lambda: owned(member) == {("rx-first", 0), ("rx-first", 1)},
            "the regex's first topic",
            lambda _, m: seen.add(m.topic()),
        )
        regex = cluster.groups.consumer.groups["regex"].members
        assert [m.subscribed_topic_regex for m in regex.values()] == [
            "(^rx-.*)"
        ]  # librdkafka joins regexes with |
        cluster.create_topic("rx-second", 3)
        produce(cluster, "rx-second", 3, 3)
        poll_until(
            [member],
            lambda: (
                owned(member) == {("rx-first", 0), ("rx-first", 1)} | {("rx-second", p) for p in range(3)}
                and "rx-second" in seen
            ),
            "the topic created later to be assigned and consumed",
            lambda _, m: seen.add(m.topic()),
        )
        assert "other" not in seen
    finally:
        member.close()


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(cluster: MockCluster) -> None:
    cluster.create_topic("static", 4)
    first = consumer(cluster, "statics", **{"group.instance.id": "one"})
    other = consumer(cluster, "statics", **{"group.instance.id": "two"})
    for member in (first, other):
        member.subscribe(["static"])
    poll_until([first, other], lambda: [len(owned(m)) for m in (first, other)] == [2, 2], "a 2/2 split")
    group = cluster.groups.consumer.groups["statics"]
    epoch_before, kept = group.group_epoch, owned(first)
    first.close()  # a static member leaves with epoch -2: its partitions wait for it
    assert group.members[group.static_members["one"]].member_epoch == -2
    restarted = consumer(cluster, "statics", **{"group.instance.id": "one"})
    try:
        restarted.subscribe(["static"])
        poll_until(
            [restarted, other],
            lambda: owned(restarted) == kept,
            "the restarted member to get its partitions back",
        )
        assert group.group_epoch == epoch_before  # no reassignment happened
        assert len(group.members) == 2 and owned(other) == {("static", p) for p in range(4)} - kept
    finally:
        restarted.close()
        other.close()


MEMBER_SCRIPT = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    consumer.subscribe([sys.argv[3]])
    while True:
        consumer.poll(0.1)
        if consumer.assignment():
            print("assigned", flush=True)
    """
)


def test_member_killed_without_leaving_is_fenced_after_the_session_timeout(cluster: MockCluster) -> None:
    cluster.create_topic("fenced", 4)
    survivor = consumer(cluster, "kill")
    child = subprocess.Popen(
        [sys.executable, "-c", MEMBER_SCRIPT, cluster.bootstrap_servers, "kill", "fenced"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "assigned"
        # Subscribed only now: a member that does not poll cannot give partitions up.
        survivor.subscribe(["fenced"])
        poll_until([survivor], lambda: len(owned(survivor)) == 2, "the survivor to hold half")
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        group = cluster.groups.consumer.groups["kill"]
        assert len(group.members) == 2  # the killed member stays until its session ends
        poll_until(
            [survivor],
            lambda: len(owned(survivor)) == 4,
            "the survivor to take over after the session timeout",
        )
        assert len(group.members) == 1
    finally:
        child.kill()
        child.wait()
        survivor.close()


def test_classic_and_consumer_groups_side_by_side_and_in_the_admin_apis(cluster: MockCluster) -> None:
    cluster.create_topic("both", 2)
    produce(cluster, "both", 10, 2)
    modern = consumer(cluster, "modern")
    classic = consumer(cluster, "classic", **{"group.protocol": "classic"})
    counts = {"modern": 0, "classic": 0}

    def count(member: Consumer, _: Any) -> None:
        counts["modern" if member is modern else "classic"] += 1

    try:
        for member in (modern, classic):
            member.subscribe(["both"])
        poll_until(
            [modern, classic],
            lambda: counts == {"modern": 10, "classic": 10},
            "both groups to read all",
            count,
        )
        poll_until(
            [modern, classic], lambda: cluster.groups.consumer.groups["modern"].state == "Stable", "stable"
        )
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        described = {
            g: f.result(10) for g, f in admin.describe_consumer_groups(["modern", "classic"]).items()
        }
        assert described["modern"].type == ConsumerGroupType.CONSUMER
        assert described["modern"].state == ConsumerGroupState.STABLE
        [member] = described["modern"].members
        assert {(tp.topic, tp.partition) for tp in member.assignment.topic_partitions} == {
            ("both", 0),
            ("both", 1),
        }
        assert described["classic"].type == ConsumerGroupType.CLASSIC
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(10)
        assert [g.group_id for g in listed.valid] == ["modern"]
        listed = admin.list_consumer_groups().result(10)
        types = {g.group_id: g.type for g in listed.valid}
        assert types == {"modern": ConsumerGroupType.CONSUMER, "classic": ConsumerGroupType.CLASSIC}
    finally:
        modern.close()
        classic.close()
    deleted = admin.delete_consumer_groups(["modern"])
    deleted["modern"].result(10)
    assert "modern" not in cluster.groups.consumer.groups


def test_empty_classic_group_becomes_a_consumer_group_and_keeps_its_offsets(cluster: MockCluster) -> None:
    cluster.create_topic("upgrade", 2)
    produce(cluster, "upgrade", 10, 2)
    classic = consumer(cluster, "upgrading", **{"group.protocol": "classic"})
    classic.subscribe(["upgrade"])
    seen = 0

    def first_half(member: Consumer, message: Any) -> None:
        nonlocal seen
        seen += 1
        member.commit(message=message, asynchronous=False)

    poll_until([classic], lambda: seen == 10, "the classic member to read and commit", first_half)
    classic.close()
    produce(cluster, "upgrade", 4, 2, start=10)
    modern = consumer(cluster, "upgrading")
    values: list[int] = []
    try:
        modern.subscribe(["upgrade"])
        poll_until(
            [modern],
            lambda: len(values) == 4,
            "the new member to resume",
            lambda _, m: values.append(int(m.value())),
        )
        assert sorted(values) == [10, 11, 12, 13]
        assert "upgrading" in cluster.groups.consumer.groups and "upgrading" not in cluster.groups.groups
    finally:
        modern.close()


def test_group_remote_assignor_picks_the_range_assignor(cluster: MockCluster) -> None:
    cluster.create_topic("ranged", 4)
    members = [consumer(cluster, "ranged", **{"group.remote.assignor": "range"}) for _ in range(2)]
    try:
        for member in members:
            member.subscribe(["ranged"])
        poll_until(members, lambda: [len(owned(m)) for m in members] == [2, 2], "a 2/2 split")
        # Range gives contiguous partitions, in member id order.
        assert sorted(sorted(p for _, p in owned(m)) for m in members) == [[0, 1], [2, 3]]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        assert admin.describe_consumer_groups(["ranged"])["ranged"].result(10).partition_assignor == "range"
    finally:
        for member in members:
            member.close()
