"""AlterReplicaLogDirs (34): moves replicas between a broker's log directories
(kafka-reassign-partitions.sh --reassignment-json-file with log dirs). Each mock broker
has one directory, so a move can only name it, and there is nothing to copy: as in
ReplicaManager.alterReplicaLogDirs, another path is LOG_DIR_NOT_FOUND and a partition
this broker holds no replica of is REPLICA_NOT_AVAILABLE. ALTER on the cluster."""

from __future__ import annotations

import os
from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.common import log_dir
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import ALTER
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.ALTER_REPLICA_LOG_DIRS
VERSIONS = (1, 2)
AUTHORIZATION = by_handler("ALTER on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = ("Nothing moves: each broker has its one log directory, and partitions live in memory.",)
TopicResult = response_class(API_KEY).AlterReplicaLogDirTopicResult
PartitionResult = TopicResult.AlterReplicaLogDirPartitionResult


def _error(ctx: RequestContext, directory: str, topic_name: str, index: int) -> int:
    if os.path.abspath(directory) != log_dir(ctx):
        return ErrorCode.LOG_DIR_NOT_FOUND
    topic = ctx.cluster.topics.get(topic_name)
    if (
        topic is None
        or not 0 <= index < len(topic.partitions)
        or ctx.node_id not in topic.partitions[index].replicas
    ):
        return ErrorCode.REPLICA_NOT_AVAILABLE
    return ErrorCode.NONE  # already there


def handle(ctx: RequestContext, request: Any) -> Any:
    allowed = ctx.broker.authorizer.authorize_cluster(ctx.connection.principal, ALTER, ctx.connection.peer[0])
    results: dict[str, list[Any]] = {}
    for directory in request.dirs:
        for topic in directory.topics:
            rows = results.setdefault(topic.name, [])
            for index in topic.partitions:
                code = (
                    _error(ctx, directory.path, topic.name, index)
                    if allowed
                    else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                )
                rows.append(PartitionResult(partition_index=index, error_code=code))
    return ctx.response(
        throttle_time_ms=0,
        results=[TopicResult(topic_name=name, partitions=rows) for name, rows in results.items()],
    )
