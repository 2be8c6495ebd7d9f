"""CreateTopics (19): validated like Kafka's controller (ControllerApis.createTopics, then
ReplicationControlManager.createTopics), including validate_only; manual replica
assignments are placed exactly as asked, leader first.

A topic the caller may create but not DESCRIBE_CONFIGS is answered with its id alone:
partition count and replication factor -1, no configs, topic_config_error_code
TOPIC_AUTHORIZATION_FAILED.

Each valid topic's partitions are charged to the controller mutation quota; from v6 a
topic that finds it exhausted gets THROTTLING_QUOTA_EXCEEDED (89).

A request asking for more than 10,000 partitions in all (ReplicationControlManager's
MAX_PARTITIONS_PER_BATCH, checked before anything else, validate_only included) is
refused whole with POLICY_VIOLATION: placing 2^31-1 partitions stalled the broker. (The
controller's bound of 10,000 metadata records per request, which a topic's record and
its config records count towards as well, is not modelled beyond that.)"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from kafka.protocol.admin import CreateTopicsResponse

from broker import throttling
from broker.config.broker_config import BrokerConfigView, topic_config_layers
from broker.config.topic_configs import TOPIC_CONFIGS
from broker.context import RequestContext
from broker.error_responses import mirrors, topics
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation, ResourceType
from broker.state.cluster import Charge, ClusterError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.manager import ThrottlingQuotaExceeded

API_KEY = ApiKey.CREATE_TOPICS
VERSIONS = (2, 7)
AUTHORIZATION = authorization.CREATE_TOPICS
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(topics("topics", "topics", None, ("name", "name")))
STRICT_SINCE_VERSION = 6
MAX_PARTITIONS_PER_BATCH = 10_000  # ReplicationControlManager.validateTotalNumberOfPartitions
EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."
Result = CreateTopicsResponse.CreatableTopicResult
ConfigResult = Result.CreatableTopicConfigs


def _create(ctx: RequestContext, wanted: Any, validate_only: bool, charge: Charge) -> Any:
    configs = {c.name: c.value for c in wanted.configs}
    assignments = [(a.partition_index, list(a.broker_ids)) for a in wanted.assignments or ()]
    return ctx.cluster.create_topic(
        wanted.name,
        wanted.num_partitions,
        wanted.replication_factor,
        configs,
        validate_only,
        charge,
        assignments,
    )


def _config_results(view: BrokerConfigView, configs: dict[str, str]) -> list[Any]:
    """Each topic config's value and source as DescribeConfigs would show them."""
    results = []
    for c in TOPIC_CONFIGS.values():
        value, source, _ = topic_config_layers(view, c, configs)
        results.append(
            ConfigResult(name=c.name, value=value, read_only=False, config_source=source, is_sensitive=False)
        )
    return results


def _may_describe_configs(ctx: RequestContext, name: str) -> bool:
    """ControllerApis' describable topics: DESCRIBE_CONFIGS on the topic."""
    return ctx.broker.authorizer.authorize(
        ctx.connection.principal, ctx.connection.peer[0], Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name
    )


def _total_partitions(ctx: RequestContext, request: Any) -> int:
    """The partitions the request asks for, counted as validateTotalNumberOfPartitions
    counts them (the default for -1, nothing for other non-positive counts)."""
    total = 0
    for topic in request.topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += ctx.config.get_int("num.partitions")
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total


def _refused(ctx: RequestContext, request: Any, code: int, message: str) -> Any:
    """CreateTopicsRequest.getErrorResponse: every topic named, with the error."""
    return ctx.response(
        throttle_time_ms=0,
        topics=[
            Result(
                name=t.name, error_code=code, error_message=message, num_partitions=-1, replication_factor=-1
            )
            for t in request.topics
        ],
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    if _total_partitions(ctx, request) > MAX_PARTITIONS_PER_BATCH:
        return _refused(ctx, request, ErrorCode.POLICY_VIOLATION, EXCESSIVE_PARTITIONS)
    quota = throttling.mutation_quota(ctx, strict=ctx.api_version >= STRICT_SINCE_VERSION)
    charge = throttling.charge_to(quota)
    counts = Counter(t.name for t in request.topics)
    results = []
    for wanted in request.topics:
        if counts[wanted.name] > 1:
            continue  # answered once, after the others, as ControllerApis.createTopics does
        fields: dict[str, Any] = {"name": wanted.name, "error_code": ErrorCode.NONE, "error_message": None}
        try:
            topic = _create(ctx, wanted, bool(request.validate_only), charge)
        except ClusterError as exc:
            fields.update(error_code=exc.code, error_message=exc.reply)
        except ThrottlingQuotaExceeded:
            fields.update(error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED)
        else:
            configs = {c.name: c.value for c in wanted.configs if c.value is not None}
            # validate_only (no topic): ReplicationControlManager.createTopic draws the id
            # before it knows, and the answer carries it
            fields["topic_id"] = topic.topic_id if topic is not None else uuid.uuid4()
            if topic is not None:
                fields.update(
                    num_partitions=len(topic.partitions),
                    replication_factor=len(topic.partitions[0].replicas),
                )
            elif wanted.assignments:
                fields.update(
                    num_partitions=len(wanted.assignments),
                    replication_factor=len(wanted.assignments[0].broker_ids),
                )
            else:
                fields.update(
                    num_partitions=wanted.num_partitions
                    if wanted.num_partitions != -1
                    else ctx.config.get_int("num.partitions"),
                    replication_factor=wanted.replication_factor
                    if wanted.replication_factor != -1
                    else ctx.config.get_int("default.replication.factor"),
                )
            fields["configs"] = _config_results(ctx.broker.config, configs)
            if not _may_describe_configs(ctx, wanted.name):
                # ReplicationControlManager: a topic the caller may not DESCRIBE_CONFIGS
                # gets its id only, the rest withheld behind topic_config_error_code
                fields.update(
                    num_partitions=-1,
                    replication_factor=-1,
                    configs=[],
                    topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                )
        if fields["error_code"]:  # a refused topic's configs: the schema's default, []
            fields.update(num_partitions=-1, replication_factor=-1, configs=[])
        results.append(Result(**fields))
    for name in dict.fromkeys(t.name for t in request.topics if counts[t.name] > 1):
        results.append(
            Result(
                name=name,
                error_code=ErrorCode.INVALID_REQUEST,
                error_message="Duplicate topic name.",
                num_partitions=-1,
                replication_factor=-1,
                configs=[],
            )
        )
    throttling.finish_mutations(ctx, quota)
    return ctx.response(throttle_time_ms=0, topics=results)
