"""Fetch (1): whole batches from the leader's log, long-polling until min_bytes or max_wait.

Fetch sessions (KIP-227) are declined the way a broker with a full session cache
declines them: session id 0 in every response, so clients keep sending full fetches.

Under consumer_byte_rate a fetch asks for at most quota x (samples - 1) windows of
bytes, the response's size is recorded, and a throttled client gets an empty response
(error NONE, no partitions) with the bytes taken back, as Kafka's KafkaApis does.

KIP-392, fetch from follower: a consumer's fetch from v11 on carries client metadata, so
(as Kafka's FetchParams.fetchOnlyLeader says) a follower serves it from its replica up to
the high watermark; older versions and other brokers' (replica) fetches get
NOT_LEADER_OR_FOLLOWER there. With `replica.selector.class` set, the leader asks the
selector for the consumer's preferred read replica and, when it names a follower, answers
that partition at once with no records and the follower's id (ReplicaManager.readFromLog).
Both live off the leader's path: a follower is looked at only where the leader check
failed, the selector only when one is configured.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kafka.protocol.consumer import FetchResponse

from broker import throttling
from broker.context import RequestContext
from broker.error_responses import Level, mirrors, topics
from broker.handlers.common import find_topic, led_partition
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.state.cluster import Partition, Topic
from broker.state.replica_selector import (
    NO_PREFERRED_REPLICA,
    ClientMetadata,
    ReplicaSelector,
    ReplicaView,
    preferred_read_replica,
)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.FETCH
VERSIONS = (4, 18)
AUTHORIZATION = authorization.FETCH
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(
    topics(
        "topics",
        "responses",
        Level(("partitions",), "partitions", (("partition_index", "partition"),)),
        ("topic", "topic"),
        ("topic_id", "topic_id"),
    ),
    top_level_only_from=13,  # FetchRequest.getErrorResponse: no partitions from v13 on
)
NOT_IMPLEMENTED = (
    "Fetch sessions (KIP-227): every session is declined with session id 0, as a broker whose session cache is full declines it, so clients send full fetches.",
)
TopicResult = FetchResponse.FetchableTopicResponse
PartitionResult = TopicResult.PartitionData
AbortedTransaction = PartitionResult.AbortedTransaction
READ_COMMITTED = 1
FETCH_FROM_FOLLOWER_VERSION = 11  # the first version with client metadata (rack_id)
_NOT_LEADER = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)  # a plain int: compared on every partition


def _replica_id(ctx: RequestContext, request: Any) -> int:
    """Who fetches: a broker id for a replica's fetch, negative for a consumer (v15 moved
    the id into replica_state)."""
    if ctx.api_version >= 15:
        state = request.replica_state
        return -1 if state is None else int(state.replica_id)
    return int(request.replica_id)


def _follower_partition(
    ctx: RequestContext, request: Any, topic: Topic, index: int, current_leader_epoch: int
) -> tuple[Partition | None, int]:
    """The partition when this broker, not its leader, may serve the fetch from its
    replica, else the error, in the order of Kafka's Partition.localLogWithEpochOrThrow:
    a broker holding no replica is NOT_LEADER_OR_FOLLOWER, the leader epoch is checked
    next, then fetchOnlyLeader (a replica's fetch, or a consumer's before v11) refuses."""
    partition = topic.partitions[index]
    if ctx.node_id not in partition.replicas:
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
    if current_leader_epoch >= 0:
        if current_leader_epoch < partition.leader_epoch:
            return None, ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > partition.leader_epoch:
            return None, ErrorCode.UNKNOWN_LEADER_EPOCH
    if ctx.api_version < FETCH_FROM_FOLLOWER_VERSION or _replica_id(ctx, request) >= 0:
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
    return partition, ErrorCode.NONE


def _client_metadata(ctx: RequestContext, request: Any) -> ClientMetadata | None:
    """DefaultClientMetadata for a consumer's fetch that carries it (v11+), for the
    replica selector; None for older versions and replicas' fetches: the leader serves."""
    if ctx.api_version < FETCH_FROM_FOLLOWER_VERSION or _replica_id(ctx, request) >= 0:
        return None
    connection = ctx.connection
    return ClientMetadata(
        request.rack_id or "",
        ctx.client_id,
        connection.peer[0],
        str(connection.principal),
        connection.listener,
    )


def _preferred_replica(
    ctx: RequestContext, selector: ReplicaSelector, client: ClientMetadata, partition: Partition, offset: int
) -> int:
    """The selector's choice for a partition this broker leads. Every replica reads the one
    shared log, so a follower on a live broker is in sync with the leader's offsets."""
    log = partition.log
    end, start = log.log_end_offset, log.log_start_offset
    brokers = ctx.cluster.brokers
    leader_node = brokers.get(partition.leader)
    leader = ReplicaView(partition.leader, leader_node.rack if leader_node is not None else None, end)
    followers = [
        (ReplicaView(r, node.rack, end), start, node.up)
        for r in partition.replicas
        if r != partition.leader and (node := brokers.get(r)) is not None
    ]
    return preferred_read_replica(
        selector, partition.topic, partition.index, client, leader, followers, offset
    )


def _collect(ctx: RequestContext, request: Any, max_bytes: int) -> tuple[list[Any], bool, list[Partition]]:
    """Builds the topic results; returns them, whether they are ready to send (min_bytes
    reached or an error to report, as Kafka answers errors at once) and the partitions read."""
    uses_ids = ctx.api_version >= 13
    remaining = max_bytes
    ctx.record_count, ctx.partition_count = 0, sum(len(t.partitions) for t in request.topics)
    ctx.error_code = ctx.error_count = 0  # counted here: the metrics row need not walk the response
    total = 0
    has_error = has_preferred = False
    read: list[Partition] = []
    results = []
    committed_only = ctx.api_version >= 4 and request.isolation_level == READ_COMMITTED
    selector = ctx.broker.replica_selector
    client = _client_metadata(ctx, request) if selector is not None else None
    for fetch_topic in request.topics:
        topic, topic_error = find_topic(
            ctx, None if uses_ids else fetch_topic.topic, fetch_topic.topic_id if uses_ids else None
        )
        partitions = []
        for wanted in fetch_topic.partitions:
            partition, error = (None, topic_error)
            if topic is not None:
                partition, error = led_partition(ctx, topic, wanted.partition, wanted.current_leader_epoch)
                if error == _NOT_LEADER:
                    partition, error = _follower_partition(
                        ctx, request, topic, wanted.partition, wanted.current_leader_epoch
                    )
            records: memoryview | bytes = b""
            high_watermark = log_start = stable = -1
            aborted = None
            preferred = NO_PREFERRED_REPLICA
            if partition is not None:
                log = partition.log
                read.append(partition)
                high_watermark, log_start = log.high_watermark, log.log_start_offset
                stable = log.last_stable_offset
                # read_committed reads up to the last stable offset, with the aborted
                # transactions in that range so the client can drop their records
                end = stable if committed_only else high_watermark
                if selector is not None and client is not None and partition.leader == ctx.node_id:
                    preferred = _preferred_replica(ctx, selector, client, partition, wanted.fetch_offset)
                if preferred != NO_PREFERRED_REPLICA:
                    # ReplicaManager.readFromLog skips the read: offsets only, sent at once
                    has_preferred = True
                elif not log_start <= wanted.fetch_offset <= high_watermark:
                    error = ErrorCode.OFFSET_OUT_OF_RANGE
                elif wanted.fetch_offset < end and (remaining > 0 or total == remaining == 0):
                    # KIP-74: the first batch even when max_bytes is 0 (a NaN consumer_byte_rate)
                    limit = min(wanted.partition_max_bytes, remaining)
                    # each batch is served with the leader epoch it was appended under
                    records, count = log.read_counted(
                        wanted.fetch_offset,
                        limit,
                        min_one=total == 0,
                        end_offset=end if committed_only else None,
                    )
                    if committed_only and log.aborted:
                        aborted = [
                            AbortedTransaction(producer_id=producer_id, first_offset=first)
                            for producer_id, first in log.aborted_transactions(wanted.fetch_offset, end)
                        ]
                    ctx.record_count = (ctx.record_count or 0) + count
                    remaining -= len(records)
                    total += len(records)
            if error != ErrorCode.NONE:
                has_error = True
                ctx.count_error(error)
                # FetchResponse.partitionResponse: an error carries no offsets, and a
                # partition the metadata does not know an empty aborted-transactions list
                high_watermark = log_start = stable = -1
                if partition is None and error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    aborted = []
            partitions.append(
                PartitionResult(
                    partition_index=wanted.partition,
                    error_code=error,
                    high_watermark=high_watermark,
                    last_stable_offset=stable,
                    log_start_offset=log_start,
                    aborted_transactions=aborted if aborted or not committed_only else [],
                    preferred_read_replica=preferred,
                    records=records,
                )
            )
        results.append(
            TopicResult(topic=fetch_topic.topic, topic_id=fetch_topic.topic_id, partitions=partitions)
        )
    # Kafka answers at once on an error and when it names a preferred read replica.
    return results, has_error or has_preferred or total >= min(request.min_bytes, max_bytes), read


def _respond(ctx: RequestContext, results: list[Any]) -> Any:
    response = ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=results)
    return throttling.fetch_answer(
        ctx,
        response,
        lambda: ctx.response(
            throttle_time_ms=ctx.throttle_ms, error_code=ErrorCode.NONE, session_id=0, responses=[]
        ),
    )


async def _long_poll(ctx: RequestContext, request: Any, max_bytes: int, partitions: list[Partition]) -> Any:
    woken = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    for partition in partitions:
        partition.log.append_listeners.append(wake)
    ctx.broker.stop_listeners.add(wake)
    try:
        deadline = asyncio.get_running_loop().time() + request.max_wait_ms / 1000
        while True:
            timeout = deadline - asyncio.get_running_loop().time()
            if timeout <= 0:
                break
            try:
                await asyncio.wait_for(asyncio.shield(woken), timeout)
            except TimeoutError:
                break
            finally:
                ctx.resumed_ns = time.monotonic_ns()  # handler work again, for the request quota
            results, ready, _ = _collect(ctx, request, max_bytes)
            if ready or not ctx.broker.running:
                return _respond(ctx, results)
            woken = asyncio.get_running_loop().create_future()
    finally:
        for partition in partitions:
            partition.log.append_listeners.remove(wake)
        ctx.broker.stop_listeners.discard(wake)
    results, _, _ = _collect(ctx, request, max_bytes)
    return _respond(ctx, results)


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version >= 7 and request.session_id != 0 and request.session_epoch > 0:
        # An incremental fetch of a session we never created. Epoch 0 or -1 asks for a
        # full fetch (closing that session), which is served below.
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[]
        )
    max_bytes = throttling.fetch_max_bytes(
        ctx, request.max_bytes if ctx.api_version >= 3 else throttling.INT32_MAX
    )
    results, ready, partitions = _collect(ctx, request, max_bytes)
    if ready or request.max_wait_ms <= 0 or not partitions:
        return _respond(ctx, results)
    return _long_poll(ctx, request, max_bytes, partitions)
