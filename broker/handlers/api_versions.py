"""ApiVersions (18): the implemented APIs and versions, the client's software name, and
(v3+) the features this broker supports and has finalized: transaction.version 2, so
clients that know KIP-890 part 2 (the Java client) use its epoch bumps.

Below v4 the supported features leave out those whose minimum is 0 (KAFKA-17011: older
clients refuse a 0 minimum), as Kafka does. v5 (KIP-1242) carries the cluster id and node
id the client means to reach: both or neither (else INVALID_REQUEST), and when they are
not this broker's, REBOOTSTRAP_REQUIRED, both answered with no APIs and the connection
kept open."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import NOT_CHECKED
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.API_VERSIONS
VERSIONS = (0, 5)
ApiVersionsResponse = response_class(API_KEY)
AUTHORIZATION = NOT_CHECKED
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def _api_keys(advertised: Mapping[int, tuple[int, int]]) -> list[Any]:
    return [
        ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
        for key, (low, high) in sorted(advertised.items())
    ]


def unsupported_version_response(advertised: Mapping[int, tuple[int, int]]) -> Any:
    """The v0 answer to a version this broker does not know (KIP-511)."""
    return ApiVersionsResponse(
        version=0, error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=_api_keys(advertised)
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version >= 3:
        ctx.connection.client_software_name = request.client_software_name or ""
        ctx.connection.client_software_version = request.client_software_version or ""
    if ctx.api_version >= 5:
        refusal = _target_refusal(ctx, request.cluster_id, request.node_id)
        if refusal is not None:
            return ctx.response(error_code=refusal, api_keys=[], throttle_time_ms=0)
    response, body = _answer(ctx)
    # Sent as encoded here unless throttled (the pipeline then copies it, writes the
    # throttle time into the copy and encodes that); no error to count, so the metrics
    # and conformance need not walk the 60-odd entries.
    ctx.encoded = (response, [body])
    ctx.error_code = ctx.error_count = 0
    return response


def _target_refusal(ctx: RequestContext, cluster_id: str | None, node_id: int) -> ErrorCode | None:
    """KIP-1242: a client that names the cluster and node it means to reach is told to
    bootstrap again when this broker is not that node of that cluster."""
    if cluster_id is None and node_id < 0:
        return None
    if cluster_id is None or node_id < 0:
        return ErrorCode.INVALID_REQUEST
    if cluster_id != ctx.cluster.cluster_id or node_id != ctx.node_id:
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return None


def _answer(ctx: RequestContext) -> tuple[Any, bytes]:
    """The response and its encoding, the same for every request until the APIs or the
    finalized features change: built and encoded once (Kafka caches this answer too;
    60-odd ApiVersion entries built and encoded were 95 % of the request's cost)."""
    advertised, features = ctx.broker.advertised_apis, ctx.cluster.features
    finalized = tuple(features.finalized.items())
    key = (ctx.api_version, id(advertised), features.epoch)
    cached = _ANSWERS.get(key)
    if cached is None or cached[0] is not advertised or cached[1] != finalized:
        if len(_ANSWERS) >= 64:
            _ANSWERS.clear()
        response = _build(ctx)
        cached = _ANSWERS[key] = (
            advertised,
            finalized,
            response,
            bytes(response.encode(version=ctx.api_version)),
        )
    # The cached object itself: encoded ahead (ctx.encoded), the pipeline copies it
    # before writing a throttle time into it, and nothing else changes a response.
    return cached[2], cached[3]


# (version, APIs, features epoch) -> (the APIs, finalized features, response, its bytes)
_ANSWERS: dict[tuple[int, int, int], tuple[Mapping[int, tuple[int, int]], tuple[Any, ...], Any, bytes]] = {}


def _build(ctx: RequestContext) -> Any:
    if ctx.api_version < 3:
        return ctx.response(
            error_code=ErrorCode.NONE, api_keys=_api_keys(ctx.broker.advertised_apis), throttle_time_ms=0
        )
    features = ctx.cluster.features
    return ctx.response(
        error_code=ErrorCode.NONE,
        api_keys=_api_keys(ctx.broker.advertised_apis),
        throttle_time_ms=0,
        supported_features=[
            ApiVersionsResponse.SupportedFeatureKey(name=name, min_version=low, max_version=high)
            for name, (low, high) in features.supported.items()
            if low > 0 or ctx.api_version >= 4
        ],
        finalized_features_epoch=features.epoch,
        finalized_features=[
            ApiVersionsResponse.FinalizedFeatureKey(
                name=name, max_version_level=level, min_version_level=level
            )
            for name, level in features.finalized.items()
        ],
    )
