"""Share groups (KIP-932) in raw frames: ShareGroupHeartbeat's assignment and refusals,
ShareFetch's and ShareAcknowledge's share sessions, acquisition and acknowledgement
errors, read_committed, authorization and the fetch quota: the paths no client takes on
purpose, answered as Kafka's KafkaApis, GroupMetadataManager and SharePartition do."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.protocol.admin import DescribeGroupsRequest, ListGroupsRequest

from broker import MockCluster
from messages.registry import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.uuids import uuid_string
from tests.support.wire import Connection

Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)
Describe = request_class(ApiKey.SHARE_GROUP_DESCRIBE)
Fetch = request_class(ApiKey.SHARE_FETCH)
Acknowledge = request_class(ApiKey.SHARE_ACKNOWLEDGE)
FetchTopic = Fetch.FetchTopic
FetchPartition = FetchTopic.FetchPartition
Batch = FetchPartition.AcknowledgementBatch
AckTopic = Acknowledge.AcknowledgeTopic
AckPartition = AckTopic.AcknowledgePartition
AckBatch = AckPartition.AcknowledgementBatch
ACCEPT, RELEASE, REJECT = 1, 2, 3


class Wire(Connection):
    def __init__(self, cluster: MockCluster) -> None:
        super().__init__(cluster.bootstrap_servers)

    def heartbeat(self, member_id: str, epoch: int, topics: list[str] | None = None, group: str = "g") -> Any:
        return self(
            Heartbeat[1](
                group_id=group, member_id=member_id, member_epoch=epoch, subscribed_topic_names=topics
            )
        )

    def fetch(
        self,
        member_id: str,
        epoch: int,
        partitions: list[tuple[uuid.UUID, int]] = (),  # type: ignore[assignment]
        acks: dict[tuple[uuid.UUID, int], list[tuple[int, int, list[int]]]] | None = None,
        group: str = "g",
        max_wait_ms: int = 0,
        version: int = 2,
    ) -> Any:
        wanted = dict.fromkeys(partitions)
        for key in acks or {}:
            wanted.setdefault(key)
        by_topic: dict[uuid.UUID, list[Any]] = {}
        for topic_id, index in wanted:
            batches = [
                Batch(first_offset=f, last_offset=last, acknowledge_types=t)
                for f, last, t in (acks or {}).get((topic_id, index), [])
            ]
            by_topic.setdefault(topic_id, []).append(
                FetchPartition(partition_index=index, acknowledgement_batches=batches)
            )
        fields: dict[str, Any] = {"share_acquire_mode": 0, "is_renew_ack": False} if version >= 2 else {}
        return self(
            Fetch[version](
                group_id=group,
                member_id=member_id,
                share_session_epoch=epoch,
                max_wait_ms=max_wait_ms,
                min_bytes=1,
                max_bytes=1 << 20,
                max_records=500,
                batch_size=500,
                topics=[FetchTopic(topic_id=t, partitions=ps) for t, ps in by_topic.items()],
                forgotten_topics_data=[],
                **fields,
            )
        )

    def acknowledge(
        self, member_id: str, epoch: int, acks: dict[tuple[uuid.UUID, int], list[tuple[int, int, list[int]]]]
    ) -> Any:
        by_topic: dict[uuid.UUID, list[Any]] = {}
        for (topic_id, index), batches in acks.items():
            by_topic.setdefault(topic_id, []).append(
                AckPartition(
                    partition_index=index,
                    acknowledgement_batches=[
                        AckBatch(first_offset=f, last_offset=last, acknowledge_types=t)
                        for f, last, t in batches
                    ],
                )
            )
        return self(
            Acknowledge[2](
                group_id="g",
                member_id=member_id,
                share_session_epoch=epoch,
                is_renew_ack=False,
                topics=[AckTopic(topic_id=t, partitions=ps) for t, ps in by_topic.items()],
            )
        )


def acquired(response: Any) -> dict[int, list[tuple[int, int, int]]]:
    """Partition -> acquired ranges (first, last, delivery count)."""
    return {
        p.partition_index: [(r.first_offset, r.last_offset, r.delivery_count) for r in p.acquired_records]
        for t in response.responses
        for p in t.partitions
        if p.acquired_records
    }


def partition_errors(response: Any) -> dict[int, tuple[int, int]]:
    return {
        p.partition_index: (p.error_code, getattr(p, "acknowledge_error_code", 0))
        for t in response.responses
        for p in t.partitions
    }


def produce(cluster: MockCluster, topic: str, count: int, partition: int = 0) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=50)
    for i in range(count):
        producer.send(topic, f"v{i}".encode(), partition=partition)
    producer.flush()
    producer.close()


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    config = {"group.share.max.size": "3", "group.share.delivery.count.limit": "2"}
    with MockCluster(brokers=1, config=config) as running:
        running.create_topic("t", 2)
        running.groups.cluster.group_configs["g"] = {"share.auto.offset.reset": "earliest"}
        yield running


@pytest.fixture
def wire(cluster: MockCluster) -> Iterator[Wire]:
    connection = Wire(cluster)
    yield connection
    connection.sock.close()


def topic_id(cluster: MockCluster, name: str = "t") -> uuid.UUID:
    return cluster.groups.cluster.topics[name].topic_id


# -- ShareGroupHeartbeat -----------------------------------------------------------------
def test_members_share_the_partitions_and_leave(cluster: MockCluster, wire: Wire) -> None:
    tid = topic_id(cluster)
    a = wire.heartbeat("a", 0, ["t"])
    # a new group starts at epoch 1 (Kafka 4.4): the first member's join makes it 2
    assert (a.error_code, a.member_epoch, a.heartbeat_interval_ms) == (0, 2, 5000)
    assert [(t.topic_id, sorted(t.partitions)) for t in a.assignment.topic_partitions] == [(tid, [0, 1])]
    b = wire.heartbeat("b", 0, ["t"])
    assert b.member_epoch == 3 and [sorted(t.partitions) for t in b.assignment.topic_partitions] == [[1]]
    again = wire.heartbeat("a", 2)  # a takes its new target at once: no revocation in share groups
    assert again.member_epoch == 3 and [sorted(t.partitions) for t in again.assignment.topic_partitions] == [
        [0]
    ]
    assert wire.heartbeat("a", 3).assignment is None  # nothing changed: no assignment sent
    c = wire.heartbeat("c", 0, ["t"])  # three members, two partitions: one is shared
    assert c.member_epoch == 4
    left = wire.heartbeat("b", -1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    described = wire(Describe[1](group_ids=["g"], include_authorized_operations=False)).groups[0]
    assert (described.group_state, described.group_epoch, described.assignor_name) == ("Stable", 5, "simple")
    assert sorted(m.member_id for m in described.members) == ["a", "c"]
    listed = wire(ListGroupsRequest[5](states_filter=[], types_filter=["share"])).groups
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed] == [
        ("g", "share", "Stable", "share")
    ]


def test_heartbeat_refusals(cluster: MockCluster, wire: Wire) -> None:
    def refusal(response: Any) -> tuple[int, str | None]:
        return response.error_code, response.error_message

    assert refusal(wire.heartbeat("", 0, ["t"])) == (ErrorCode.INVALID_REQUEST, None)
    assert refusal(wire.heartbeat("m" * 37, 0, ["t"])) == (ErrorCode.INVALID_REQUEST, None)
    assert refusal(wire.heartbeat("a", 0, [])) == (
        ErrorCode.INVALID_REQUEST,
        "SubscribedTopicNames must be set in first request.",
    )
    assert refusal(wire.heartbeat("a", -2)) == (ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    assert refusal(wire.heartbeat("a", 1)) == (ErrorCode.GROUP_ID_NOT_FOUND, "Share group g not found.")
    wire.heartbeat("a", 0, ["t"])
    assert refusal(wire.heartbeat("x", 1)) == (
        ErrorCode.UNKNOWN_MEMBER_ID,
        "Member x is not a member of group g.",
    )
    fenced = wire.heartbeat("a", 7)
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert fenced.error_message.startswith("The share group member has a greater member epoch (7)")
    wire.heartbeat("b", 0, ["t"])
    wire.heartbeat("c", 0, ["t"])
    assert refusal(wire.heartbeat("d", 0, ["t"])) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The share group has reached its maximum capacity of 3 members.",
    )
    # a group id is one type of group only
    consumer = wire(
        request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT)[1](
            group_id="g",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
    )
    assert refusal(consumer) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    wire(
        request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT)[1](
            group_id="cg",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
    )
    assert refusal(wire.heartbeat("a", 0, ["t"], group="cg")) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group cg is not a share group.",
    )
    other = wire(Describe[1](group_ids=["cg", "nope"], include_authorized_operations=False)).groups
    assert [(g.error_code, g.error_message) for g in other] == [
        (ErrorCode.GROUP_ID_NOT_FOUND, "Group cg is not a share group."),
        (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found."),
    ]


def test_without_share_version_share_groups_are_unsupported(cluster: MockCluster, wire: Wire) -> None:
    cluster.on_loop(lambda: cluster.groups.cluster.features.finalized.__setitem__("share.version", 0))
    assert wire.heartbeat("a", 0, ["t"]).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert wire.fetch("a", 0).error_code == ErrorCode.UNSUPPORTED_VERSION


# -- ShareFetch and ShareAcknowledge -----------------------------------------------------
def test_records_are_acquired_acknowledged_and_released(cluster: MockCluster, wire: Wire) -> None:
    tid = topic_id(cluster)
    wire.heartbeat("a", 0, ["t"])
    produce(cluster, "t", 5)
    first = wire.fetch("a", 0, [(tid, 0), (tid, 1)])
    assert first.acquisition_lock_timeout_ms == 30000
    assert acquired(first) == {0: [(0, 4, 1)]}
    assert partition_errors(first) == {0: (0, 0), 1: (0, 0)}  # a new session answers every partition
    other = Wire(cluster)  # a second member of the group gets nothing: all five are a's
    assert acquired(other.fetch("b", 0, [(tid, 0)])) == {}
    # a accepts 0-1, releases 2, rejects 3 and keeps 4; the released one goes to b
    acked = wire.acknowledge("a", 1, {(tid, 0): [(0, 3, [ACCEPT, ACCEPT, RELEASE, REJECT])]})
    assert partition_errors(acked) == {0: (0, 0)}
    again = other.fetch("b", 1)
    assert acquired(again) == {0: [(2, 2, 2)]}
    assert list(partition_errors(again)) == [0]  # later epochs answer only partitions with news
    share = cluster.groups.share.partitions[("g", tid, 0)]
    assert (share.start_offset, share.end_offset) == (2, 5)
    details = cluster.describe_group("g")
    assert details is not None and details["type"] == "share"
    assert {"topic_id": str(tid), "partition": 0, "start_offset": 2, "in_flight": 3} in details["partitions"]
    # b releases record 2 at its delivery limit (2 here): archived, never delivered again
    other.acknowledge("b", 2, {(tid, 0): [(2, 2, [RELEASE])]})
    assert acquired(other.fetch("b", 3)) == {}
    # a's session ends with the final epoch: what it still holds (4) goes back
    closed = wire.acknowledge("a", -1, {})
    assert closed.error_code == 0
    assert acquired(other.fetch("b", 4)) == {0: [(4, 4, 2)]}
    assert share.start_offset == 4
    other.sock.close()


def test_acknowledgement_errors(cluster: MockCluster, wire: Wire) -> None:
    tid = topic_id(cluster)
    produce(cluster, "t", 3)
    wire.fetch("a", 0, [(tid, 0)])
    other = Wire(cluster)
    other.fetch("b", 0, [(tid, 0)])
    # b acknowledges a's records: not the owner
    stolen = other.fetch("b", 1, acks={(tid, 0): [(0, 2, [ACCEPT])]})
    assert partition_errors(stolen)[0] == (0, ErrorCode.INVALID_RECORD_STATE)
    # types out of step with the offsets, and batches out of order: the request is invalid
    bad = wire.fetch("a", 1, acks={(tid, 0): [(0, 2, [ACCEPT, ACCEPT])]})
    assert partition_errors(bad)[0] == (0, ErrorCode.INVALID_REQUEST)
    disordered = wire.acknowledge("a", 2, {(tid, 0): [(1, 2, [ACCEPT]), (0, 0, [ACCEPT])]})
    assert partition_errors(disordered)[0] == (ErrorCode.INVALID_REQUEST, 0)
    # a failed batch leaves every record as it was: the good batch before it applies nothing
    atomic = wire.acknowledge("a", 3, {(tid, 0): [(0, 0, [ACCEPT]), (1, 9, [ACCEPT])]})
    assert partition_errors(atomic)[0] == (ErrorCode.INVALID_RECORD_STATE, 0)
    assert cluster.groups.share.partitions[("g", tid, 0)].start_offset == 0
    other.sock.close()


def test_share_session_epochs(cluster: MockCluster, wire: Wire) -> None:
    tid = topic_id(cluster)
    assert wire.fetch("a", 3, [(tid, 0)]).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    acks_first = wire.fetch("a", 0, [(tid, 0)], acks={(tid, 0): [(0, 0, [ACCEPT])]})
    assert (acks_first.error_code, acks_first.error_message) == (ErrorCode.INVALID_REQUEST, None)
    assert wire.fetch("a", 0, [(tid, 0)]).error_code == 0
    assert wire.fetch("a", 2).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert wire.fetch("a", 1).error_code == 0
    assert wire.acknowledge("a", 0, {}).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert wire.acknowledge("a", 2, {}).error_code == 0  # ShareAcknowledge takes an epoch too
    assert wire.fetch("a", 3).error_code == 0
    assert (
        wire(
            Fetch[2](group_id="g", member_id="", share_session_epoch=0, topics=[], forgotten_topics_data=[])
        ).error_code
        == ErrorCode.INVALID_REQUEST
    )
    unknown = wire.fetch("z", 0, [(uuid.uuid4(), 0)])
    assert [p.error_code for t in unknown.responses for p in t.partitions] == [ErrorCode.UNKNOWN_TOPIC_ID]


def test_a_closed_connection_gives_back_what_its_session_acquired(cluster: MockCluster) -> None:
    tid = topic_id(cluster)
    produce(cluster, "t", 2)
    gone = Wire(cluster)
    assert acquired(gone.fetch("a", 0, [(tid, 0)])) == {0: [(0, 1, 1)]}
    gone.sock.close()
    stays = Wire(cluster)
    deadline = __import__("time").monotonic() + 10
    taken: dict[int, list[tuple[int, int, int]]] = {}
    epoch = 0
    while not taken and __import__("time").monotonic() < deadline:
        taken = acquired(stays.fetch("b", epoch, [(tid, 0)], max_wait_ms=200))
        epoch += 1
    assert taken == {0: [(0, 1, 2)]}
    stays.sock.close()


def test_read_committed_share_groups_skip_aborted_records(cluster: MockCluster, wire: Wire) -> None:
    from confluent_kafka import Producer

    tid = topic_id(cluster)
    cluster.groups.cluster.group_configs["g"]["share.isolation.level"] = "read_committed"
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "tx"})
    producer.init_transactions()
    for commit in (False, True):
        producer.begin_transaction()
        for i in range(3):
            producer.produce("t", f"{commit}-{i}".encode(), partition=0)
        producer.flush()  # sent before the abort, which would otherwise drop them unsent
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
    # offsets: 0-2 aborted, 3 its marker, 4-6 committed, 7 their marker
    got = acquired(wire.fetch("a", 0, [(tid, 0)]))
    assert got == {0: [(3, 7, 1)]}  # the markers stay acquired: the client acknowledges them as GAP
    share = cluster.groups.share.partitions[("g", tid, 0)]
    assert share.start_offset == 3  # the aborted records were archived


def test_describe_groups_and_delete_groups_see_share_groups(cluster: MockCluster, wire: Wire) -> None:
    wire.heartbeat("a", 0, ["t"])
    described = wire(DescribeGroupsRequest[5](groups=["g"], include_authorized_operations=False)).groups[0]
    assert (described.error_code, described.group_state) == (0, "Dead")  # below v6: no error
    v6 = wire(DescribeGroupsRequest[6](groups=["g"], include_authorized_operations=False)).groups[0]
    assert (v6.error_code, v6.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group g is not a classic group.",
    )
    deleted = wire(request_class(ApiKey.DELETE_GROUPS)[2](groups_names=["g"])).results
    assert [r.error_code for r in deleted] == [ErrorCode.NON_EMPTY_GROUP]
    wire.heartbeat("a", -1)
    deleted = wire(request_class(ApiKey.DELETE_GROUPS)[2](groups_names=["g"])).results
    assert [r.error_code for r in deleted] == [0]
    assert "g" not in cluster.groups.share.groups


def test_a_fetch_quota_throttles_share_fetches() -> None:
    """Over consumer_byte_rate a share fetch is answered empty with its throttle time, as
    Kafka's fetch path does; what it acquired stays locked to the member meanwhile."""
    config = {"quota.window.num": "2", "quota.window.size.seconds": "1"}
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("t", 1)
        cluster.groups.cluster.group_configs["g"] = {"share.auto.offset.reset": "earliest"}
        cluster.quotas.alter({"client-id": "wire"}, set={"consumer_byte_rate": 1024})
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
        for _ in range(20):
            producer.send("t", b"x" * 4000, partition=0)
        producer.flush()
        producer.close()
        tid = topic_id(cluster)
        wire = Wire(cluster)
        throttled = wire.fetch("a", 0, [(tid, 0)])
        assert throttled.throttle_time_ms > 0
        assert (throttled.error_code, throttled.responses) == (0, [])
        share = cluster.groups.share.partitions[("g", tid, 0)]
        held = share.acquired_by("a")  # as much as the quota window allows (KIP-74: a batch at least)
        assert held and held[0] == 0
        row = cluster.requests.list(api_key=ApiKey.SHARE_FETCH)[-1]
        assert row["throttle_time_ms"] == throttled.throttle_time_ms
        wire.sock.close()


def test_share_requests_are_authorized() -> None:
    config = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
    }
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("t", 1)
        cluster.create_topic("secret", 1)
        cluster.acls.add("User:ANONYMOUS", "READ", "GROUP", "g")
        cluster.acls.add("User:ANONYMOUS", "READ", "TOPIC", "t")
        cluster.acls.add("User:ANONYMOUS", "DESCRIBE", "TOPIC", "t")
        wire = Wire(cluster)
        assert wire.heartbeat("a", 0, ["t"], group="h").error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert wire.heartbeat("a", 0, ["secret"]).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert wire.heartbeat("a", 0, ["t"]).error_code == 0
        assert wire.fetch("a", 0, group="h").error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        answered = wire.fetch("a", 0, [(topic_id(cluster), 0), (topic_id(cluster, "secret"), 0)])
        errors = {t.topic_id: [p.error_code for p in t.partitions] for t in answered.responses}
        assert errors == {
            topic_id(cluster): [0],
            topic_id(cluster, "secret"): [ErrorCode.TOPIC_AUTHORIZATION_FAILED],
        }
        wire.sock.close()


def test_find_coordinator_answers_for_share_partition_keys(cluster: MockCluster, wire: Wire) -> None:
    """Key type 2 (v6): the share coordinator of "group:topicId:partition", its topic id
    in Uuid's base64 text; other shapes are INVALID_REQUEST."""
    from kafka.protocol.metadata import FindCoordinatorRequest

    keys = ["g:AAAAAAAAAAAAAAAAAAAAAQ:0", "g:not-an-id:0", "g:0"]
    answer = wire(FindCoordinatorRequest[6](key_type=2, coordinator_keys=keys))
    assert [(c.key, c.error_code, c.node_id) for c in answer.coordinators] == [
        (keys[0], 0, 0),
        (keys[1], ErrorCode.INVALID_REQUEST, -1),
        (keys[2], ErrorCode.INVALID_REQUEST, -1),
    ]
    older = wire(FindCoordinatorRequest[5](key_type=2, coordinator_keys=keys[:1]))
    assert [c.error_code for c in older.coordinators] == [ErrorCode.INVALID_REQUEST]


# -- DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets ------------
DescribeOffsets = request_class(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
AlterOffsets = request_class(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
DeleteOffsets = request_class(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
ZERO = None  # the zero topic id, as kafka-python decodes it


def describe_offsets(
    wire: Wire, topics: dict[str, list[int]] | None, group: str = "g", version: int = 1
) -> dict[str, dict[int, tuple[int, ...]]]:
    """Topic -> partition -> (start offset, leader epoch, [lag,] error code)."""
    Group = DescribeOffsets.DescribeShareGroupOffsetsRequestGroup
    Topic = Group.DescribeShareGroupOffsetsRequestTopic
    wanted = None if topics is None else [Topic(topic_name=t, partitions=ps) for t, ps in topics.items()]
    answer = wire(DescribeOffsets[version](groups=[Group(group_id=group, topics=wanted)])).groups[0]
    assert (answer.error_code, answer.error_message) == (0, None)
    return {
        t.topic_name: {
            p.partition_index: (p.start_offset, p.leader_epoch, *((p.lag,) if version else ()), p.error_code)
            for p in t.partitions
        }
        for t in answer.topics
    }


def alter_offsets(wire: Wire, offsets: dict[str, dict[int, int]], group: str = "g") -> Any:
    Topic = AlterOffsets.AlterShareGroupOffsetsRequestTopic
    Partition = Topic.AlterShareGroupOffsetsRequestPartition
    return wire(
        AlterOffsets[0](
            group_id=group,
            topics=[
                Topic(
                    topic_name=t,
                    partitions=[Partition(partition_index=p, start_offset=o) for p, o in ps.items()],
                )
                for t, ps in offsets.items()
            ],
        )
    )


def delete_offsets(wire: Wire, topics: list[str], group: str = "g") -> Any:
    Topic = DeleteOffsets.DeleteShareGroupOffsetsRequestTopic
    return wire(DeleteOffsets[0](group_id=group, topics=[Topic(topic_name=t) for t in topics]))


def test_share_group_offsets_through_a_group_life(cluster: MockCluster, wire: Wire) -> None:
    tid = topic_id(cluster)
    # no state yet: -1, leader epoch 0, lag -1, and no error (Kafka asks no group)
    assert describe_offsets(wire, {"t": [0, 7], "nope": [0]}) == {
        "t": {0: (-1, 0, -1, 0), 7: (-1, 0, -1, 0)},
        "nope": {0: (-1, 0, -1, 0)},
    }
    assert describe_offsets(wire, None) == {}
    wire.heartbeat("a", 0, ["t"])
    # assigned, but nothing acknowledged: the share coordinator holds no state yet
    assert describe_offsets(wire, {"t": [0]}) == {"t": {0: (-1, 0, -1, 0)}}
    not_empty: tuple[int, str, list[Any]] = (ErrorCode.NON_EMPTY_GROUP, "The group is not empty.", [])
    altered = alter_offsets(wire, {"t": {0: 0}})
    assert (altered.error_code, altered.error_message, altered.responses) == not_empty
    deleted = delete_offsets(wire, ["t"])
    assert (deleted.error_code, deleted.error_message, deleted.responses) == not_empty
    produce(cluster, "t", 5)
    assert acquired(wire.fetch("a", 0, [(tid, 0)])) == {0: [(0, 4, 1)]}
    wire.acknowledge("a", 1, {(tid, 0): [(0, 1, [ACCEPT]), (3, 3, [REJECT])]})
    # start offset 2; 5 records, 2 before the start and 1 archived after it: lag 2
    assert describe_offsets(wire, {"t": [0, 1]}) == {"t": {0: (2, 0, 2, 0), 1: (-1, 0, -1, 0)}}
    assert describe_offsets(wire, {"t": [0]}, version=0) == {"t": {0: (2, 0, 0)}}
    wire.heartbeat("a", -1)
    # all topics: every partition whose state the group has (both were assigned)
    assert describe_offsets(wire, None) == {"t": {0: (2, 0, 2, 0), 1: (-1, 0, -1, 0)}}
    altered = alter_offsets(wire, {"t": {0: 4, 9: 0}, "nope": {0: 0}})
    assert (altered.error_code, altered.error_message) == (0, None)
    unknown = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
    assert {
        (t.topic_name, t.topic_id): [(p.partition_index, p.error_code, p.error_message) for p in t.partitions]
        for t in altered.responses
    } == {
        ("nope", ZERO): [(0, *unknown)],
        ("t", tid): [(0, 0, None), (9, *unknown)],
    }
    # altered: a fresh start at 4 (what was in flight is forgotten), the group's epoch bumped
    assert describe_offsets(wire, {"t": [0]}) == {"t": {0: (4, 0, 1, 0)}}
    assert wire(Describe[1](group_ids=["g"], include_authorized_operations=False)).groups[0].group_epoch == 4
    wire.heartbeat("b", 0, ["t"])
    assert acquired(wire.fetch("b", 0, [(tid, 0)])) == {0: [(4, 4, 1)]}
    wire.heartbeat("b", -1)
    wire.fetch("b", -1)
    deleted = delete_offsets(wire, ["t", "nope"])
    assert (deleted.error_code, deleted.error_message) == (0, None)
    assert [(t.topic_name, t.topic_id, t.error_code, t.error_message) for t in deleted.responses] == [
        ("t", tid, 0, None),
        ("nope", ZERO, *unknown),
    ]
    again = delete_offsets(wire, ["t"]).responses
    assert [(t.error_code, t.error_message) for t in again] == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")
    ]
    assert describe_offsets(wire, None) == {}
    # deleted: the next member starts where share.auto.offset.reset says (earliest here)
    wire.heartbeat("c", 0, ["t"])
    assert acquired(wire.fetch("c", 0, [(tid, 0)])) == {0: [(0, 4, 1)]}


def test_altering_offsets_creates_the_share_group(cluster: MockCluster, wire: Wire) -> None:
    missing = alter_offsets(wire, {"nope": {0: 0}}, group="fresh")
    assert [(t.topic_name, [p.error_code for p in t.partitions]) for t in missing.responses] == [
        ("nope", [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION])
    ]
    described = wire(Describe[1](group_ids=["fresh"], include_authorized_operations=False)).groups[0]
    assert described.error_code == ErrorCode.GROUP_ID_NOT_FOUND  # no topic of it exists: no group
    assert alter_offsets(wire, {"t": {1: 3}}, group="fresh").error_code == 0
    described = wire(Describe[1](group_ids=["fresh"], include_authorized_operations=False)).groups[0]
    assert (described.error_code, described.group_state, described.group_epoch) == (0, "Empty", 1)
    # beyond the log's end: the lag is negative, as Kafka computes it
    assert describe_offsets(wire, {"t": [1]}, group="fresh") == {"t": {1: (3, 0, -3, 0)}}
    # a negative partition: Kafka's persister refuses the whole request, nothing is altered
    refused = alter_offsets(wire, {"t": {0: 7, -1: 0}}, group="fresh")
    assert (refused.error_code, refused.error_message, refused.responses) == (
        ErrorCode.UNKNOWN_SERVER_ERROR,
        f"Initialize share group parameters has invalid partitionId - fresh {uuid_string(topic_id(cluster))} -1",
        [],
    )
    assert describe_offsets(wire, {"t": [0, 1]}, group="fresh") == {
        "t": {0: (-1, 0, -1, 0), 1: (3, 0, -3, 0)}
    }
    # the persister refuses to read a negative partition, or a topic without partitions
    Group = DescribeOffsets.DescribeShareGroupOffsetsRequestGroup
    Topic = Group.DescribeShareGroupOffsetsRequestTopic
    for partitions in ([-1], []):
        wanted = Group(group_id="fresh", topics=[Topic(topic_name="t", partitions=partitions)])
        answer = wire(DescribeOffsets[1](groups=[wanted])).groups[0]
        assert (answer.error_code, answer.error_message, answer.topics) == (
            ErrorCode.UNKNOWN_SERVER_ERROR,
            "The server experienced an unexpected error when processing the request.",
            [],
        )


def test_share_group_offset_refusals(cluster: MockCluster, wire: Wire) -> None:
    def top(response: Any) -> tuple[int, str | None]:
        return response.error_code, response.error_message

    wire(
        request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT)[1](
            group_id="cg",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
    )
    other = (ErrorCode.GROUP_ID_NOT_FOUND, "Group cg is not a share group.")
    assert top(alter_offsets(wire, {"t": {0: 0}}, group="cg")) == other
    assert top(delete_offsets(wire, ["t"], group="cg")) == other
    assert top(delete_offsets(wire, ["t"], group="nope")) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
    )
    invalid = (ErrorCode.INVALID_GROUP_ID, "The group id is invalid.")
    assert top(alter_offsets(wire, {"t": {0: 0}}, group="")) == invalid
    assert top(delete_offsets(wire, ["t"], group="")) == invalid
    cluster.on_loop(lambda: cluster.groups.cluster.features.finalized.__setitem__("share.version", 0))
    unsupported = (ErrorCode.UNSUPPORTED_VERSION, "The version of API is not supported.")
    assert top(alter_offsets(wire, {"t": {0: 0}})) == unsupported
    assert top(delete_offsets(wire, ["t"])) == unsupported
    Group = DescribeOffsets.DescribeShareGroupOffsetsRequestGroup
    answer = wire(DescribeOffsets[1](groups=[Group(group_id="g", topics=None)])).groups[0]
    assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_share_group_offsets_are_authorized() -> None:
    config = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
    }
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("t", 1)
        cluster.create_topic("secret", 1)
        for operation in ("DESCRIBE", "READ", "DELETE"):
            cluster.acls.add("User:ANONYMOUS", operation, "GROUP", "g")
        cluster.acls.add("User:ANONYMOUS", "READ", "TOPIC", "t")
        cluster.acls.add("User:ANONYMOUS", "DESCRIBE", "TOPIC", "t")
        wire = Wire(cluster)
        refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
        Group = DescribeOffsets.DescribeShareGroupOffsetsRequestGroup
        answer = wire(DescribeOffsets[1](groups=[Group(group_id="h", topics=None)])).groups[0]
        assert (answer.group_id, answer.error_code) == ("h", refused)
        # refused as a whole, with the exception's message (Kafka's getErrorResponse)
        altered = alter_offsets(wire, {"t": {0: 0}}, group="h")
        assert (altered.error_code, altered.error_message) == (refused, "Group authorization failed.")
        deleted = delete_offsets(wire, ["t"], group="h")
        assert (deleted.error_code, deleted.error_message) == (refused, "Group authorization failed.")
        # a topic the caller may not describe is refused when named, left out of a listing
        denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert describe_offsets(wire, {"secret": [0], "t": [0]}) == {
            "t": {0: (-1, 0, -1, 0)},
            "secret": {0: (-1, 0, -1, denied)},
        }
        altered = alter_offsets(wire, {"t": {0: 0}, "secret": {0: 0}})
        assert {t.topic_name: [p.error_code for p in t.partitions] for t in altered.responses} == {
            "secret": [denied],
            "t": [0],
        }
        assert describe_offsets(wire, None) == {"t": {0: (0, 0, 0, 0)}}
        deleted = delete_offsets(wire, ["secret", "t"])
        assert [(t.topic_name, t.error_code) for t in deleted.responses] == [("secret", denied), ("t", 0)]
        wire.sock.close()
