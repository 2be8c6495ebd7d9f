"""DescribeLogDirs (35): this broker's log directory and the size of each partition
replica it holds (kafka-log-dirs.sh, AdminClient.describeLogDirs). The mock keeps
partitions in memory: the directory is `log.dirs`' first entry by name, the sizes are
the bytes of the batches kept, and the volume figures (v4+) are those of the nearest
existing directory on that path. DESCRIBE on the cluster."""

from __future__ import annotations

import os
import shutil
from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.common import log_dir
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import DESCRIBE
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_LOG_DIRS
VERSIONS = (1, 5)
AUTHORIZATION = by_handler("DESCRIBE on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Result = response_class(API_KEY).DescribeLogDirsResult
TopicResult = Result.DescribeLogDirsTopic
PartitionResult = TopicResult.DescribeLogDirsPartition


def _volume(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `path`, or of its closest existing
    parent; (-1, -1) when none can be read."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    try:
        usage = shutil.disk_usage(probe)
    except OSError:
        return -1, -1
    return usage.total, usage.free


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.authorizer.authorize_cluster(
        ctx.connection.principal, DESCRIBE, ctx.connection.peer[0]
    ):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    node = ctx.node_id
    wanted = None if request.topics is None else {t.topic: set(t.partitions) for t in request.topics}
    topics = []
    for name, topic in ctx.cluster.topics.items():
        if wanted is not None and name not in wanted:
            continue
        partitions = [
            PartitionResult(
                partition_index=p.index,
                partition_size=p.log.size_bytes,
                offset_lag=0,  # one log shared by every replica: never behind its high watermark
                is_future_key=False,
            )
            for p in topic.partitions
            if node in p.replicas and (wanted is None or p.index in wanted[name])
        ]
        if partitions:
            topics.append(TopicResult(name=name, partitions=partitions))
    directory = log_dir(ctx)
    total, usable = _volume(directory)
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        results=[
            Result(
                error_code=ErrorCode.NONE,
                log_dir=directory,
                topics=topics,
                total_bytes=total,
                usable_bytes=usable,
                is_cordoned=False,
            )
        ],
    )
