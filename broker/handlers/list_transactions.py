"""ListTransactions (66): the transactions this broker coordinates, filtered by state,
producer id, duration (v1) and transactional id pattern (v2); the admin client asks
every broker and merges the answers, as with Kafka's coordinators."""

from __future__ import annotations

import re
import time
from typing import Any

from kafka.protocol.admin.transactions import ListTransactionsResponse

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.state.transactions import STATES
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.LIST_TRANSACTIONS
VERSIONS = (0, 2)
AUTHORIZATION = authorization.LIST_TRANSACTIONS
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
State = ListTransactionsResponse.TransactionState


def handle(ctx: RequestContext, request: Any) -> Any:
    states = set(request.state_filters or ())
    unknown = sorted(states - set(STATES))
    producers = set(request.producer_id_filters or ())
    duration = request.duration_filter if ctx.api_version >= 1 else -1
    pattern = None
    if ctx.api_version >= 2 and request.transactional_id_pattern:
        try:
            pattern = re.compile(request.transactional_id_pattern)
        except re.error:
            return ctx.response(
                throttle_time_ms=0,
                error_code=ErrorCode.INVALID_REGULAR_EXPRESSION,
                unknown_state_filters=[],
                transaction_states=[],
            )
    now = int(time.time() * 1000)
    listed = [
        State(transactional_id=txn.transactional_id, producer_id=txn.producer_id, transaction_state=txn.state)
        for txn in ctx.transactions.listed()
        if ctx.transactions.coordinator_for(txn.transactional_id) == ctx.node_id
        and (not states or txn.state in states)
        and (not producers or txn.producer_id in producers)
        and (duration < 0 or (txn.start_ms >= 0 and now - txn.start_ms >= duration))
        and (pattern is None or pattern.fullmatch(txn.transactional_id) is not None)
    ]
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        unknown_state_filters=unknown,
        transaction_states=listed,
    )
