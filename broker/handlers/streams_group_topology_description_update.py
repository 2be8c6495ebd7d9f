"""StreamsGroupTopologyDescriptionUpdate (93): a member sends its topology's description
for a topology description plugin to store. As on a Kafka broker without such a plugin
(the default), it is refused; the heartbeat never asks for one."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation
from broker.state.features import STREAMS_VERSION
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE
VERSIONS = (0, 0)
AUTHORIZATION = authorization.the_group(Operation.READ)
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NO_PLUGIN = "The broker has no streams group topology description plugin configured."


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.cluster.features.finalized.get(STREAMS_VERSION, 0) < 1:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=None)
    # GroupCoordinatorService.throwIfStreamsGroupTopologyDescriptionUpdateInvalid: no plugin
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=NO_PLUGIN)
