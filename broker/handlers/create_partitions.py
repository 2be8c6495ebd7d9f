"""CreatePartitions (37): grows a topic's partition count."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import CreatePartitionsResponse

from broker.cluster import ClusterError
from broker.context import RequestContext

API_KEY = 37
INVALID_REQUEST = 42
Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def handle(ctx: RequestContext, request: Any) -> Any:
    seen: set[str] = set()
    results = []
    for wanted in request.topics:
        error, message = 0, None
        if wanted.name in seen:
            error, message = INVALID_REQUEST, "Duplicate topic in request."
        else:
            seen.add(wanted.name)
            try:
                ctx.cluster.create_partitions(wanted.name, wanted.count, bool(request.validate_only))
            except ClusterError as exc:
                error, message = exc.code, exc.message
        results.append(Result(name=wanted.name, error_code=error, error_message=message))
    return ctx.response(throttle_time_ms=0, results=results)
