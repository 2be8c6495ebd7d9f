"""DeleteTopics (20): by name, or by topic id from v6.

Each topic's partitions are charged to the controller mutation quota; from v5 a topic
that finds it exhausted gets THROTTLING_QUOTA_EXCEEDED (89) and is kept."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DeleteTopicsResponse

from broker import throttling
from broker.context import RequestContext
from broker.state.cluster import Charge
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.manager import ThrottlingQuotaExceeded

API_KEY = ApiKey.DELETE_TOPICS
STRICT_SINCE_VERSION = 5
Result = DeleteTopicsResponse.DeletableTopicResult


def _delete(ctx: RequestContext, name: str | None, topic_id: Any, charge: Charge) -> Any:
    cluster = ctx.cluster
    if name is not None and topic_id is not None:
        return Result(
            name=name,
            topic_id=topic_id,
            error_code=ErrorCode.INVALID_REQUEST,
            error_message="Both name and id set",
        )
    if name is None:
        topic = cluster.topics_by_id.get(topic_id) if topic_id is not None else None
        if topic is None:
            return Result(
                name=None,
                topic_id=topic_id,
                error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                error_message="Unknown topic id",
            )
        name = topic.name
    topic = cluster.topics.get(name)
    if topic is None:
        return Result(
            name=name,
            topic_id=None,
            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            error_message="This server does not host this topic-partition.",
        )
    try:
        cluster.delete_topic(name, charge)
    except ThrottlingQuotaExceeded:
        return Result(
            name=name,
            topic_id=topic.topic_id,
            error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
            error_message=None,
        )
    return Result(name=name, topic_id=topic.topic_id, error_code=ErrorCode.NONE, error_message=None)


def handle(ctx: RequestContext, request: Any) -> Any:
    quota = throttling.mutation_quota(ctx, strict=ctx.api_version >= STRICT_SINCE_VERSION)
    charge = throttling.charge_to(quota)
    if ctx.api_version >= 6:
        results = [_delete(ctx, t.name, t.topic_id, charge) for t in request.topics]
    else:
        results = [_delete(ctx, name, None, charge) for name in request.topic_names]
    throttling.finish_mutations(ctx, quota)
    return ctx.response(throttle_time_ms=0, responses=results)
