"""What a scenario is: requests sent in order to one broker of each side.

A `Step` is one request as data (API key, version, field values as plain dicts and lists),
so the same request is built twice, once per side, and printed with any difference. A
`Scenario` is a named list of steps run on a fresh connection; its `family` picks the
pair of clusters it runs on (one reference and one MockCluster per family and layout), so
scenarios of different families never see each other's state.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from messages.registry import api_name, request_class


@dataclass(frozen=True)
class Step:
    api_key: int
    version: int
    fields: Mapping[str, Any] = field(default_factory=dict)
    compare: bool = True  # False: a setup step, sent to both sides, its answer not compared
    node: int = 0  # the broker (node id) it goes to
    # Kafka applies metadata asynchronously (the controller commits, then each broker's
    # cache catches up): a step marked `settle` is repeated on the reference, for up to
    # this many seconds, until its normalised answer equals the mock's.
    settle: float = 0.0
    # an eventual state each broker reaches on its own schedule (a log cleaner's result):
    # the step is repeated on EACH side, for up to `settle` seconds, until this holds of
    # its normalised answer; then the two answers are compared
    until: Callable[[Any], bool] | None = None
    # throttle_time_ms compared as "0" or ">0" only (timing-dependent under quotas)
    throttle_positive_only: bool = False
    # throttle_time_ms compared as zero or not exactly, and its value within a tolerance
    # the runner derives from both sides' timings (runner.throttle_tolerance_ms), measured
    # from the scenario's first timed step (where the quota's sensor got its first record);
    # a timed step after a throttled one also reports whether its answer was held until
    # the throttle expired (the muted channel, KIP-219)
    throttle_timed: bool = False
    # the request header's client id ("": the runner's own), so a scenario's quota applies
    # to its pattern's steps only and each scenario starts with fresh quota sensors
    client_id: str = ""
    # a new connection for this step alone, from this local address (127.0.0.2: an
    # address no other step connects from, for an ip entity's connection_creation_rate)
    source_address: str = ""
    label: str = ""  # names the step in difference keys; the API name by default
    # name -> dotted path of a value in this step's answer (a generated member id), which
    # its side captures for later steps' `Later` fields
    keep: Mapping[str, str] = field(default_factory=dict)
    # the SASL/PLAIN user the step's connection authenticates as ("": the plain listener,
    # User:ANONYMOUS); only in layouts with a SASL listener (runner.SASL_USERS)
    user: str = ""

    @property
    def api(self) -> str:
        return api_name(self.api_key)

    @property
    def name(self) -> str:
        return self.label or self.api

    def build(self, captured: Mapping[str, Any] | None = None) -> Any:
        return build(request_class(self.api_key)[self.version], self.fields, captured or {})

    def describe(self) -> str:
        return f"{self.api} v{self.version} {json.dumps(jsonable(self.fields), sort_keys=True)}"


@dataclass(frozen=True)
class Scenario:
    name: str
    family: str
    steps: tuple[Step, ...]
    brokers: int = 1
    config: Mapping[str, str] = field(default_factory=dict)

    @property
    def apis(self) -> set[str]:
        return {step.api for step in self.steps if step.compare}

    @property
    def layout(self) -> tuple[str, int, tuple[tuple[str, str], ...]]:
        return self.family, self.brokers, tuple(sorted(self.config.items()))


@dataclass(frozen=True)
class Later:
    """A field value known only when the step is sent, made from what its side's
    connections captured from earlier answers (`producer_id`, `producer_epoch` of the last
    InitProducerId): each side's own producer id goes into its own request."""

    make: Callable[[Mapping[str, Any]], Any]
    text: str  # how the request prints

    def __str__(self) -> str:
        return self.text


def kept(answer: Any, path: str) -> Any:
    """The value at a dotted path (`members.0.member_id`) of a decoded answer, or None."""
    for part in path.split("."):
        if answer is None:
            return None
        answer = (
            answer[int(part)] if part.isdigit() and isinstance(answer, list) else getattr(answer, part, None)
        )
    return answer


def build(cls: Any, values: Mapping[str, Any], captured: Mapping[str, Any] | None = None) -> Any:
    """An instance of the (versioned) message or struct class `cls` from plain values:
    nested structs and struct arrays from dicts and lists of dicts; `Later` values made
    from `captured`."""
    fields = cls._struct.fields
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        spec = fields[name]
        if isinstance(value, Later):
            value = value.make(captured or {})
        if spec.is_struct_array() and value is not None:
            kwargs[name] = [build(spec.data_class, item, captured) for item in value]
        elif spec.is_struct() and value is not None:
            kwargs[name] = build(spec.data_class, value, captured)
        else:
            kwargs[name] = value
    version = getattr(cls, "_class_version", None)
    return cls(**kwargs) if version is not None else cls(**kwargs)


def jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
