"""ConsumerGroupHeartbeat (68): KIP-848's one request for joining, staying in, leaving
and being assigned partitions in a consumer group; the assignment is the broker's."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.common import failed_heartbeat, heartbeat_answer
from broker.handlers.spec import WITH_CONSUMER_PROTOCOL
from broker.security import authorization
from broker.state.consumer_groups import HeartbeatError, HeartbeatRequest
from broker.state.features import GROUP_VERSION
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT
VERSIONS = (0, 1)
AUTHORIZATION = authorization.CONSUMER_GROUP_HEARTBEAT
ENABLED = WITH_CONSUMER_PROTOCOL
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = (
    "Regex subscriptions are resolved within the heartbeat that needs them, with Python's `re` standing for RE2J, and their topics are not filtered by DESCRIBE ACLs.",
    "The `uniform` assignor breaks ties by join order and topic name where Kafka's follow hash-map order.",
)


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.cluster.features.finalized.get(GROUP_VERSION, 0) < 1:
        # KafkaApis: the consumer protocol needs group.version 1 (downgraded with UpdateFeatures)
        return failed_heartbeat(ctx, ErrorCode.UNSUPPORTED_VERSION)
    heartbeat = HeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=request.subscribed_topic_names,
        subscribed_topic_regex=request.subscribed_topic_regex if ctx.api_version >= 1 else None,
        server_assignor=request.server_assignor,
        owned=(
            None
            if request.topic_partitions is None
            else [(t.topic_id, list(t.partitions)) for t in request.topic_partitions]
        ),
        client_id=ctx.client_id or "",
        client_host=f"/{ctx.connection.peer[0]}",
        api_version=ctx.api_version,
    )
    groups = ctx.groups
    try:
        groups.consumer.validate(heartbeat)
        if groups.coordinator_for(heartbeat.group_id) != ctx.node_id:
            return failed_heartbeat(ctx, ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
        result = groups.consumer_group_heartbeat(heartbeat)
    except HeartbeatError as error:
        return failed_heartbeat(ctx, error.code, error.message)
    return heartbeat_answer(ctx, result)
