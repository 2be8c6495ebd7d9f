"""CreatePartitions (37): grows a topic's partition count.

The partitions added are charged to the controller mutation quota; from v3 a topic that
finds it exhausted gets THROTTLING_QUOTA_EXCEEDED (89)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import CreatePartitionsResponse

from broker import throttling
from broker.context import RequestContext
from broker.state.cluster import ClusterError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.manager import ThrottlingQuotaExceeded

API_KEY = ApiKey.CREATE_PARTITIONS
STRICT_SINCE_VERSION = 3
Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def handle(ctx: RequestContext, request: Any) -> Any:
    quota = throttling.mutation_quota(ctx, strict=ctx.api_version >= STRICT_SINCE_VERSION)
    charge = throttling.charge_to(quota)
    seen: set[str] = set()
    results = []
    for wanted in request.topics:
        error: int = ErrorCode.NONE
        message: str | None = None
        if wanted.name in seen:
            error, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
        else:
            seen.add(wanted.name)
            try:
                ctx.cluster.create_partitions(wanted.name, wanted.count, bool(request.validate_only), charge)
            except ClusterError as exc:
                error, message = exc.code, exc.message
            except ThrottlingQuotaExceeded:
                error = ErrorCode.THROTTLING_QUOTA_EXCEEDED
        results.append(Result(name=wanted.name, error_code=error, error_message=message))
    throttling.finish_mutations(ctx, quota)
    return ctx.response(throttle_time_ms=0, results=results)
