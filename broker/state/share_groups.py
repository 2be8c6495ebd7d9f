"""KIP-932 share groups: membership and assignment (ShareGroupHeartbeat), the share
partitions their members acquire records from, and the share sessions ShareFetch and
ShareAcknowledge run in.

Membership follows Kafka's `GroupMetadataManager` (share group part) and `ShareGroup`:
the group epoch is bumped whenever membership, subscriptions or the subscribed topics'
partitions change, the `simple` assignor then computes a target assignment, and a member
takes its target at its next heartbeat: share groups revoke nothing (several members may
read one partition), so there is no reconciliation. A member that stops heartbeating for
the session timeout is removed, and the records it holds go back.

The share partitions are Kafka's share coordinator and `SharePartitionManager` in one
place: a partition's state is created when the group is first assigned it, starting where
`share.auto.offset.reset` says; acquisition locks are timers; a waiting ShareFetch is
woken when records are appended or become available again.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from broker.config.group_configs import group_config
from broker.state.cluster import ClusterState, Partition
from broker.state.consumer_groups import HeartbeatError, HeartbeatResult
from broker.state.records import CONTROL_FLAG, TRANSACTIONAL_FLAG, producer_id_of
from broker.state.share_partitions import AcknowledgeError, Acquired, SharePartition
from broker.state.timers import Timers
from protocol.errors import ErrorCode

log = logging.getLogger("broker.groups")

GROUP_TYPE = "share"
PROTOCOL_TYPE = "share"  # ListGroups' protocol type of a share group
ASSIGNOR_NAME = "simple"
EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"  # ShareGroup.ShareGroupState
LEAVE_GROUP_MEMBER_EPOCH = -1
READ_COMMITTED = "read_committed"

Assignment = dict[uuid.UUID, frozenset[int]]
PartitionKey = tuple[str, uuid.UUID, int]  # (group id, topic id, partition)


@dataclass(slots=True)
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: Assignment = field(default_factory=dict)


@dataclass(slots=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    client_id: str = ""
    client_host: str = ""


class ShareGroup:
    """One share group (Kafka's ShareGroup): members, epochs, the target assignment."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.members: dict[str, ShareMember] = {}
        self.group_epoch = 1  # Kafka 4.4: a new group starts at epoch 1 (ModernGroup)
        self.assignment_epoch = 1
        self.target: dict[str, Assignment] = {}
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_topic_names(self) -> set[str]:
        return {name for m in self.members.values() for name in m.subscribed_topic_names}


@dataclass(slots=True)
class ShareSession:
    """A member's share session on one broker (Kafka's ShareSession)."""

    epoch: int
    connection_id: int  # the connection it was opened on: it ends when that closes
    partitions: dict[tuple[uuid.UUID, int], None] = field(default_factory=dict)  # ordered set


def _check_member_epoch(member: ShareMember, received: int) -> None:
    """throwIfShareGroupMemberEpochIsInvalid: the previous epoch is accepted too (the
    member may have missed the response that moved it on)."""
    if received > member.member_epoch:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a greater member epoch ({received}) than the one known by "
            f"the group coordinator ({member.member_epoch}). The member must abandon all its "
            "partitions and rejoin.",
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a smaller member epoch ({received}) than the one known by "
            f"the group coordinator ({member.member_epoch}), and it does not match the previous "
            f"member epoch ({member.previous_member_epoch}). The member must abandon all its "
            "partitions and rejoin.",
        )


def _next_epoch(epoch: int) -> int:
    return 1 if epoch == 2**31 - 1 else epoch + 1  # ShareRequestMetadata.nextEpoch


class ShareGroupManager:
    """Every share group of the cluster, their share partitions and share sessions."""

    def __init__(self, cluster: ClusterState, timers: Timers) -> None:
        self.cluster = cluster
        self.timers = timers
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[PartitionKey, SharePartition] = {}
        self.sessions: dict[tuple[int, str, str], ShareSession] = {}  # (node, group, member)
        # ShareFetches waiting for records: woken when records become available again
        self.available_listeners: set[Callable[[], None]] = set()

    # -- configuration --------------------------------------------------------------
    def config(self, group_id: str, name: str) -> str:
        """A share group config in force: the group's own, else the broker's."""
        return group_config(self.cluster.group_configs.get(group_id, {}), name, self.cluster.config)

    def config_int(self, group_id: str, name: str) -> int:
        return int(self.config(group_id, name))

    # -- ShareGroupHeartbeat --------------------------------------------------------
    @staticmethod
    def validate(request: ShareHeartbeat) -> None:
        """KafkaApis' member id check (answered without a message: getErrorResponse), then
        throwIfShareGroupHeartbeatRequestIsInvalid, in Kafka's order and words."""
        if not request.member_id or len(request.member_id) > 36:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, None)
        if not request.member_id.strip():
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if not request.group_id.strip():
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if request.rack_id is not None and not request.rack_id.strip():
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if request.member_epoch == 0:
            if not request.subscribed_topic_names:
                raise HeartbeatError(
                    ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
                )
        elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")

    def heartbeat(self, request: ShareHeartbeat) -> HeartbeatResult:
        """Raises HeartbeatError with Kafka's code and message, leaving the group as it was."""
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(request)
        group = self.groups.get(request.group_id)
        joining = request.member_epoch == 0
        if group is None:
            if not joining:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {request.group_id} not found."
                )
            group = ShareGroup(request.group_id)
        max_size = self.cluster.config.get_int("group.share.max.size")
        if len(group.members) >= max_size and request.member_id not in group.members:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The share group has reached its maximum capacity of {max_size} members.",
            )
        member = group.members.get(request.member_id)
        if member is None:
            if not joining:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {request.member_id} is not a member of group {request.group_id}.",
                )
            member = ShareMember(request.member_id)
        elif not joining:
            _check_member_epoch(member, request.member_epoch)
        # Every check has passed: only now does the group change.
        self.groups[group.group_id] = group
        subscribed = (
            tuple(sorted(set(request.subscribed_topic_names)))
            if request.subscribed_topic_names is not None
            else member.subscribed_topic_names
        )
        changed = member.member_id not in group.members or subscribed != member.subscribed_topic_names
        member.rack_id = request.rack_id if request.rack_id is not None else member.rack_id
        member.client_id, member.client_host = request.client_id, request.client_host
        member.subscribed_topic_names = subscribed
        group.members[member.member_id] = member
        metadata = self._subscription_metadata(group)
        if changed or metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._compute_target_assignment(group)
        previous = member.assigned
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
            member.assigned = group.target.get(member.member_id, {})
        self._schedule_session_timeout(group.group_id, member.member_id)
        full = joining or request.subscribed_topic_names is not None
        return HeartbeatResult(
            member.member_id,
            member.member_epoch,
            self.config_int(group.group_id, "share.heartbeat.interval.ms"),
            member.assigned if full or member.assigned != previous else None,
        )

    def _leave(self, request: ShareHeartbeat) -> HeartbeatResult:
        group = self.groups.get(request.group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} not found.")
        if request.member_id not in group.members:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {request.member_id} is not a member of group {request.group_id}.",
            )
        self.remove_member(group, request.member_id)
        return HeartbeatResult(request.member_id, LEAVE_GROUP_MEMBER_EPOCH, 0, None)

    def remove_member(self, group: ShareGroup, member_id: str) -> None:
        """A member leaves or is fenced: the group rebalances. What it acquired stays so
        until its share session closes or the locks expire, as in Kafka."""
        group.members.pop(member_id, None)
        self.timers.cancel(("share-session-timeout", group.group_id, member_id))
        group.group_epoch += 1
        group.subscription_metadata = self._subscription_metadata(group)
        self._compute_target_assignment(group)

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        def expire() -> None:
            group = self.groups.get(group_id)
            if group is not None and member_id in group.members:
                log.info("share group %s: member %s expired", group_id, member_id)
                self.remove_member(group, member_id)

        self.timers.schedule(
            ("share-session-timeout", group_id, member_id),
            self.config_int(group_id, "share.session.timeout.ms"),
            expire,
        )

    def _subscription_metadata(self, group: ShareGroup) -> dict[str, tuple[uuid.UUID, int]]:
        return {
            name: (topic.topic_id, len(topic.partitions))
            for name in sorted(group.subscribed_topic_names())
            if (topic := self.cluster.topics.get(name)) is not None
        }

    def _compute_target_assignment(self, group: ShareGroup) -> None:
        """The `simple` assignor (SimpleAssignor): with one subscription for all, every
        partition is spread over the members; otherwise each topic over its subscribers."""
        target: dict[str, Assignment] = {member_id: {} for member_id in group.members}
        subscribers: dict[str, list[str]] = {}
        for member_id, member in group.members.items():
            for name in member.subscribed_topic_names:
                subscribers.setdefault(name, []).append(member_id)
        topics = [name for name in sorted(subscribers) if name in group.subscription_metadata]
        homogeneous = len({m.subscribed_topic_names for m in group.members.values()}) == 1
        runs = [(list(group.members), topics)] if homogeneous else [(subscribers[t], [t]) for t in topics]
        for member_ids, names in runs:
            partitions = [
                (group.subscription_metadata[name][0], index)
                for name in names
                for index in range(group.subscription_metadata[name][1])
            ]
            for member_id, (topic_id, index) in _spread(member_ids, partitions):
                assigned = target[member_id]
                assigned[topic_id] = assigned.get(topic_id, frozenset()) | {index}
        group.target = target
        group.assignment_epoch = group.group_epoch
        for assignment in target.values():
            for topic_id, indexes in assignment.items():
                for index in indexes:
                    self._initialize(group.group_id, topic_id, index)

    # -- share partitions -----------------------------------------------------------
    def _initialize(self, group_id: str, topic_id: uuid.UUID, index: int) -> None:
        """A partition first assigned: its state starts where share.auto.offset.reset says."""
        key = (group_id, topic_id, index)
        if key in self.partitions:
            return
        topic = self.cluster.topics_by_id.get(topic_id)
        if topic is None or index >= len(topic.partitions):
            return
        self.partitions[key] = SharePartition(self._reset_offset(group_id, topic.partitions[index]))

    def _reset_offset(self, group_id: str, partition: Partition) -> int:
        reset = self.config(group_id, "share.auto.offset.reset").strip().lower()
        log_ = partition.log
        if reset == "earliest":
            return log_.log_start_offset
        if reset.startswith("by_duration:"):
            since = int(time.time() * 1000) - _duration_ms(reset.removeprefix("by_duration:"))
            found = log_.offset_for_timestamp(since)
            return found[0] if found is not None else log_.log_end_offset
        return log_.log_end_offset

    def acquire(
        self,
        group_id: str,
        member_id: str,
        topic_id: uuid.UUID,
        partition: Partition,
        max_records: int,
        max_bytes: int,
    ) -> tuple[list[memoryview], list[Acquired]]:
        """Acquires records for a member's ShareFetch: the batches to send and what of
        them is the member's. The partition's state is created here when the group was
        not assigned it: ShareFetch does not ask the group coordinator (nor does Kafka's)."""
        key = (group_id, topic_id, partition.index)
        self._initialize(group_id, topic_id, partition.index)
        share = self.partitions[key]
        log_ = partition.log
        share.skip_to(log_.log_start_offset)
        limit = self.config_int(group_id, "share.delivery.count.limit")
        lock = share.new_lock()
        offsets = share.acquire_available(member_id, max_records, lock)
        batches: dict[int, memoryview] = {}
        if offsets:
            for base, _, data in log_.batches(offsets[0], offsets[-1] + 1):
                batches[base] = data
        read_committed = self.config(group_id, "share.isolation.level") == READ_COMMITTED
        end = log_.last_stable_offset if read_committed else log_.high_watermark
        max_locks = self.config_int(group_id, "share.partition.max.record.locks")
        wanted = max_records - len(offsets)
        if wanted > 0 and share.end_offset < end and share.in_flight() < max_locks:
            room = min(wanted, max_locks - share.in_flight())
            found = log_.batches(share.end_offset, end, max_records=room, max_bytes=max_bytes)
            for base, last, data in found:
                offsets += share.acquire_new(member_id, base, last, lock)
                batches[base] = data
            if read_committed and log_.aborted:
                aborted = set(_aborted_offsets(log_.aborted, found))
                share.archive(aborted)
                offsets = [o for o in offsets if o not in aborted]
        if not offsets:
            return [], []
        self._schedule_lock(group_id, topic_id, partition.index, lock, limit)
        return [batches[b] for b in sorted(batches)], SharePartition.runs(share.records, offsets)

    def acknowledge(
        self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int, batches: Iterable[Any]
    ) -> tuple[int, str | None]:
        """One partition's acknowledgement batches: (error code, message)."""
        share = self.partitions.get((group_id, topic_id, index))
        if share is None:
            return ErrorCode.INVALID_RECORD_STATE, "The share partition has no records in flight."
        limit = self.config_int(group_id, "share.delivery.count.limit")
        wanted = [
            (b.first_offset, b.last_offset, list(b.acknowledge_types))
            for b in batches
            if b.last_offset >= share.start_offset  # wholly before the start offset: done already
        ]
        try:  # all or nothing: one refused batch leaves the partition as it was
            for first, last, types in wanted:
                share.check_acknowledgement(member_id, first, last, types)
        except AcknowledgeError as error:
            return error.code, error.message
        for first, last, types in wanted:
            renewed = share.acknowledge(member_id, first, last, types, limit)
            if renewed:
                lock = share.new_lock()
                share.renew(renewed, lock)
                self._schedule_lock(group_id, topic_id, index, lock, limit)
        if share.has_available():
            self._wake()
        return ErrorCode.NONE, None

    def release_member(
        self, group_id: str, member_id: str, keys: Iterable[tuple[uuid.UUID, int]] | None = None
    ) -> None:
        limit = self.config_int(group_id, "share.delivery.count.limit")
        released = 0
        for (group, topic_id, index), share in self.partitions.items():
            if group == group_id and (keys is None or (topic_id, index) in keys):
                released += share.release_member(member_id, limit)
        if released:
            self._wake()

    def _schedule_lock(self, group_id: str, topic_id: uuid.UUID, index: int, lock: int, limit: int) -> None:
        def expire() -> None:
            share = self.partitions.get((group_id, topic_id, index))
            if share is not None and share.expire_lock(lock, limit):
                self._wake()

        self.timers.schedule(
            ("share-lock", group_id, str(topic_id), str(index), str(lock)),
            self.config_int(group_id, "share.record.lock.duration.ms"),
            expire,
        )

    def _wake(self) -> None:
        for listener in list(self.available_listeners):
            listener()

    # -- share sessions ---------------------------------------------------------------
    def session(self, node_id: int, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((node_id, group_id, member_id))

    def open_session(self, node_id: int, group_id: str, member_id: str, connection_id: int) -> ShareSession:
        """Epoch 0: a new session, replacing the member's previous one on this broker
        (what that one acquired stays acquired until its locks expire, as in Kafka)."""
        session = self.sessions[(node_id, group_id, member_id)] = ShareSession(1, connection_id)
        return session

    def advance_session(self, session: ShareSession) -> None:
        session.epoch = _next_epoch(session.epoch)

    def close_session(self, node_id: int, group_id: str, member_id: str) -> None:
        """The final epoch, or the session's connection closed: the member's records in
        the session's partitions go back (SharePartitionManager.releaseSession)."""
        session = self.sessions.pop((node_id, group_id, member_id), None)
        if session is not None:
            self.release_member(group_id, member_id, session.partitions)

    def connection_closed(self, node_id: int, connection_id: int) -> None:
        for node, group_id, member_id in [
            key for key, s in self.sessions.items() if key[0] == node_id and s.connection_id == connection_id
        ]:
            self.close_session(node, group_id, member_id)

    # -- share-group offsets (DescribeShareGroupOffsets, Alter..., Delete...) ------------
    def initialized(self, group_id: str) -> dict[uuid.UUID, list[int]]:
        """The share partitions of a group whose state exists, by topic id (Kafka's
        initializedShareGroupPartitions)."""
        found: dict[uuid.UUID, list[int]] = {}
        for group, topic_id, index in sorted(self.partitions, key=lambda k: (str(k[1]), k[2])):
            if group == group_id:
                found.setdefault(topic_id, []).append(index)
        return found

    def written_state(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition | None:
        """A share partition's state as the share coordinator holds it (ReadShareGroupStateSummary):
        None until it is first written."""
        share = self.partitions.get((group_id, topic_id, index))
        return share if share is not None and share.written else None

    def check_empty(self, group_id: str) -> None:
        """Offsets are altered or deleted only while the group has no members."""
        group = self.groups.get(group_id)
        if group is not None and group.members:
            raise HeartbeatError(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")

    def alter_offsets(
        self, group_id: str, offsets: dict[uuid.UUID, dict[int, int]], create: bool, initialize: bool = True
    ) -> None:
        """AlterShareGroupOffsets on an empty group (created when `create`): each share
        partition's state starts afresh at the given offset (InitializeShareGroupState;
        not `initialize`: the persister refused the request, the group still changed)."""
        self.check_empty(group_id)
        group = self.groups.get(group_id)
        if group is not None and offsets:
            # Kafka 4.4 bumps the group epoch once the altered partitions are initialized
            # (the group has no members: its target assignment is empty at that epoch);
            # a group the request creates stays at epoch 1
            group.group_epoch += 1
            self._compute_target_assignment(group)
        if create and group is None:
            self.groups[group_id] = ShareGroup(group_id)
        if not initialize:
            return
        for topic_id, starts in offsets.items():
            for index, start in starts.items():
                share = SharePartition(start)
                share.written = True
                self.partitions[(group_id, topic_id, index)] = share

    def delete_offsets(self, group_id: str, topic_id: uuid.UUID) -> bool:
        """DeleteShareGroupOffsets of one topic: its share partitions' state goes (the
        next assignment starts where share.auto.offset.reset says). False: there was none."""
        keys = [k for k in self.partitions if k[0] == group_id and k[1] == topic_id]
        for key in keys:
            del self.partitions[key]
        return bool(keys)

    # -- admin ------------------------------------------------------------------------
    def delete(self, group_id: str) -> None:
        self.groups.pop(group_id, None)
        for key in [k for k in self.partitions if k[0] == group_id]:
            del self.partitions[key]
        self.timers.cancel_group(group_id)

    def to_dict(self, group: ShareGroup) -> dict[str, Any]:
        return {
            "group_id": group.group_id,
            "type": GROUP_TYPE,
            "state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "members": [
                {
                    "member_id": m.member_id,
                    "member_epoch": m.member_epoch,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                }
                for m in group.members.values()
            ],
            "partitions": [
                {
                    "topic_id": str(topic_id),
                    "partition": index,
                    "start_offset": share.start_offset,
                    "in_flight": share.in_flight(),
                }
                for (g, topic_id, index), share in sorted(
                    self.partitions.items(), key=lambda kv: (str(kv[0][1]), kv[0][2])
                )
                if g == group.group_id
            ],
        }


def _aborted_offsets(
    aborted: list[tuple[int, int, int]], batches: list[tuple[int, int, memoryview]]
) -> Iterable[int]:
    """The offsets of the data batches among `batches` that aborted transactions wrote
    (the log's aborted list: producer id, first offset, marker offset), which a
    read_committed share group archives (SharePartition's aborted-transaction filter)."""
    for base, last, data in batches:
        attributes = int.from_bytes(data[21:23], "big")
        if not attributes & TRANSACTIONAL_FLAG or attributes & CONTROL_FLAG:
            continue
        producer_id = producer_id_of(data)
        if any(p == producer_id and first <= base < marker for p, first, marker in aborted):
            yield from range(base, last + 1)


def _spread(
    member_ids: list[str], partitions: list[tuple[uuid.UUID, int]]
) -> list[tuple[str, tuple[uuid.UUID, int]]]:
    """SimpleHomogeneousAssignmentBuilder's arithmetic: each partition shared by
    ceil(members / partitions) members, and the members' counts differing by at most one
    (Kafka's iteration order over members and partitions is a hash map's; here it is
    join order and topic/partition order, and nothing is kept from the last assignment)."""
    members, count = len(member_ids), len(partitions)
    if not members or not count:
        return []
    sharing = -(-members // count)
    slots = sharing * count
    pairs, taken = [], 0
    for i, member_id in enumerate(member_ids):
        wanted = -(-slots * (i + 1) // members) - -(-slots * i // members)
        pairs += [(member_id, partitions[(taken + k) % count]) for k in range(wanted)]
        taken += wanted
    return pairs


_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE)


def _duration_ms(text: str) -> int:
    """An ISO-8601 duration (java.time.Duration.parse's PnDTnHnMn.nS) in milliseconds."""
    match = _DURATION.match(text.strip())
    if match is None:
        raise ValueError(f"not a duration: {text}")
    days, hours, minutes, seconds = match.groups()
    return int(
        (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds or 0))
        * 1000
    )
