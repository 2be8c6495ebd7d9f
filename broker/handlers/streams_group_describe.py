"""StreamsGroupDescribe (89): streams groups with their epochs, their topology and each
member's process, endpoint, tasks and target tasks."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import Level, mirrors
from broker.handlers.common import failed_group_description, group_describe_refusal
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation, ResourceType
from broker.state.features import STREAMS_VERSION
from broker.state.streams_groups import (
    ASSIGNOR_NAME,
    EMPTY_TARGET,
    StreamsGroup,
    StreamsMember,
    Target,
    TaskOffsets,
    Tasks,
)
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.STREAMS_GROUP_DESCRIBE
VERSIONS = (0, 1)
AUTHORIZATION = authorization.each_group(Operation.DESCRIBE)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(Level(("group_ids",), "groups", (("group_id", ""),)))
Response = response_class(API_KEY)
Described = Response.DescribedGroup
Topology = Described.Topology
Subtopology = Topology.Subtopology
TopicInfo = Subtopology.TopicInfo
Member = Described.Member
Assignment = Member.Assignment
# TopologyDescriptionStatus: 0 not requested, 1 not stored (no topology description
# plugin is configured, as on a Kafka broker by default)
NOT_REQUESTED, NOT_STORED = 0, 1


def _failed(group_id: str, code: int, message: str | None) -> Any:
    return failed_group_description(
        Described,
        group_id,
        code,
        message,
        assignor_name=None,
        authorized_operations=-2147483648,
        topology=None,
        topology_description=None,
        topology_description_status=NOT_REQUESTED,
    )


def _topics(group: StreamsGroup) -> set[str]:
    if group.topology is None:
        return set()
    return {
        name
        for s in group.topology.subtopologies
        for name in (
            *s.source_topics,
            *s.repartition_sink_topics,
            *(t.name for t in s.repartition_source_topics),
            *(t.name for t in s.state_changelog_topics),
        )
    }


def describe(ctx: RequestContext, group_id: str, operations: bool, description: bool) -> Any:
    refusal = group_describe_refusal(ctx, group_id, "streams", ctx.groups.streams.groups)
    if refusal is not None:
        return _failed(group_id, *refusal)
    group = ctx.groups.streams.groups[group_id]
    authorizer, principal, host = ctx.broker.authorizer, ctx.connection.principal, ctx.connection.peer[0]
    if not all(
        authorizer.authorize(principal, host, Operation.DESCRIBE, ResourceType.TOPIC, t)
        for t in _topics(group)
    ):
        # KafkaApis: clients may not see topics they cannot describe
        return _failed(
            group_id,
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "The described group uses topics that the client is not authorized to describe.",
        )
    return Described(
        error_code=ErrorCode.NONE,
        error_message=None,
        group_id=group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        topology=_topology(group),
        members=[
            _member(m, group.target.get(m.member_id), group.task_offsets.get(m.member_id, ({}, {})))
            for m in group.members.values()
        ],
        authorized_operations=(
            authorizer.authorized_operations(principal, host, ResourceType.GROUP, group_id)
            if operations
            else -2147483648
        ),
        topology_description=None,
        topology_description_status=NOT_STORED if description else NOT_REQUESTED,
        assignor_name=ASSIGNOR_NAME,
    )


def _topology(group: StreamsGroup) -> Any:
    """StreamsGroup.asDescribedGroup: the configured topology (with the partition counts
    the broker decided) once ready, else the one the members declared."""
    topology = group.topology
    if topology is None:
        return None
    configured = group.configured
    decided = configured.partitions if configured is not None and configured.ready else {}

    def info(t: Any) -> Any:
        return TopicInfo(
            name=t.name,
            partitions=decided.get(t.name, t.partitions) if decided else t.partitions,
            replication_factor=t.replication_factor,
            topic_configs=[TopicInfo.KeyValue(key=k, value=v) for k, v in sorted(t.configs)],
        )

    return Topology(
        epoch=topology.epoch,
        subtopologies=[
            Subtopology(
                subtopology_id=s.subtopology_id,
                source_topics=sorted(s.source_topics),
                repartition_sink_topics=sorted(s.repartition_sink_topics),
                state_changelog_topics=sorted(
                    (info(t) for t in s.state_changelog_topics), key=lambda i: i.name
                ),
                repartition_source_topics=sorted(
                    (info(t) for t in s.repartition_source_topics), key=lambda i: i.name
                ),
            )
            for s in sorted(topology.subtopologies, key=lambda s: s.subtopology_id)
        ],
    )


def _task_ids(tasks: Tasks) -> list[Any]:
    return [Assignment.TaskIds(subtopology_id=sub, partitions=sorted(p)) for sub, p in sorted(tasks.items())]


def _assignment(target: Target) -> Any:
    return Assignment(
        active_tasks=_task_ids(target.active),
        standby_tasks=_task_ids(target.standby),
        warmup_tasks=_task_ids(target.warmup),
    )


def _task_offsets(offsets: TaskOffsets) -> list[Any]:
    return [
        Member.TaskOffset(subtopology_id=sub, partition=partition, offset=offset)
        for sub, by_partition in sorted(offsets.items())
        for partition, offset in sorted(by_partition.items())
    ]


def _member(member: StreamsMember, target: Target | None, offsets: tuple[TaskOffsets, TaskOffsets]) -> Any:
    endpoint = member.user_endpoint
    return Member(
        member_id=member.member_id,
        member_epoch=member.member_epoch,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        topology_epoch=member.topology_epoch,
        process_id=member.process_id,
        user_endpoint=Member.Endpoint(host=endpoint[0], port=endpoint[1]) if endpoint else None,
        client_tags=[Member.KeyValue(key=k, value=v) for k, v in member.client_tags.items()],
        task_offsets=_task_offsets(offsets[0]),
        task_end_offsets=_task_offsets(offsets[1]),
        assignment=_assignment(Target(*member.assigned())),
        target_assignment=_assignment(target or EMPTY_TARGET),
        is_classic=False,
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.cluster.features.finalized.get(STREAMS_VERSION, 0) < 1:
        # KafkaApis: streams groups need streams.version 1
        return ctx.response(
            throttle_time_ms=0,
            groups=[_failed(g, ErrorCode.UNSUPPORTED_VERSION, None) for g in request.group_ids],
        )
    description = bool(getattr(request, "include_topology_description", False))
    return ctx.response(
        throttle_time_ms=0,
        groups=[
            describe(ctx, group_id, bool(request.include_authorized_operations), description)
            for group_id in request.group_ids
        ],
    )
