"""ElectLeaders (43): preferred (v0+) and unclean (v1+) leader elections among the mock
brokers (kafka-leader-election.sh, AdminClient.electLeaders), as the KRaft controller
runs them; null topic partitions means every partition, and then partitions whose
leader is already the wanted one are left out of the answer. ALTER on the cluster."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.ELECT_LEADERS
VERSIONS = (0, 2)
AUTHORIZATION = authorization.ELECT_LEADERS
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
PREFERRED, UNCLEAN = 0, 1
ElectionResult = response_class(API_KEY).ReplicaElectionResult
PartitionResult = ElectionResult.PartitionResult
ELECTION_NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."


def handle(ctx: RequestContext, request: Any) -> Any:
    election_type = request.election_type if ctx.api_version >= 1 else PREFERRED
    if election_type not in (PREFERRED, UNCLEAN):
        return ctx.response(
            throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, replica_election_results=[]
        )
    cluster = ctx.cluster
    every = request.topic_partitions is None
    wanted = (
        [(name, list(range(len(topic.partitions)))) for name, topic in cluster.topics.items()]
        if every
        else [(t.topic, list(t.partitions)) for t in request.topic_partitions]
    )
    results = []
    for topic, partitions in wanted:
        rows = []
        for index in partitions:
            error, message = cluster.elect_leader(topic, index, preferred=election_type == PREFERRED)
            if every and error == ErrorCode.ELECTION_NOT_NEEDED:
                continue
            if error == ErrorCode.ELECTION_NOT_NEEDED and message is None:
                message = ELECTION_NOT_NEEDED_MESSAGE  # the error's own, as Kafka's ApiError
            rows.append(PartitionResult(partition_id=index, error_code=error, error_message=message))
        results.append(ElectionResult(topic=topic, partition_result=rows))
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, replica_election_results=results)
