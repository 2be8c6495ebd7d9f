"""The group coordinator: classic and consumer (KIP-848) groups, and committed offsets.

One `GroupCoordinator` serves the whole mock cluster; every broker's handlers call into
it after checking that they are the group's coordinator (`coordinator_for`). The state
machine follows Apache Kafka's `GroupMetadataManager`/`ClassicGroup` (group-coordinator
module, Kafka 4.x) closely, because clients depend on its exact error codes and on the
timing of generations: a JoinGroup is parked until the join phase completes (all known
members rejoined, or the rebalance timeout), the leader's SyncGroup releases everyone's
assignment, and session timeouts expire silent members.

Methods take plain values rather than wire structs so that tests can drive the state
machine directly; handlers translate requests and responses. Waiting operations
(`join_group`, `sync_group`) are coroutines resolved by asyncio futures; timers are
`loop.call_later` handles keyed like Kafka's timer keys, so rescheduling replaces.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from broker.config.group_configs import coordinator_config_error
from broker.state.classic_groups import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    GROUP_TYPE,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    GroupDescription,
    JoinRequest,
    JoinResult,
    Member,
    MemberDescription,
    SyncResult,
    _complete,
)
from broker.state.cluster import ClusterState
from broker.state.consumer_groups import GROUP_TYPE as CONSUMER_GROUP_TYPE
from broker.state.consumer_groups import (
    ConsumerGroup,
    ConsumerGroupManager,
    ConsumerMember,
    HeartbeatError,
    HeartbeatRequest,
    HeartbeatResult,
)
from broker.state.consumer_protocol import PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE
from broker.state.consumer_protocol import MalformedProtocol, decode_subscription
from broker.state.group_migration import can_downgrade, to_classic_group, to_consumer_group
from broker.state.share_groups import GROUP_TYPE as SHARE_GROUP_TYPE
from broker.state.share_groups import PROTOCOL_TYPE as SHARE_PROTOCOL_TYPE
from broker.state.share_groups import ShareGroupManager, ShareHeartbeat
from broker.state.streams_groups import GROUP_TYPE as STREAMS_GROUP_TYPE
from broker.state.streams_groups import PROTOCOL_TYPE as STREAMS_PROTOCOL_TYPE
from broker.state.streams_groups import StreamsGroupManager, StreamsHeartbeat, StreamsHeartbeatResult
from broker.state.timers import Timers
from protocol.errors import ErrorCode
from quotas.java import java_string_hash

log = logging.getLogger("broker.groups")


def kafka_abs(value: int) -> int:
    """Kafka's Utils.abs: Math.abs except that Integer.MIN_VALUE maps to 0."""
    return 0 if value == -(2**31) else abs(value)


@functools.lru_cache(maxsize=4096)  # asked on every group request: hashing the id is not free
def partition_of(key: str, partitions: int) -> int:
    """The partition of an internal topic (__consumer_offsets, __transaction_state) a
    group id or transactional id maps to: Utils.abs(key.hashCode) % partitions."""
    return kafka_abs(java_string_hash(key)) % partitions


def coordinator_of(cluster: ClusterState, partition: int, leaders: dict[int, int] | None = None) -> int:
    """The broker leading that internal partition, or -1 when none is up.

    Its replicas are every registered broker in node-id order from `partition % brokers`
    (the preferred leader) on. A partition keeps its leader while that broker is up; when
    it is not, the first live replica takes over, as Kafka elects new leaders only for the
    partitions a stopped broker led, and the returning broker does not take them back (as
    in Kafka before its preferred-leader rebalance; the data partitions do the same).
    `leaders` holds the current leader of each partition of one internal topic."""
    if leaders is not None:
        current = leaders.get(partition)
        node = cluster.brokers.get(current) if current is not None else None
        if node is not None and node.up:
            return node.node_id
    brokers = sorted(cluster.brokers)
    for step in range(len(brokers)):
        node_id = brokers[(partition + step) % len(brokers)]
        if cluster.brokers[node_id].up:
            if leaders is not None:
                leaders[partition] = node_id
            return node_id
    return -1


# -- results handed back to handlers ---------------------------------------------
@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    topic_id: uuid.UUID | None = None


@dataclass(slots=True)
class OffsetCommit:
    """One partition of an OffsetCommit request."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None


@dataclass(slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = GROUP_TYPE


# -- the coordinator -------------------------------------------------------------------
class GroupCoordinator:
    """All classic groups and their committed offsets, shared by the brokers of a cluster.

    Not thread-safe: call it on the cluster's event loop (timers need the running loop).
    """

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        # TxnOffsetCommit offsets by group and producer id, until the transaction ends.
        self.pending_offsets: dict[str, dict[int, dict[tuple[str, int], CommittedOffset]]] = {}
        reason = coordinator_config_error(cluster.config)
        if reason is not None:
            raise ValueError(reason)  # Kafka's GroupCoordinatorConfig refuses to start
        self.timers = Timers()
        # KIP-848 groups share the group id namespace, the offsets and the timers.
        self.consumer = ConsumerGroupManager(cluster, self.timers, self._downgrade)
        self.share = ShareGroupManager(cluster, self.timers)
        self.streams = StreamsGroupManager(cluster, self.timers)
        self.leaders: dict[int, int] = {}  # __consumer_offsets partition -> its leader (coordinator_of)

    # -- configuration (read on use, so tests and dynamic configs take effect) ----
    @property
    def initial_rebalance_delay_ms(self) -> int:
        return self.cluster.config.get_int("group.initial.rebalance.delay.ms")

    @property
    def min_session_timeout_ms(self) -> int:
        return self.cluster.config.get_int("group.min.session.timeout.ms")

    @property
    def max_session_timeout_ms(self) -> int:
        return self.cluster.config.get_int("group.max.session.timeout.ms")

    @property
    def offsets_topic_partitions(self) -> int:
        return self.cluster.config.get_int("offsets.topic.num.partitions")

    # -- placement ------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        """The __consumer_offsets partition of the group, as Kafka computes it."""
        return partition_of(group_id, self.offsets_topic_partitions)

    def coordinator_for(self, group_id: str) -> int:
        """Node id of the live broker coordinating the group, or -1 when none is up."""
        return coordinator_of(self.cluster, self.partition_for(group_id), self.leaders)

    # -- timers ---------------------------------------------------------------------
    @staticmethod
    def _heartbeat_key(group_id: str, member_id: str) -> tuple[str, ...]:
        return ("heartbeat", group_id, member_id)

    @staticmethod
    def _join_key(group_id: str) -> tuple[str, ...]:
        return ("join", group_id)

    @staticmethod
    def _sync_key(group_id: str) -> tuple[str, ...]:
        return ("sync", group_id)

    def _reschedule_heartbeat(
        self, group: ClassicGroup, member: Member, timeout_ms: int | None = None
    ) -> None:
        member_id = member.member_id
        self.timers.schedule(
            self._heartbeat_key(group.group_id, member_id),
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda: self._expire_heartbeat(group.group_id, member_id),
        )

    def close(self) -> None:
        """Cancels every timer and answers parked requests (the brokers are going away)."""
        self.timers.close()
        for group in self.groups.values():
            for member in group.members.values():
                group.complete_join(member, JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
                group.complete_sync(member, SyncResult(ErrorCode.NOT_COORDINATOR))

    # -- JoinGroup --------------------------------------------------------------------
    async def join_group(
        self,
        group_id: str,
        member_id: str,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        group_instance_id: str | None = None,
        client_id: str = "",
        client_host: str = "",
        require_known_member_id: bool = True,
        supports_skip_assignment: bool = True,
    ) -> JoinResult:
        """JoinGroup; the result arrives when the join phase completes (or at once on error).

        `require_known_member_id` is JoinGroup v4+ (KIP-394); `supports_skip_assignment`
        is v9+ (KIP-814).
        """
        if not group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID, member_id)
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        request = JoinRequest(
            group_id,
            member_id,
            group_instance_id,
            protocol_type,
            [(name, bytes(metadata)) for name, metadata in protocols],
            session_timeout_ms,
            rebalance_timeout_ms,
            client_id,
            client_host,
            require_known_member_id,
            supports_skip_assignment,
        )
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            if consumer_group.members:  # a classic member in a consumer group: answered at once
                return self.consumer.classic_join(consumer_group, request)
            self.consumer.delete(group_id)  # an empty consumer group becomes a classic one
        streams_group = self.streams.groups.get(group_id)
        if group_id in self.share.groups or (streams_group is not None and streams_group.members):
            # GroupMetadataManager.classicGroupJoin: a group of another protocol
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
        if streams_group is not None:
            self.streams.delete(group_id)  # an empty streams group becomes a classic one
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self._join(request, future)
        return await future

    def _join(self, request: JoinRequest, future: asyncio.Future[JoinResult]) -> None:
        is_unknown = request.member_id == ""
        group = self.groups.get(request.group_id)
        if group is None:
            if not is_unknown:
                # A member id for a group we do not know: the client resets and rejoins.
                _complete(future, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, request.member_id))
                return
            group = self.groups[request.group_id] = ClassicGroup(request.group_id)
        if not self._accept_joining_member(group, request.member_id):
            group.remove(request.member_id)
            _complete(future, JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
        elif is_unknown:
            self._join_new_member(group, request, future)
        else:
            self._join_existing_member(group, request, future)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.cluster.config.get_int("group.max.size")
        if group.state in (EMPTY, DEAD):
            return True
        existing = group.members.get(member_id)
        if group.state == PREPARING_REBALANCE:
            return (existing is not None and existing.awaiting_join) or group.num_awaiting_join() < max_size
        return existing is not None or len(group.members) < max_size

    def _join_new_member(
        self, group: ClassicGroup, request: JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        if group.state == DEAD:
            _complete(future, JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(request.protocol_type, (name for name, _ in request.protocols)):
            _complete(future, JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        prefix = request.group_instance_id if request.group_instance_id is not None else request.client_id
        new_member_id = f"{prefix}-{uuid.uuid4()}"
        if request.group_instance_id is not None:
            existing = group.static_members.get(request.group_instance_id)
            if existing is not None:
                self._update_static_member(group, request, existing, new_member_id, future)
            else:
                self._add_member_and_rebalance(group, request, new_member_id, future)
        elif request.require_known_member_id:
            # KIP-394: hand out the id and make the client come back with it, so that a
            # client retrying a timed-out join does not leave a defunct member behind.
            group.pending_join_members.add(new_member_id)
            self.timers.schedule(
                self._heartbeat_key(group.group_id, new_member_id),
                request.session_timeout_ms,
                lambda: self._expire_heartbeat(group.group_id, new_member_id),
            )
            _complete(future, JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self._add_member_and_rebalance(group, request, new_member_id, future)

    def _join_existing_member(
        self, group: ClassicGroup, request: JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        member_id = request.member_id
        if group.state == DEAD:
            _complete(future, JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(request.protocol_type, (name for name, _ in request.protocols)):
            _complete(future, JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_join_members:
            self._add_member_and_rebalance(group, request, member_id, future)
            return
        error = group.validate_member(member_id, request.group_instance_id)
        if error != ErrorCode.NONE:
            _complete(future, JoinResult(error, member_id))
            return
        member = group.members[member_id]
        if group.state == PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, request, future)
        elif group.state == COMPLETING_REBALANCE:
            if member.protocols == request.protocols:
                # Same metadata (the client probably missed the response): repeat it.
                _complete(
                    future,
                    self._current_generation(group, member_id, with_members=group.is_leader(member_id)),
                )
            else:
                self._update_member_and_rebalance(group, member, request, future)
        elif group.state == STABLE:
            if group.is_leader(member_id) or member.protocols != request.protocols:
                # A leader rejoining forces a rebalance: that is how it reacts to changes
                # that do not show in member metadata (e.g. new partitions).
                self._update_member_and_rebalance(group, member, request, future)
            else:
                _complete(future, self._current_generation(group, member_id, with_members=False))
        else:
            _complete(future, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    @staticmethod
    def _current_generation(
        group: ClassicGroup, member_id: str, with_members: bool, skip_assignment: bool = False
    ) -> JoinResult:
        return JoinResult(
            ErrorCode.NONE,
            member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            group.current_members() if with_members else [],
            skip_assignment,
        )

    def _add_member_and_rebalance(
        self, group: ClassicGroup, request: JoinRequest, member_id: str, future: asyncio.Future[JoinResult]
    ) -> None:
        member = Member(
            member_id,
            request.group_instance_id,
            request.client_id,
            request.client_host,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            request.protocol_type,
            request.protocols,
            is_new=True,
        )
        if group.state == PREPARING_REBALANCE and group.previous_state == EMPTY:
            group.new_member_added = True  # extends the initial rebalance delay
        group.add(member, future)
        self._reschedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _update_member_and_rebalance(
        self, group: ClassicGroup, member: Member, request: JoinRequest, future: asyncio.Future[JoinResult]
    ) -> None:
        group.update_member(
            member, request.protocols, request.rebalance_timeout_ms, request.session_timeout_ms, future
        )
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _update_static_member(
        self,
        group: ClassicGroup,
        request: JoinRequest,
        old_member_id: str,
        new_member_id: str,
        future: asyncio.Future[JoinResult],
    ) -> None:
        assert request.group_instance_id is not None
        current_leader = group.leader_id or ""
        self.timers.cancel(self._heartbeat_key(group.group_id, old_member_id))
        member = group.replace_static_member(request.group_instance_id, old_member_id, new_member_id)
        self._reschedule_heartbeat(group, member)
        group.update_member(
            member, request.protocols, request.rebalance_timeout_ms, request.session_timeout_ms, future
        )
        if group.state == STABLE:
            if group.protocol_name == group.select_protocol():
                # KIP-345: a restarted static member takes its old place without a rebalance.
                if request.supports_skip_assignment:
                    is_leader = group.is_leader(new_member_id)
                    result = self._current_generation(
                        group, new_member_id, with_members=is_leader, skip_assignment=is_leader
                    )
                else:
                    result = self._current_generation(group, new_member_id, with_members=False)
                    result.leader = current_leader
                group.complete_join(member, result)
            else:
                self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.state == COMPLETING_REBALANCE:
            # The leader may already be assigning to the old member id: start over.
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    # -- rebalance machinery ------------------------------------------------------------
    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    def _prepare_rebalance(self, group: ClassicGroup) -> None:
        if group.state == COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
            self._propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync_members.clear()
        self.timers.cancel(self._sync_key(group.group_id))
        initial = group.state == EMPTY
        if initial:
            # Kafka's initial delayed join: wait for more members before the first
            # generation, extending while members keep arriving, up to the rebalance timeout.
            delay = self.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            group_id = group.group_id
            self.timers.schedule(
                self._join_key(group_id),
                delay,
                lambda: self._try_complete_initial_rebalance(group_id, delay, remaining),
            )
        group.transition_to(PREPARING_REBALANCE)
        log.info("preparing to rebalance group %s (generation %d)", group.group_id, group.generation_id)
        if not initial:
            self._maybe_complete_join_else_schedule(group)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self._complete_join(group)
        else:
            group_id = group.group_id
            self.timers.schedule(
                self._join_key(group_id),
                group.rebalance_timeout_ms(),
                lambda: self._complete_join_by_id(group_id),
            )

    def _try_complete_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self.timers.schedule(
                self._join_key(group_id),
                new_delay,
                lambda: self._try_complete_initial_rebalance(group_id, new_delay, new_remaining),
            )
        else:
            self._complete_join(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if (
            group.state == PREPARING_REBALANCE
            and group.previous_state != EMPTY  # the initial rebalance always waits its delay
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join_by_id(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        self.timers.cancel(self._join_key(group.group_id))
        for member in [
            m for m in group.members.values() if not m.awaiting_join and m.group_instance_id is None
        ]:
            group.remove(member.member_id)
            self.timers.cancel(self._heartbeat_key(group.group_id, member.member_id))
            _complete(member.sync_future, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if group.state == DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members that have not rejoined are left: wait another round.
            group_id = group.group_id
            self.timers.schedule(
                self._join_key(group_id),
                group.rebalance_timeout_ms(),
                lambda: self._complete_join_by_id(group_id),
            )
            return
        group.init_next_generation()
        if group.state == EMPTY:
            log.info("group %s with generation %d is now empty", group.group_id, group.generation_id)
            return
        log.info(
            "group %s: generation %d with %d members (protocol %s)",
            group.group_id,
            group.generation_id,
            len(group.members),
            group.protocol_name,
        )
        for member in group.members.values():
            group.complete_join(
                member,
                self._current_generation(
                    group, member.member_id, with_members=group.is_leader(member.member_id)
                ),
            )
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        group_id, generation = group.group_id, group.generation_id
        self.timers.schedule(
            self._sync_key(group_id),
            group.rebalance_timeout_ms(),
            lambda: self._expire_pending_sync(group_id, generation),
        )

    def _propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        protocol_type = group.protocol_type if error == ErrorCode.NONE else None
        protocol_name = group.protocol_name if error == ErrorCode.NONE else None
        for member in group.members.values():
            if group.complete_sync(
                member, SyncResult(error, protocol_type, protocol_name, member.assignment)
            ):
                # Sessions restart once the assignment is out: waiting for the leader
                # must not count against them.
                self._reschedule_heartbeat(group, member)

    def _expire_pending_sync(self, group_id: str, generation_id: int) -> None:
        group = self.groups.get(group_id)
        if group is None or group.generation_id != generation_id:
            return
        if group.state in (COMPLETING_REBALANCE, STABLE) and group.pending_sync_members:
            late = list(group.pending_sync_members)
            for member_id in late:
                group.remove(member_id)
                self.timers.cancel(self._heartbeat_key(group_id, member_id))
            log.info("group %s: removed members that never sent SyncGroup: %s", group_id, late)
            self._prepare_rebalance(group)

    def _expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            return
        if member_id in group.pending_join_members:
            group.remove(member_id)
            if group.state == PREPARING_REBALANCE and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        log.info("group %s: member %s session expired", group_id, member_id)
        self._remove_member_and_update_group(group, member)

    def _remove_member_and_update_group(self, group: ClassicGroup, member: Member) -> None:
        # A new member may still be parked in JoinGroup: answer it before removing it.
        group.complete_join(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        group.complete_sync(member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.state == PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join(group)

    # -- SyncGroup ------------------------------------------------------------------------
    async def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: Sequence[tuple[str, bytes]] = (),
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResult:
        """SyncGroup; followers wait for the leader's assignments during CompletingRebalance."""
        if not group_id:
            return SyncResult(ErrorCode.INVALID_GROUP_ID)
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.classic_sync(
                consumer_group, member_id, group_instance_id, generation_id, protocol_type, protocol_name
            )
        group = self.groups.get(group_id)
        if group is None or group.state == EMPTY:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state == DEAD:
            return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        error = group.validate_member(member_id, group_instance_id)
        if error != ErrorCode.NONE:
            return SyncResult(error)
        if generation_id != group.generation_id:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if _inconsistent(protocol_type, group.protocol_type) or _inconsistent(
            protocol_name, group.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.state == PREPARING_REBALANCE:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        if group.state == STABLE:
            self._remove_pending_sync_member(group, member_id)
            return SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment)
        # CompletingRebalance: park until the leader's assignment arrives.
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        if member.sync_future is not None:
            _complete(member.sync_future, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_future = future
        self._remove_pending_sync_member(group, member_id)
        if group.is_leader(member_id):
            assignment = {mid: bytes(data) for mid, data in assignments}
            for other in group.members.values():
                other.assignment = assignment.get(other.member_id, b"")
            self._propagate_assignment(group, ErrorCode.NONE)
            group.transition_to(STABLE)
            log.info("group %s: generation %d is stable", group_id, group.generation_id)
        return await future

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.state not in (COMPLETING_REBALANCE, STABLE) or not group.pending_sync_members:
            self.timers.cancel(self._sync_key(group.group_id))

    # -- Heartbeat / LeaveGroup -----------------------------------------------------------
    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None = None
    ) -> int:
        """Heartbeat's error code; REBALANCE_IN_PROGRESS tells the member to rejoin."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.classic_heartbeat(
                consumer_group, member_id, group_instance_id, generation_id
            )
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state == DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(member_id, group_instance_id)
        if error != ErrorCode.NONE:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state == EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._reschedule_heartbeat(group, group.members[member_id])
        return ErrorCode.REBALANCE_IN_PROGRESS if group.state == PREPARING_REBALANCE else ErrorCode.NONE

    def leave_group(self, group_id: str, members: Sequence[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """(top-level error, one error per (member_id, group_instance_id) leaving)."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return ErrorCode.NONE, self.consumer.classic_leave(consumer_group, members)
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        if group.state == DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        errors: list[int] = []
        for member_id, instance_id in members:
            if member_id == "":
                # Administrative removal of a static member by instance id (KIP-345).
                if instance_id is not None and instance_id in group.static_members:
                    self._remove_current_member(group, group.static_members[instance_id])
                    errors.append(ErrorCode.NONE)
                else:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
            elif member_id in group.pending_join_members:
                group.remove(member_id)
                self.timers.cancel(self._heartbeat_key(group_id, member_id))
                errors.append(ErrorCode.NONE)
            else:
                error = group.validate_member(member_id, instance_id)
                if error == ErrorCode.NONE:
                    self._remove_current_member(group, member_id)
                errors.append(error)
        if ErrorCode.NONE in errors:
            if group.state in (STABLE, COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group)
            elif group.state == PREPARING_REBALANCE:
                self._maybe_complete_join_phase(group)
        return ErrorCode.NONE, errors

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members[member_id]
        self.timers.cancel(self._heartbeat_key(group.group_id, member_id))
        group.complete_join(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        group.complete_sync(member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)

    # -- offsets --------------------------------------------------------------------------
    def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        offsets: Sequence[OffsetCommit],
        group_instance_id: str | None = None,
        api_version: int = 9,
    ) -> list[int]:
        """OffsetCommit for partitions of existing topics; one error code per entry.

        Generation -1 with an empty member id is a "simple" commit (admin clients,
        consumers with manual assignment) and is accepted while the group is Empty,
        creating the group if needed.
        """
        error = self._validate_commit(
            group_id, generation_id, member_id, group_instance_id, api_version, False, offsets
        )
        if error != ErrorCode.NONE:
            return [error] * len(offsets)
        group = self.groups.get(group_id)  # None for a consumer group: sessions live on heartbeats
        if group is not None and group.state in (STABLE, PREPARING_REBALANCE) and member_id in group.members:
            # Classic protocol: commits keep the member's session alive.
            self._reschedule_heartbeat(group, group.members[member_id])
        return self._store(self.offsets.setdefault(group_id, {}), offsets)

    def commit_transactional_offsets(
        self,
        group_id: str,
        producer_id: int,
        generation_id: int,
        member_id: str,
        offsets: Sequence[OffsetCommit],
        group_instance_id: str | None = None,
        api_version: int = 5,
    ) -> list[int]:
        """TxnOffsetCommit: validated as a commit (but accepted while the group completes
        a rebalance, as Kafka's transactional validation is), held back until the
        producer's transaction ends (`complete_transactional_offsets`)."""
        error = self._validate_commit(
            group_id, generation_id, member_id, group_instance_id, api_version, True, offsets
        )
        if error != ErrorCode.NONE:
            return [error] * len(offsets)
        pending = self.pending_offsets.setdefault(group_id, {}).setdefault(producer_id, {})
        return self._store(pending, offsets)

    def complete_transactional_offsets(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """The transaction's marker reached a __consumer_offsets partition: the producer's
        offsets for every group on it become committed offsets, or are dropped on abort
        (OffsetMetadataManager.replayEndTransactionMarker)."""
        for group_id in [g for g in self.pending_offsets if self.partition_for(g) == offsets_partition]:
            by_producer = self.pending_offsets[group_id]
            pending = by_producer.pop(producer_id, None)
            if not by_producer:
                del self.pending_offsets[group_id]
            if commit and pending:
                self.offsets.setdefault(group_id, {}).update(pending)

    def has_pending_offsets(self, group_id: str, topic: str, partition: int) -> bool:
        """KIP-447: an open transaction holds an offset for this partition (OffsetFetch
        with require_stable answers UNSTABLE_OFFSET_COMMIT then)."""
        return any((topic, partition) in held for held in self.pending_offsets.get(group_id, {}).values())

    def _validate_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        api_version: int,
        transactional: bool,
        offsets: Sequence[OffsetCommit] = (),
    ) -> int:
        streams_group = self.streams.groups.get(group_id)
        if streams_group is not None:
            return self.streams.validate_offset_commit(
                streams_group,
                member_id,
                generation_id,
                transactional,
                api_version,
                [(o.topic, o.partition) for o in offsets],
            )
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.validate_offset_commit(
                consumer_group, member_id, generation_id, transactional, api_version
            )
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # OffsetCommit v9+ and TxnOffsetCommit v6+ say GROUP_ID_NOT_FOUND; older
                # versions ILLEGAL_GENERATION.
                found = ErrorCode.GROUP_ID_NOT_FOUND if api_version >= (6 if transactional else 9) else None
                return found or ErrorCode.ILLEGAL_GENERATION
            self.groups[group_id] = group = ClassicGroup(group_id)
        return group.validate_offset_commit(member_id, group_instance_id, generation_id, transactional)

    def _store(
        self, stored: dict[tuple[str, int], CommittedOffset], offsets: Sequence[OffsetCommit]
    ) -> list[int]:
        max_metadata = self.cluster.config.get_int("offset.metadata.max.bytes")
        now_ms = int(time.time() * 1000)
        errors: list[int] = []
        for commit in offsets:
            if commit.metadata is not None and len(commit.metadata) > max_metadata:
                errors.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
                continue
            topic = self.cluster.topics.get(commit.topic)
            stored[(commit.topic, commit.partition)] = CommittedOffset(
                commit.offset,
                commit.leader_epoch,
                commit.metadata or "",
                now_ms,
                topic.topic_id if topic is not None else None,
            )
            errors.append(ErrorCode.NONE)
        return errors

    def _live_offsets(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        """The group's offsets minus those of deleted (or deleted and re-created) topics.

        Kafka drops a deleted topic's offsets from every group; comparing topic ids on
        read gives the same answers without a hook into topic deletion.
        """
        stored = self.offsets.get(group_id)
        if not stored:
            return {}
        topics = self.cluster.topics
        stale = [
            key
            for key, committed in stored.items()
            if (topic := topics.get(key[0])) is None
            or (committed.topic_id is not None and committed.topic_id != topic.topic_id)
        ]
        for key in stale:
            del stored[key]
        return stored

    # -- ConsumerGroupHeartbeat (KIP-848) ---------------------------------------------------
    def consumer_group_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        """A consumer-protocol heartbeat. Joining a classic group of the same id upgrades
        it: an empty one (committed offsets only) whatever the policy; a non-empty one
        becomes a consumer group whose classic members keep their partitions and learn of
        the new epoch at their next Heartbeat (REBALANCE_IN_PROGRESS). The classic group
        goes only if the joining heartbeat succeeds. Offsets stay either way."""
        if request.group_id in self.share.groups or request.group_id in self.streams.groups:
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a consumer group."
            )
        classic = self.groups.get(request.group_id)
        if classic is None or classic.state == DEAD:
            return self.consumer.heartbeat(request)
        if request.member_epoch != 0:
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a consumer group."
            )
        migrated = (
            to_consumer_group(
                classic,
                self.cluster,
                self.cluster.config.get_str("group.consumer.migration.policy"),
                self.cluster.config.get_int("group.consumer.max.size"),
            )
            if classic.members
            else ConsumerGroup(classic.group_id)
        )
        result = self.consumer.heartbeat(request, into=migrated)
        for member in classic.members.values():
            classic.complete_join(member, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
            classic.complete_sync(member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        self.timers.cancel_group(classic.group_id)
        del self.groups[classic.group_id]
        if classic.members:
            log.info(
                "group %s: upgraded from classic to consumer at epoch %d",
                classic.group_id,
                migrated.group_epoch,
            )
        self.consumer.adopt(migrated)
        return result

    def share_group_heartbeat(self, request: ShareHeartbeat) -> HeartbeatResult:
        """A share-group heartbeat; a group id taken by another type of group is refused."""
        group_id = request.group_id
        if (
            group_id in self.consumer.groups
            or group_id in self.streams.groups
            or (group_id in self.groups and self.groups[group_id].state != DEAD)
        ):
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        return self.share.heartbeat(request)

    def streams_group_heartbeat(self, request: StreamsHeartbeat) -> StreamsHeartbeatResult:
        """A streams-group heartbeat: an empty classic group of the id (committed offsets
        only) becomes a streams group when the heartbeat succeeds (getOrCreateStreamsGroup);
        another type of group refuses."""
        group_id = request.group_id
        classic = self.groups.get(group_id)
        live_classic = classic is not None and classic.state != DEAD
        if (
            group_id in self.consumer.groups
            or group_id in self.share.groups
            or (live_classic and (request.member_epoch != 0 or classic is None or classic.members))
        ):
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        result = self.streams.heartbeat(request)
        if classic is not None:
            self.timers.cancel_group(group_id)
            del self.groups[group_id]
        return result

    def _downgrade(self, group: ConsumerGroup, leaving: Sequence[ConsumerMember]) -> bool:
        """The last consumer-protocol member leaves a group of classic members: it
        becomes a classic group that rebalances at once (its members rejoin on their
        next Heartbeat and the leader assigns, as classic groups do)."""
        if not can_downgrade(
            group,
            leaving,
            self.cluster.config.get_str("group.consumer.migration.policy"),
            self.cluster.config.get_int("group.max.size"),
        ):
            return False
        classic = to_classic_group(group, leaving, self.cluster)
        self.consumer.delete(group.group_id)
        self.groups[group.group_id] = classic
        log.info(
            "group %s: downgraded from consumer to classic at generation %d",
            group.group_id,
            classic.generation_id,
        )
        for member in classic.members.values():
            self._reschedule_heartbeat(classic, member)
        self._prepare_rebalance(classic)
        return True

    def group_exists(self, group_id: str) -> bool:
        """A classic group that is not Dead, a consumer-protocol group or a share group."""
        group = self.groups.get(group_id)
        return (
            (group is not None and group.state != DEAD)
            or group_id in self.consumer.groups
            or group_id in self.share.groups
            or group_id in self.streams.groups
        )

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch v9+ from a member of a consumer-protocol group names its epoch
        (ConsumerGroup.validateOffsetFetch); -1 is an admin's fetch, always served."""
        if member_epoch == -1:
            return ErrorCode.NONE
        streams_group = self.streams.groups.get(group_id)
        if streams_group is not None:
            return self.streams.validate_offset_fetch(streams_group, member_id or "", member_epoch)
        group = self.consumer.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE
        return self.consumer.validate_offset_fetch(group, member_id or "", member_epoch)

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], CommittedOffset | None]:
        """Committed offsets of `partitions` (None where nothing is committed), or all."""
        known = self._live_offsets(group_id) if self.group_exists(group_id) else {}
        if partitions is None:
            return dict(sorted(known.items()))
        return {key: known.get(key) for key in partitions}

    # -- admin ----------------------------------------------------------------------------
    def describe_group(self, group_id: str) -> GroupDescription | None:
        """DescribeGroups' view of one group; None when it does not exist."""
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            return None
        stable = group.state == STABLE
        members = [
            MemberDescription(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata(group.protocol_name) if stable else b"",
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        ]
        return GroupDescription(
            group.group_id,
            group.state,
            group.protocol_type or "",
            (group.protocol_name or "") if stable else "",
            members,
        )

    def list_groups(
        self,
        states: Iterable[str] = (),
        types: Iterable[str] = (),
        coordinator: int | None = None,
    ) -> list[ListedGroup]:
        """Groups (optionally only those `coordinator` coordinates), filtered as ListGroups v4/v5."""
        wanted_states = {state.lower() for state in states}
        wanted_types = {kind.lower() for kind in types}
        candidates = (
            [
                ListedGroup(group.group_id, group.protocol_type or "", group.state)
                for group in self.groups.values()
                if group.state != DEAD
            ]
            + [
                ListedGroup(group.group_id, CONSUMER_PROTOCOL_TYPE, group.state, CONSUMER_GROUP_TYPE)
                for group in self.consumer.groups.values()
            ]
            + [
                ListedGroup(group.group_id, SHARE_PROTOCOL_TYPE, group.state, SHARE_GROUP_TYPE)
                for group in self.share.groups.values()
            ]
            + [
                ListedGroup(group.group_id, STREAMS_PROTOCOL_TYPE, group.state, STREAMS_GROUP_TYPE)
                for group in self.streams.groups.values()
            ]
        )
        return [
            listed
            for listed in candidates
            if (not wanted_types or listed.group_type in wanted_types)
            and (not wanted_states or listed.state.lower() in wanted_states)
            and (coordinator is None or self.coordinator_for(listed.group_id) == coordinator)
        ]

    def delete_offsets(self, group_id: str, partitions: Sequence[tuple[str, int]]) -> tuple[int, list[int]]:
        """OffsetDelete: (group error, one error per partition). A group still subscribed
        to a topic keeps its offsets (GROUP_SUBSCRIBED_TO_TOPIC); a classic group that is
        not Empty and not a consumer-protocol group refuses (NON_EMPTY_GROUP)."""
        consumer_group = self.consumer.groups.get(group_id)
        streams_group = self.streams.groups.get(group_id)
        classic = self.groups.get(group_id)
        if consumer_group is not None:
            subscribed = consumer_group.subscribed_topic_names()
        elif streams_group is not None:
            subscribed = self.streams.subscribed_topics(streams_group)
        elif classic is None or classic.state == DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        elif classic.state != EMPTY and classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.NON_EMPTY_GROUP, []
        else:
            subscribed = self._classic_subscribed_topics(classic)
        stored = self.offsets.get(group_id, {})
        errors: list[int] = []
        for topic, partition in partitions:
            if topic in subscribed:
                errors.append(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
            else:
                stored.pop((topic, partition), None)
                errors.append(ErrorCode.NONE)
        return ErrorCode.NONE, errors

    @staticmethod
    def _classic_subscribed_topics(group: ClassicGroup) -> set[str]:
        """The topics a classic consumer-protocol group's members subscribe to (none while
        it is Empty or its members' subscriptions do not decode)."""
        if group.state == EMPTY or group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return set()
        topics: set[str] = set()
        for member in group.members.values():
            try:
                topics.update(decode_subscription(member.metadata(group.protocol_name)).topics)
            except MalformedProtocol:
                continue
        return topics

    def group_details(self, group_id: str) -> dict[str, Any] | None:
        """A JSON-ready description of a group of either type; None when unknown."""
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.to_dict(consumer_group)
        share_group = self.share.groups.get(group_id)
        if share_group is not None:
            return self.share.to_dict(share_group)
        streams_group = self.streams.groups.get(group_id)
        if streams_group is not None:
            return self.streams.to_dict(streams_group)
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            return None
        return {
            "group_id": group_id,
            "type": GROUP_TYPE,
            "state": group.state,
            "protocol_type": group.protocol_type or "",
            "protocol": group.protocol_name,
            "generation_id": group.generation_id,
            "leader": group.leader_id,
            "members": [
                {
                    "member_id": m.member_id,
                    "instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                }
                for m in group.members.values()
            ],
        }

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """DeleteGroups: only Empty groups go, together with their committed offsets."""
        results: dict[str, int] = {}
        for group_id in dict.fromkeys(group_ids):
            share_group = self.share.groups.get(group_id)
            if share_group is not None:
                if share_group.members:
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    self.share.delete(group_id)
                    self.offsets.pop(group_id, None)
                    results[group_id] = ErrorCode.NONE
                continue
            streams_group = self.streams.groups.get(group_id)
            if streams_group is not None:
                if streams_group.members:
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    self.streams.delete(group_id)
                    self.offsets.pop(group_id, None)
                    results[group_id] = ErrorCode.NONE
                continue
            consumer_group = self.consumer.groups.get(group_id)
            if consumer_group is not None:
                if consumer_group.members:
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    self.consumer.delete(group_id)
                    self.offsets.pop(group_id, None)
                    results[group_id] = ErrorCode.NONE
                continue
            group = self.groups.get(group_id)
            if group is None or group.state == DEAD:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state != EMPTY:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                self.timers.cancel_group(group_id)
                group.transition_to(DEAD)
                del self.groups[group_id]
                self.offsets.pop(group_id, None)
                results[group_id] = ErrorCode.NONE
        return results


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
