"""ApiVersions (18): the implemented APIs and versions, and the client's software name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka.protocol.metadata import ApiVersionsResponse

from broker.context import RequestContext
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.API_VERSIONS


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
    return ctx.response(
        error_code=ErrorCode.NONE, api_keys=_api_keys(ctx.broker.advertised_apis), throttle_time_ms=0
    )
