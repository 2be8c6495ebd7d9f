"""Lookups shared by the partition-level handlers (produce, fetch, list offsets, metadata,
log dirs)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from broker.context import RequestContext
from broker.security.authorizer import ALTER
from broker.state.cluster import Partition, Topic
from broker.state.consumer_groups import HeartbeatResult
from messages.registry import response_class
from protocol.errors import ErrorCode


def find_topic(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None) -> tuple[Topic | None, int]:
    """The topic by id (when the version carries ids) or by name, with the error Kafka gives."""
    if topic_id is not None:
        topic = ctx.cluster.topics_by_id.get(topic_id)
        return topic, ErrorCode.NONE if topic is not None else ErrorCode.UNKNOWN_TOPIC_ID
    topic = ctx.cluster.topics.get(name or "")
    return topic, ErrorCode.NONE if topic is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def led_partition(
    ctx: RequestContext, topic: Topic, index: int, current_leader_epoch: int = -1
) -> tuple[Partition | None, int]:
    """The partition if this broker leads it (and the client's epoch matches), else the error."""
    if not 0 <= index < len(topic.partitions):
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    partition = topic.partitions[index]
    if partition.leader != ctx.node_id:
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
    if current_leader_epoch >= 0:
        if current_leader_epoch < partition.leader_epoch:
            return None, ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > partition.leader_epoch:
            return None, ErrorCode.UNKNOWN_LEADER_EPOCH
    return partition, ErrorCode.NONE


def log_dir(ctx: RequestContext) -> str:
    """This broker's one log directory: the first entry of `log.dirs`, made absolute
    (DescribeLogDirs, AlterReplicaLogDirs; the logs themselves are in memory)."""
    return os.path.abspath(ctx.broker.config.get_str("log.dirs").split(",")[0].strip())


@dataclass(frozen=True, slots=True)
class PartitionState:
    """How Metadata and DescribeTopicPartitions show a partition, given the live brokers:
    offline (LEADER_NOT_AVAILABLE, leader -1) while its leader is down; the in-sync
    replicas are the live ones (the log is shared) but those a reassignment is adding
    until they have caught up, the others are offline."""

    error_code: int
    leader_id: int
    isr: list[int]
    offline: list[int]

    @classmethod
    def of(cls, partition: Partition, live: Collection[int]) -> PartitionState:
        leader_up = partition.leader in live
        return cls(
            ErrorCode.NONE if leader_up else ErrorCode.LEADER_NOT_AVAILABLE,
            partition.leader if leader_up else -1,
            [r for r in partition.replicas if r in live and r not in partition.adding],
            [r for r in partition.replicas if r not in live],
        )


def voter_change_refusal(ctx: RequestContext, request: Any) -> Any | None:
    """AddRaftVoter and RemoveRaftVoter's first checks, in order: ALTER on the cluster
    (no message, as for other cluster refusals), the cluster id, a running quorum
    leader. The refusal's response, or None."""
    if not ctx.broker.authorizer.authorize_cluster(ctx.connection.principal, ALTER, ctx.connection.peer[0]):
        return voter_answer(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    cluster = ctx.cluster
    if request.cluster_id is not None and request.cluster_id != cluster.cluster_id:
        return voter_answer(
            ctx,
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            f'The given id "{request.cluster_id}" doesn\'t match the cluster id "{cluster.cluster_id}"',
        )
    if cluster.running_node(cluster.quorum_leader) is None:
        return voter_answer(ctx, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    return None


def voter_answer(ctx: RequestContext, code: int, message: str | None = None) -> Any:
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message)


def group_describe_refusal(
    ctx: RequestContext, group_id: str, kind: str, known: Collection[str]
) -> tuple[int, str | None] | None:
    """Why ConsumerGroupDescribe or ShareGroupDescribe (`kind`: "consumer", "share")
    cannot describe a group, as GroupMetadataManager says it; None when it can."""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, None
    if ctx.groups.coordinator_for(group_id) != ctx.node_id:
        return ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator."
    if group_id not in known:
        exists = ctx.groups.group_exists(group_id)
        return ErrorCode.GROUP_ID_NOT_FOUND, (
            f"Group {group_id} is not a {kind} group." if exists else f"Group {group_id} not found."
        )
    return None


def failed_group_description(
    described: Any, group_id: str, code: int, message: str | None, **fields: Any
) -> Any:
    """A DescribedGroup of ConsumerGroupDescribe, ShareGroupDescribe or
    StreamsGroupDescribe that failed (`fields`: the API's own, at their defaults)."""
    defaults = {"assignor_name": "", "authorized_operations": None}
    return described(
        error_code=code,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        members=[],
        **{**defaults, **fields},
    )


def failed_heartbeat(ctx: RequestContext, code: int, message: str | None = None) -> Any:
    """A ConsumerGroupHeartbeat or ShareGroupHeartbeat answer with an error."""
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )


def heartbeat_answer(ctx: RequestContext, result: HeartbeatResult) -> Any:
    """A ConsumerGroupHeartbeat or ShareGroupHeartbeat answer (the assignment only when
    the coordinator sends one)."""
    assignment_class = response_class(ctx.api_key).Assignment
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=None
        if result.assignment is None
        else assignment_class(
            topic_partitions=[
                assignment_class.TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
                for topic_id, partitions in result.assignment.items()
            ]
        ),
    )
