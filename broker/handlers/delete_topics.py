"""DeleteTopics (20): by name, or by topic id from v6, checked as ControllerApis.deleteTopics
checks them: entries with neither or both, repeated names and ids, unknown names and ids,
and a name that maps to an id the request also gives, each with Kafka's code and message.

Each topic's partitions are charged to the controller mutation quota; from v5 a topic
that finds it exhausted gets THROTTLING_QUOTA_EXCEEDED (89) and is kept. Kafka shuffles
the results; here they come as the checks find them, deletions last in request order."""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin import DeleteTopicsResponse

from broker import throttling
from broker.context import RequestContext
from broker.error_responses import by_version, topics
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from broker.state.cluster import Charge, ClusterState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.manager import ThrottlingQuotaExceeded

API_KEY = ApiKey.DELETE_TOPICS
VERSIONS = (1, 6)
AUTHORIZATION = authorization.each_topic(Operation.DELETE)
ENABLED = ALWAYS
ERROR_RESPONSE = by_version(
    (0, topics("topic_names", "responses", None, ("name", ""))),
    (6, topics("topics", "responses")),
)
STRICT_SINCE_VERSION = 5
Result = DeleteTopicsResponse.DeletableTopicResult
# ApiError(error) carries the error's default message.
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."


def _result(name: str | None, topic_id: uuid.UUID | None, code: int, message: str | None) -> Any:
    return Result(name=name, topic_id=topic_id, error_code=code, error_message=message)


def _zero(topic_id: uuid.UUID | None) -> bool:
    return topic_id is None or topic_id.int == 0


def _delete(
    cluster: ClusterState, entries: list[tuple[str | None, uuid.UUID | None]], charge: Charge
) -> list[Any]:
    results = []
    names: dict[str, None] = {}
    duplicate_names: dict[str, None] = {}
    ids: dict[uuid.UUID, None] = {}
    duplicate_ids: dict[uuid.UUID, None] = {}
    for name, topic_id in entries:
        if name is None and _zero(topic_id):
            results.append(
                _result(None, None, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
            )
        elif name is None:
            assert topic_id is not None
            if topic_id in ids or topic_id in duplicate_ids:
                duplicate_ids[topic_id] = None
                ids.pop(topic_id, None)
            else:
                ids[topic_id] = None
        elif _zero(topic_id):
            if name in names or name in duplicate_names:
                duplicate_names[name] = None
                names.pop(name, None)
            else:
                names[name] = None
        else:
            results.append(
                _result(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "You may not specify both topic name and topic id.",
                )
            )
    results += [_result(n, None, ErrorCode.INVALID_REQUEST, "Duplicate topic name.") for n in duplicate_names]
    results += [_result(None, i, ErrorCode.INVALID_REQUEST, "Duplicate topic id.") for i in duplicate_ids]
    by_id: dict[uuid.UUID, str] = {}
    for topic_id in ids:
        topic = cluster.topics_by_id.get(topic_id)
        if topic is None:
            results.append(_result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_ID_MESSAGE))
        else:
            by_id[topic_id] = topic.name
    for name in names:
        topic = cluster.topics.get(name)
        if topic is None:
            results.append(_result(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE))
        elif topic.topic_id in by_id or topic.topic_id in duplicate_ids:
            # The name and an id of the request are one topic: neither is deleted.
            duplicate_ids[topic.topic_id] = None
            by_id.pop(topic.topic_id, None)
            results.append(
                _result(
                    name,
                    topic.topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "The provided topic name maps to an ID that was already supplied.",
                )
            )
        else:
            by_id[topic.topic_id] = name
    for topic_id, name in by_id.items():
        try:
            cluster.delete_topic(name, charge)
        except ThrottlingQuotaExceeded:
            results.append(_result(name, topic_id, ErrorCode.THROTTLING_QUOTA_EXCEEDED, None))
        else:
            results.append(_result(name, topic_id, ErrorCode.NONE, None))
    return results


def handle(ctx: RequestContext, request: Any) -> Any:
    quota = throttling.mutation_quota(ctx, strict=ctx.api_version >= STRICT_SINCE_VERSION)
    charge = throttling.charge_to(quota)
    if ctx.api_version >= 6:
        entries = [(t.name, t.topic_id) for t in request.topics]
    else:
        entries = [(name, None) for name in request.topic_names]
    results = _delete(ctx.cluster, entries, charge)
    throttling.finish_mutations(ctx, quota)
    return ctx.response(throttle_time_ms=0, responses=results)
