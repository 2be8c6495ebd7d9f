"""DescribeConfigs (32): topic and broker configs with Kafka's values, sources, synonyms and
read-only flags, the dynamic layers included (Kafka's ConfigHelper.describeConfigs).

A broker is described by its id (its effective configs) or by the empty name (only the
cluster-wide dynamic defaults). Keys without a known type (a plugin's) are listed when set,
and, as Kafka treats what it cannot type, as sensitive and read-only.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeConfigsResponse

from broker.config.broker_config import (
    DEFAULTS,
    KAFKA_LOG_DEFAULTS,
    LOG_DEFAULTS,
    BrokerConfigView,
    config_type,
    is_read_only,
    topic_config_layers,
)
from broker.config.dynamic import parse_broker_id
from broker.config.group_configs import GROUP, GROUP_CONFIGS, SOURCE_GROUP
from broker.config.topic_configs import (
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    TOPIC_CONFIGS,
    TYPE_CODES,
)
from broker.context import RequestContext
from broker.error_responses import config_resources, mirrors
from broker.handlers.spec import ALWAYS
from broker.security.acls import Operation, ResourceType
from broker.security.authorization import by_handler
from broker.security.authorizer import DESCRIBE_CONFIGS
from broker.state.cluster import ClusterError, validate_topic_name
from broker.telemetry.subscriptions import CLIENT_METRICS, SOURCE_CLIENT_METRICS
from broker.telemetry.subscriptions import CONFIGS as CLIENT_METRICS_CONFIGS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.DESCRIBE_CONFIGS
VERSIONS = (1, 4)
AUTHORIZATION = by_handler("DESCRIBE_CONFIGS on the cluster (broker resources) or on each topic or group")
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(config_resources("results"))
TOPIC = 2
BROKER = 4
Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = Result.DescribeConfigsResourceResult
Synonym = Entry.DescribeConfigsSynonym
Candidates = list[tuple[str, str, int]]
# Errors.INVALID_REQUEST's own message, which Kafka answers for a resource type it does not know
INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or "
    "the message was sent to an incompatible broker. See the broker logs for more details."
)
CLIENT_METRICS_DOCUMENTATION = {
    "interval.ms": "Metrics push interval in milliseconds",
    "match": "Client match criteria",
    "metrics": "Telemetry metric name prefix list",
}


def _entry(
    request: Any,
    name: str,
    candidates: Candidates,
    type_: str | None,
    documentation: str | None,
    read_only: bool = False,
    shown: tuple[str | None, int] | None = None,
) -> Any:
    """One config; `candidates` are (name, value, source) in precedence order. The first
    is the value in force (none: a null default) unless `shown` gives (value, source);
    all are synonyms (v1+). Passwords and untyped keys are
    sensitive (KafkaConfig.maybeSensitive): named, never shown."""
    sensitive = type_ is None or type_ == "password"
    _, value, source = candidates[0] if candidates else (name, None, SOURCE_DEFAULT)
    if shown is not None:
        value, source = shown
    synonyms = (
        [Synonym(name=n, value=None if sensitive else v, source=s) for n, v, s in candidates]
        if request.include_synonyms
        else []
    )
    return Entry(
        name=name,
        value=None if sensitive else value,
        read_only=read_only,
        config_source=source,
        is_default=source == SOURCE_DEFAULT,
        is_sensitive=sensitive,
        synonyms=synonyms,
        config_type=TYPE_CODES.get(type_ or "", 0),
        documentation=documentation if request.include_documentation else None,
    )


def _topic_configs(view: BrokerConfigView, request: Any, overrides: dict[str, str]) -> list[Any]:
    """ConfigHelper.createTopicConfigEntry for every topic config (topic_config_layers)."""
    entries = []
    for config in TOPIC_CONFIGS.values():
        value, source, synonyms = topic_config_layers(view, config, overrides)
        entries.append(
            _entry(request, config.name, synonyms, config.type, config.documentation, shown=(value, source))
        )
    return entries


_NULL_LOG_DEFAULTS = tuple(name for name in LOG_DEFAULTS if KAFKA_LOG_DEFAULTS.get(name, "") is None)


def _broker_configs(view: BrokerConfigView, request: Any) -> list[Any]:
    """Every known config, then every other key set on this broker (static or dynamic)."""
    names = list(DEFAULTS) + sorted(key for key in view.values if key not in DEFAULTS)
    # Kafka's log.* keys with a null default, unset: described as such (a default, no value)
    names += [name for name in _NULL_LOG_DEFAULTS if name not in view.values]
    return [
        _entry(
            request,
            name,
            view.synonyms(name),
            config_type(name) or (LOG_DEFAULTS[name][1] if name in LOG_DEFAULTS else None),
            DEFAULTS[name][2] if name in DEFAULTS else None,
            read_only=(name not in DEFAULTS and name not in LOG_DEFAULTS) or is_read_only(name),
        )
        for name in names
    ]


def _cluster_default_configs(view: BrokerConfigView, request: Any) -> list[Any]:
    """The empty name: only what the cluster-wide dynamic default sets."""
    entries = []
    for name in view.cluster_default:
        candidates = [c for c in view.synonyms(name) if c[2] == SOURCE_DYNAMIC_DEFAULT_BROKER]
        type_ = config_type(name)
        doc = DEFAULTS[name][2] if name in DEFAULTS else None
        entries.append(
            _entry(request, name, candidates, type_, doc, name not in DEFAULTS or is_read_only(name))
        )
    return entries


def _group_configs(ctx: RequestContext, request: Any, group_id: str) -> list[Any]:
    """Each group config: the group's own value (GROUP_CONFIG), else the broker's default."""
    overrides = ctx.cluster.group_configs.get(group_id, {})
    entries = []
    for config in GROUP_CONFIGS.values():
        if not config.listed:
            continue
        candidates: Candidates = []
        if config.name in overrides:
            candidates.append((config.name, overrides[config.name], SOURCE_GROUP))
        # the default's synonym is named after the broker config it comes from
        if config.broker_default is not None:
            default = ctx.broker.config.get_str(config.broker_default)
            candidates.append((config.broker_default, default, SOURCE_DEFAULT))
        else:
            candidates.append((config.name, config.default, SOURCE_DEFAULT))
        entries.append(_entry(request, config.name, candidates, config.type, config.documentation))
    return entries


def _client_metrics_configs(ctx: RequestContext, request: Any, name: str) -> list[Any]:
    """The three subscription configs (Kafka 4.1+): set ones as CLIENT_METRICS_CONFIG
    with themselves as synonym, the others as DEFAULT without synonyms. An unknown
    subscription is all defaults, never an error."""
    own = ctx.cluster.client_metrics.configs.get(name, {})
    entries = []
    for config, (type_, default) in CLIENT_METRICS_CONFIGS.items():
        doc = CLIENT_METRICS_DOCUMENTATION.get(config)
        if config in own:
            entries.append(
                _entry(request, config, [(config, own[config], SOURCE_CLIENT_METRICS)], type_, doc)
            )
        else:
            entry = _entry(request, config, [(config, default, SOURCE_DEFAULT)], type_, doc)
            entry.synonyms = []
            entries.append(entry)
    return entries


def _describe(ctx: RequestContext, request: Any, resource: Any) -> tuple[int, str | None, list[Any]]:
    name = resource.resource_name
    if resource.resource_type == TOPIC:
        try:
            validate_topic_name(name)
        except ClusterError as error:
            return error.code, error.message, []
        topic = ctx.cluster.topics.get(name)
        if topic is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, []
        return ErrorCode.NONE, None, _topic_configs(ctx.broker.config, request, topic.configs)
    if resource.resource_type == BROKER:
        if not name:
            return ErrorCode.NONE, None, _cluster_default_configs(ctx.broker.config, request)
        broker = parse_broker_id(name)
        if broker is None:
            return ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}", []
        if broker != ctx.node_id:
            return (
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {ctx.node_id} or empty string, but received {name}",
                [],
            )
        return ErrorCode.NONE, None, _broker_configs(ctx.broker.config, request)
    if resource.resource_type == GROUP:
        if not name:
            return ErrorCode.INVALID_REQUEST, "Group name must not be empty", []
        return ErrorCode.NONE, None, _group_configs(ctx, request, name)
    if resource.resource_type == CLIENT_METRICS:
        if not name:
            return ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty", []
        return ErrorCode.NONE, None, _client_metrics_configs(ctx, request, name)
    return ErrorCode.INVALID_REQUEST, INVALID_REQUEST_MESSAGE, []


def handle(ctx: RequestContext, request: Any) -> Any:
    """Broker resources need DESCRIBE_CONFIGS on the cluster, topics on the topic; as
    Kafka, refused resources are answered after the described ones."""
    authorizer, principal, host = ctx.broker.authorizer, ctx.connection.principal, ctx.connection.peer[0]
    cluster_allowed = authorizer.authorize_cluster(principal, DESCRIBE_CONFIGS, host)
    results, refused = [], []
    for resource in request.resources:
        fields = {"resource_type": resource.resource_type, "resource_name": resource.resource_name}
        if resource.resource_type in (BROKER, CLIENT_METRICS) and not cluster_allowed:
            refusal: tuple[int, str] | None = (
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "Cluster authorization failed.",
            )
        elif resource.resource_type == GROUP and not authorizer.authorize(
            principal, host, Operation.DESCRIBE_CONFIGS, ResourceType.GROUP, resource.resource_name
        ):
            refusal = (ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
        elif resource.resource_type == TOPIC and not authorizer.authorize(
            principal, host, Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, resource.resource_name
        ):
            refusal = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
        else:
            refusal = None
        if refusal is not None:
            refused.append(Result(error_code=refusal[0], error_message=refusal[1], configs=[], **fields))
            continue
        error, message, configs = _describe(ctx, request, resource)
        if resource.configuration_keys:  # null or empty: every config
            configs = [c for c in configs if c.name in resource.configuration_keys]
        # Kafka's result carries an empty message where it has none (success included)
        results.append(Result(error_code=error, error_message=message or "", configs=configs, **fields))
    return ctx.response(throttle_time_ms=0, results=results + refused)
