"""Metadata (3): brokers on the client's listener, topics, leaders; auto-creates topics.

A topic that is not there is UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION when
Topic.validate refuses its name (empty, `.`, `..`, other characters, over 249),
auto-creation or not. Auto-creation as Kafka 4.x's AutoTopicCreationManager does it: the
topic is answered UNKNOWN_TOPIC_OR_PARTITION and a CreateTopics goes to the controller
on the client's behalf, which the controller meters strictly against the client's
controller_mutation_rate: while the bucket is empty the creation is refused (logged)
and the client, retrying its Metadata, keeps seeing the topic unknown. The Metadata
response itself is not throttled for it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafka.protocol.metadata import MetadataResponse

from broker import throttling
from broker.context import RequestContext
from broker.error_responses import mirrors, topics
from broker.handlers.common import PartitionState
from broker.handlers.describe_cluster import cluster_operations
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import ResourceType
from broker.state.cluster import ClusterError, Topic, validate_topic_name
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.structs import maker
from quotas.manager import ControllerMutationQuota, ThrottlingQuotaExceeded

log = logging.getLogger("broker.auto_topic_creation")

API_KEY = ApiKey.METADATA
VERSIONS = (0, 13)
AUTHORIZATION = authorization.METADATA
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(topics("topics", "topics"))
Broker = MetadataResponse.MetadataResponseBroker
TopicEntry = MetadataResponse.MetadataResponseTopic
PartitionEntry = TopicEntry.MetadataResponsePartition
# kafka-python encodes None as Kafka's "not requested" sentinel (INT32_MIN).
AUTHORIZED_OPERATIONS_OMITTED = None


# The entries built as kafka-python's constructors build them without a version (what
# recordings show), written once: DataContainer.__init__ walked every schema field of
# every entry, a third of a small Metadata request's cost.
_broker = maker(Broker, "node_id", "host", "port", "rack")
_topic = maker(
    TopicEntry, "error_code", "name", "topic_id", "is_internal", "partitions", "authorized_operations"
)
_partition = maker(
    PartitionEntry,
    "error_code",
    "partition_index",
    "leader_id",
    "leader_epoch",
    "replica_nodes",
    "isr_nodes",
    "offline_replicas",
)


def topic_entry(ctx: RequestContext, topic: Topic, live: set[int] | None = None) -> Any:
    if live is None:
        live = set(ctx.cluster.live_broker_ids())
    partitions = []
    for partition in topic.partitions:
        state = PartitionState.of(partition, live)
        partitions.append(
            _partition(
                state.error_code,
                partition.index,
                state.leader_id,
                partition.leader_epoch,
                list(partition.replicas),
                state.isr,
                state.offline,
            )
        )
    return _topic(
        ErrorCode.NONE,
        topic.name,
        topic.topic_id,
        topic.is_internal,
        partitions,
        AUTHORIZED_OPERATIONS_OMITTED,
    )


def _error_entry(code: int, name: str | None, topic_id: Any = None) -> Any:
    return _topic(code, name, topic_id, False, [], AUTHORIZED_OPERATIONS_OMITTED)


def _count_errors(ctx: RequestContext, entries: list[Any]) -> None:
    """No error anywhere (the common answer): the metrics row and the conformance report
    need not walk the response for error codes. Otherwise they do, as before."""
    for entry in entries:
        if entry.error_code:
            return
        for partition in entry.partitions:
            if partition.error_code:
                return
    ctx.error_code = ctx.error_count = 0


def _add_topic_operations(ctx: RequestContext, entries: list[Any]) -> None:
    """include_topic_authorized_operations: what the caller may do to each topic answered
    (not to those refused or unknown by id, which keep the 'not requested' value)."""
    authorizer, principal, host = ctx.broker.authorizer, ctx.connection.principal, ctx.connection.peer[0]
    for entry in entries:
        if entry.name and entry.error_code != ErrorCode.UNKNOWN_TOPIC_ID:
            entry.authorized_operations = authorizer.authorized_operations(
                principal, host, ResourceType.TOPIC, entry.name
            )


def _unknown_error(name: str) -> int:
    """KafkaApis.getTopicMetadata for a topic that is not there (and not auto-created):
    INVALID_TOPIC_EXCEPTION for a name Topic.validate refuses, else UNKNOWN_TOPIC_OR_PARTITION."""
    try:
        validate_topic_name(name)
    except ClusterError:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _may_auto_create(ctx: RequestContext, request: Any) -> bool:
    allowed = ctx.api_version < 4 or request.allow_auto_topic_creation
    return bool(allowed and ctx.config.get_bool("auto.create.topics.enable"))


def _request_creation(ctx: RequestContext, name: str) -> int:
    """Asks the controller to create `name`; the error code the topic is answered with."""
    error = _unknown_error(name)
    if error != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return error
    cluster = ctx.cluster
    if name not in cluster.auto_creating:
        cluster.auto_creating.add(name)
        quota = throttling.mutation_quota(ctx, strict=True)  # the controller's, for this client
        partitions = ctx.config.get_int("num.partitions")
        replication = ctx.config.get_int("default.replication.factor")
        asyncio.get_running_loop().call_soon(_create, ctx, name, partitions, replication, quota)
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _create(
    ctx: RequestContext, name: str, partitions: int, replication: int, quota: ControllerMutationQuota
) -> None:
    """The controller's side of an auto-creation, after the Metadata response."""
    cluster = ctx.cluster
    cluster.auto_creating.discard(name)
    if name in cluster.topics:
        return
    try:
        cluster.create_topic(name, partitions, replication, charge=throttling.charge_to(quota))
    except ThrottlingQuotaExceeded:
        log.warning("Auto topic creation failed for %s with error 'THROTTLING_QUOTA_EXCEEDED'", name)
    except ClusterError as exc:
        log.warning("Auto topic creation failed for %s with error %d: %s", name, exc.code, exc.message)


def handle(ctx: RequestContext, request: Any) -> Any:
    cluster = ctx.cluster
    live_ids = cluster.live_broker_ids()
    live = set(live_ids)
    entries = []
    if request.topics is None or (ctx.api_version == 0 and not request.topics):
        entries = [topic_entry(ctx, topic, live) for topic in cluster.topics.values()]
    else:
        for wanted in request.topics:
            if wanted.name is None:
                topic = cluster.topics_by_id.get(wanted.topic_id) if wanted.topic_id else None
                entries.append(
                    topic_entry(ctx, topic, live)
                    if topic
                    else _error_entry(ErrorCode.UNKNOWN_TOPIC_ID, None, wanted.topic_id)
                )
                continue
            topic = cluster.topics.get(wanted.name)
            if topic is None and _may_auto_create(ctx, request):
                entries.append(_error_entry(_request_creation(ctx, wanted.name), wanted.name))
                continue
            entries.append(
                topic_entry(ctx, topic, live)
                if topic
                else _error_entry(_unknown_error(wanted.name), wanted.name)
            )
    if ctx.api_version >= 8 and request.include_topic_authorized_operations:
        _add_topic_operations(ctx, entries)
    _count_errors(ctx, entries)
    listener = ctx.connection.listener
    brokers = []
    for node_id in live_ids:
        node = cluster.brokers[node_id]
        host, port = node.endpoint(listener)
        brokers.append(_broker(node_id, host, port, node.rack))
    version = ctx.api_version
    extra: dict[str, Any] = {}
    # Fields the version has only: one outside it sends protocol.structs.new to the
    # constructor's schema walk (left out, it reads as its default: None, NONE).
    if 8 <= version <= 10:
        extra["authorized_operations"] = (
            cluster_operations(ctx)
            if request.include_cluster_authorized_operations
            else AUTHORIZED_OPERATIONS_OMITTED
        )
    if version >= 13:
        extra["error_code"] = ErrorCode.NONE
    return ctx.response(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        topics=entries,
        **extra,
    )
