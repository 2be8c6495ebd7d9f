"""OffsetFetch (9): committed offsets of a group (v8+: several groups; v9: the member's
id and epoch, checked in consumer-protocol groups; v10: topic ids).

Partitions without a commit answer offset -1, and `topics` null asks for every
committed offset of the group. With `require_stable` (v7+, KIP-447) a partition whose
offset an open transaction is committing answers UNSTABLE_OFFSET_COMMIT, so the
consumer retries rather than start from an offset that may yet change.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.consumer import OffsetFetchResponse

from broker.context import RequestContext
from broker.error_responses import Level, by_version
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.state.groups import CommittedOffset
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.OFFSET_FETCH
VERSIONS = (1, 10)
AUTHORIZATION = authorization.OFFSET_FETCH
ENABLED = ALWAYS
ERROR_RESPONSE = by_version((0, None), (8, Level(("groups",), "groups", (("group_id", "group_id"),))))
# v1-7: one group at the top level
TopicV1 = OffsetFetchResponse.OffsetFetchResponseTopic
PartitionV1 = TopicV1.OffsetFetchResponsePartition
# v8+: per group
Group = OffsetFetchResponse.OffsetFetchResponseGroup
TopicV8 = Group.OffsetFetchResponseTopics
PartitionV8 = TopicV8.OffsetFetchResponsePartitions

# name, topic id, [(partition, committed or None, error)]
Answer = tuple[str, uuid.UUID | None, list[tuple[int, CommittedOffset | None, int]]]


def fetch(
    ctx: RequestContext,
    group_id: str,
    topics: Any,
    use_ids: bool,
    require_stable: bool = False,
    member: tuple[str | None, int] = (None, -1),
) -> tuple[int, list[Answer]]:
    """(group error, topics) for one group; `topics` None means all committed offsets;
    `member` (v9+) is the fetching member's id and epoch in a consumer-protocol group."""
    if ctx.groups.coordinator_for(group_id) != ctx.node_id:
        return ErrorCode.NOT_COORDINATOR, []
    error = ctx.groups.validate_offset_fetch(group_id, *member)
    if error != ErrorCode.NONE:
        return error, []
    answers = _fetch(ctx, group_id, topics, use_ids)
    if require_stable and ctx.groups.pending_offsets.get(group_id):
        answers = [
            (
                name,
                topic_id,
                [
                    (i, None, ErrorCode.UNSTABLE_OFFSET_COMMIT)
                    if error == ErrorCode.NONE and ctx.groups.has_pending_offsets(group_id, name, i)
                    else (i, committed, error)
                    for i, committed, error in rows
                ],
            )
            for name, topic_id, rows in answers
        ]
    return ErrorCode.NONE, answers


def _fetch(ctx: RequestContext, group_id: str, topics: Any, use_ids: bool) -> list[Answer]:
    cluster = ctx.cluster
    if topics is None:
        answers: dict[str, Answer] = {}
        for (name, index), committed in ctx.groups.fetch_offsets(group_id).items():
            topic = cluster.topics.get(name)
            answer = answers.setdefault(name, (name, topic.topic_id if topic else None, []))
            answer[2].append((index, committed, ErrorCode.NONE))
        return list(answers.values())
    result: list[Answer] = []
    wanted: list[tuple[str, int]] = []
    for requested in topics:
        if use_ids:
            topic = cluster.topics_by_id.get(requested.topic_id)
            if topic is None:
                result.append(
                    (
                        "",
                        requested.topic_id,
                        [(i, None, ErrorCode.UNKNOWN_TOPIC_ID) for i in requested.partition_indexes],
                    )
                )
                continue
            name, topic_id = topic.name, topic.topic_id
        else:
            name, topic_id = requested.name, None
        result.append((name, topic_id, [(i, None, ErrorCode.NONE) for i in requested.partition_indexes]))
        wanted.extend((name, i) for i in requested.partition_indexes)
    offsets = ctx.groups.fetch_offsets(group_id, wanted)
    return [
        (
            name,
            topic_id,
            [(i, offsets.get((name, i)) if error == ErrorCode.NONE else None, error) for i, _, error in rows],
        )
        for name, topic_id, rows in result
    ]


def _fields(committed: CommittedOffset | None) -> dict[str, Any]:
    if committed is None:
        return {"committed_offset": -1, "committed_leader_epoch": -1, "metadata": ""}
    return {
        "committed_offset": committed.offset,
        "committed_leader_epoch": committed.leader_epoch,
        "metadata": committed.metadata,
    }


def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    if version >= 8:
        groups = []
        for wanted in request.groups:
            error, answers = fetch(
                ctx,
                wanted.group_id,
                wanted.topics,
                use_ids=version >= 10,
                require_stable=request.require_stable,
                member=(wanted.member_id, wanted.member_epoch) if version >= 9 else (None, -1),
            )
            groups.append(
                Group(
                    group_id=wanted.group_id,
                    error_code=error,
                    topics=[
                        TopicV8(
                            name=name,
                            topic_id=topic_id,
                            partitions=[
                                PartitionV8(partition_index=i, error_code=code, **_fields(c))
                                for i, c, code in rows
                            ],
                        )
                        for name, topic_id, rows in answers
                    ],
                )
            )
        return ctx.response(throttle_time_ms=0, groups=groups)
    error, answers = fetch(
        ctx,
        request.group_id,
        request.topics,
        use_ids=False,
        require_stable=version >= 7 and request.require_stable,
    )
    if error != ErrorCode.NONE and version < 2:
        # v0-1 have no group-level error: every requested partition carries it.
        answers = [
            (t.name, None, [(i, None, error) for i in t.partition_indexes]) for t in request.topics or []
        ]
    return ctx.response(
        throttle_time_ms=0,
        error_code=error,
        topics=[
            TopicV1(
                name=name,
                partitions=[
                    PartitionV1(partition_index=i, error_code=code, **_fields(c)) for i, c, code in rows
                ],
            )
            for name, _, rows in answers
        ],
    )
