"""CreatePartitions (37): grows a topic's partition count, placing the new partitions as
the request's assignments ask (leader first) or as the controller's placer would; checks,
codes and messages are ControllerApis.createPartitions' and
ReplicationControlManager.createPartitions'.

The partitions added are charged to the controller mutation quota; from v3 a topic that
finds it exhausted gets THROTTLING_QUOTA_EXCEEDED (89).

The controller writes at most 10,000 metadata records per request (QuorumController's
MAX_RECORDS_PER_USER_OP, one per new partition): a topic whose new partitions would go
past that is answered UNKNOWN_SERVER_ERROR without a message, as the controller's
catch-all answers the BoundedListTooLongException, and gets none (growing a topic to
2^31-1 partitions stalled the broker)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafka.protocol.admin import CreatePartitionsResponse

from broker import throttling
from broker.context import RequestContext
from broker.error_responses import mirrors, topics
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from broker.state.cluster import ClusterError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.manager import ThrottlingQuotaExceeded

API_KEY = ApiKey.CREATE_PARTITIONS
VERSIONS = (0, 3)
AUTHORIZATION = authorization.each_topic(Operation.ALTER)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(topics("topics", "results", None, ("name", "name")))
STRICT_SINCE_VERSION = 3
MAX_RECORDS_PER_USER_OP = 10_000
Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def handle(ctx: RequestContext, request: Any) -> Any:
    quota = throttling.mutation_quota(ctx, strict=ctx.api_version >= STRICT_SINCE_VERSION)
    charge = throttling.charge_to(quota)
    counts = Counter(t.name for t in request.topics)
    # ControllerApis.createPartitions answers each repeated name once, first, and
    # leaves every occurrence of it alone.
    results = [
        Result(name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name.")
        for name in dict.fromkeys(t.name for t in request.topics if counts[t.name] > 1)
    ]
    records_left = MAX_RECORDS_PER_USER_OP
    for wanted in request.topics:
        if counts[wanted.name] > 1:
            continue
        error: int = ErrorCode.NONE
        message: str | None = None
        assignments = None if wanted.assignments is None else [list(a.broker_ids) for a in wanted.assignments]
        topic = ctx.cluster.topics.get(wanted.name)
        additional = wanted.count - len(topic.partitions) if topic is not None else 0
        if additional > records_left and (assignments is None or len(assignments) == additional):
            results.append(
                Result(name=wanted.name, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None)
            )
            continue
        try:
            ctx.cluster.create_partitions(
                wanted.name, wanted.count, bool(request.validate_only), charge, assignments
            )
            records_left -= max(0, additional)
        except ClusterError as exc:
            error, message = exc.code, exc.reply
        except ThrottlingQuotaExceeded:
            error = ErrorCode.THROTTLING_QUOTA_EXCEEDED
        results.append(Result(name=wanted.name, error_code=error, error_message=message))
    throttling.finish_mutations(ctx, quota)
    return ctx.response(throttle_time_ms=0, results=results)
