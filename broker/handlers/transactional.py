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
