"""ShareFetch (78): a share group member's fetch, acquiring records under acquisition
locks in its share session, with acknowledgements of what it had acquired before.

As Kafka's KafkaApis and SharePartitionManager: the session epoch opens (0), continues
(the next epoch) or ends (-1: acknowledgements only, then the session closes and what the
member still holds goes back); acknowledgements are applied before the fetch; a fetch
that acquires nothing waits up to max_wait_ms for records to be appended or released.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from broker import throttling
from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.share_common import (
    PartitionOutcome,
    ShareRequestError,
    acknowledge,
    check_enabled,
    check_ids,
    node_endpoints,
    resolve,
    session_for,
)
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.state.cluster import Partition
from broker.state.share_partitions import Acquired
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.SHARE_FETCH
VERSIONS = (1, 2)
AUTHORIZATION = authorization.SHARE_FETCH
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
ShareFetchResponse = response_class(API_KEY)
TopicResult = ShareFetchResponse.ShareFetchableTopicResponse
PartitionResult = TopicResult.PartitionData
AcquiredRecords = PartitionResult.AcquiredRecords
LeaderIdAndEpoch = PartitionResult.LeaderIdAndEpoch
NodeEndpoint = ShareFetchResponse.NodeEndpoint

Key = tuple[uuid.UUID, int]


def _response(
    ctx: RequestContext, code: int, message: str | None = None, lock_ms: int = 0, **fields: Any
) -> Any:
    return ctx.response(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        acquisition_lock_timeout_ms=lock_ms,
        responses=fields.get("responses", []),
        node_endpoints=fields.get("node_endpoints", []),
    )


def _fetch(
    ctx: RequestContext, request: Any, keys: list[Key], max_bytes: int
) -> tuple[dict[Key, tuple[list[memoryview], list[Acquired]]], dict[Key, PartitionOutcome], list[Partition]]:
    """Acquires from each partition of the session, up to max_records in all."""
    share = ctx.groups.share
    remaining = request.max_records
    acquired: dict[Key, tuple[list[memoryview], list[Acquired]]] = {}
    errors: dict[Key, PartitionOutcome] = {}
    led: list[Partition] = []
    for key in keys:
        partition, outcome = resolve(ctx, *key)
        if partition is None:
            errors[key] = outcome
            continue
        led.append(partition)
        if remaining <= 0:
            continue
        batches, runs = share.acquire(
            request.group_id, request.member_id, key[0], partition, remaining, max_bytes
        )
        if runs:
            acquired[key] = (batches, runs)
            remaining -= sum(r.last_offset - r.first_offset + 1 for r in runs)
    return acquired, errors, led


def _build(
    ctx: RequestContext,
    request: Any,
    keys: list[Key],
    full: bool,
    acquired: dict[Key, tuple[list[memoryview], list[Acquired]]],
    outcomes: dict[Key, PartitionOutcome],
) -> Any:
    by_topic: dict[uuid.UUID, list[Any]] = {}
    records = 0
    for key in keys if full else [k for k in keys if k in acquired or k in outcomes]:
        outcome = outcomes.get(key, PartitionOutcome())
        batches, runs = acquired.get(key, ([], []))
        records += sum(r.last_offset - r.first_offset + 1 for r in runs)
        by_topic.setdefault(key[0], []).append(
            PartitionResult(
                partition_index=key[1],
                error_code=outcome.error_code,
                error_message=outcome.error_message,
                acknowledge_error_code=outcome.acknowledge_error_code,
                acknowledge_error_message=outcome.acknowledge_error_message,
                current_leader=LeaderIdAndEpoch(
                    leader_id=outcome.leader_id, leader_epoch=outcome.leader_epoch
                ),
                records=b"".join(batches),
                acquired_records=[
                    AcquiredRecords(
                        first_offset=r.first_offset,
                        last_offset=r.last_offset,
                        delivery_count=r.delivery_count,
                    )
                    for r in runs
                ],
            )
        )
    for outcome in outcomes.values():
        if outcome.error_code != ErrorCode.NONE:
            ctx.count_error(outcome.error_code)
    ctx.record_count = records
    return _response(
        ctx,
        ErrorCode.NONE,
        lock_ms=ctx.groups.share.config_int(request.group_id, "share.record.lock.duration.ms"),
        responses=[TopicResult(topic_id=t, partitions=ps) for t, ps in by_topic.items()],
        node_endpoints=node_endpoints(ctx, outcomes.values(), NodeEndpoint),
    )


def _respond(ctx: RequestContext, request: Any, response: Any) -> Any:
    """Fetch quotas count a share fetch's bytes as a fetch's (KafkaApis); a throttled
    client gets an empty response with the bytes taken back, and what the fetch acquired
    stays locked to it until the locks expire, as in Kafka."""
    return throttling.fetch_answer(
        ctx,
        response,
        lambda: _response(
            ctx,
            ErrorCode.NONE,
            lock_ms=ctx.groups.share.config_int(request.group_id, "share.record.lock.duration.ms"),
        ),
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    try:
        check_enabled(ctx)
        check_ids(request)
        acknowledging = any(p.acknowledgement_batches for t in request.topics for p in t.partitions)
        session = session_for(ctx, request, acknowledging)
    except ShareRequestError as error:
        return _response(ctx, error.code)
    share = ctx.groups.share
    outcomes = acknowledge(ctx, request, request.topics)
    if session is None:  # the final epoch: acknowledge, then close the session
        share.close_session(ctx.node_id, request.group_id, request.member_id)
        keys = list(outcomes)
        return _respond(ctx, request, _build(ctx, request, keys, False, {}, outcomes))
    full = request.share_session_epoch == 0
    for topic in request.topics:
        for wanted in topic.partitions:
            session.partitions[(topic.topic_id, wanted.partition_index)] = None
    for forgotten in request.forgotten_topics_data:
        for index in forgotten.partitions:
            session.partitions.pop((forgotten.topic_id, index), None)
    keys = list(session.partitions)
    max_bytes = throttling.fetch_max_bytes(ctx, request.max_bytes)
    acquired, errors, led = _fetch(ctx, request, keys, max_bytes)
    for key, failed in errors.items():
        outcome = outcomes.setdefault(key, PartitionOutcome())
        outcome.error_code, outcome.error_message = failed.error_code, failed.error_message
        outcome.leader_id, outcome.leader_epoch = failed.leader_id, failed.leader_epoch
    if acquired or errors or request.max_wait_ms <= 0 or not led:
        return _respond(ctx, request, _build(ctx, request, keys, full, acquired, outcomes))
    return _long_poll(ctx, request, keys, full, outcomes, led, max_bytes)


async def _long_poll(
    ctx: RequestContext,
    request: Any,
    keys: list[Key],
    full: bool,
    outcomes: dict[Key, PartitionOutcome],
    led: list[Partition],
    max_bytes: int,
) -> Any:
    """Waits for records appended to, or released in, the session's partitions."""
    loop = asyncio.get_running_loop()
    woken = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    share = ctx.groups.share
    for partition in led:
        partition.log.append_listeners.append(wake)
    share.available_listeners.add(wake)
    ctx.broker.stop_listeners.add(wake)
    acquired: dict[Key, tuple[list[memoryview], list[Acquired]]] = {}
    try:
        deadline = loop.time() + request.max_wait_ms / 1000
        while not acquired and ctx.broker.running:
            timeout = deadline - loop.time()
            if timeout <= 0:
                break
            try:
                await asyncio.wait_for(asyncio.shield(woken), timeout)
            except TimeoutError:
                break
            finally:
                ctx.resumed_ns = time.monotonic_ns()
            woken = loop.create_future()
            if share.session(ctx.node_id, request.group_id, request.member_id) is None:
                break  # closed meanwhile: acquire nothing for a session that is gone
            acquired, _, _ = _fetch(ctx, request, keys, max_bytes)
    finally:
        for partition in led:
            partition.log.append_listeners.remove(wake)
        share.available_listeners.discard(wake)
        ctx.broker.stop_listeners.discard(wake)
    return _respond(ctx, request, _build(ctx, request, keys, full, acquired, outcomes))
