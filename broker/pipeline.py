"""One request's way through a broker, in the spirit of Kafka's RequestChannel and
RequestHandlerHelper. The connection (connection.py) frames bytes, keeps requests in
order and mutes; it hands each frame here:

    frame -> header -> gates -> interceptors -> handler -> quotas -> response -> observers
             decode     SASL     fault            handlers/  throttling  sent, then  metrics sink,
             (protocol/ state    injection:       one module .py         the         recording,
             messages/)          delay, fail,     per API                connection  conformance,
                                 disconnect                              is muted    throttle stats

Gates decide whether a request may come at all (closing the connection when not);
interceptors stand between the pipeline and the handler and may delay the request,
answer part of it, force a throttle or close unanswered; observers see each finished
request. The pipeline knows these seams, not what plugs into them: `MockCluster`
registers the harness. With nothing registered a request pays one truth test per seam.

A handler that raises is answered as KafkaApis.handleError answers: the request's error
response with UNKNOWN_SERVER_ERROR per entry (error_responses.py), logged, the connection
kept.
"""

from __future__ import annotations

import functools
import logging
import struct
import time
import weakref
from collections.abc import Callable, Coroutine
from types import CoroutineType
from typing import Any, Protocol

from broker import throttling
from broker.context import BrokerView, CloseConnection, ConnectionView, RequestContext
from broker.error_responses import error_response
from broker.handlers import HANDLERS, HandlerSpec, api_versions
from broker.security.sasl import IllegalSaslState
from messages.registry import api_name, response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.headers import (
    MalformedRequest,
    decode_body,
    decode_header,
    encode_response,
    is_flexible,
    peek_header,
)
from protocol.structs import copy_struct
from quotas.manager import ClientQuotaManager

log = logging.getLogger("broker.pipeline")
_SIZE = struct.Struct(">i")

Handler = Callable[[RequestContext, Any], Any]
Pending = Coroutine[Any, Any, None]


class PipelineConnection(ConnectionView, Protocol):
    """What the pipeline needs of a connection beyond what handlers see."""

    session_expires_ns: int | None

    client_id: str | None
    close_after_response: bool

    def send(self, chunks: list[Any]) -> None: ...
    def mute(self, throttle_ms: int, manager: ClientQuotaManager | None) -> None: ...
    def close_soon(self) -> None: ...
    def describe(self) -> str: ...


class Gate(Protocol):
    def __call__(self, connection: PipelineConnection, api_key: int) -> None:
        """Raises CloseConnection when the request may not come on this connection now."""


class Interceptor(Protocol):
    def intercept(self, ctx: RequestContext, request: Any, call: Handler) -> Any:
        """The result of `call(ctx, request)` (the rest of the chain and the handler),
        or what stands in for it: a response, None, a coroutine for either, or
        CloseConnection raised."""


class IdleInterceptor:
    """Base of an interceptor that is idle at times (a fault injector without rules):
    while `engaged` is False it would only call through, so the pipelines it joined
    leave it out of their chains, and it costs nothing per request. It calls
    `engagement_changed()` whenever `engaged` may have changed."""

    def __init__(self) -> None:
        self._listeners: list[weakref.WeakMethod[Callable[[], None]]] = []

    @property
    def engaged(self) -> bool:
        return True

    def listen(self, listener: Callable[[], None]) -> None:
        """`listener` (a bound method: held weakly) is called on every change."""
        self._listeners.append(weakref.WeakMethod(listener))

    def engagement_changed(self) -> None:
        alive = []
        for ref in self._listeners:
            listener = ref()
            if listener is not None:
                alive.append(ref)
                listener()
        self._listeners = alive


class Observer:
    """Sees what the pipeline did. Subclasses override what they need; the pipeline
    calls only the methods an observer overrides."""

    def request_done(self, ctx: RequestContext, response: Any) -> None:
        """A finished request: answered, unanswered (acks=0: `response` None), closed
        by an interceptor (`ctx.disconnected`), or answered before it was decoded
        (`ctx.header` None: an unsupported ApiVersions version, KIP-511)."""

    def oddity(self, connection: ConnectionView, what: str) -> None:
        """A request outside what the broker advertises (the connection is closed)."""

    def throttled(self, connection: ConnectionView, throttle_ms: int) -> None:
        """A response carrying `throttle_ms` is about to be sent; the connection is
        muted for that long right after it."""


def sasl_state_gate(connection: PipelineConnection, api_key: int) -> None:
    """Kafka's authenticator: before authentication only ApiVersions, SaslHandshake
    and SaslAuthenticate may come, each in its turn; once a session's lifetime is over
    (KIP-368) only a SaslHandshake starting re-authentication may, else it is closed."""
    sasl = connection.sasl
    if sasl is not None:
        try:
            sasl.check_request(api_key)
        except IllegalSaslState as exc:
            raise CloseConnection(str(exc)) from exc
    elif (
        connection.session_expires_ns is not None
        and api_key != ApiKey.SASL_HANDSHAKE
        and time.monotonic_ns() > connection.session_expires_ns
    ):
        raise CloseConnection("the SASL session expired without re-authentication")


class RequestPipeline:
    """One broker's request pipeline and its seams."""

    def __init__(self, broker: BrokerView, handlers: dict[int, HandlerSpec] = HANDLERS) -> None:
        self.broker = broker
        self.handlers = handlers
        # What ApiVersions advertises: exactly the APIs with a handler (Kafka's ApiVersionManager).
        self.advertised_apis = {key: spec.advertised for key, spec in handlers.items()}
        # What is answered (Produce advertises v0-2 it closes the connection on, as Kafka)
        self.served_apis = {key: (spec.min_version, spec.max_version) for key, spec in handlers.items()}
        self.gates: tuple[Gate, ...] = ()
        self.interceptors: tuple[Interceptor, ...] = ()
        self.observers: tuple[Observer, ...] = ()
        # Per seam, what runs per request: None or a tuple, so that an empty seam costs
        # one truth test.
        self._intercept: Callable[[RequestContext, Any, Handler], Any] | None = None
        self._done: tuple[Callable[[RequestContext, Any], None], ...] = ()
        self._oddity: tuple[Callable[[ConnectionView, str], None], ...] = ()
        self._throttled: tuple[Callable[[ConnectionView, int], None], ...] = ()
        # Set while an observer cannot keep up (the metrics sink's backlog): connections
        # stop reading until it is cleared.
        self.held = False

    # -- registration ----------------------------------------------------------
    def add_gate(self, gate: Gate) -> None:
        self.gates += (gate,)

    def add_interceptor(self, interceptor: Interceptor) -> None:
        """Interceptors run in the order added; the first sees the request first. An
        `IdleInterceptor` is in the chain only while it is engaged."""
        self.interceptors += (interceptor,)
        if isinstance(interceptor, IdleInterceptor):
            interceptor.listen(self._chain_interceptors)
        self._chain_interceptors()

    def _chain_interceptors(self) -> None:
        """What runs per request: nothing, the one engaged interceptor, or the chain of
        them, linked once per handler (no function built per request)."""
        active = tuple(i for i in self.interceptors if not isinstance(i, IdleInterceptor) or i.engaged)
        if not active:
            self._intercept = None
        elif len(active) == 1:
            self._intercept = active[0].intercept
        else:
            linked: dict[Handler, Handler] = {}

            def intercept(ctx: RequestContext, request: Any, call: Handler) -> Any:
                chain = linked.get(call)
                if chain is None:
                    chain = call
                    for interceptor in reversed(active[1:]):
                        chain = _link(interceptor.intercept, chain)
                    linked[call] = chain
                return active[0].intercept(ctx, request, chain)

            self._intercept = intercept

    def add_observer(self, observer: Observer) -> None:
        self.observers += (observer,)
        self._done, self._oddity, self._throttled = (
            tuple(getattr(o, name) for o in self.observers if _overrides(o, name))
            for name in ("request_done", "oddity", "throttled")
        )

    # -- frame to handler --------------------------------------------------------
    def handle(self, connection: PipelineConnection, frame: memoryview) -> Pending | None:
        """Handles one request frame. Returns None when it is done (answered, or the
        connection closed), or a coroutine that finishes it (a handler that waits);
        the connection runs it before the next request."""
        received_ns = time.monotonic_ns()
        try:
            decoded = self._decode(connection, frame, received_ns)
        except (MalformedRequest, CloseConnection) as exc:
            log.warning("closing %s: %s", connection.describe(), exc)
            connection.close()
            return None
        except Exception:  # a bug, logged as one; the connection closes rather than stalls
            log.exception("closing %s: decoding a request failed", connection.describe())
            connection.close()
            return None
        if decoded is None:
            return None
        ctx, handler = decoded
        try:
            if self._intercept is not None:
                result = self._intercept(ctx, ctx.request, handler)
            else:
                result = handler(ctx, ctx.request)
        except CloseConnection as exc:
            self._close_unanswered(connection, ctx, exc)
            return None
        except Exception:
            result = self._failed(connection, ctx)
        if isinstance(result, CoroutineType):  # inspect.iscoroutine, without the call
            ctx.handler_ns, ctx.resumed_ns = time.monotonic_ns() - received_ns, None
            return self._finish(connection, ctx, result)
        self._respond(connection, ctx, result)
        return None

    def _decode(
        self, connection: PipelineConnection, frame: memoryview, received_ns: int
    ) -> tuple[RequestContext, Handler] | None:
        api_key, api_version, correlation_id = peek_header(frame)
        spec = self.handlers.get(api_key)
        if spec is None:
            self._report_oddity(connection, frame, f"API key {api_key} is not advertised")
            raise MalformedRequest(f"unsupported API key {api_key}")
        if not spec.min_version <= api_version <= spec.max_version:
            low, high = spec.advertised
            self._report_oddity(
                connection,
                frame,
                f"{api_name(api_key)} v{api_version} is outside the advertised v{low}-{high}"
                if not low <= api_version <= high
                else f"{api_name(api_key)} v{api_version} is advertised but not served "
                f"(v{spec.min_version}-{spec.max_version})",
            )
            if api_key == api_versions.API_KEY:
                self._answer_unsupported_api_versions(
                    connection, frame, api_version, correlation_id, received_ns
                )
                return None
            raise MalformedRequest(f"unsupported version {api_version} of API key {api_key}")
        if self.gates:
            for gate in self.gates:
                gate(connection, api_key)
        header, body_offset = decode_header(frame, is_flexible(api_key, api_version))
        request = decode_body(api_key, api_version, frame[body_offset:])
        connection.client_id = header.client_id
        # Built from its first fields, the rest set after: a keyword argument costs a scan
        # of the 33 parameters (four of them took 0.7 us, more than the object).
        ctx = RequestContext(
            self.broker,
            connection,
            api_key,
            api_version,
            correlation_id,
            header.client_id,
            len(frame),
            received_ns,
        )
        ctx.resumed_ns = received_ns
        # No quotas while authenticating: Kafka's authenticator runs before KafkaApis.
        ctx.quota_recorded = connection.sasl is not None
        ctx.header = header
        ctx.request = request
        return ctx, spec.handler

    def _report_oddity(self, connection: PipelineConnection, frame: memoryview, what: str) -> None:
        """A request that will not be decoded: its client id (where header v1 has it, in
        v2 as well) files the oddity under the right client."""
        if not self._oddity:
            return
        try:
            connection.client_id = decode_header(frame, False)[0].client_id
        except MalformedRequest:
            pass
        for oddity in self._oddity:
            oddity(connection, what)

    def _answer_unsupported_api_versions(
        self,
        connection: PipelineConnection,
        frame: memoryview,
        api_version: int,
        correlation_id: int,
        received_ns: int,
    ) -> None:
        """KIP-511: an unknown ApiVersions version is answered in v0 so the client can
        learn the supported range and retry."""
        response = api_versions.unsupported_version_response(self.advertised_apis)
        ctx = RequestContext(
            self.broker,
            connection,
            api_versions.API_KEY,
            api_version,
            correlation_id,
            None,
            len(frame),
            received_ns,
        )
        ctx.response_bytes = self._send(connection, response, api_versions.API_KEY, 0, correlation_id)
        ctx.done_ns = time.monotonic_ns()
        ctx.busy_ns = ctx.done_ns - received_ns
        for done in self._done:
            done(ctx, response)

    # -- handler to response -----------------------------------------------------
    async def _finish(self, connection: PipelineConnection, ctx: RequestContext, pending: Any) -> None:
        try:
            response = await pending
        except CloseConnection as exc:  # e.g. a delayed fault
            self._close_unanswered(connection, ctx, exc)
            return
        except Exception:
            response = self._failed(connection, ctx)
        self._respond(connection, ctx, response)

    def _failed(self, connection: PipelineConnection, ctx: RequestContext) -> Any:
        """KafkaApis.handleError, called while the handler's exception is handled: the
        request is answered with UNKNOWN_SERVER_ERROR for each of its entries and pays
        its request quota like any other; where Kafka has no error response (acks=0
        produce, an API without error codes) the connection closes."""
        log.exception("%s: handler for %s failed", connection.describe(), api_name(ctx.api_key))
        ctx.quota_recorded = connection.sasl is not None  # whatever the handler recorded is moot
        ctx.throttle_ms, ctx.throttled_by, ctx.encoded, ctx.error_code = 0, None, None, None
        response = error_response(ctx, ErrorCode.UNKNOWN_SERVER_ERROR)
        if response is None:
            connection.close_after_response = True
        return response

    def _respond(self, connection: PipelineConnection, ctx: RequestContext, response: Any) -> None:
        """Quotas, then the response at once with its throttle time, then the mute
        (KIP-219: whatever the version, the throttle is served by not reading)."""
        if connection.closed:
            return
        try:
            if not ctx.quota_recorded:
                throttling.finish_request(ctx)
        except Exception as exc:  # a quota callback failing: Kafka never answers, here it closes
            log.exception("%s: request quota of %s failed", connection.describe(), api_name(ctx.api_key))
            self._close_unanswered(connection, ctx, exc)
            return
        quota_throttle_ms = ctx.throttle_ms
        if ctx.forced_throttle_ms > quota_throttle_ms:
            ctx.throttle_ms = ctx.forced_throttle_ms
        handler_ns = ctx.thread_ns()
        encode_ns = 0
        done_ns = time.monotonic_ns()
        muting = ctx.throttle_ms > 0 and not connection.close_after_response
        if muting and self._throttled:
            for throttled in self._throttled:
                throttled(connection, ctx.throttle_ms)
        if response is not None:
            if ctx.throttle_ms and _carries_throttle(ctx.api_key, ctx.api_version):
                # APIs without the field (SaslHandshake, DescribeQuorum, ...) are throttled
                # by the mute alone, as KafkaApis' sendResponseMaybeThrottle does.
                if ctx.encoded is not None and ctx.encoded[0] is response:
                    # Encoded before the throttle was known, and perhaps shared (ApiVersions
                    # answers every request with one cached object): changed as a copy.
                    response = copy_struct(response)
                    ctx.encoded = None
                response.throttle_time_ms = ctx.throttle_ms
            body = ctx.encoded[1] if ctx.encoded is not None and ctx.encoded[0] is response else None
            try:
                ctx.response_bytes = self._send(
                    connection, response, ctx.api_key, ctx.api_version, ctx.correlation_id, body
                )
            except Exception as exc:  # a bug, logged as one: the connection closes rather than stalls
                log.exception(
                    "%s: the %s response failed to encode", connection.describe(), api_name(ctx.api_key)
                )
                self._close_unanswered(connection, ctx, exc)
                return
            encode_ns = time.monotonic_ns() - done_ns
            done_ns += encode_ns
            if ctx.request_sensors is not None:  # under a request quota
                throttling.record_encoding(ctx, encode_ns)
        if connection.close_after_response:
            connection.close_soon()
        elif muting:
            muted_by = None
            if quota_throttle_ms > 0 and ctx.throttled_by is not None:
                muted_by, sensors = ctx.throttled_by
                muted_by.throttle(sensors, quota_throttle_ms, throttling.now_ms())
            connection.mute(ctx.throttle_ms, muted_by)
        if self._done:
            ctx.busy_ns, ctx.done_ns = handler_ns + encode_ns, done_ns
            for done in self._done:
                done(ctx, response)

    def _close_unanswered(self, connection: PipelineConnection, ctx: RequestContext, why: Exception) -> None:
        log.info("closing %s: %s", connection.describe(), why)
        ctx.disconnected = True
        for done in self._done:
            done(ctx, None)
        connection.close()

    @staticmethod
    def _send(
        connection: PipelineConnection,
        response: Any,
        api_key: int,
        api_version: int,
        correlation_id: int,
        body: list[Any] | None = None,
    ) -> int:
        """Writes the response; returns its size without the size prefix."""
        if connection.closed or connection.transport is None:
            return 0
        chunks = encode_response(response, api_key, api_version, correlation_id, body)
        connection.send(chunks)
        return int(_SIZE.unpack_from(chunks[0])[0])  # the size prefix encode_response framed


@functools.cache
def _carries_throttle(api_key: int, api_version: int) -> bool:
    """Whether the response of (API, version) has a throttle_time_ms field."""
    found = response_class(api_key).fields.get("throttle_time_ms")
    return found is not None and bool(found.for_version_q(api_version))


def _link(intercept: Callable[[RequestContext, Any, Handler], Any], call: Handler) -> Handler:
    """`call` behind `intercept`: one link of an interceptor chain."""

    def linked(ctx: RequestContext, request: Any) -> Any:
        return intercept(ctx, request, call)

    return linked


def _overrides(observer: Observer, name: str) -> bool:
    return getattr(type(observer), name) is not getattr(Observer, name)
