"""FindCoordinator (10): which broker coordinates a group or a transactional id (v4+:
many keys at once).

The answer is the coordinator's endpoint on the listener the client came in on: the
key's partition of __consumer_offsets or __transaction_state, as Kafka hashes it, spread
over the live brokers (the mock has no such topics to lead).
"""

from __future__ import annotations

import base64
from typing import Any

from kafka.protocol.metadata import FindCoordinatorResponse

from broker.context import RequestContext
from broker.error_responses import Level, by_version
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.state.groups import coordinator_of, partition_of
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.FIND_COORDINATOR
VERSIONS = (0, 6)
AUTHORIZATION = authorization.FIND_COORDINATOR
ENABLED = ALWAYS
ERROR_RESPONSE = by_version((0, None), (4, Level(("coordinator_keys",), "coordinators", (("key", ""),))))
Coordinator = FindCoordinatorResponse.Coordinator
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2  # the share coordinator of one share partition: "group:topicId:partition"
SHARE_STATE_PARTITIONS = 50  # share.coordinator.state.topic.num.partitions' default
# CoordinatorType's ids. KafkaApis
# sets no message on a v4+ coordinator it looks up, whatever its error (the schema's
# default, ""); a key type outside these fails the whole request (InvalidRequestException),
# and FindCoordinatorResponse.prepareErrorResponse puts Errors.message() on every key.
COORDINATOR_TYPES = frozenset({GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE})
# Errors.message() of the codes this handler returns, as Kafka puts them in v1-v3's
# error_message.
MESSAGES: dict[int, str] = {
    ErrorCode.NONE: "NONE",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.INVALID_REQUEST: (
        "This most likely occurs because of a request being malformed by the client library or "
        "the message was sent to an incompatible broker. See the broker logs for more details."
    ),
}
NO_NODE = (-1, "", -1)


def _share_partition_key(key: str) -> bool:
    """SharePartitionKey.getInstance's shape: a group id, a topic id (Uuid's base64 text)
    and a partition, joined by colons."""
    parts = key.split(":")
    if len(parts) != 3 or not parts[0]:
        return False
    try:
        return len(base64.urlsafe_b64decode(parts[1] + "==")) == 16 and int(parts[2]) >= 0
    except ValueError:  # binascii.Error included
        return False


def lookup(ctx: RequestContext, key_type: int, key: str) -> tuple[int, tuple[int, str, int]]:
    """(error, (node_id, host, port)) for one coordinator key."""
    if key_type == TRANSACTION_KEY_TYPE:
        node_id = ctx.transactions.coordinator_for(key)  # "" is not refused: it hashes to partition 0
    elif key_type == GROUP_KEY_TYPE:
        node_id = ctx.groups.coordinator_for(key)
    elif key_type == SHARE_KEY_TYPE and ctx.api_version >= 6 and _share_partition_key(key):
        # ShareCoordinatorService.partitionFor: the key's hash over __share_group_state
        node_id = coordinator_of(ctx.cluster, partition_of(key, SHARE_STATE_PARTITIONS))
    else:
        return ErrorCode.INVALID_REQUEST, NO_NODE
    node = ctx.cluster.brokers.get(node_id)
    if node is None or not node.up:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_NODE
    host, port = node.endpoint(ctx.connection.listener)
    return ErrorCode.NONE, (node_id, host, port)


def handle(ctx: RequestContext, request: Any) -> Any:
    key_type = request.key_type if ctx.api_version >= 1 else GROUP_KEY_TYPE
    if ctx.api_version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            error, (node_id, host, port) = lookup(ctx, key_type, key)
            coordinators.append(
                Coordinator(
                    key=key,
                    node_id=node_id,
                    host=host,
                    port=port,
                    error_code=error,
                    error_message=MESSAGES[error] if key_type not in COORDINATOR_TYPES else "",
                )
            )
        return ctx.response(throttle_time_ms=0, coordinators=coordinators)
    error, (node_id, host, port) = lookup(ctx, key_type, request.key)
    return ctx.response(
        throttle_time_ms=0,
        error_code=error,
        error_message=MESSAGES[error],
        node_id=node_id,
        host=host,
        port=port,
    )
