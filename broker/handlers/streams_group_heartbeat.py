"""StreamsGroupHeartbeat (88): KIP-1071's request for joining, staying in and leaving a
streams group, declaring its topology and being told its tasks; the broker creates the
group's internal topics and assigns the tasks."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation, ResourceType
from broker.state.cluster import ClusterError, validate_topic_name
from broker.state.consumer_groups import HeartbeatError
from broker.state.features import STREAMS_VERSION
from broker.state.streams_groups import (
    MISSING_INTERNAL_TOPICS,
    StreamsHeartbeat,
    StreamsHeartbeatResult,
    Subtopology,
    Tasks,
    TopicInfo,
    Topology,
)
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.STREAMS_GROUP_HEARTBEAT
VERSIONS = (0, 1)
AUTHORIZATION = authorization.by_handler(
    "READ on the group; DESCRIBE on every topic of the topology; CREATE on the cluster or on each "
    "internal topic the broker creates (refused ones are named in the MISSING_INTERNAL_TOPICS status)"
)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Response = response_class(API_KEY)
log = logging.getLogger("broker.groups")

_KAFKA_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def _failed(ctx: RequestContext, code: int, message: str | None = None) -> Any:
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        member_id="",
        member_epoch=0,
        heartbeat_interval_ms=0,
        status=[],
    )


def _topology(raw: Any) -> Topology | None:
    if raw is None:
        return None

    def info(t: Any) -> TopicInfo:
        configs = tuple((c.key, c.value) for c in t.topic_configs or ())
        return TopicInfo(t.name, t.partitions, t.replication_factor, configs)

    return Topology(
        raw.epoch,
        tuple(
            Subtopology(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(s.repartition_sink_topics),
                tuple(info(t) for t in s.state_changelog_topics),
                tuple(info(t) for t in s.repartition_source_topics),
                tuple(
                    (tuple(g.source_topics), tuple(g.repartition_source_topics)) for g in s.copartition_groups
                ),
            )
            for s in raw.subtopologies
        ),
    )


def _tasks(raw: Any) -> Tasks | None:
    if raw is None:
        return None
    tasks: dict[str, frozenset[int]] = {}
    for entry in raw:
        tasks[entry.subtopology_id] = tasks.get(entry.subtopology_id, frozenset()) | frozenset(
            entry.partitions
        )
    return tasks


def _offsets(raw: Any) -> list[tuple[str, int, int]] | None:
    return None if raw is None else [(o.subtopology_id, o.partition, o.offset) for o in raw]


def _request(ctx: RequestContext, request: Any) -> StreamsHeartbeat:
    raw = request.topology
    changelog = next(
        (
            (t.name, t.partitions)
            for s in (raw.subtopologies if raw is not None else ())
            for t in s.state_changelog_topics
            if t.partitions != 0
        ),
        None,
    )
    return StreamsHeartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        topology=_topology(raw),
        active_tasks=_tasks(request.active_tasks),
        standby_tasks=_tasks(request.standby_tasks),
        warmup_tasks=_tasks(request.warmup_tasks),
        process_id=request.process_id,
        user_endpoint=(request.user_endpoint.host, request.user_endpoint.port)
        if request.user_endpoint
        else None,
        client_tags={kv.key: kv.value for kv in request.client_tags}
        if request.client_tags is not None
        else None,
        shutdown_application=bool(request.shutdown_application),
        task_offsets=_offsets(request.task_offsets),
        task_end_offsets=_offsets(request.task_end_offsets),
        client_id=ctx.client_id or "",
        client_host=f"/{ctx.connection.peer[0]}",
        uses_source_regex=any(s.source_topic_regex for s in (raw.subtopologies if raw is not None else ())),
        changelog_with_partitions=changelog,
    )


def _topology_refusal(ctx: RequestContext, request: Any) -> Any | None:
    """KafkaApis.handleStreamsGroupHeartbeat's checks of a topology's topic names, before
    the group coordinator sees it: no Kafka internal topic, only valid names, DESCRIBE on
    every one."""
    if request.topology is None:
        return None
    required: list[str] = []
    for s in request.topology.subtopologies:
        for name in (
            *s.source_topics,
            *s.repartition_sink_topics,
            *(t.name for t in s.repartition_source_topics),
            *(t.name for t in s.state_changelog_topics),
        ):
            if name not in required:
                required.append(name)
    prohibited = [n for n in required if n in _KAFKA_INTERNAL_TOPICS]
    if prohibited:
        return _failed(
            ctx,
            ErrorCode.STREAMS_INVALID_TOPOLOGY,
            f"Use of Kafka internal topics {','.join(prohibited)} in a Kafka Streams topology is prohibited.",
        )
    invalid = []
    for name in required:
        try:
            validate_topic_name(name)
        except ClusterError:
            invalid.append(name)
    if invalid:
        return _failed(
            ctx,
            ErrorCode.STREAMS_INVALID_TOPOLOGY,
            f"Topic names {','.join(invalid)} are not valid topic names.",
        )
    if not all(_allows(ctx, Operation.DESCRIBE, ResourceType.TOPIC, name) for name in required):
        return _failed(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return None


def _allows(ctx: RequestContext, operation: Operation, resource: ResourceType, name: str) -> bool:
    return ctx.broker.authorizer.authorize(
        ctx.connection.principal, ctx.connection.peer[0], operation, resource, name
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.cluster.features.finalized.get(STREAMS_VERSION, 0) < 1:
        # KafkaApis: streams groups need streams.version 1 (UpdateFeatures can take it away)
        return _failed(ctx, ErrorCode.UNSUPPORTED_VERSION)
    if not _allows(ctx, Operation.READ, ResourceType.GROUP, request.group_id):
        return _failed(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    refusal = _topology_refusal(ctx, request)
    if refusal is not None:
        return refusal
    heartbeat = _request(ctx, request)
    groups = ctx.groups
    try:
        groups.streams.validate(heartbeat)
        if groups.coordinator_for(heartbeat.group_id) != ctx.node_id:
            return _failed(ctx, ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
        result = groups.streams_group_heartbeat(heartbeat)
    except HeartbeatError as error:
        return _failed(ctx, error.code, error.message)
    if result.topics_to_create:
        _create_internal_topics(ctx, result)
    return _answer(ctx, result)


def _create_internal_topics(ctx: RequestContext, result: StreamsHeartbeatResult) -> None:
    """What KafkaApis asks the controller for after the coordinator answered: topics the
    principal may create are created (after this answer); the others are named in the
    MISSING_INTERNAL_TOPICS status."""
    names = sorted(result.topics_to_create)
    if not _allows(ctx, Operation.CREATE, ResourceType.CLUSTER, "kafka-cluster"):
        refused = [n for n in names if not _allows(ctx, Operation.CREATE, ResourceType.TOPIC, n)]
        if refused:
            detail = f"Unauthorized to CREATE on topics {', '.join(refused)}."
            for i, (code, text) in enumerate(result.status):
                if code == MISSING_INTERNAL_TOPICS:
                    result.status[i] = (code, f"{text}; {detail}")
                    break
            else:
                result.status.append((MISSING_INTERNAL_TOPICS, detail))
            return
    cluster = ctx.cluster
    topics = [result.topics_to_create[n] for n in names]

    def create() -> None:
        for info in topics:
            if info.name in cluster.topics:
                continue
            try:
                cluster.create_topic(
                    info.name, info.partitions, info.replication_factor or -1, dict(info.configs)
                )
            except ClusterError as exc:
                log.warning("Streams internal topic creation failed for %s: %s", info.name, exc.message)

    asyncio.get_running_loop().call_soon(create)


def _answer(ctx: RequestContext, result: StreamsHeartbeatResult) -> Any:
    TaskIds = Response.TaskIds

    def task_ids(tasks: Tasks) -> list[Any]:
        return [TaskIds(subtopology_id=sub, partitions=sorted(parts)) for sub, parts in sorted(tasks.items())]

    endpoints = None
    if result.endpoints is not None:
        Endpoints = Response.EndpointToPartitions
        endpoints = [
            Endpoints(
                user_endpoint=Endpoints.Endpoint(host=host, port=port),
                active_partitions=_partitions(Endpoints, active),
                standby_partitions=_partitions(Endpoints, standby),
            )
            for (host, port), active, standby in result.endpoints
        ]
    assignment = result.assignment
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        # v0's int32 field: a lag past it is capped
        acceptable_recovery_lag_legacy=max(0, min(result.acceptable_recovery_lag, 2**31 - 1)),
        acceptable_recovery_lag=result.acceptable_recovery_lag,
        task_offset_interval_ms=result.task_offset_interval_ms,
        status=[Response.Status(status_code=code, status_detail=text) for code, text in result.status],
        active_tasks=task_ids(assignment.active) if assignment else None,
        standby_tasks=task_ids(assignment.standby) if assignment else None,
        warmup_tasks=task_ids(assignment.warmup) if assignment else None,
        topology_description_required=False,
        endpoint_information_epoch=result.endpoint_information_epoch,
        partitions_by_user_endpoint=endpoints,
    )


def _partitions(endpoints: Any, partitions: Tasks) -> list[Any]:
    return [
        endpoints.TopicPartition(topic=topic, partitions=sorted(parts))
        for topic, parts in sorted(partitions.items())
    ]
