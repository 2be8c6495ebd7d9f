"""The classic group model: Kafka's `ClassicGroup` and its members' join and sync state.

The state machine follows Apache Kafka's `ClassicGroup` (group-coordinator module,
Kafka 4.x): a JoinGroup is parked until the join phase completes, the leader's SyncGroup
releases everyone's assignment. `GroupCoordinator` (groups.py) drives it with timers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from protocol.errors import ErrorCode

# -- classic group states (their toString() in Kafka, as DescribeGroups/ListGroups show them)
EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

_VALID_PREVIOUS: dict[str, frozenset[str]] = {
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}

GROUP_TYPE = "classic"
# Kafka's group.classic.new.member.join.timeout: a new member parked in JoinGroup is
# dropped after this long, since a disconnected client cannot be detected while parked.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

Protocols = list[tuple[str, bytes]]
R = TypeVar("R")


# -- results handed back to handlers ---------------------------------------------
@dataclass(slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinRequest:
    """A JoinGroup (`require_known_member_id` is v4+, KIP-394; `supports_skip_assignment`
    v9+, KIP-814)."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: Protocols
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = True
    supports_skip_assignment: bool = True


@dataclass(slots=True)
class JoinResult:
    error: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[JoinMember] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(slots=True)
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: list[MemberDescription]


# -- group model -------------------------------------------------------------------
@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_future: asyncio.Future[JoinResult] | None = None
    sync_future: asyncio.Future[SyncResult] | None = None
    is_new: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_future is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_future is not None

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str | None:
        """The member's most preferred protocol among those every member supports."""
        return next((name for name, _ in self.protocols if name in candidates), None)

    def has_satisfied_heartbeat(self) -> bool:
        # New members may be expired while parked in JoinGroup; members waiting on a
        # join or sync response cannot heartbeat, so they count as alive.
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync


def _complete(future: asyncio.Future[R] | None, result: R) -> None:
    """Answers a parked request unless its client already went away (cancelled)."""
    if future is not None and not future.done():
        future.set_result(result)


class ClassicGroup:
    """Membership and generation state of one group (Kafka's ClassicGroup)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = EMPTY
        self.previous_state = DEAD
        self.state_timestamp_ms = int(time.time() * 1000)
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_join_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.new_member_added = False

    # -- queries ---------------------------------------------------------------
    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[PREPARING_REBALANCE]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def num_awaiting_join(self) -> int:
        return sum(1 for member in self.members.values() if member.awaiting_join)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_join_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def _supported_by_all(self) -> set[str]:
        counts: dict[str, int] = {}
        for member in self.members.values():
            for name in {name for name, _ in member.protocols}:
                counts[name] = counts.get(name, 0) + 1
        return {name for name, count in counts.items() if count == len(self.members)}

    def supports_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        names = set(names)
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and bool(names & self._supported_by_all())

    def select_protocol(self) -> str:
        """The protocol with most first-choice votes among those all members support."""
        candidates = self._supported_by_all()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            if choice is not None:
                votes[choice] = votes.get(choice, 0) + 1
        if not votes:
            raise RuntimeError(f"no protocol supported by all members of group {self.group_id}")
        return max(votes, key=lambda name: votes[name])  # ties: the earliest member's vote

    def validate_member(self, member_id: str, group_instance_id: str | None) -> int:
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def validate_offset_commit(
        self, member_id: str, group_instance_id: str | None, generation_id: int, transactional: bool = False
    ) -> int:
        if self.state == DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and self.state == EMPTY:
            # Admin clients and consumers without group management ("simple" commits).
            return ErrorCode.NONE
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self.validate_member(member_id, group_instance_id)
            if error != ErrorCode.NONE:
                return error
            if generation_id != self.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and self.state != EMPTY:
            # Transactional commits without a member (the group-id form) are accepted.
            return ErrorCode.UNKNOWN_MEMBER_ID
        if self.state == COMPLETING_REBALANCE and not transactional:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def current_members(self) -> list[JoinMember]:
        return [
            JoinMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        ]

    # -- mutations -------------------------------------------------------------
    def transition_to(self, state: str) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(f"group {self.group_id}: illegal transition {self.state} -> {state}")
        self.previous_state, self.state = self.state, state
        self.state_timestamp_ms = int(time.time() * 1000)

    def add(self, member: Member, future: asyncio.Future[JoinResult] | None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        member.join_future = future
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        removed = self.members.pop(member_id, None)
        if removed is not None and removed.group_instance_id is not None:
            self.static_members.pop(removed.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(
        self,
        member: Member,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        future: asyncio.Future[JoinResult] | None,
    ) -> None:
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if member.join_future is not None and member.join_future is not future:
            # A repeated JoinGroup supersedes the parked one; answer the old request
            # (its client has given up on it) rather than leaving it hanging.
            _complete(member.join_future, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        member.join_future = future

    def complete_join(self, member: Member, result: JoinResult) -> bool:
        if member.join_future is None:
            return False
        _complete(member.join_future, result)
        member.join_future = None
        return True

    def complete_sync(self, member: Member, result: SyncResult) -> bool:
        if member.sync_future is None:
            return False
        _complete(member.sync_future, result)
        member.sync_future = None
        return True

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keeps the leader if it rejoined, else picks a member that did; False if none."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """A static member rejoined without its member id: fence the old id, keep its state."""
        old = self.members.pop(old_member_id)
        self.complete_join(old, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
        self.complete_sync(old, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        new = Member(
            new_member_id,
            old.group_instance_id,
            old.client_id,
            old.client_host,
            old.rebalance_timeout_ms,
            old.session_timeout_ms,
            old.protocol_type,
            old.protocols,
            old.assignment,
        )
        self.members[new_member_id] = new
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        self.pending_sync_members.discard(old_member_id)
        return new

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition_to(EMPTY)
        self.pending_sync_members.clear()
