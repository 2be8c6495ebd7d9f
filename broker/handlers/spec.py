"""What every handler module declares, and the spec the broker builds from it.

A handler module is one API (franz-go's kfake keeps the same shape): besides
`handle(ctx, request)` it declares, next to the code they describe,

- `API_KEY`: the `protocol.api_keys.ApiKey` it serves;
- `VERSIONS`: the (min, max) versions it serves, which ApiVersions advertises (never
  taken from kafka-python's schema: a kafka-python upgrade must not widen what the
  broker claims);
- `AUTHORIZATION`: a `broker.security.authorization.Authorization`, run by the pipeline's
  authorization stage, or `by_handler(...)` when the handler asks the authorizer itself,
  or `NOT_CHECKED` where Kafka checks nothing;
- `ENABLED`: when the broker serves it (`ALWAYS`, or a config-dependent `Enablement`);
- `ERROR_RESPONSE`: a `broker.error_responses.ErrorResponse`: which request entries an
  error answers one by one (faults, authorization and failed handlers use it);
- optionally `NOT_IMPLEMENTED`: what of Kafka's behaviour it leaves out (the API
  reference lists it);
- optionally `ADVERTISED_VERSIONS`: what ApiVersions advertises when that is wider than
  `VERSIONS` (Produce: Kafka advertises v0-2 it no longer serves); a version outside
  `VERSIONS` closes the connection either way.

`spec_of` refuses a module that lacks any of these, so the broker does not start with a
half-declared API (tests/architecture/test_handler_declarations.py checks them all).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from broker.context import RequestContext
from broker.error_responses import ErrorResponse
from broker.security.authorization import Authorization
from messages.registry import api_name

REQUIRED = ("API_KEY", "VERSIONS", "AUTHORIZATION", "ENABLED", "ERROR_RESPONSE", "handle")


class ConfigView(Protocol):
    """What an `Enablement` reads: the broker's effective config."""

    def get_str(self, name: str) -> str: ...

    def get_bool(self, name: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class Enablement:
    """When a broker serves an API: `summary` for the reference, `applies` given its config."""

    summary: str
    applies: Callable[[ConfigView], bool]


def _rebalance_protocols(config: ConfigView) -> set[str]:
    return {p.strip().lower() for p in config.get_str("group.coordinator.rebalance.protocols").split(",")}


ALWAYS = Enablement("always", lambda config: True)
# Kafka's ApiVersionManager leaves KIP-848's APIs out unless "consumer" is a protocol.
WITH_CONSUMER_PROTOCOL = Enablement(
    'when group.coordinator.rebalance.protocols includes "consumer" (the default)',
    lambda config: "consumer" in _rebalance_protocols(config),
)
# Kafka advertises KIP-714's APIs only when a metrics reporter receives client
# telemetry; clients start pushing when they see them.
WITH_TELEMETRY = Enablement(
    "when telemetry.enabled=true", lambda config: config.get_bool("telemetry.enabled")
)


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    """One API as the broker serves it: its handler and its module's declarations."""

    handler: Callable[[RequestContext, Any], Any]
    min_version: int
    max_version: int
    api_key: int
    advertised: tuple[int, int]  # (min, max) ApiVersions advertises
    name: str
    authorization: Authorization
    enabled: Enablement
    error_response: ErrorResponse
    not_implemented: tuple[str, ...]
    summary: str  # the first sentence of the module's docstring


class IncompleteHandler(TypeError):
    """A handler module without one of the declarations every API needs."""


def spec_of(module: ModuleType) -> HandlerSpec:
    missing = [name for name in REQUIRED if not hasattr(module, name)]
    if missing:
        raise IncompleteHandler(
            f"{module.__name__} declares no {', '.join(missing)} (see broker/handlers/spec.py)"
        )
    low, high = module.VERSIONS
    doc = " ".join((module.__doc__ or "").split())
    return HandlerSpec(
        handler=module.handle,
        min_version=low,
        max_version=high,
        api_key=int(module.API_KEY),
        advertised=tuple(getattr(module, "ADVERTISED_VERSIONS", (low, high))),
        name=api_name(module.API_KEY),
        authorization=module.AUTHORIZATION,
        enabled=module.ENABLED,
        error_response=module.ERROR_RESPONSE,
        not_implemented=tuple(getattr(module, "NOT_IMPLEMENTED", ())),
        summary=doc.split(". ")[0].rstrip(".") + "." if doc else "",
    )
