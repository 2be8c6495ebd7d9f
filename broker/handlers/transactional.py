"""Checks shared by the transaction APIs' handlers (KafkaApis' transactional steps)."""

from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode


def coordinator_error(ctx: RequestContext, transactional_id: str | None) -> int:
    """NOT_COORDINATOR unless this broker coordinates the transactional id (the client
    asks FindCoordinator again); INVALID_REQUEST for a missing or empty id."""
    if not transactional_id:
        return ErrorCode.INVALID_REQUEST
    if ctx.transactions.coordinator_for(transactional_id) != ctx.node_id:
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.NONE


def fenced_for_version(error: int, version: int, first_version_with_fenced: int) -> int:
    """PRODUCER_FENCED is new in some version of each API; older versions get
    INVALID_PRODUCER_EPOCH, as KafkaApis rewrites it."""
    if error == ErrorCode.PRODUCER_FENCED and version < first_version_with_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def verification_error(
    ctx: RequestContext,
    transactional_id: str | None,
    producer_id: int,
    producer_epoch: int,
    partition: tuple[str, int],
) -> int:
    """The coordinator's answer to a leader verifying that a partition is in the producer's
    transaction (KIP-890 part 1), translated as AddPartitionsToTxnManager translates it:
    a fenced producer is INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE means not added."""
    if not transactional_id:
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    error = ctx.transactions.verify_partitions(transactional_id, producer_id, producer_epoch, [partition])[
        partition
    ]
    return ErrorCode.INVALID_PRODUCER_EPOCH if error == ErrorCode.PRODUCER_FENCED else error
