"""TxnOffsetCommit (28): a transactional producer commits a group's offsets; they become
the group's committed offsets only when the transaction commits (dropped on abort).

Sent to the group coordinator. Unknown topics are answered UNKNOWN_TOPIC_OR_PARTITION
here, as KafkaApis does; the rest is validated as an offset commit of that group
(generation, member, static instance), after the coordinator has confirmed the
producer added the group's offsets to its ongoing transaction (AddOffsetsToTxn) under
its current epoch (KIP-890 part 1); v5 (transaction version 2) adds them instead.

v6 (KIP-1319) names topics by id: an unknown id is UNKNOWN_TOPIC_ID, and a group that
does not exist (with a generation) or a consumer-group member's stale epoch are
GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH where v5 says ILLEGAL_GENERATION.
"""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import PARTITIONS, mirrors, topics
from broker.handlers.spec import ALWAYS
from broker.handlers.transactional import verification_error
from broker.security import authorization
from broker.state.groups import OffsetCommit
from broker.state.transactions import OFFSETS_TOPIC
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.TXN_OFFSET_COMMIT
VERSIONS = (0, 6)
AUTHORIZATION = authorization.TXN_OFFSET_COMMIT
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(topics("topics", "topics", PARTITIONS))
TxnOffsetCommitResponse = response_class(API_KEY)
TopicResult = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
PartitionResult = TopicResult.TxnOffsetCommitResponsePartition


def _group_error(ctx: RequestContext, request: Any) -> int:
    if ctx.groups.coordinator_for(request.group_id) != ctx.node_id:
        return ErrorCode.NOT_COORDINATOR
    offsets_partition = (OFFSETS_TOPIC, ctx.groups.partition_for(request.group_id))
    error = verification_error(
        ctx, request.transactional_id, request.producer_id, request.producer_epoch, offsets_partition
    )
    if error == ErrorCode.TRANSACTION_ABORTABLE and ctx.api_version >= 5:
        # transaction version 2: the group's offsets join the transaction implicitly
        error = ctx.transactions.add_offsets(
            request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
        )
        return ErrorCode.INVALID_PRODUCER_EPOCH if error == ErrorCode.PRODUCER_FENCED else error
    if error == ErrorCode.TRANSACTION_ABORTABLE and ctx.api_version <= 3:
        return ErrorCode.INVALID_TXN_STATE  # not added (no AddOffsetsToTxn), as older versions say it
    return error


def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    rows: list[tuple[Any, list[list[Any]]]] = []
    commits: list[OffsetCommit] = []
    pending: list[list[Any]] = []
    for wanted in request.topics:
        by_id = version >= 6
        if by_id:  # the zero id (None here) is unknown too
            topic = ctx.cluster.topics_by_id.get(wanted.topic_id) if wanted.topic_id is not None else None
            unknown = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            topic, unknown = ctx.cluster.topics.get(wanted.name), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        answers: list[list[Any]] = []
        rows.append((wanted.topic_id if by_id else wanted.name, answers))
        for partition in wanted.partitions:
            row: list[Any] = [
                partition.partition_index,
                unknown if topic is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ]
            answers.append(row)
            if topic is not None and 0 <= partition.partition_index < len(topic.partitions):
                commits.append(
                    OffsetCommit(
                        topic.name,
                        partition.partition_index,
                        partition.committed_offset,
                        partition.committed_leader_epoch if version >= 2 else -1,
                        partition.committed_metadata,
                    )
                )
                pending.append(row)
    if commits:
        error = _group_error(ctx, request)
        if error != ErrorCode.NONE:
            errors = [error] * len(commits)
        else:
            errors = ctx.groups.commit_transactional_offsets(
                request.group_id,
                request.producer_id,
                request.generation_id_or_member_epoch if version >= 3 else -1,
                request.member_id if version >= 3 else "",
                commits,
                request.group_instance_id if version >= 3 else None,
                version,
            )
        for row, code in zip(pending, errors, strict=True):
            row[1] = code
    key = "topic_id" if version >= 6 else "name"
    topics = [
        TopicResult(
            **{key: topic},
            partitions=[PartitionResult(partition_index=index, error_code=code) for index, code in answers],
        )
        for topic, answers in rows
    ]
    return ctx.response(throttle_time_ms=0, topics=topics)
