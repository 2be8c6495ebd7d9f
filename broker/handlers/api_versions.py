"""ApiVersions (18): the implemented APIs and versions, and the client's software name."""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import ApiVersionsResponse

from broker.context import RequestContext

API_KEY = 18
UNSUPPORTED_VERSION = 35


def _api_keys() -> list[Any]:
    from broker.handlers import HANDLERS

    return [
        ApiVersionsResponse.ApiVersion(
            api_key=key, min_version=spec.min_version, max_version=spec.max_version
        )
        for key, spec in sorted(HANDLERS.items())
    ]


def unsupported_version_response() -> Any:
    """The v0 answer to a version this broker does not know (KIP-511)."""
    return ApiVersionsResponse(version=0, error_code=UNSUPPORTED_VERSION, api_keys=_api_keys())


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version >= 3:
        ctx.connection.client_software_name = request.client_software_name or ""
        ctx.connection.client_software_version = request.client_software_version or ""
    return ctx.response(error_code=0, api_keys=_api_keys(), throttle_time_ms=0)
