"""DescribeConfigs (32): topic and broker configs with Kafka's defaults, sources and synonyms."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeConfigsResponse

from broker.config import DEFAULTS
from broker.context import RequestContext
from broker.topic_configs import (
    SOURCE_DEFAULT,
    SOURCE_STATIC_BROKER,
    SOURCE_TOPIC,
    TOPIC_CONFIGS,
    TYPE_CODES,
)

API_KEY = 32
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42
TOPIC = 2
BROKER = 4
Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = Result.DescribeConfigsResourceResult
Synonym = Entry.DescribeConfigsSynonym


def _entry(
    ctx: RequestContext,
    request: Any,
    name: str,
    candidates: list[tuple[str, str, int]],
    type_: str,
    documentation: str,
) -> Any:
    """One config; `candidates` are (name, value, source) in precedence order, the last
    being the default. The first is the value in force; all are synonyms (v1+).
    Passwords are sensitive: named, never shown (Kafka returns a null value)."""
    sensitive = type_ == "password"
    _, value, source = candidates[0]
    synonyms = (
        [Synonym(name=n, value=None if sensitive else v, source=s) for n, v, s in candidates]
        if request.include_synonyms
        else []
    )
    return Entry(
        name=name,
        value=None if sensitive else value,
        read_only=False,
        config_source=source,
        is_default=source == SOURCE_DEFAULT,
        is_sensitive=sensitive,
        synonyms=synonyms,
        config_type=TYPE_CODES.get(type_, 0),
        documentation=documentation if request.include_documentation else None,
    )


def _topic_configs(ctx: RequestContext, request: Any, overrides: dict[str, str]) -> list[Any]:
    static = ctx.config
    entries = []
    for config in TOPIC_CONFIGS.values():
        candidates: list[tuple[str, str, int]] = []
        if config.name in overrides:
            candidates.append((config.name, overrides[config.name], SOURCE_TOPIC))
        synonym = config.broker_synonym
        if synonym and static.explicitly_set(synonym):
            candidates.append((synonym, static.get_str(synonym), SOURCE_STATIC_BROKER))
        candidates.append((synonym or config.name, config.default, SOURCE_DEFAULT))
        entries.append(_entry(ctx, request, config.name, candidates, config.type, config.documentation))
    return entries


def _broker_configs(ctx: RequestContext, request: Any) -> list[Any]:
    entries = []
    for name, (default, type_, doc) in DEFAULTS.items():
        candidates: list[tuple[str, str, int]] = []
        if ctx.config.explicitly_set(name):
            candidates.append((name, ctx.config.get_str(name), SOURCE_STATIC_BROKER))
        candidates.append((name, default, SOURCE_DEFAULT))
        entries.append(_entry(ctx, request, name, candidates, type_, doc))
    return entries


def _describe(ctx: RequestContext, request: Any, resource: Any) -> tuple[int, str | None, list[Any]]:
    if resource.resource_type == TOPIC:
        topic = ctx.cluster.topics.get(resource.resource_name)
        if topic is None:
            return UNKNOWN_TOPIC_OR_PARTITION, f"Topic {resource.resource_name} does not exist.", []
        return 0, None, _topic_configs(ctx, request, topic.configs)
    if resource.resource_type == BROKER:
        if resource.resource_name != str(ctx.node_id):
            return (
                INVALID_REQUEST,
                f"Unexpected broker id, expected {ctx.node_id} but received {resource.resource_name}",
                [],
            )
        return 0, None, _broker_configs(ctx, request)
    return INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}", []


def handle(ctx: RequestContext, request: Any) -> Any:
    results = []
    for resource in request.resources:
        error, message, configs = _describe(ctx, request, resource)
        if resource.configuration_keys is not None:
            configs = [c for c in configs if c.name in resource.configuration_keys]
        results.append(
            Result(
                error_code=error,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return ctx.response(throttle_time_ms=0, results=results)
