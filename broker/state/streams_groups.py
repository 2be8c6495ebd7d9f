"""KIP-1071 streams groups: StreamsGroupHeartbeat's membership, the topology the group's
first member declares, the internal topics the broker creates for it, and server-side task
assignment with reconciliation.

Follows Kafka's `GroupMetadataManager` (streams group part), `StreamsGroup`,
`InternalTopicManager`, `StickyTaskAssignor` and `CurrentAssignmentBuilder`: the group
epoch is bumped whenever a member joins, leaves or changes, the topology is validated for
the first time, or the topics it reads change; the target assignment is recomputed when
the group epoch passes the assignment epoch (no more often than the assignment interval,
and not before the initial rebalance delay of a new group); and each member is reconciled
towards its target one heartbeat at a time, revoking before assigning, so an active task
is never processed by two members at once.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from broker.config.group_configs import group_config
from broker.state.cluster import ClusterState
from broker.state.consumer_groups import HeartbeatError, group_not_found, unknown_member
from broker.state.timers import Timers
from protocol.errors import ErrorCode

log = logging.getLogger("broker.groups")

GROUP_TYPE = "streams"
PROTOCOL_TYPE = "streams"  # ListGroups' protocol type of a streams group
ASSIGNOR_NAME = "sticky"
# StreamsGroup.StreamsGroupState
EMPTY, NOT_READY, ASSIGNING, RECONCILING, STABLE, DEAD = (
    "Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead"
)  # fmt: skip
# streams MemberState
MEMBER_STABLE, UNREVOKED_TASKS, UNRELEASED_TASKS = "stable", "unrevoked_tasks", "unreleased_tasks"
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
# StreamsGroupHeartbeatResponse.Status
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 3, 4, 5
STANDBY_REPLICAS = "num.standby.replicas"  # the assignment config the sticky assignor reads

Tasks = dict[str, frozenset[int]]  # subtopology id -> partitions
TaskOffsets = dict[str, dict[int, int]]  # subtopology id -> partition -> offset
Status = tuple[int, str]


class TopologyError(Exception):
    """InternalTopicManager's TopicConfigurationException: the topology cannot run yet."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int = 0  # 0: decided by the broker
    replication_factor: int = 0  # 0: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    # each group: indexes into source_topics and into repartition_source_topics
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]

    def required_topics(self) -> set[str]:
        """StreamsTopology.requiredTopics: what the group reads and writes internally."""
        names: set[str] = set()
        for sub in self.subtopologies:
            names.update(sub.source_topics)
            names.update(t.name for t in sub.repartition_source_topics)
            names.update(t.name for t in sub.state_changelog_topics)
        return names


@dataclass(slots=True)
class ConfiguredTopology:
    """A topology against the cluster's topics: tasks per subtopology, or why not yet."""

    epoch: int
    tasks: dict[str, int] | None  # subtopology -> number of tasks; None when unconfigurable
    partitions: dict[str, int] = field(default_factory=dict)  # internal topic -> partitions
    to_create: dict[str, TopicInfo] = field(default_factory=dict)
    error: TopologyError | None = None

    @property
    def ready(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class StreamsMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: str = MEMBER_STABLE
    # active tasks with the epoch each was assigned in (TasksTupleWithEpochs)
    active: dict[str, dict[int, int]] = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)
    revoking_active: dict[str, dict[int, int]] = field(default_factory=dict)
    revoking_standby: Tasks = field(default_factory=dict)
    revoking_warmup: Tasks = field(default_factory=dict)

    def assigned(self) -> tuple[Tasks, Tasks, Tasks]:
        return _keys(self.active), self.standby, self.warmup

    def owns_anything(self) -> bool:
        return any((self.active, self.standby, self.warmup, self.revoking_active))


@dataclass(frozen=True, slots=True)
class Target:
    active: Tasks
    standby: Tasks
    warmup: Tasks


EMPTY_TARGET = Target({}, {}, {})


@dataclass(slots=True)
class StreamsHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active_tasks: Tasks | None = None
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] | None = None
    shutdown_application: bool = False
    task_offsets: list[tuple[str, int, int]] | None = None  # (subtopology, partition, offset)
    task_end_offsets: list[tuple[str, int, int]] | None = None
    client_id: str = ""
    client_host: str = ""
    uses_source_regex: bool = False
    changelog_with_partitions: tuple[str, int] | None = None


@dataclass(slots=True)
class StreamsHeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    status: list[Status]
    assignment: Target | None = None  # None: unchanged, not sent
    endpoint_information_epoch: int = 0
    endpoints: list[tuple[tuple[str, int], Tasks, Tasks]] | None = (
        None  # per member: endpoint, active, standby
    )
    topics_to_create: dict[str, TopicInfo] = field(default_factory=dict)
    left: bool = False  # a leave's answer: member id, epoch and status only
    task_offset_interval_ms: int = 0
    acceptable_recovery_lag: int = -1


class StreamsGroup:
    """One streams group (Kafka's StreamsGroup)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.members: dict[str, StreamsMember] = {}
        # Kafka 4.4 starts a new group at epoch 1 (TargetAssignmentMetadata.INITIAL)
        self.group_epoch = 1
        self.assignment_epoch = 1
        self.assignment_time_ms = 0
        self.target: dict[str, Target] = {}
        self.topology: Topology | None = None
        self.configured: ConfiguredTopology | None = None
        self.metadata_hash: tuple[Any, ...] = ()
        self.validated_topology_epoch = -1
        self.assignment_configs: dict[str, str] = {}
        self.endpoint_information_epoch = 0
        self.shutdown_requested_by: str | None = None
        # what each member last reported of its tasks' changelog offsets (MemberTaskOffsets)
        self.task_offsets: dict[str, tuple[TaskOffsets, TaskOffsets]] = {}

    @property
    def state(self) -> str:
        """StreamsGroup.maybeUpdateGroupState."""
        if not self.members:
            return EMPTY
        if self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            return NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not _reconciled(m, self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE

    def active_owner(self, subtopology: str, partition: int) -> str | None:
        """The process currently holding an active task (assigned or still revoking)."""
        for member in self.members.values():
            if partition in member.active.get(subtopology, {}) or partition in member.revoking_active.get(
                subtopology, {}
            ):
                return member.process_id
        return None

    def static_member(self, instance_id: str) -> StreamsMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def holders(self, subtopology: str, partition: int, kind: str) -> set[str]:
        """The processes holding a standby or warm-up task."""
        return {
            m.process_id
            for m in self.members.values()
            if partition in getattr(m, kind).get(subtopology, frozenset())
            or partition in getattr(m, f"revoking_{kind}").get(subtopology, frozenset())
        }


def _keys(tasks: Mapping[str, Mapping[int, int]]) -> Tasks:
    return {sub: frozenset(parts) for sub, parts in tasks.items()}


def _reconciled(member: StreamsMember, epoch: int) -> bool:
    return member.state == MEMBER_STABLE and member.member_epoch == epoch


class StreamsGroupManager:
    """Every streams group of the cluster."""

    def __init__(self, cluster: ClusterState, timers: Timers) -> None:
        self.cluster = cluster
        self.timers = timers
        self.groups: dict[str, StreamsGroup] = {}

    # -- configuration --------------------------------------------------------------
    def config_int(self, group_id: str, name: str) -> int:
        """A streams group config in force: the group's own, else the broker's."""
        return int(group_config(self.cluster.group_configs.get(group_id, {}), name, self.cluster.config))

    def _assignment_configs(self, group_id: str) -> dict[str, str]:
        return {STANDBY_REPLICAS: str(self.config_int(group_id, "streams.num.standby.replicas"))}

    # -- validation -----------------------------------------------------------------
    @staticmethod
    def validate(request: StreamsHeartbeat) -> None:
        """GroupCoordinatorService's checks, in its order and words."""
        if request.uses_source_regex:
            raise HeartbeatError(
                ErrorCode.INVALID_REQUEST, "Regular expressions for source topics are not supported yet."
            )
        if not request.member_id.strip():
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if not request.group_id.strip():
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if request.instance_id is not None and not request.instance_id.strip():
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
        if request.rack_id is not None and not request.rack_id.strip():
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        epoch = request.member_epoch
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise HeartbeatError(
                    ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
                )
            for kind, tasks in (
                ("ActiveTasks", request.active_tasks),
                ("StandbyTasks", request.standby_tasks),
                ("WarmupTasks", request.warmup_tasks),
            ):
                if tasks:
                    raise HeartbeatError(
                        ErrorCode.INVALID_REQUEST, f"{kind} must be empty when (re-)joining."
                    )
            if request.topology is None:
                raise HeartbeatError(
                    ErrorCode.INVALID_REQUEST, "Topology must be non-null when (re-)joining."
                )
            if request.changelog_with_partitions is not None:
                name, partitions = request.changelog_with_partitions
                raise HeartbeatError(
                    ErrorCode.STREAMS_INVALID_TOPOLOGY,
                    f"Changelog topic {name} must have an undefined partition count, but it is set to "
                    f"{partitions}.",
                )
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if request.instance_id is None:
                raise HeartbeatError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise HeartbeatError(
                ErrorCode.INVALID_REQUEST, f"MemberEpoch is {epoch}, but must be greater than or equal to -2."
            )
        kinds = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
        if any(k is not None for k in kinds) and any(k is None for k in kinds):
            raise HeartbeatError(
                ErrorCode.INVALID_REQUEST, "If one task-type is non-null, all must be non-null."
            )
        if epoch != 0 and request.topology is not None:
            raise HeartbeatError(
                ErrorCode.INVALID_REQUEST, "Topology can only be provided when (re-)joining."
            )

    # -- StreamsGroupHeartbeat ------------------------------------------------------
    def heartbeat(self, request: StreamsHeartbeat) -> StreamsHeartbeatResult:
        """Raises HeartbeatError with Kafka's code and message, leaving the group as it was."""
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(request)
        now_ms = int(time.time() * 1000)
        joining = request.member_epoch == 0
        group = self.groups.get(request.group_id)
        if group is None:
            if not joining:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {request.group_id} not found."
                )
            group = StreamsGroup(request.group_id)
        if joining:
            self._check_room(group, request)
        member, replaced = (
            self._dynamic_member(group, request, joining)
            if request.instance_id is None
            else self._static_member(group, request, joining)
        )
        status: list[Status] = []

        # 1. The member, as it now says it is.
        updated = _copy(member)
        updated.instance_id = request.instance_id if request.instance_id is not None else updated.instance_id
        updated.rack_id = request.rack_id if request.rack_id is not None else updated.rack_id
        if request.rebalance_timeout_ms != -1:
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms
        if request.topology is not None:
            updated.topology_epoch = request.topology.epoch
        updated.client_id, updated.client_host = request.client_id, request.client_host
        if request.process_id is not None:
            updated.process_id = request.process_id
        if request.client_tags is not None:
            updated.client_tags = dict(request.client_tags)
        if request.user_endpoint is not None:
            updated.user_endpoint = request.user_endpoint
        bump = (replaced is None and request.member_id not in group.members) or _metadata(
            updated
        ) != _metadata(member)

        reported = group.task_offsets.get(request.member_id, ({}, {}))
        task_offsets = (
            _task_offsets(request.task_offsets, reported[0]),
            _task_offsets(request.task_end_offsets, reported[1]),
        )

        # 2. The topology: the first member's, then the same one.
        topology = self._topology(group, request)
        if group.topology is not None and updated.topology_epoch < group.topology.epoch:
            status.append(
                (
                    STALE_TOPOLOGY,
                    f"The member's topology epoch {updated.topology_epoch} is behind the group's "
                    f"topology epoch {group.topology.epoch}.",
                )
            )

        # 3. Its internal topics and tasks, against the cluster's topics.
        metadata_hash = self._metadata_hash(topology)
        reconfigure = group.topology is None
        if metadata_hash != group.metadata_hash:
            bump = reconfigure = True
        configured = group.configured
        if reconfigure or configured is None:
            configured = configure(topology, self.cluster)
        validated_epoch = group.validated_topology_epoch
        if configured.ready:
            validated_epoch = topology.epoch
            assert configured.tasks is not None
            for tasks in (request.active_tasks, request.standby_tasks, request.warmup_tasks):
                _check_tasks(configured.tasks, tasks)
        if validated_epoch != group.validated_topology_epoch:
            bump = True
        assignment_configs = self._assignment_configs(group.group_id)
        if assignment_configs != group.assignment_configs:
            bump = True

        # Every check has passed: only now does the group change.
        was_empty = not group.members
        self.groups[group.group_id] = group
        if request.task_offsets is not None or request.task_end_offsets is not None:
            group.task_offsets[request.member_id] = task_offsets
        if replaced is not None:  # a static member back under a new member id takes over
            group.members.pop(replaced.member_id, None)
            group.target[member.member_id] = group.target.pop(replaced.member_id, EMPTY_TARGET)
            self._cancel_timers(group.group_id, replaced.member_id)
        group.topology, group.configured, group.metadata_hash = topology, configured, metadata_hash
        if bump:
            group.group_epoch += 1
            group.validated_topology_epoch = validated_epoch
            group.assignment_configs = assignment_configs
        group.members[updated.member_id] = updated
        if was_empty:
            delay = self.config_int(group.group_id, "streams.initial.rebalance.delay.ms")
            if delay > 0:
                self.timers.schedule_if_absent(
                    self._initial_key(group.group_id), delay, lambda: self._delayed_assignment(group.group_id)
                )

        # 4. The target assignment, 5. the member reconciled towards it.
        target_epoch, target = self._target(group, updated, status, now_ms)
        reconciled = self._reconcile(group, updated, target_epoch, target, request)
        group.members[reconciled.member_id] = reconciled
        self._schedule_session_timeout(group.group_id, reconciled.member_id)
        if request.shutdown_application and group.shutdown_requested_by is None:
            group.shutdown_requested_by = reconciled.member_id

        result = StreamsHeartbeatResult(
            reconciled.member_id,
            reconciled.member_epoch,
            self.config_int(group.group_id, "streams.heartbeat.interval.ms"),
            status,
            task_offset_interval_ms=self.config_int(group.group_id, "streams.task.offset.interval.ms"),
            acceptable_recovery_lag=self.config_int(group.group_id, "streams.acceptable.recovery.lag"),
        )
        if (
            joining
            or reconciled.active != member.active
            or reconciled.standby != member.standby
            or (reconciled.warmup != member.warmup)
        ):
            result.assignment = Target(*reconciled.assigned())
            if reconciled.user_endpoint is not None:
                group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != request.endpoint_information_epoch:
            result.endpoints = self._endpoints(group, reconciled)
        result.endpoint_information_epoch = group.endpoint_information_epoch
        if configured.error is not None:
            result.topics_to_create = dict(configured.to_create)
            status.append((configured.error.status, configured.error.message))
        if group.shutdown_requested_by is not None:
            status.append(
                (
                    SHUTDOWN_APPLICATION,
                    f"Streams group member {group.shutdown_requested_by} encountered a fatal error and "
                    "requested a shutdown for the entire application.",
                )
            )
        return result

    def _check_room(self, group: StreamsGroup, request: StreamsHeartbeat) -> None:
        """throwIfStreamsGroupIsFull: a static member's instance id or a known member id
        always has room."""
        if request.instance_id is not None and group.static_member(request.instance_id) is not None:
            return
        max_size = self.cluster.config.get_int("group.streams.max.size")
        if len(group.members) >= max_size and request.member_id not in group.members:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The streams group has reached its maximum capacity of {max_size} members.",
            )

    @staticmethod
    def _dynamic_member(
        group: StreamsGroup, request: StreamsHeartbeat, joining: bool
    ) -> tuple[StreamsMember, StreamsMember | None]:
        member = group.members.get(request.member_id)
        if member is None:
            if not joining:
                raise unknown_member(request.member_id, request.group_id)
            return StreamsMember(request.member_id), None
        _check_member_epoch(member, request)
        return member, None

    @staticmethod
    def _static_member(
        group: StreamsGroup, request: StreamsHeartbeat, joining: bool
    ) -> tuple[StreamsMember, StreamsMember | None]:
        """getOrMaybeCreateStaticStreamsGroupMember: (the member, the static member it
        replaces or None), changing nothing yet. A static member that left with epoch -2
        may come back under a new member id and keep its tasks."""
        instance_id = request.instance_id
        assert instance_id is not None
        existing = group.static_member(instance_id)
        if joining:
            if existing is None:
                return group.members.get(request.member_id) or StreamsMember(request.member_id), None
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise HeartbeatError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {request.member_id} with instance id {instance_id} cannot join the group "
                    f"because the instance id is owned by {existing.member_id} member.",
                )
            return replace(
                existing, member_id=request.member_id, member_epoch=0, previous_member_epoch=0
            ), existing
        if existing is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        _check_not_fenced(existing, request)
        _check_member_epoch(existing, request)
        return existing, None

    def _topology(self, group: StreamsGroup, request: StreamsHeartbeat) -> Topology:
        """maybeUpdateTopology: a group's topology cannot change (Kafka does not support it yet)."""
        given = request.topology
        if given is None:
            assert group.topology is not None  # a member heartbeating without one joined with one
            return group.topology
        if group.topology is None:
            return given
        if group.topology.epoch > given.epoch:
            return group.topology
        if _canonical(group.topology) != _canonical(given):
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet.")
        return group.topology

    def _metadata_hash(self, topology: Topology) -> tuple[Any, ...]:
        return tuple(
            (name, topic.topic_id, len(topic.partitions))
            for name in sorted(topology.required_topics())
            if (topic := self.cluster.topics.get(name)) is not None
        )

    @staticmethod
    def _initial_key(group_id: str) -> tuple[str, ...]:
        return ("streams-initial-rebalance", group_id)

    def _delayed_assignment(self, group_id: str) -> None:
        """computeDelayedTargetAssignment: the initial delay is over."""
        group = self.groups.get(group_id)
        if group is None or not group.members or group.configured is None:
            return
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, None, int(time.time() * 1000))

    def _target(
        self, group: StreamsGroup, member: StreamsMember, status: list[Status], now_ms: int
    ) -> tuple[int, Target]:
        """maybeUpdateStreamsTargetAssignment: (target epoch, the member's target)."""
        if self.timers.scheduled(self._initial_key(group.group_id)):
            status.append(
                (ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance delay.")
            )
            return group.assignment_epoch, EMPTY_TARGET
        if group.assignment_epoch >= group.group_epoch:
            return group.assignment_epoch, group.target.get(member.member_id, EMPTY_TARGET)
        interval = self.config_int(group.group_id, "streams.assignment.interval.ms")
        if now_ms < group.assignment_time_ms + interval:
            status.append(
                (ASSIGNMENT_DELAYED, "Assignment delayed due to the configured assignment interval.")
            )
            return group.assignment_epoch, group.target.get(member.member_id, EMPTY_TARGET)
        self._compute_target(group, member, now_ms)
        return group.assignment_epoch, group.target.get(member.member_id, EMPTY_TARGET)

    def _compute_target(self, group: StreamsGroup, member: StreamsMember | None, now_ms: int) -> None:
        configured = group.configured
        if configured is not None and configured.ready and configured.tasks is not None and group.topology:
            stateful = {s.subtopology_id for s in group.topology.subtopologies if s.state_changelog_topics}
            standby_replicas = int(group.assignment_configs[STANDBY_REPLICAS])
            group.target = sticky_assign(
                {
                    m.member_id: (m.process_id, group.target.get(m.member_id, EMPTY_TARGET))
                    for m in group.members.values()
                },
                configured.tasks,
                stateful,
                standby_replicas,
            )
        else:
            group.target = {member_id: EMPTY_TARGET for member_id in group.members}
        group.assignment_epoch = group.group_epoch
        group.assignment_time_ms = now_ms

    def _reconcile(
        self,
        group: StreamsGroup,
        member: StreamsMember,
        target_epoch: int,
        target: Target,
        request: StreamsHeartbeat,
    ) -> StreamsMember:
        """CurrentAssignmentBuilder: revoke first, then take what others have released."""
        if _reconciled(member, target_epoch):
            return member
        owned = (
            (request.active_tasks, request.standby_tasks, request.warmup_tasks)
            if request.active_tasks is not None
            and request.standby_tasks is not None
            and request.warmup_tasks is not None
            else None
        )
        if member.state == UNREVOKED_TASKS:
            if owned is None or _contains_any(owned, member):
                return member
            updated = self._next(group, member, member.member_epoch + 1, target_epoch, target, owned)
        elif member.state == UNRELEASED_TASKS or member.member_epoch != target_epoch:
            updated = self._next(group, member, member.member_epoch, target_epoch, target, owned)
        else:
            return member
        if updated.state == UNREVOKED_TASKS:
            self._schedule_rebalance_timeout(group.group_id, updated)
        else:
            self.timers.cancel(("streams-rebalance-timeout", group.group_id, updated.member_id))
        return updated

    def _next(
        self,
        group: StreamsGroup,
        member: StreamsMember,
        member_epoch: int,
        target_epoch: int,
        target: Target,
        owned: tuple[Tasks | None, ...] | None,
    ) -> StreamsMember:
        process = member.process_id
        kept_active: dict[str, dict[int, int]] = {}
        revoking_active: dict[str, dict[int, int]] = {}
        new_active: dict[str, dict[int, int]] = {}
        unreleased = False
        for sub in set(member.active) | set(target.active):
            current = member.active.get(sub, {})
            wanted = target.active.get(sub, frozenset())
            kept = {p: e for p, e in current.items() if p in wanted}
            gone = {p: e for p, e in current.items() if p not in wanted}
            pending = {p: target_epoch for p in wanted if p not in kept}
            for p in list(pending):
                if (
                    group.active_owner(sub, p) is not None
                    or process in group.holders(sub, p, "standby")
                    or process in group.holders(sub, p, "warmup")
                ):
                    del pending[p]
                    unreleased = True
            for into, part in ((kept_active, kept), (revoking_active, gone), (new_active, pending)):
                if part:
                    into[sub] = part
        sets: dict[str, tuple[Tasks, Tasks, Tasks]] = {}
        for kind in ("standby", "warmup"):
            current_sets: Tasks = getattr(member, kind)
            wanted_sets: Tasks = getattr(target, kind)
            kept_s: Tasks = {}
            gone_s: Tasks = {}
            pending_s: Tasks = {}
            for sub in set(current_sets) | set(wanted_sets):
                current_p = current_sets.get(sub, frozenset())
                wanted_p = wanted_sets.get(sub, frozenset())
                pending_p = set(wanted_p - current_p)
                for p in list(pending_p):
                    if (
                        group.active_owner(sub, p) == process
                        or process in group.holders(sub, p, "standby")
                        or process in group.holders(sub, p, "warmup")
                    ):
                        pending_p.discard(p)
                        unreleased = True
                if current_p & wanted_p:
                    kept_s[sub] = current_p & wanted_p
                if current_p - wanted_p:
                    gone_s[sub] = current_p - wanted_p
                if pending_p:
                    pending_s[sub] = frozenset(pending_p)
            sets[kind] = (kept_s, gone_s, pending_s)
        to_revoke = bool(revoking_active or sets["standby"][1] or sets["warmup"][1])
        updated = _copy(member)
        if to_revoke and (
            owned is None or _owned_any(owned, revoking_active, sets["standby"][1], sets["warmup"][1])
        ):
            updated.state = UNREVOKED_TASKS
            _set_epoch(updated, member_epoch)
            updated.active, updated.standby, updated.warmup = (
                kept_active,
                sets["standby"][0],
                sets["warmup"][0],
            )
            updated.revoking_active = revoking_active
            updated.revoking_standby, updated.revoking_warmup = sets["standby"][1], sets["warmup"][1]
            return updated
        updated.state = UNRELEASED_TASKS if unreleased else MEMBER_STABLE
        _set_epoch(updated, target_epoch)
        updated.active = {
            sub: {**kept_active.get(sub, {}), **new_active.get(sub, {})}
            for sub in {*kept_active, *new_active}
        }
        updated.standby = _union(sets["standby"][0], sets["standby"][2])
        updated.warmup = _union(sets["warmup"][0], sets["warmup"][2])
        updated.revoking_active, updated.revoking_standby, updated.revoking_warmup = {}, {}, {}
        return updated

    def _endpoints(
        self, group: StreamsGroup, member: StreamsMember
    ) -> list[tuple[tuple[str, int], Tasks, Tasks]]:
        """buildEndpointToPartitions: every member's endpoint with the source partitions of
        its active and standby tasks (the requesting member last)."""
        order = [m for m in group.members.values() if m.member_id != member.member_id] + [member]
        return [
            (
                m.user_endpoint,
                self._task_partitions(group, _keys(m.active)),
                self._task_partitions(group, m.standby),
            )
            for m in order
            if m.user_endpoint is not None
        ]

    def _task_partitions(self, group: StreamsGroup, tasks: Tasks) -> Tasks:
        """EndpointToPartitionsManager: a task's partitions of each of its source topics."""
        out: dict[str, frozenset[int]] = {}
        subs = {s.subtopology_id: s for s in group.topology.subtopologies} if group.topology else {}
        for sub_id, partitions in tasks.items():
            sub = subs.get(sub_id)
            if sub is None:
                continue
            for name in (*sub.source_topics, *(t.name for t in sub.repartition_source_topics)):
                topic = self.cluster.topics.get(name)
                if topic is not None:
                    out[name] = frozenset(sorted(partitions)[: len(topic.partitions)])
        return out

    def _leave(self, request: StreamsHeartbeat) -> StreamsHeartbeatResult:
        group = self.groups.get(request.group_id)
        if group is None:
            raise group_not_found(request.group_id)
        if request.shutdown_application and group.shutdown_requested_by is None:
            group.shutdown_requested_by = request.member_id
        if request.instance_id is None:
            if request.member_id not in group.members:
                raise unknown_member(request.member_id, request.group_id)
            self.remove_member(group, request.member_id)
            return StreamsHeartbeatResult(request.member_id, request.member_epoch, 0, [], left=True)
        member = group.static_member(request.instance_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown."
            )
        _check_not_fenced(member, request)
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            self.remove_member(group, member.member_id)
            return StreamsHeartbeatResult(request.member_id, request.member_epoch, 0, [], left=True)
        # streamsGroupStaticMemberGroupLeave: it keeps its tasks (their epochs back to 0)
        # until its session times out or it comes back
        member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
        member.active = {sub: dict.fromkeys(parts, 0) for sub, parts in member.active.items()}
        member.revoking_active, member.revoking_standby, member.revoking_warmup = {}, {}, {}
        return StreamsHeartbeatResult(member.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, 0, [], left=True)

    def remove_member(self, group: StreamsGroup, member_id: str) -> None:
        """streamsGroupFenceMember: the member and its target go, the group epoch is bumped
        (and, the last member gone, the empty target assignment is at that epoch)."""
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        group.task_offsets.pop(member_id, None)
        group.group_epoch += 1
        if not group.members:
            group.shutdown_requested_by = None
            group.assignment_epoch, group.assignment_time_ms = group.group_epoch, 0
        self._cancel_timers(group.group_id, member_id)

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self.timers.cancel(("streams-session-timeout", group_id, member_id))
        self.timers.cancel(("streams-rebalance-timeout", group_id, member_id))

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        def expire() -> None:
            group = self.groups.get(group_id)
            if group is not None and member_id in group.members:
                log.info("streams group %s: member %s expired", group_id, member_id)
                self.remove_member(group, member_id)

        self.timers.schedule(
            ("streams-session-timeout", group_id, member_id),
            self.config_int(group_id, "streams.session.timeout.ms"),
            expire,
        )

    def _schedule_rebalance_timeout(self, group_id: str, member: StreamsMember) -> None:
        member_id, epoch = member.member_id, member.member_epoch

        def expire() -> None:
            group = self.groups.get(group_id)
            current = group.members.get(member_id) if group is not None else None
            if group is not None and current is not None and current.member_epoch == epoch:
                if current.state == UNREVOKED_TASKS:
                    log.info("streams group %s: member %s did not revoke in time", group_id, member_id)
                    self.remove_member(group, member_id)

        self.timers.schedule(
            ("streams-rebalance-timeout", group_id, member_id), max(member.rebalance_timeout_ms, 0), expire
        )

    # -- offsets and admin ----------------------------------------------------------
    def validate_offset_commit(
        self,
        group: StreamsGroup,
        member_id: str,
        member_epoch: int,
        transactional: bool,
        api_version: int,
        topics: Iterable[tuple[str, int]] = (),
    ) -> int:
        """StreamsGroup.validateOffsetCommit: a member commits with its epoch, or an older
        one for tasks it was assigned no later than that epoch."""
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE
        if transactional and member_epoch == -1 and not member_id:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch == member.member_epoch:
            return ErrorCode.NONE
        stale = (
            ErrorCode.ILLEGAL_GENERATION
            if transactional and api_version < 6
            else ErrorCode.STALE_MEMBER_EPOCH
        )
        if member_epoch > member.member_epoch:
            return stale
        for topic, partition in topics:
            epoch = self._task_epoch(group, member, topic, partition)
            if epoch is None or epoch > member_epoch:
                return stale
        return ErrorCode.NONE

    @staticmethod
    def _task_epoch(group: StreamsGroup, member: StreamsMember, topic: str, partition: int) -> int | None:
        if group.topology is None:
            return None
        for sub in group.topology.subtopologies:
            if topic in sub.source_topics or topic in {t.name for t in sub.repartition_source_topics}:
                for held in (member.active, member.revoking_active):
                    if partition in held.get(sub.subtopology_id, {}):
                        return held[sub.subtopology_id][partition]
        return None

    @staticmethod
    def validate_offset_fetch(group: StreamsGroup, member_id: str, member_epoch: int) -> int:
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE if member_epoch == member.member_epoch else ErrorCode.STALE_MEMBER_EPOCH

    def delete(self, group_id: str) -> None:
        self.groups.pop(group_id, None)
        self.timers.cancel(self._initial_key(group_id))

    def subscribed_topics(self, group: StreamsGroup) -> set[str]:
        """StreamsGroup.isSubscribedToTopic: an empty group reads nothing."""
        if not group.members or group.topology is None:
            return set()
        return {name for sub in group.topology.subtopologies for name in sub.source_topics}

    def to_dict(self, group: StreamsGroup) -> dict[str, Any]:
        return {
            "group_id": group.group_id,
            "type": GROUP_TYPE,
            "state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "topology_epoch": group.topology.epoch if group.topology else None,
            "members": {
                m.member_id: {
                    "member_epoch": m.member_epoch,
                    "state": m.state,
                    "process_id": m.process_id,
                    "active": {s: sorted(p) for s, p in m.active.items()},
                    "standby": {s: sorted(p) for s, p in m.standby.items()},
                }
                for m in group.members.values()
            },
        }


# -- topology configuration (InternalTopicManager) -----------------------------------


def configure(topology: Topology, cluster: ClusterState) -> ConfiguredTopology:
    """InternalTopicManager.configureTopics: the source topics must exist; the partition
    counts of the repartition and changelog topics are decided; those missing are to be
    created. A topology the broker cannot run raises HeartbeatError
    (STREAMS_INVALID_TOPOLOGY)."""

    def count(name: str, decided: Mapping[str, int]) -> int | None:
        topic = cluster.topics.get(name)
        return len(topic.partitions) if topic is not None else decided.get(name)

    try:
        missing = sorted(
            {
                name
                for sub in topology.subtopologies
                for name in sub.source_topics
                if name not in cluster.topics
            }
        )
        if missing:
            raise TopologyError(MISSING_SOURCE_TOPICS, f"Source topics {_summary(missing)} are missing.")
        decided = _repartition_counts(topology, lambda name: count(name, {}))
        _enforce_copartitioning(topology, decided, lambda name: count(name, decided))
        tasks: dict[str, int] = {}
        for sub in topology.subtopologies:
            inputs = [*sub.source_topics, *(t.name for t in sub.repartition_source_topics)]
            counts = [c for name in inputs if (c := count(name, decided)) is not None]
            if not counts:
                raise HeartbeatError(
                    ErrorCode.STREAMS_INVALID_TOPOLOGY,
                    f"No source topics found for subtopology {sub.subtopology_id}",
                )
            tasks[sub.subtopology_id] = max(counts)
            for changelog in sub.state_changelog_topics:
                decided[changelog.name] = max(counts)
        to_create: dict[str, TopicInfo] = {}
        for sub in topology.subtopologies:
            for info in (*sub.repartition_source_topics, *sub.state_changelog_topics):
                partitions = info.partitions or decided[info.name]
                to_create[info.name] = TopicInfo(info.name, partitions, info.replication_factor, info.configs)
        for name in sorted(topology.required_topics()):
            topic = cluster.topics.get(name)
            expected = to_create.pop(name, None) if topic is not None else None
            if topic is not None and expected is not None and len(topic.partitions) != expected.partitions:
                raise TopologyError(
                    INCORRECTLY_PARTITIONED_TOPICS,
                    f"Existing topic {name} has different number of partitions: expected "
                    f"{expected.partitions}, found {len(topic.partitions)}",
                )
        error = (
            TopologyError(
                MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {_summary(list(to_create))}"
            )
            if to_create
            else None
        )
        return ConfiguredTopology(topology.epoch, tasks, decided, to_create, error)
    except TopologyError as error:
        return ConfiguredTopology(topology.epoch, None, {}, {}, error)


def _repartition_counts(topology: Topology, count: Callable[[str], int | None]) -> dict[str, int]:
    """RepartitionTopics.setup: a repartition topic without a count gets the largest of
    the counts of the inputs of the subtopology writing it."""
    counts = {
        t.name: t.partitions
        for sub in topology.subtopologies
        for t in sub.repartition_source_topics
        if t.partitions
    }
    while True:
        needed = progress = False
        for sub in topology.subtopologies:
            for sink in sub.repartition_sink_topics:
                if sink in counts:
                    continue
                candidates = [counts[t.name] for t in sub.repartition_source_topics if t.name in counts]
                candidates += [c for name in sub.source_topics if (c := count(name)) is not None]
                if candidates:
                    counts[sink] = max(candidates)
                    progress = True
                else:
                    needed = True
        if not needed:
            break
        if not progress:
            raise HeartbeatError(
                ErrorCode.STREAMS_INVALID_TOPOLOGY,
                "Failed to compute number of partitions for all repartition topics. There may be loops "
                "in the topology that cannot be resolved.",
            )
    for sub in topology.subtopologies:
        if any(t.name not in counts for t in sub.repartition_source_topics):
            raise HeartbeatError(
                ErrorCode.STREAMS_INVALID_TOPOLOGY,
                "Failed to compute number of partitions for all repartition topics, because a repartition "
                "source topic is never used as a sink topic.",
            )
    return counts


def _enforce_copartitioning(
    topology: Topology, decided: dict[str, int], count: Callable[[str], int | None]
) -> None:
    """CopartitionedTopicsEnforcer: the topics of a co-partition group have one count."""
    fixed = {t.name for sub in topology.subtopologies for t in sub.repartition_source_topics if t.partitions}
    flexible = {
        t.name for sub in topology.subtopologies for t in sub.repartition_source_topics if not t.partitions
    }
    for sub in topology.subtopologies:
        for sources, repartitions in sub.copartition_groups:
            names = {sub.source_topics[i] for i in sources} | {
                sub.repartition_source_topics[i].name for i in repartitions
            }
            if not names:
                continue
            repartition = {n: count(n) or 0 for n in names if n in fixed or n in flexible}
            external = {n: count(n) or 0 for n in names if n not in repartition}
            if not external:
                fixed_here = sorted(n for n in repartition if n in fixed)
                if fixed_here:
                    first = repartition[fixed_here[0]]
                    if any(repartition[n] != first for n in fixed_here):
                        raise TopologyError(
                            INCORRECTLY_PARTITIONED_TOPICS,
                            "Following topics do not have the same number of partitions: "
                            f"[{_java_map(repartition)}]",
                        )
                    chosen = first
                else:
                    chosen = max(repartition.values(), default=0)
            else:
                chosen = next(iter(external.values()))
                if any(v != chosen for v in external.values()):
                    raise TopologyError(
                        INCORRECTLY_PARTITIONED_TOPICS,
                        f"Following topics do not have the same number of partitions: [{_java_map(external)}]",
                    )
            for name, current in repartition.items():
                if name in fixed and current != chosen:
                    raise TopologyError(
                        INCORRECTLY_PARTITIONED_TOPICS,
                        f"Number of partitions [{current}] of repartition topic [{name}] doesn't match number "
                        f"of partitions [{chosen}] of the source topic.",
                    )
                decided[name] = chosen


def _java_map(values: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(values.items())) + "}"


def _summary(names: list[str]) -> str:
    """InternalTopicManager.summarizeTopics."""
    if not names:
        return "<none>"
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


# -- the sticky task assignor (StickyTaskAssignor) -------------------------------------


class _Process:
    """ProcessState: a process's members and the tasks they were given."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.capacity = 0
        self.task_count = 0
        self.counts: dict[str, int] = {}
        self.active: dict[str, set[tuple[str, int]]] = {}
        self.standby: dict[str, set[tuple[str, int]]] = {}
        self.tasks: set[tuple[str, int]] = set()

    @property
    def load(self) -> float:
        return self.task_count / self.capacity if self.capacity > 0 else -1.0

    def add_member(self, member_id: str) -> None:
        self.counts[member_id] = 0
        self.capacity += 1

    def add(self, member_id: str, task: tuple[str, int], active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        self.counts[member_id] += 1
        return self.counts[member_id]

    def add_to_least_loaded(self, task: tuple[str, int], active: bool) -> int:
        member_id = min(self.counts, key=lambda m: (self.counts[m], m))
        return self.add(member_id, task, active)


def _per_member(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


def sticky_assign(
    members: Mapping[str, tuple[str, Target]],
    tasks_per_subtopology: Mapping[str, int],
    stateful: set[str],
    standby_replicas: int,
) -> dict[str, Target]:
    """StickyTaskAssignor: active tasks stay where they were while their member is under
    its share, then go to a previous standby, then to the least loaded process; standby
    tasks (of stateful subtopologies) never on a process that has the task already.
    `members`: member id -> (process id, previous target)."""
    total_active = sum(tasks_per_subtopology.values())
    total = total_active + sum(
        n * standby_replicas for s, n in tasks_per_subtopology.items() if s in stateful
    )
    state = {
        "active_capacity": len(members),
        "capacity": len(members),
        "total_active": total_active,
        "total": total,
    }
    state["active_per"] = _per_member(total_active, len(members))
    state["total_per"] = _per_member(total, len(members))
    processes: dict[str, _Process] = {}
    prev_active: dict[tuple[str, int], tuple[str, str]] = {}
    prev_standby: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for member_id, (process_id, previous) in members.items():
        processes.setdefault(process_id, _Process(process_id)).add_member(member_id)
        for sub, parts in previous.active.items():
            for p in parts:
                prev_active[(sub, p)] = (process_id, member_id)
        for sub, parts in previous.standby.items():
            for p in parts:
                prev_standby.setdefault((sub, p), []).append((process_id, member_id))

    def after_active(count: int) -> None:
        if count == state["active_per"]:
            state["active_capacity"] -= 1
            state["total_active"] -= count
            state["active_per"] = _per_member(state["total_active"], state["active_capacity"])
        after_any(count)

    def after_any(count: int) -> None:
        if count == state["total_per"]:
            state["capacity"] -= 1
            state["total"] -= count
            state["total_per"] = _per_member(state["total"], state["capacity"])

    def least_loaded_previous(
        candidates: list[tuple[str, str]] | None, task: tuple[str, int] | None
    ) -> tuple[str, str] | None:
        if not candidates:
            return None
        best = candidates[0]
        best_process = processes[best[0]]
        best_load, best_member_load = best_process.load, best_process.counts[best[1]]
        for process_id, member_id in candidates[1:]:
            process = processes[process_id]
            if process.load < best_load and (task is None or task not in process.tasks):
                if process.counts[member_id] < best_member_load:
                    best, best_load, best_member_load = (
                        (process_id, member_id),
                        process.load,
                        process.counts[member_id],
                    )
        if task is None or task not in processes[best[0]].tasks:
            return best
        return None

    active_tasks = [(s, p) for s in sorted(tasks_per_subtopology) for p in range(tasks_per_subtopology[s])]
    remaining = sorted(active_tasks, key=lambda t: (t[1], t[0]))
    for source in ("active", "standby"):
        left = []
        for task in remaining:
            owner = (
                prev_active.get(task)
                if source == "active"
                else least_loaded_previous(prev_standby.get(task), None)
            )
            if owner is not None:
                process = processes[owner[0]]
                if process.counts[owner[1]] < state["active_per"]:
                    after_active(process.add(owner[1], task, True))
                    continue
            left.append(task)
        remaining = left
    for task in sorted(remaining):
        process = min(processes.values(), key=lambda p: (p.load, p.process_id))
        after_active(process.add_to_least_loaded(task, True))

    if standby_replicas > 0:
        standby_tasks = [t for t in active_tasks if t[0] in stateful]
        to_least_loaded: list[tuple[tuple[str, int], int]] = []
        for task in sorted(standby_tasks, key=lambda t: (t[1], t[0]), reverse=True):
            for i in range(standby_replicas):
                owner = prev_active.get(task)
                if owner is not None:
                    process = processes[owner[0]]
                    if task not in process.tasks and process.counts[owner[1]] < state["total_per"]:
                        after_any(process.add(owner[1], task, False))
                        continue
                candidate = least_loaded_previous(prev_standby.get(task), task)
                if candidate is not None:
                    process = processes[candidate[0]]
                    if process.counts[candidate[1]] < state["total_per"]:
                        after_any(process.add(candidate[1], task, False))
                        continue
                to_least_loaded.append((task, standby_replicas - i))
                break
        for task, replicas in sorted(to_least_loaded, reverse=True):
            for _ in range(replicas):
                fits = [p for p in processes.values() if task not in p.tasks]
                if not fits:
                    log.warning("not enough capacity for the standby replicas of task %s", task)
                    break
                process = heapq.nsmallest(1, fits, key=lambda p: (p.load, p.process_id))[0]
                after_any(process.add_to_least_loaded(task, False))

    result: dict[str, Target] = {}
    for member_id, (process_id, _) in members.items():
        process = processes[process_id]
        result[member_id] = Target(
            _compact(process.active.get(member_id, set())),
            _compact(process.standby.get(member_id, set())),
            {},
        )
    return result


def _compact(tasks: Iterable[tuple[str, int]]) -> Tasks:
    out: dict[str, set[int]] = {}
    for sub, p in tasks:
        out.setdefault(sub, set()).add(p)
    return {sub: frozenset(parts) for sub, parts in out.items()}


# -- helpers ---------------------------------------------------------------------------


def _check_member_epoch(member: StreamsMember, request: StreamsHeartbeat) -> None:
    """throwIfStreamsGroupMemberEpochIsInvalid: the previous epoch is accepted when what
    the member owns is part of what it was given (the answer may have been lost)."""
    received = request.member_epoch
    if received == 0:
        return
    if received > member.member_epoch:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The streams group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch:
        active, standby, warmup = member.assigned()
        if received != member.previous_member_epoch or not all(
            _contained(owned, assigned)
            for owned, assigned in (
                (request.active_tasks, active),
                (request.standby_tasks, standby),
                (request.warmup_tasks, warmup),
            )
        ):
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The streams group member has a smaller member epoch ({received}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                "rejoin.",
            )


def _task_offsets(reported: list[tuple[str, int, int]] | None, previous: TaskOffsets) -> TaskOffsets:
    """MemberTaskOffsets.update: a member's new report replaces its last one."""
    if reported is None:
        return previous
    offsets: TaskOffsets = {}
    for subtopology, partition, offset in reported:
        by_partition = offsets.setdefault(subtopology, {})
        if partition in by_partition:
            raise HeartbeatError(
                ErrorCode.INVALID_REQUEST,
                f"Task offsets contain a duplicate entry for subtopology {subtopology} and partition {partition}.",
            )
        by_partition[partition] = offset
    return offsets


def _check_not_fenced(member: StreamsMember, request: StreamsHeartbeat) -> None:
    """throwIfInstanceIdIsFenced: the instance id is another member's now."""
    if member.member_id != request.member_id:
        raise HeartbeatError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {request.member_id} with instance id {request.instance_id} was fenced by member "
            f"{member.member_id}.",
        )


def _contained(owned: Tasks | None, assigned: Tasks) -> bool:
    if owned is None:
        return True
    return all(parts <= assigned.get(sub, frozenset()) for sub, parts in owned.items())


def _check_tasks(configured: Mapping[str, int], tasks: Tasks | None) -> None:
    """throwIfRequestContainsInvalidTasks."""
    for sub, parts in (tasks or {}).items():
        if sub not in configured:
            raise HeartbeatError(
                ErrorCode.INVALID_REQUEST, f"Subtopology {sub} does not exist in the topology."
            )
        for p in sorted(parts):
            if p < 0 or p >= configured[sub]:
                raise HeartbeatError(
                    ErrorCode.INVALID_REQUEST,
                    f"Task {p} for subtopology {sub} is invalid. Number of tasks for this subtopology: {configured[sub]}",
                )


def _contains_any(owned: tuple[Tasks | None, ...], member: StreamsMember) -> bool:
    return _owned_any(owned, member.revoking_active, member.revoking_standby, member.revoking_warmup)


def _owned_any(
    owned: tuple[Tasks | None, ...], active: Mapping[str, Mapping[int, int]], standby: Tasks, warmup: Tasks
) -> bool:
    """TasksTuple.containsAny: the member still reports one of these tasks as its own."""
    for mine, revoking in zip(owned, (_keys(active), standby, warmup), strict=True):
        for sub, parts in (mine or {}).items():
            if parts & revoking.get(sub, frozenset()):
                return True
    return False


def _union(a: Tasks, b: Tasks) -> Tasks:
    return {sub: a.get(sub, frozenset()) | b.get(sub, frozenset()) for sub in {*a, *b}}


def _set_epoch(member: StreamsMember, epoch: int) -> None:
    """StreamsGroupMember.Builder.updateMemberEpoch."""
    member.previous_member_epoch, member.member_epoch = member.member_epoch, epoch


def _copy(member: StreamsMember) -> StreamsMember:
    return replace(member, client_tags=dict(member.client_tags))


def _metadata(member: StreamsMember) -> tuple[Any, ...]:
    """What a change of bumps the group epoch (hasStreamsMemberMetadataChanged)."""
    return (
        member.instance_id,
        member.rack_id,
        member.client_id,
        member.client_host,
        member.rebalance_timeout_ms,
        member.topology_epoch,
        member.process_id,
        member.user_endpoint,
        tuple(sorted(member.client_tags.items())),
    )


def _canonical(topology: Topology) -> tuple[Any, ...]:
    """StreamsTopology equality: subtopologies by id, topics as sets."""
    return (
        topology.epoch,
        tuple(
            sorted(
                (
                    s.subtopology_id,
                    frozenset(s.source_topics),
                    frozenset(s.repartition_sink_topics),
                    frozenset(s.state_changelog_topics),
                    frozenset(s.repartition_source_topics),
                    frozenset(s.copartition_groups),
                )
                for s in topology.subtopologies
            )
        ),
    )
