"""Fault injection for harnesses: scripted errors, latency, disconnects and forced
throttles, each a numbered rule that can be listed and removed.

A rule matches requests by API key and optionally by broker, client id, topic and
partition, for its next `count` matches (None: until removed). What it does, in order:
delay the request (`latency_ms`), then close the connection unanswered (`disconnect`)
or answer with `error_code` instead of handling. An error on an API with topics or
resources (produce, fetch, metadata, create topics, ...) is given per entry: the entries
the rule selects are taken out of the request, the broker handles the rest, and the
selected ones are answered with the error, so a produce to partitions 0 and 1 with a
rule for partition 0 appends only to partition 1. A throttle rule sets throttle_time_ms
on the next `count` responses to a client id and mutes the connection for it, as a
quota violation would.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import inspect
import itertools
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from broker.context import RequestContext
from broker.error_responses import (
    Level,
    Selection,
    answer_with_errors,
    copy_message,
    entries_of,
    has_field,
    level_for,
)
from broker.handlers import HANDLERS
from broker.pipeline import CloseConnection, Handler, IdleInterceptor
from protocol.api_keys import ApiKey

T = TypeVar("T")
MAX_INT32 = 2**31 - 1
OnLoop = Callable[[Callable[[], T]], T]


@dataclass(slots=True)
class Fault:
    id: int
    api_key: int | None = None  # None: any API (throttle rules only)
    error_code: int = 0
    count: int | None = None  # matches left; None until removed
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    broker: int | None = None
    latency_ms: int = 0
    disconnect: bool = False
    throttle_ms: int = 0
    fired: int = 0  # requests it has acted on
    _entries: bool = field(default=False, repr=False)  # topic/partition filter set

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        del found["_entries"]
        return found

    def _matches(self, node_id: int, api_key: int, client_id: str | None) -> bool:
        return (
            (self.api_key is None or self.api_key == api_key)
            and (self.broker is None or self.broker == node_id)
            and (self.client_id is None or self.client_id == client_id)
        )


class FaultInjector(IdleInterceptor):
    """The cluster's fault rules. Mutations run on the cluster's loop (`on_loop`), where
    requests read them. Without rules it is idle: the pipelines leave it out of their
    interceptor chains until a rule is added, so a cluster without faults pays nothing."""

    def __init__(
        self, on_loop: OnLoop[Any] | None = None, broker_ids: Callable[[], Collection[int]] | None = None
    ) -> None:
        super().__init__()
        self._on_loop: OnLoop[Any] = on_loop or (lambda fn: fn())
        self._broker_ids = broker_ids
        self._ids = itertools.count(1)
        self.request_faults: list[Fault] = []
        self.throttles: list[Fault] = []

    # -- the harness API --------------------------------------------------------
    def add(
        self,
        api_key: int,
        error_code: int = 0,
        count: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
        latency_ms: int = 0,
        disconnect: bool = False,
        broker: int | None = None,
    ) -> Fault:
        """Adds a request fault; ValueError when it could never act."""
        self._check_target(api_key, broker)
        if not -1 <= error_code <= 32767:
            raise ValueError(f"error_code {error_code} is not an int16 Kafka error code")
        if not (error_code or latency_ms or disconnect):
            raise ValueError("a fault needs error_code, latency_ms or disconnect")
        if disconnect and error_code:
            raise ValueError("disconnect closes the connection unanswered: no error_code with it")
        if not 0 <= latency_ms <= MAX_INT32:
            raise ValueError(f"latency_ms must be within 0..{MAX_INT32}")
        entries = topic is not None or partition is not None
        spec = HANDLERS[api_key]
        levels = [
            level
            for version in range(spec.min_version, spec.max_version + 1)
            if (level := level_for(api_key, version)) is not None and level.topics
        ]
        if entries and not levels:
            raise ValueError(f"api_key {api_key} has no topics: topic and partition filters cannot match")
        if partition is not None and not any(level.inner for level in levels):
            raise ValueError(f"api_key {api_key} has no partitions: a partition filter cannot match")
        if partition is not None and partition < 0:
            raise ValueError("partition must not be negative")
        fault = Fault(
            0, api_key, error_code, _checked_count(count), topic, partition, client_id, broker,
            latency_ms, disconnect, _entries=entries,
        )  # fmt: skip
        return self._on_loop(lambda: self._append(self.request_faults, fault))

    def throttle(
        self, client_id: str, throttle_ms: int, count: int | None = 1, api_key: int | None = None
    ) -> Fault:
        """Forces throttle_time_ms on the next `count` responses to `client_id` (that
        carry a throttle time) and mutes the connection for it."""
        if not 0 < throttle_ms <= MAX_INT32:
            raise ValueError(f"throttle_ms must be within 1..{MAX_INT32} (an int32 on the wire)")
        if api_key is not None:
            self._check_target(api_key, None)
        fault = Fault(0, api_key, count=_checked_count(count), client_id=client_id, throttle_ms=throttle_ms)
        return self._on_loop(lambda: self._append(self.throttles, fault))

    @property
    def engaged(self) -> bool:
        return bool(self.request_faults or self.throttles)

    def _check_target(self, api_key: int, broker: int | None) -> None:
        if api_key not in HANDLERS:
            raise ValueError(f"api_key {api_key} is not an API this broker implements")
        if broker is not None and self._broker_ids is not None and broker not in self._broker_ids():
            raise ValueError(f"broker {broker} is not a broker of this cluster")

    def list(self) -> list[Fault]:
        return self._on_loop(lambda: sorted(self.request_faults + self.throttles, key=lambda f: f.id))

    def remove(self, fault_id: int) -> bool:
        """True when the rule existed (it may have run out of matches already)."""

        def remove() -> bool:
            before = len(self.request_faults) + len(self.throttles)
            self.request_faults = [f for f in self.request_faults if f.id != fault_id]
            self.throttles = [f for f in self.throttles if f.id != fault_id]
            self.engagement_changed()
            return len(self.request_faults) + len(self.throttles) < before

        return bool(self._on_loop(remove))

    def clear(self) -> None:
        def clear() -> None:
            self.request_faults = []
            self.throttles = []
            self.engagement_changed()

        self._on_loop(clear)

    def _append(self, rules: builtins.list[Fault], fault: Fault) -> Fault:
        fault.id = next(self._ids)
        rules.append(fault)
        self.engagement_changed()
        return fault

    def _fired(self, fault: Fault) -> None:
        fault.fired += 1
        if fault.count is not None:
            fault.count -= 1
            if fault.count <= 0:
                if fault in self.request_faults:
                    self.request_faults.remove(fault)
                else:
                    self.throttles.remove(fault)
                self.engagement_changed()

    # -- the request pipeline's interceptor ---------------------------------------
    def intercept(self, ctx: RequestContext, request: Any, call: Handler) -> Any:
        """The response to `request` with the first matching request fault applied (a
        coroutine when it delays; CloseConnection raised to close unanswered), and the
        throttle a throttle rule forces on it."""
        result = self._apply_request_fault(ctx, request, call) if self.request_faults else call(ctx, request)
        if not self.throttles:
            return result
        if inspect.iscoroutine(result):
            return self._force_throttle_after(ctx, result)
        self._force_throttle(ctx, result)
        return result

    async def _force_throttle_after(self, ctx: RequestContext, pending: Any) -> Any:
        response = await pending
        self._force_throttle(ctx, response)
        return response

    def _force_throttle(self, ctx: RequestContext, response: Any) -> None:
        if response is not None:
            ctx.forced_throttle_ms = self.forced_throttle_ms(ctx, response)

    def _apply_request_fault(self, ctx: RequestContext, request: Any, handler: Handler) -> Any:
        for fault in self.request_faults:
            if not fault._matches(ctx.node_id, ctx.api_key, ctx.client_id):
                continue
            level = level_for(ctx.api_key, ctx.api_version) if fault.error_code or fault._entries else None
            if level is not None and ctx.api_key == ApiKey.METADATA and request.topics is None:
                request = _naming_all_topics(ctx, request)
            selected = _select(ctx, level, request, fault) if level is not None else []
            if fault._entries and not selected:
                continue
            self._fired(fault)
            ctx.fault_id = fault.id
            if fault.disconnect:
                answer: Callable[[], Any] = functools.partial(_disconnect, fault, ctx.api_key)
            else:
                answer = functools.partial(_answer, ctx, request, handler, fault, level, selected)
            return _delayed(ctx, fault.latency_ms / 1000, answer) if fault.latency_ms else answer()
        return handler(ctx, request)

    def forced_throttle_ms(self, ctx: RequestContext, response: Any) -> int:
        """The throttle a throttle rule puts on this response (0: none), counting it."""
        for fault in self.throttles:
            if fault._matches(ctx.node_id, ctx.api_key, ctx.client_id) and has_field(
                response, "throttle_time_ms"
            ):
                self._fired(fault)
                ctx.fault_id = ctx.fault_id or fault.id
                return fault.throttle_ms
        return 0


def _disconnect(fault: Fault, api_key: int) -> None:
    raise CloseConnection(f"fault {fault.id} closes the connection on API key {api_key}")


def _checked_count(count: int | None) -> int | None:
    if count is not None and count < 1:
        raise ValueError("count must be at least 1 (or None: until removed)")
    return count


async def _delayed(ctx: RequestContext, delay_s: float, answer: Callable[[], Any]) -> Any:
    """`answer()` after the delay, or at once when the broker stops (no grace period
    is spent waiting for an injected delay)."""
    woken = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    ctx.broker.stop_listeners.add(wake)
    try:
        await asyncio.wait([woken], timeout=delay_s)
    finally:
        ctx.broker.stop_listeners.discard(wake)
    result = answer()
    return await result if inspect.iscoroutine(result) else result


def _select(ctx: RequestContext, level: Level, request: Any, fault: Fault) -> Selection:
    selected: Selection = []
    for entry in entries_of(level, request):
        topic = _topic_name(ctx, entry) if level.topics else None
        if fault.topic is not None and fault.topic != topic:
            continue
        inner = level.inner
        if inner is None or fault.partition is None:
            if fault.partition is None or not level.topics:
                selected.append((entry, None))
            continue
        partitions = [p for p in getattr(entry, inner.request[0]) if _index(inner, p) == fault.partition]
        if partitions:
            selected.append((entry, partitions))
    return selected


def _naming_all_topics(ctx: RequestContext, request: Any) -> Any:
    """A Metadata request for all topics, as one that names each, so that a fault can
    answer for some of them."""
    entry = type(request).fields["topics"].data_class
    topics = [entry(version=None, name=t.name, topic_id=t.topic_id) for t in ctx.cluster.topics.values()]
    return copy_message(request, topics=topics)


def _topic_name(ctx: RequestContext, entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry
    name = getattr(entry, "name", None) or getattr(entry, "topic", None)
    if name:
        return str(name)
    topic = ctx.cluster.topics_by_id.get(getattr(entry, "topic_id", None))  # type: ignore[arg-type]
    return topic.name if topic is not None else None


def _index(level: Level, entry: Any) -> int:
    return entry if isinstance(entry, int) else int(getattr(entry, level.keys[0][1]))


def _answer(
    ctx: RequestContext,
    request: Any,
    handler: Handler,
    fault: Fault,
    level: Level | None,
    selected: Selection,
) -> Any:
    if not fault.error_code:
        return handler(ctx, request)
    if level is None:
        if ctx.api_key == ApiKey.API_VERSIONS:
            ctx.api_version = 0  # an ApiVersions error is answered in v0, as KIP-511 has it
        if not has_field(ctx.response(), "error_code"):
            raise CloseConnection(
                f"fault {fault.id}: API key {ctx.api_key} v{ctx.api_version} has no error code"
            )
        return ctx.response(error_code=fault.error_code)
    return answer_with_errors(ctx, request, handler, level, selected, fault.error_code)
