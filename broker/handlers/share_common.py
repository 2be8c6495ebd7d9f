"""What ShareFetch and ShareAcknowledge share: their share session checks and the
acknowledgements both carry (Kafka's SharePartitionManager and KafkaApis' share paths)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from broker.context import RequestContext
from broker.handlers.common import led_partition
from broker.security.acls import Operation, ResourceType
from broker.state.cluster import Partition
from broker.state.features import SHARE_VERSION
from broker.state.share_groups import ShareSession
from broker.state.share_partitions import REJECT, RENEW
from protocol.errors import ErrorCode

INITIAL_EPOCH, FINAL_EPOCH = 0, -1  # ShareRequestMetadata


class ShareRequestError(Exception):
    """A top-level error of a share request. Kafka answers it with the code alone
    (ShareFetchRequest.getErrorResponse): `why` is for the broker's log."""

    def __init__(self, code: int, why: str = "") -> None:
        super().__init__(why)
        self.code = code


@dataclass(slots=True)
class PartitionOutcome:
    """One partition of a share request as answered: its error, acknowledgement error."""

    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    acknowledge_error_code: int = ErrorCode.NONE
    acknowledge_error_message: str | None = None
    leader_id: int = 0
    leader_epoch: int = 0


def check_enabled(ctx: RequestContext) -> None:
    if ctx.cluster.features.finalized.get(SHARE_VERSION, 0) < 1:
        raise ShareRequestError(ErrorCode.UNSUPPORTED_VERSION)


def check_ids(request: Any) -> None:
    """KafkaApis refuses a share request without a group id (an empty one passes) or
    without a valid member id (the authorization stage lets a null group id through)."""
    if request.group_id is None:
        raise ShareRequestError(ErrorCode.INVALID_REQUEST, "Invalid group id in the request.")
    if not request.member_id or len(request.member_id) > 36:
        raise ShareRequestError(ErrorCode.INVALID_REQUEST, "Invalid member id in the request.")


def session_for(ctx: RequestContext, request: Any, acknowledging: bool) -> ShareSession | None:
    """The share session a request runs in (SharePartitionManager.newContext): epoch 0
    opens one, -1 is the last request of one (None: it is closed after), any other epoch
    must be the next of an open session."""
    share = ctx.groups.share
    epoch = request.share_session_epoch
    key = (ctx.node_id, request.group_id, request.member_id)
    if epoch == INITIAL_EPOCH:
        if acknowledging:
            raise ShareRequestError(ErrorCode.INVALID_REQUEST, "acknowledgements in an initial request")
        return share.open_session(*key, ctx.connection.connection_id)
    session = share.session(*key)
    if session is None:
        raise ShareRequestError(ErrorCode.SHARE_SESSION_NOT_FOUND)
    if epoch == FINAL_EPOCH:
        return None
    if session.epoch != epoch:
        raise ShareRequestError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    share.advance_session(session)
    return session


def resolve(
    ctx: RequestContext, topic_id: uuid.UUID, index: int
) -> tuple[Partition | None, PartitionOutcome]:
    """The partition this broker leads and the caller may read, or why not."""
    topic = ctx.cluster.topics_by_id.get(topic_id)
    if topic is None:
        return None, PartitionOutcome(ErrorCode.UNKNOWN_TOPIC_ID)
    connection = ctx.connection
    if not ctx.broker.authorizer.authorize(
        connection.principal, connection.peer[0], Operation.READ, ResourceType.TOPIC, topic.name
    ):
        return None, PartitionOutcome(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    partition, error = led_partition(ctx, topic, index)
    if partition is None:
        outcome = PartitionOutcome(error)
        if error == ErrorCode.NOT_LEADER_OR_FOLLOWER and 0 <= index < len(topic.partitions):
            led = topic.partitions[index]
            outcome.leader_id, outcome.leader_epoch = led.leader, led.leader_epoch
        return None, outcome
    return partition, PartitionOutcome()


def acknowledge(
    ctx: RequestContext, request: Any, topics: Iterable[Any]
) -> dict[tuple[uuid.UUID, int], PartitionOutcome]:
    """Applies the acknowledgement batches of each partition; its outcome by partition."""
    share = ctx.groups.share
    outcomes: dict[tuple[uuid.UUID, int], PartitionOutcome] = {}
    for topic in topics:
        for wanted in topic.partitions:
            if not wanted.acknowledgement_batches:
                continue
            partition, outcome = resolve(ctx, topic.topic_id, wanted.partition_index)
            if partition is not None and not valid_batches(ctx, request, wanted.acknowledgement_batches):
                outcome.acknowledge_error_code = ErrorCode.INVALID_REQUEST
            elif partition is not None:
                code, message = share.acknowledge(
                    request.group_id,
                    request.member_id,
                    topic.topic_id,
                    wanted.partition_index,
                    wanted.acknowledgement_batches,
                )
                outcome.acknowledge_error_code, outcome.acknowledge_error_message = code, message
            else:
                outcome.acknowledge_error_code = outcome.error_code
            outcomes[(topic.topic_id, wanted.partition_index)] = outcome
    return outcomes


def valid_batches(ctx: RequestContext, request: Any, batches: list[Any]) -> bool:
    """KafkaApis.validateAcknowledgementBatches: ordered, non-overlapping batches whose
    types are known to the version (RENEW from v2, and only in a renewing request)."""
    highest = RENEW if ctx.api_version >= 2 else REJECT
    renewing = ctx.api_version >= 2 and bool(request.is_renew_ack)
    previous_end = -1
    for batch in batches:
        types = batch.acknowledge_types
        if batch.first_offset > batch.last_offset or batch.first_offset <= previous_end:
            return False
        if not types or (len(types) > 1 and len(types) != batch.last_offset - batch.first_offset + 1):
            return False
        if any(t < 0 or t > highest for t in types) or (RENEW in types and not renewing):
            return False
        previous_end = batch.last_offset
    return True


def node_endpoints(
    ctx: RequestContext, outcomes: Iterable[PartitionOutcome], endpoint_class: Any
) -> list[Any]:
    """The current leaders of the partitions answered NOT_LEADER_OR_FOLLOWER."""
    leaders = sorted(
        {
            o.leader_id
            for o in outcomes
            if o.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and o.leader_id >= 0
        }
    )
    endpoints = []
    for node_id in leaders:
        node = ctx.cluster.brokers.get(node_id)
        if node is None:
            continue
        host, port = node.endpoint(ctx.connection.listener)
        endpoints.append(endpoint_class(node_id=node_id, host=host, port=port, rack=node.rack))
    return endpoints
