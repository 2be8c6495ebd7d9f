"""OffsetCommit (8): stores consumed positions for a group (v10 names topics by id).

As in Kafka's KafkaApis, partitions of unknown topics are answered here with
UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for ids) and never reach the coordinator;
group-level failures apply only to the remaining partitions.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import OffsetCommitResponse

from broker.context import RequestContext
from broker.error_responses import PARTITIONS, mirrors, topics
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.state.groups import OffsetCommit
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.OFFSET_COMMIT
VERSIONS = (2, 10)
AUTHORIZATION = authorization.OFFSET_COMMIT
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(topics("topics", "topics", PARTITIONS))
TopicResponse = OffsetCommitResponse.OffsetCommitResponseTopic
PartitionResponse = TopicResponse.OffsetCommitResponsePartition


def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    use_ids = version >= 10
    cluster = ctx.cluster
    # (topic name or None, topic id, [(partition index, error code or None while pending)])
    answers: list[tuple[str | None, Any, list[list[Any]]]] = []
    commits: list[OffsetCommit] = []
    pending: list[list[Any]] = []
    for wanted in request.topics:
        topic = cluster.topics_by_id.get(wanted.topic_id) if use_ids else cluster.topics.get(wanted.name)
        rows: list[list[Any]] = []
        answers.append((topic.name if topic else wanted.name if not use_ids else None, wanted.topic_id, rows))
        for partition in wanted.partitions:
            row = [partition.partition_index, None]
            rows.append(row)
            if topic is None:
                row[1] = ErrorCode.UNKNOWN_TOPIC_ID if use_ids else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not 0 <= partition.partition_index < len(topic.partitions):
                row[1] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                commits.append(
                    OffsetCommit(
                        topic.name,
                        partition.partition_index,
                        partition.committed_offset,
                        partition.committed_leader_epoch if version >= 6 else -1,
                        partition.committed_metadata,
                    )
                )
                pending.append(row)
    if commits:
        if ctx.groups.coordinator_for(request.group_id) != ctx.node_id:
            errors: list[int] = [ErrorCode.NOT_COORDINATOR] * len(commits)
        else:
            errors = ctx.groups.commit_offsets(
                request.group_id,
                request.generation_id_or_member_epoch,
                request.member_id,
                commits,
                group_instance_id=request.group_instance_id if version >= 7 else None,
                api_version=version,
            )
        for row, error in zip(pending, errors, strict=True):
            row[1] = error
    return ctx.response(
        throttle_time_ms=0,
        topics=[
            TopicResponse(
                name=name or "",
                topic_id=topic_id,
                partitions=[
                    PartitionResponse(partition_index=index, error_code=error) for index, error in rows
                ],
            )
            for name, topic_id, rows in answers
        ],
    )
