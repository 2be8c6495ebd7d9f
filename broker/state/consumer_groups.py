"""KIP-848 consumer groups: ConsumerGroupHeartbeat's state machine with server-side assignment.

Follows Kafka 4.x's `GroupMetadataManager` (consumer group part), `ConsumerGroup` and
`CurrentAssignmentBuilder`: the group epoch is bumped whenever membership, subscriptions
or the subscribed topics' metadata change; the target assignment is recomputed by the
group's assignor when the group epoch passes the assignment epoch; and each member is
reconciled towards its target one heartbeat at a time, revoking before assigning, so a
partition is never owned by two members at once (partition epochs).

There is no parking here: every heartbeat is answered at once, and timers (session and
rebalance timeouts) fence members that stop heartbeating or never revoke.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from broker.config.group_configs import assignor_names, effective
from broker.state.assignors import ASSIGNORS, MemberSpec, TopicSpec
from broker.state.classic_groups import JoinRequest, JoinResult, SyncResult
from broker.state.cluster import ClusterState
from broker.state.consumer_protocol import (
    PROTOCOL_TYPE,
    MalformedProtocol,
    decode_subscription,
    encode_assignment,
    ids_of,
    names_of,
    version_of,
)
from broker.state.timers import Timers
from protocol.errors import ErrorCode
from protocol.uuids import random_uuid_string

log = logging.getLogger("broker.groups")

GROUP_TYPE = "consumer"
# group states (ConsumerGroupState.toString())
EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE = "Stable"
DEAD = "Dead"
# member states (MemberState)
MEMBER_STABLE = "stable"
UNREVOKED_PARTITIONS = "unrevoked_partitions"
UNRELEASED_PARTITIONS = "unreleased_partitions"

# Kafka resolves a group's regexes at most this often (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS).
REGEX_REFRESH_MIN_INTERVAL_MS = 10_000
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1

Assignment = dict[uuid.UUID, frozenset[int]]


class HeartbeatError(Exception):
    """An error answered to the heartbeat (Kafka's ApiException subclasses)."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def group_not_found(group_id: str) -> HeartbeatError:
    """GroupMetadataManager.group's GroupIdNotFoundException."""
    return HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")


def unknown_member(member_id: str, group_id: str) -> HeartbeatError:
    """The UnknownMemberIdException of a heartbeat from a member the group does not have."""
    return HeartbeatError(
        ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
    )


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a classic-protocol member of a consumer group said in its JoinGroup."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: str = MEMBER_STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # Set for a member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat).
    classic: ClassicMemberMetadata | None = None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MEMBER_STABLE and self.member_epoch == epoch

    def owned(self) -> Iterable[tuple[uuid.UUID, int]]:
        """Partitions whose epoch is this member's: assigned or still being revoked."""
        for assignment in (self.assigned, self.pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    yield topic_id, partition


@dataclass(slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    # None: unchanged since the last heartbeat; else topic id -> partitions owned
    owned: list[tuple[uuid.UUID, list[int]]] | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(slots=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None = None


class ConsumerGroup:
    """One KIP-848 group (Kafka's ConsumerGroup): members, epochs and assignments."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 1  # Kafka 4.4: a new group starts at epoch 1 (ModernGroup)
        self.assignment_epoch = 1
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, Assignment] = {}
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        # topic name -> (topic id, partition count) of every subscribed topic that exists
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        # regex -> the topic names it matched when last resolved (at regexes_resolved_ms,
        # with the cluster's topic_version then)
        self.resolved_regexes: dict[str, frozenset[str]] = {}
        self.regexes_resolved_ms: int | None = None
        self.regexes_topic_version = 0

    # -- queries ------------------------------------------------------------------
    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if all(m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return STABLE
        return RECONCILING

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def subscribed_topic_names(self, members: Iterable[ConsumerMember] | None = None) -> set[str]:
        names: set[str] = set()
        for member in self.members.values() if members is None else members:
            names.update(member.subscribed_topic_names)
            if member.subscribed_topic_regex:
                names.update(self.resolved_regexes.get(member.subscribed_topic_regex, ()))
        return names

    def preferred_server_assignor(self, default: str) -> str:
        """The assignor most members ask for (ties: the first asked), else the default."""
        votes: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor:
                votes[member.server_assignor] = votes.get(member.server_assignor, 0) + 1
        return max(votes, key=lambda name: votes[name]) if votes else default

    # -- mutations ----------------------------------------------------------------
    def put_member(self, member: ConsumerMember) -> None:
        """Adds or replaces a member, moving its partition epochs with it."""
        old = self.members.get(member.member_id)
        if old is not None:
            for key in old.owned():
                if self.partition_epochs.get(key) == old.member_epoch:
                    del self.partition_epochs[key]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        for key in member.owned():
            self.partition_epochs[key] = member.member_epoch

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        for key in member.owned():
            if self.partition_epochs.get(key) == member.member_epoch:
                del self.partition_epochs[key]
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        return member


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None,
    subscribed: frozenset[uuid.UUID],
    subscription_changed: bool = False,
) -> ConsumerMember:
    """Kafka's CurrentAssignmentBuilder (4.1): the member's next state towards its target.

    Partitions to revoke are taken away first, at the member's current epoch; only once
    the member no longer reports them (`owned`) does it move to the target epoch and get
    its new partitions, and a partition another member still owns is held back
    (UNRELEASED_PARTITIONS) until that member lets go. Topics the member no longer
    subscribes to (`subscribed`: its existing topics' ids) are revoked at once.
    """

    def owns_any(assignment: Assignment) -> bool:
        if owned is None:
            return True  # not reported: it may still own them
        return any(p in assignment.get(topic_id, ()) for topic_id, partitions in owned for p in partitions)

    def next_assignment(epoch: int) -> ConsumerMember:
        unreleased = False
        assigned: Assignment = {}
        revoking: Assignment = {}
        adding: Assignment = {}
        for topic_id in set(target) | set(member.assigned):
            wanted = target.get(topic_id, frozenset()) if topic_id in subscribed else frozenset()
            current = member.assigned.get(topic_id, frozenset())
            kept = current & wanted
            pending = member.pending_revocation.get(topic_id, frozenset())
            to_add = {p for p in wanted - kept if partition_epoch(topic_id, p) == -1 or p in pending}
            unreleased = unreleased or len(to_add) < len(wanted - kept)
            if kept:
                assigned[topic_id] = kept
            if current - kept:
                revoking[topic_id] = current - kept
            if to_add:
                adding[topic_id] = frozenset(to_add)
        if revoking and owns_any(revoking):
            return _evolve(member, epoch, UNREVOKED_PARTITIONS, assigned, revoking)
        for topic_id, partitions in adding.items():
            assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
        return _evolve(
            member, target_epoch, UNRELEASED_PARTITIONS if unreleased else MEMBER_STABLE, assigned, {}
        )

    def drop_unsubscribed() -> ConsumerMember:
        """updateCurrentAssignment: the subscription shrank before a new target exists."""
        assigned = {t: ps for t, ps in member.assigned.items() if t in subscribed}
        if assigned == member.assigned:
            return member
        revoking = dict(member.pending_revocation)
        for topic_id, partitions in member.assigned.items():
            if topic_id not in subscribed:
                revoking[topic_id] = revoking.get(topic_id, frozenset()) | partitions
        if owns_any(revoking):
            return dataclasses.replace(
                member, state=UNREVOKED_PARTITIONS, assigned=assigned, pending_revocation=revoking
            )
        return dataclasses.replace(member, assigned=assigned)

    if member.state == MEMBER_STABLE:
        if member.member_epoch != target_epoch:
            return next_assignment(member.member_epoch)
        return drop_unsubscribed() if subscription_changed else member
    if member.state == UNREVOKED_PARTITIONS:
        if owns_any(member.pending_revocation):
            return drop_unsubscribed() if subscription_changed else member
        return next_assignment(min(member.member_epoch + 1, target_epoch))
    return next_assignment(member.member_epoch)  # UNRELEASED_PARTITIONS


def _evolve(
    member: ConsumerMember, epoch: int, state: str, assigned: Assignment, revoking: Assignment
) -> ConsumerMember:
    """The member at `epoch` (its previous epoch becomes the one it had, as Kafka's
    updateMemberEpoch does even when the epoch stays)."""
    return dataclasses.replace(
        member,
        member_epoch=epoch,
        previous_member_epoch=member.member_epoch,
        state=state,
        assigned=assigned,
        pending_revocation=revoking,
    )


def _is_subset(owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(p in assigned.get(topic_id, ()) for topic_id, partitions in owned for p in partitions)


class ConsumerGroupManager:
    """All consumer-protocol groups of the cluster; the GroupCoordinator delegates here."""

    def __init__(
        self,
        cluster: ClusterState,
        timers: Timers,
        downgrade: Callable[[ConsumerGroup, Sequence[ConsumerMember]], bool] = lambda group, leaving: False,
    ) -> None:
        self.cluster = cluster
        self.groups: dict[str, ConsumerGroup] = {}
        self.timers = timers
        # The coordinator's online downgrade: turns the group back into a classic group
        # when only classic members would remain after `leaving` go; True when it did
        # (the members are gone then).
        self.downgrade = downgrade

    # -- configuration ------------------------------------------------------------
    def _config_int(self, key: str) -> int:
        return self.cluster.config.get_int(key)

    def session_timeout_ms(self, group_id: str) -> int:
        """consumer.session.timeout.ms of the group's GROUP configs, else the broker's."""
        return effective(
            self.cluster.group_configs.get(group_id, {}), "consumer.session.timeout.ms", self.cluster.config
        )

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return effective(
            self.cluster.group_configs.get(group_id, {}),
            "consumer.heartbeat.interval.ms",
            self.cluster.config,
        )

    def assignor_names(self) -> list[str]:
        return assignor_names(self.cluster.config.get_str("group.consumer.assignors"))

    # -- ConsumerGroupHeartbeat -----------------------------------------------------
    def validate(self, request: HeartbeatRequest) -> None:
        """throwIfConsumerGroupHeartbeatRequestIsInvalid, in Kafka's order and words."""

        def require(value: str | None, message: str) -> None:
            if value is not None and not value.strip():
                raise HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        epoch = request.member_epoch
        if request.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or epoch > 0 or epoch == -1:
            require(request.member_id, "MemberId can't be empty.")
        require(request.group_id, "GroupId can't be empty.")
        require(request.instance_id, "InstanceId can't be empty.")
        require(request.rack_id, "RackId can't be empty.")
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise HeartbeatError(
                    ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
                )
            if request.owned is None or request.owned:
                raise HeartbeatError(
                    ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."
                )
            if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
                raise HeartbeatError(
                    ErrorCode.INVALID_REQUEST,
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
                )
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and request.instance_id is None:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
        if request.subscribed_topic_names is not None and None in request.subscribed_topic_names:
            # Kafka's parser refuses a null element of a non-nullable array.
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames can't contain null.")
        names = self.assignor_names()
        if request.server_assignor is not None and request.server_assignor not in names:
            raise HeartbeatError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {request.server_assignor} is not supported. "
                f"Supported assignors: {', '.join(names)}.",
            )

    def heartbeat(
        self, request: HeartbeatRequest, now_ms: int | None = None, into: ConsumerGroup | None = None
    ) -> HeartbeatResult:
        """Raises HeartbeatError with the code and message Kafka answers (`request` has
        passed `validate`), leaving the group as it was: Kafka drops the records of a
        failed heartbeat. `into` is a group converted from a classic one, not registered
        yet: the caller adopts it once the heartbeat succeeded."""
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(request)
        return self._heartbeat(request, int(time.monotonic() * 1000) if now_ms is None else now_ms, into)

    def _heartbeat(
        self, request: HeartbeatRequest, now_ms: int, into: ConsumerGroup | None
    ) -> HeartbeatResult:
        joining = request.member_epoch == 0
        group = into or self.groups.get(request.group_id)
        if group is None:
            if not joining:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {request.group_id} not found."
                )
            group = ConsumerGroup(request.group_id)  # registered once the join succeeded
        max_size = self._config_int("group.consumer.max.size")
        if len(group.members) >= max_size and (
            not request.member_id or request.member_id not in group.members
        ):
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {max_size} members.",
            )
        member_id = request.member_id or _new_member_id()  # v0 only: the coordinator names it
        replaced: ConsumerMember | None = None
        if request.instance_id is None:
            member = self._dynamic_member(group, member_id, request, joining)
        else:
            member, replaced = self._static_member(group, member_id, request, joining)
        updated = dataclasses.replace(
            member,
            instance_id=_or(request.instance_id, member.instance_id),
            rack_id=_or(request.rack_id, member.rack_id),
            rebalance_timeout_ms=(
                request.rebalance_timeout_ms
                if request.rebalance_timeout_ms != -1
                else member.rebalance_timeout_ms
            ),
            server_assignor=_or(request.server_assignor, member.server_assignor),
            subscribed_topic_names=(
                tuple(sorted(set(request.subscribed_topic_names)))
                if request.subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            subscribed_topic_regex=_or(request.subscribed_topic_regex, member.subscribed_topic_regex) or None,
            client_id=request.client_id,
            client_host=request.client_host,
            classic=None,
        )
        regex = updated.subscribed_topic_regex
        if regex and regex != member.subscribed_topic_regex:
            if not any(m.subscribed_topic_regex == regex for m in group.members.values()):
                _compile_regex(regex)  # a regex new to the group is checked
        # Every check has passed: only now does the group change.
        if replaced is not None:
            self._replace_static_member(group, replaced, member_id)
        if into is None:
            self.groups.setdefault(group.group_id, group)
        reconciled = self._update_member(group, member, updated, request.owned, now_ms)
        self._schedule_session_timeout(group.group_id, reconciled.member_id)
        full = request.rebalance_timeout_ms != -1 and (
            (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
            and request.owned is not None
        )
        return HeartbeatResult(
            reconciled.member_id,
            reconciled.member_epoch,
            self.heartbeat_interval_ms(group.group_id),
            dict(reconciled.assigned) if joining or full or reconciled.assigned != member.assigned else None,
        )

    def _update_member(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        updated: ConsumerMember,
        owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None,
        now_ms: int,
    ) -> ConsumerMember:
        """Installs `updated` (the member with its request applied), bumps the group
        epoch when subscriptions or the subscribed topics changed, recomputes the target
        when the epoch passed it, and reconciles the member towards it."""
        names_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        regex_changed = updated.subscribed_topic_regex != member.subscribed_topic_regex
        group.put_member(updated)
        bump = group.group_epoch == 0 or names_changed or regex_changed
        if self._refresh_metadata(group, now_ms) or bump:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._compute_target_assignment(group)
        reconciled = reconcile(
            updated,
            group.assignment_epoch,
            group.target.get(updated.member_id, {}),
            group.current_partition_epoch,
            owned,
            self._subscribed_ids(group, updated),
            subscription_changed=names_changed or regex_changed,
        )
        group.put_member(reconciled)
        if reconciled.state == UNREVOKED_PARTITIONS and reconciled.classic is None:
            if reconciled != updated:
                self._schedule_rebalance_timeout(group.group_id, reconciled)
        else:
            self.timers.cancel(("cg-rebalance", group.group_id, reconciled.member_id))
        return reconciled

    def _dynamic_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest, joining: bool
    ) -> ConsumerMember:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise unknown_member(member_id, group.group_id)
            log.info("group %s: member %s joins the consumer group", group.group_id, member_id)
            return ConsumerMember(member_id, previous_member_epoch=-1)
        _check_epoch(member, request.member_epoch, request.owned)
        return member

    def _static_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest, joining: bool
    ) -> tuple[ConsumerMember, ConsumerMember | None]:
        """(the member, the static member it replaces or None), changing nothing yet."""
        instance_id = request.instance_id
        assert instance_id is not None
        existing = group.static_member(instance_id)
        if joining and existing is None:
            member = group.members.get(member_id)
            if member is None:
                log.info("group %s: static member %s (%s) joins", group.group_id, member_id, instance_id)
                member = ConsumerMember(member_id, instance_id=instance_id, previous_member_epoch=-1)
            return member, None
        if joining and existing is not None and existing.member_id != member_id:
            # Between consumer-protocol members the old one must have left (epoch -2); a
            # classic member's instance id is taken over regardless, as Kafka does.
            if existing.classic is None and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise HeartbeatError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the group because "
                    f"the instance id is owned by {existing.member_id} member.",
                )
            replacement = dataclasses.replace(
                existing, member_id=member_id, member_epoch=0, previous_member_epoch=0
            )
            return replacement, existing
        if existing is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise HeartbeatError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{existing.member_id}.",
            )
        _check_epoch(existing, request.member_epoch, request.owned)
        return existing, None

    def _replace_static_member(self, group: ConsumerGroup, old: ConsumerMember, member_id: str) -> None:
        """A static member restarted under a new member id: the new one takes over the old
        one's partitions and target (at epoch 0), so nobody else is reassigned."""
        self._cancel_member_timers(group.group_id, old.member_id)
        target = group.target.get(old.member_id, {})
        group.remove_member(old.member_id)
        group.target[member_id] = target
        log.info(
            "group %s: static member with instance id %s re-joins; member %s replaces %s",
            group.group_id,
            old.instance_id,
            member_id,
            old.member_id,
        )

    def _leave(self, request: HeartbeatRequest) -> HeartbeatResult:
        group = self.groups.get(request.group_id)
        if group is None:
            raise group_not_found(request.group_id)
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise unknown_member(request.member_id, group.group_id)
            log.info("group %s: member %s left the consumer group", group.group_id, member.member_id)
            self.fence_member(group, member)
            return HeartbeatResult(request.member_id, request.member_epoch, 0)
        member = group.static_member(request.instance_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown."
            )
        if member.member_id != request.member_id:
            raise HeartbeatError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {request.member_id} with instance id {request.instance_id} was fenced by "
                f"member {member.member_id}.",
            )
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # Gone for a restart: it keeps its partitions (nobody else gets them) until it
            # rejoins or its session times out; no new epoch.
            log.info("group %s: static member %s temporarily left", group.group_id, member.member_id)
            group.put_member(
                dataclasses.replace(
                    member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={}
                )
            )
            return HeartbeatResult(member.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, 0)
        self.fence_member(group, member)
        return HeartbeatResult(request.member_id, request.member_epoch, 0)

    def fence_member(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self.fence_members(group, [member])

    def fence_members(self, group: ConsumerGroup, members: Sequence[ConsumerMember]) -> None:
        """Removes members (left, expired or fenced) with one group epoch bump, so the
        next heartbeat computes a target without them; or downgrades the group when only
        classic members would remain."""
        if not members or self.downgrade(group, members):
            return
        for member in members:
            self._cancel_member_timers(group.group_id, member.member_id)
            group.remove_member(member.member_id)
        group.group_epoch += 1
        if not group.members:  # consumerGroupFenceMembers: the empty target is at that epoch
            group.assignment_epoch = group.group_epoch
        group.subscription_metadata = self._subscription_metadata(group)

    # -- classic-protocol members (KIP-848's online migration) ----------------------------
    def classic_join(self, group: ConsumerGroup, join: JoinRequest, now_ms: int | None = None) -> JoinResult:
        """classicGroupJoinToConsumerGroup: a JoinGroup answered at once; the broker's
        assignor decides, the member's generation is its member epoch, and what it must
        give up it learns from SyncGroup (and Heartbeat's REBALANCE_IN_PROGRESS)."""
        member_id = join.member_id or _new_member_id()
        try:
            return self._classic_join(group, join, member_id, now_ms)
        except HeartbeatError as error:
            return JoinResult(
                error.code, member_id if error.code == ErrorCode.MEMBER_ID_REQUIRED else join.member_id
            )

    def _classic_join(
        self, group: ConsumerGroup, join: JoinRequest, member_id: str, now_ms: int | None
    ) -> JoinResult:
        max_size = self._config_int("group.consumer.max.size")
        if len(group.members) >= max_size and member_id not in group.members:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        if not self._supports_classic_protocols(
            group, join.protocol_type, [name for name, _ in join.protocols]
        ):
            raise HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
        if join.require_known_member_id and not join.member_id and join.group_instance_id is None:
            raise HeartbeatError(ErrorCode.MEMBER_ID_REQUIRED, "")
        try:
            subscription = decode_subscription(join.protocols[0][1])
        except MalformedProtocol:  # Kafka's IllegalStateException: an unknown server error
            raise HeartbeatError(ErrorCode.UNKNOWN_SERVER_ERROR, "") from None
        replaced: ConsumerMember | None = None
        if join.group_instance_id is None:
            member = group.members.get(member_id) or ConsumerMember(member_id, previous_member_epoch=-1)
        else:
            member, replaced = self._classic_static_member(group, member_id, join)
        # Every check has passed: only now does the group change.
        if replaced is not None:
            self._replace_static_member(group, replaced, member_id)
        updated = dataclasses.replace(
            member,
            instance_id=_or(join.group_instance_id, member.instance_id),
            rack_id=_or(subscription.rack_id, member.rack_id),
            rebalance_timeout_ms=join.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            subscribed_topic_regex=None,
            client_id=join.client_id,
            client_host=join.client_host,
            classic=ClassicMemberMetadata(join.session_timeout_ms, tuple(join.protocols)),
        )
        owned = [(topic_id, sorted(ps)) for topic_id, ps in ids_of(self.cluster, subscription.owned).items()]
        now = int(time.monotonic() * 1000) if now_ms is None else now_ms
        reconciled = self._update_member(group, member, updated, owned, now)
        self.timers.cancel(("cg-join", group.group_id, member_id))
        self._schedule_session_timeout(group.group_id, member_id, join.session_timeout_ms)
        self.timers.schedule(
            ("cg-sync", group.group_id, member_id),
            join.rebalance_timeout_ms,
            lambda: self._fence_if_present(
                group.group_id, member_id, "did not sync within the rebalance timeout"
            ),
        )
        return JoinResult(
            ErrorCode.NONE, member_id, reconciled.member_epoch, PROTOCOL_TYPE, join.protocols[0][0]
        )

    def _classic_static_member(
        self, group: ConsumerGroup, member_id: str, join: JoinRequest
    ) -> tuple[ConsumerMember, ConsumerMember | None]:
        """(the member, the static member it replaces or None), changing nothing yet: a
        classic static member joining without its id replaces the old one, whatever it is."""
        instance_id = join.group_instance_id
        assert instance_id is not None
        existing = group.static_member(instance_id)
        if not join.member_id:
            if existing is None:
                return ConsumerMember(member_id, instance_id=instance_id, previous_member_epoch=-1), None
            return dataclasses.replace(
                existing, member_id=member_id, member_epoch=0, previous_member_epoch=0
            ), existing
        if existing is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, "")
        if existing.member_id != member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, "")
        return existing, None

    def _supports_classic_protocols(
        self, group: ConsumerGroup, protocol_type: str, names: Sequence[str]
    ) -> bool:
        """ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and one
        protocol every classic member already in the group supports."""
        if protocol_type != PROTOCOL_TYPE or not names:
            return False
        classic = [m.classic for m in group.members.values() if m.classic is not None]
        return not classic or any(all(name in {n for n, _ in c.protocols} for c in classic) for name in names)

    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerMember:
        """validateConsumerGroupMember plus throwIfMemberDoesNotUseClassicProtocol."""
        member = group.static_member(instance_id) if instance_id is not None else group.members.get(member_id)
        if member is None or member.classic is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, "")
        if member.member_id != member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, "")
        return member

    def classic_sync(
        self,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> SyncResult:
        """SyncGroup of a classic member: its assigned partitions (not those it is still
        to revoke), encoded at its protocol version; REBALANCE_IN_PROGRESS when a newer
        group epoch needs it to join again first."""
        try:
            member = self._classic_member(group, member_id, instance_id)
            if member.member_epoch != generation_id:
                raise HeartbeatError(ErrorCode.ILLEGAL_GENERATION, "")
            assert member.classic is not None
            name, metadata = member.classic.protocols[0]
            if (protocol_type is not None and protocol_type != PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != name
            ):
                raise HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
            if group.group_epoch > member.member_epoch and member.state != UNREVOKED_PARTITIONS:
                self._schedule_join_timeout(group.group_id, member)
                raise HeartbeatError(ErrorCode.REBALANCE_IN_PROGRESS, "")
        except HeartbeatError as error:
            return SyncResult(error.code)
        self.timers.cancel(("cg-sync", group.group_id, member.member_id))
        self._schedule_session_timeout(group.group_id, member.member_id, member.classic.session_timeout_ms)
        assignment = encode_assignment(names_of(self.cluster, member.assigned), version_of(metadata))
        return SyncResult(ErrorCode.NONE, PROTOCOL_TYPE, protocol_name or name, assignment)

    def classic_heartbeat(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int
    ) -> int:
        """Heartbeat of a classic member: REBALANCE_IN_PROGRESS while it is behind the
        group epoch, has partitions to give up, or waits for partitions now released;
        it must then join again within its rebalance timeout or be fenced."""
        try:
            member = self._classic_member(group, member_id, instance_id)
        except HeartbeatError as error:
            return error.code
        if member.member_epoch != generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        assert member.classic is not None
        self._schedule_session_timeout(group.group_id, member.member_id, member.classic.session_timeout_ms)
        if (
            member.member_epoch < group.group_epoch
            or member.state == UNREVOKED_PARTITIONS
            or (member.state == UNRELEASED_PARTITIONS and not self._waiting_on_unreleased(group, member))
        ):
            self._schedule_join_timeout(group.group_id, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _schedule_join_timeout(self, group_id: str, member: ConsumerMember) -> None:
        member_id = member.member_id
        self.timers.schedule_if_absent(
            ("cg-join", group_id, member_id),
            member.rebalance_timeout_ms,
            lambda: self._fence_if_present(group_id, member_id, "did not join within the rebalance timeout"),
        )

    @staticmethod
    def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
        target = group.target.get(member.member_id, {})
        return any(
            p not in member.assigned.get(topic_id, ()) and group.current_partition_epoch(topic_id, p) != -1
            for topic_id, partitions in target.items()
            for p in partitions
        )

    def classic_leave(self, group: ConsumerGroup, members: Sequence[tuple[str, str | None]]) -> list[int]:
        """LeaveGroup in a consumer group (classic members, or an admin removing any
        member): one error per identity; those found leave together, one epoch bump."""
        errors: list[int] = []
        leaving: list[ConsumerMember] = []
        for member_id, instance_id in members:
            found = (
                group.static_member(instance_id) if instance_id is not None else group.members.get(member_id)
            )
            if found is None:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
            elif instance_id is not None and member_id and found.member_id != member_id:
                errors.append(ErrorCode.FENCED_INSTANCE_ID)
            else:
                errors.append(ErrorCode.NONE)
                if found not in leaving:
                    leaving.append(found)
        self.fence_members(group, leaving)
        return errors

    # -- metadata and assignment --------------------------------------------------------
    def _refresh_metadata(self, group: ConsumerGroup, now_ms: int) -> bool:
        """Resolves the group's regexes when Kafka would, and recomputes the subscribed
        topics' metadata; True when either changed (the group epoch is bumped)."""
        regexes = {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}
        changed = False
        if regexes and self._regexes_due(group, regexes, now_ms):
            resolved = {
                regex: frozenset(
                    name for name in self.cluster.topics if _compile_regex(regex).fullmatch(name)
                )
                for regex in regexes
            }
            changed = any(resolved[r] != group.resolved_regexes.get(r) for r in regexes)
            group.resolved_regexes = resolved
            group.regexes_resolved_ms = now_ms
            group.regexes_topic_version = self.cluster.topic_version
        group.resolved_regexes = {r: t for r, t in group.resolved_regexes.items() if r in regexes}
        metadata = self._subscription_metadata(group)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            changed = True
        return changed

    def _regexes_due(self, group: ConsumerGroup, regexes: set[str], now_ms: int) -> bool:
        """maybeUpdateRegularExpressions' gating: at most one resolution per 10 s, and
        one is due for a regex not yet resolved, after topics were created, or every
        group.consumer.regex.refresh.interval.ms."""
        last = group.regexes_resolved_ms
        if last is not None and now_ms <= last + REGEX_REFRESH_MIN_INTERVAL_MS:
            return False
        return (
            last is None
            or not regexes <= set(group.resolved_regexes)
            or group.regexes_topic_version < self.cluster.topic_version
            or now_ms > last + self._config_int("group.consumer.regex.refresh.interval.ms")
        )

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int]]:
        return {
            name: (topic.topic_id, len(topic.partitions))
            for name in sorted(group.subscribed_topic_names())
            if (topic := self.cluster.topics.get(name)) is not None
        }

    def _subscribed_ids(self, group: ConsumerGroup, member: ConsumerMember) -> frozenset[uuid.UUID]:
        """Ids of the existing topics the member subscribes to, by name or regex."""
        return frozenset(
            group.subscription_metadata[name][0]
            for name in group.subscribed_topic_names([member])
            if name in group.subscription_metadata
        )

    def _compute_target_assignment(self, group: ConsumerGroup) -> None:
        names = self.assignor_names()
        assignor = ASSIGNORS[group.preferred_server_assignor(names[0])]
        topics = {
            topic_id: TopicSpec(topic_id, name, partitions)
            for name, (topic_id, partitions) in group.subscription_metadata.items()
        }
        specs = [
            MemberSpec(
                member.member_id,
                self._subscribed_ids(group, member),
                group.target.get(member.member_id, {}),
                member.instance_id,
                member.rack_id,
            )
            for member in group.members.values()
        ]
        computed = assignor.assign(specs, topics)
        group.target = {
            member_id: {topic_id: frozenset(ps) for topic_id, ps in assignment.items() if ps}
            for member_id, assignment in computed.items()
        }
        group.assignment_epoch = group.group_epoch

    # -- timers ------------------------------------------------------------------------
    def _schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
        """A consumer-protocol member's session is the group's; a classic member's the
        one its JoinGroup asked for."""
        self.timers.schedule(
            ("cg-session", group_id, member_id),
            self.session_timeout_ms(group_id) if timeout_ms is None else timeout_ms,
            lambda: self._fence_if_present(group_id, member_id, "its session timed out"),
        )

    def _fence_if_present(self, group_id: str, member_id: str, why: str) -> None:
        """A timer's end: the member is fenced, if the group and member still exist."""
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is not None and member is not None:
            log.info("group %s: member %s fenced: %s", group_id, member_id, why)
            self.fence_member(group, member)

    def _schedule_rebalance_timeout(self, group_id: str, member: ConsumerMember) -> None:
        epoch = member.member_epoch
        member_id = member.member_id

        def expire() -> None:
            group = self.groups.get(group_id)
            current = group.members.get(member_id) if group is not None else None
            if group is not None and current is not None and current.member_epoch == epoch:
                log.info(
                    "group %s: member %s fenced: it did not revoke within %d ms",
                    group_id,
                    member_id,
                    member.rebalance_timeout_ms,
                )
                self.fence_member(group, current)

        key = ("cg-rebalance", group_id, member_id)
        self.timers.schedule(key, member.rebalance_timeout_ms, expire)

    def _cancel_member_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("cg-session", "cg-rebalance", "cg-sync", "cg-join"):
            self.timers.cancel((kind, group_id, member_id))

    # -- offsets ----------------------------------------------------------------------
    def validate_offset_commit(
        self, group: ConsumerGroup, member_id: str, member_epoch: int, transactional: bool, api_version: int
    ) -> int:
        """ConsumerGroup.validateOffsetCommit: a member commits with its current epoch
        (OffsetCommit v9+); epoch -1 is an admin's or a manual-assignment commit,
        accepted while the group has no members."""
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE
        if transactional and member_epoch == -1 and not member_id:
            return ErrorCode.NONE  # a producer committing for the group without its member details
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.classic is not None:  # the classic protocol's generation is the member epoch
            return ErrorCode.NONE if member_epoch == member.member_epoch else ErrorCode.ILLEGAL_GENERATION
        if not transactional and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.member_epoch:
            # TxnOffsetCommit below v6 cannot say STALE_MEMBER_EPOCH (Kafka maps it)
            return (
                ErrorCode.ILLEGAL_GENERATION
                if transactional and api_version < 6
                else ErrorCode.STALE_MEMBER_EPOCH
            )
        return ErrorCode.NONE

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str, member_epoch: int) -> int:
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return (
                ErrorCode.ILLEGAL_GENERATION if member.classic is not None else ErrorCode.STALE_MEMBER_EPOCH
            )
        return ErrorCode.NONE

    # -- admin ------------------------------------------------------------------------
    def adopt(self, group: ConsumerGroup) -> None:
        """Takes over a group converted from a classic one (after its first heartbeat):
        its classic members' sessions run on from now, with their JoinGroup's timeouts."""
        self.groups[group.group_id] = group
        for member in group.members.values():
            if member.classic is not None:
                self._schedule_session_timeout(
                    group.group_id, member.member_id, member.classic.session_timeout_ms
                )

    def delete(self, group_id: str) -> None:
        """The group goes (deleted, or converted to a classic group), with its timers."""
        del self.groups[group_id]
        self.timers.cancel_group(group_id)

    def assignment_rows(
        self, assignment: Mapping[uuid.UUID, frozenset[int]]
    ) -> list[tuple[uuid.UUID, str, list[int]]]:
        """(topic id, name, sorted partitions) of an assignment's topics that still exist."""
        rows = []
        for topic_id, partitions in assignment.items():
            topic = self.cluster.topics_by_id.get(topic_id)
            if topic is not None:
                rows.append((topic_id, topic.name, sorted(partitions)))
        return sorted(rows, key=lambda row: row[1])

    def to_dict(self, group: ConsumerGroup) -> dict[str, Any]:
        """A JSON-ready description (the HTTP control plane's /v1/groups/{id})."""

        def by_name(assignment: Mapping[uuid.UUID, frozenset[int]]) -> dict[str, list[int]]:
            return {name: partitions for _, name, partitions in self.assignment_rows(assignment)}

        return {
            "group_id": group.group_id,
            "type": GROUP_TYPE,
            "state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor": group.preferred_server_assignor(self.assignor_names()[0]),
            "members": [
                {
                    "member_id": m.member_id,
                    "instance_id": m.instance_id,
                    "rack_id": m.rack_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_epoch": m.member_epoch,
                    "state": m.state,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "subscribed_topic_regex": m.subscribed_topic_regex,
                    "assignment": by_name(m.assigned),
                    "partitions_pending_revocation": by_name(m.pending_revocation),
                    "target_assignment": by_name(group.target.get(m.member_id, {})),
                }
                for m in group.members.values()
            ],
        }


def _new_member_id() -> str:
    """Kafka's Uuid.randomUuid().toString()."""
    return random_uuid_string()


def _or(value: str | None, current: str | None) -> str | None:
    """A heartbeat field's "null: unchanged since the last heartbeat"."""
    return current if value is None else value


def _check_epoch(
    member: ConsumerMember, received: int, owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None
) -> None:
    """throwIfConsumerGroupMemberEpochIsInvalid: a newer epoch than the coordinator's, or
    an older one that is not the previous epoch with a subset of the assignment, is
    fenced; epoch 0 is a fenced member rejoining under its own id (KIP-1082), accepted."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one known by "
            f"the group coordinator ({member.member_epoch}). The member must abandon all its partitions "
            "and rejoin.",
        )
    if received < member.member_epoch and (
        received != member.previous_member_epoch or not _is_subset(owned, member.assigned)
    ):
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received}) than the one known by "
            f"the group coordinator ({member.member_epoch}). The member must abandon all its partitions "
            "and rejoin.",
        )


def _compile_regex(regex: str) -> re.Pattern[str]:
    """The member's SubscribedTopicRegex (RE2J syntax: Python's `re` agrees on what
    clients send; backreferences and lookarounds, which RE2 refuses, are refused too)."""
    compiled = _compiled(regex)
    if isinstance(compiled, str):
        raise HeartbeatError(
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {compiled}.",
        )
    return compiled


@functools.lru_cache(maxsize=1024)
def _compiled(regex: str) -> re.Pattern[str] | str:
    """The compiled regex, or why it is refused."""
    if re.search(r"\\[1-9]|\(\?[=!<]|\(\?P=", regex):
        return "invalid or unsupported Perl syntax"
    try:
        return re.compile(regex)
    except re.error as exc:
        return str(exc)
