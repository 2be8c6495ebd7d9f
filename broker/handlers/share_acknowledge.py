"""ShareAcknowledge (79): a share group member's acknowledgements of records it
acquired (ACCEPT, RELEASE, REJECT, RENEW), in its share session; epoch -1 closes it."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.share_common import (
    INITIAL_EPOCH,
    ShareRequestError,
    acknowledge,
    check_enabled,
    check_ids,
    node_endpoints,
    session_for,
)
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.SHARE_ACKNOWLEDGE
VERSIONS = (1, 2)
AUTHORIZATION = authorization.SHARE_FETCH
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
ShareAcknowledgeResponse = response_class(API_KEY)
TopicResult = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
PartitionResult = TopicResult.PartitionData
LeaderIdAndEpoch = PartitionResult.LeaderIdAndEpoch
NodeEndpoint = ShareAcknowledgeResponse.NodeEndpoint


def _response(ctx: RequestContext, code: int, message: str | None = None, **fields: Any) -> Any:
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        acquisition_lock_timeout_ms=fields.get("lock_ms", 0),
        responses=fields.get("responses", []),
        node_endpoints=fields.get("node_endpoints", []),
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    try:
        check_enabled(ctx)
        check_ids(request)
        if request.share_session_epoch == INITIAL_EPOCH:
            raise ShareRequestError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session = session_for(ctx, request, acknowledging=True)
    except ShareRequestError as error:
        return _response(ctx, error.code)
    outcomes = acknowledge(ctx, request, request.topics)
    if session is None:  # the final epoch: the session closes once acknowledged
        ctx.groups.share.close_session(ctx.node_id, request.group_id, request.member_id)
    by_topic: dict[Any, list[Any]] = {}
    for (topic_id, index), outcome in outcomes.items():
        code = outcome.acknowledge_error_code
        if code != ErrorCode.NONE:
            ctx.count_error(code)
        by_topic.setdefault(topic_id, []).append(
            PartitionResult(
                partition_index=index,
                error_code=code,
                error_message=outcome.acknowledge_error_message,
                current_leader=LeaderIdAndEpoch(
                    leader_id=outcome.leader_id, leader_epoch=outcome.leader_epoch
                ),
            )
        )
    return _response(
        ctx,
        ErrorCode.NONE,
        lock_ms=ctx.groups.share.config_int(request.group_id, "share.record.lock.duration.ms"),
        responses=[TopicResult(topic_id=t, partitions=ps) for t, ps in by_topic.items()],
        node_endpoints=node_endpoints(ctx, outcomes.values(), NodeEndpoint),
    )
