"""One client connection: framing, the request pipeline, ordered responses.

Requests are handled one at a time in arrival order, as Kafka does per connection, so
pipelined requests are answered in order. A handler either returns its response (the
fast path: no task is created) or a coroutine for requests that wait (long-poll fetch,
group joins); then the connection holds later requests until it completes.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import struct
import time
from collections import deque
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from broker import throttling
from broker.context import RequestContext
from broker.handlers import HANDLERS, api_versions
from broker.harness.conformance import unknown_tagged_fields, unread_bytes
from broker.harness.faults import Disconnect
from broker.harness.metrics_sink import request_row
from broker.security.sasl import IllegalSaslState, SaslSession, new_session
from broker.security.scram import SaslAuthenticationError
from broker.security.tls import peer_principal
from messages.registry import api_name
from protocol.headers import (
    MalformedRequest,
    decode_body,
    decode_header,
    encode_response,
    is_flexible,
    peek_header,
)
from quotas.callback import ANONYMOUS, KafkaPrincipal
from quotas.connections import Admission
from quotas.manager import ClientQuotaManager

if TYPE_CHECKING:
    from broker.server import BrokerServer

log = logging.getLogger("broker.connection")

_SIZE = struct.Struct(">i")
# Stop reading from a client that has this many undecoded requests queued.
MAX_QUEUED_REQUESTS = 64
API_VERSIONS = 18
CLOSE_LINGER_S = 0.05  # between a failed authentication's answer and the close
# When a throttle's conformance check runs: at 90% of it, at most this long before its end.
THROTTLE_CHECK_MARGIN_MS = 10
THROTTLE_CHECK_LATE_S = 0.001  # a check this close to the end (loop lag) is skipped


class Connection(asyncio.Protocol):
    _next_id = 0

    def __init__(self, broker: BrokerServer, listener: str) -> None:
        Connection._next_id += 1
        self.connection_id = Connection._next_id
        self.broker = broker
        self.listener = listener
        self.max_frame = broker.config.get_int("socket.request.max.bytes")
        self.transport: asyncio.Transport | None = None
        self.peer = ("", 0)
        self.client_id: str | None = None
        self.client_software_name = ""
        self.client_software_version = ""
        self.principal: KafkaPrincipal = ANONYMOUS
        # Until authentication completes on a SASL listener; None afterwards and elsewhere.
        self.sasl: SaslSession | None = new_session(broker.config, listener, broker.credentials)
        self._close_after_response = False
        self._buffer = bytearray()
        self._pending: deque[memoryview] = deque()
        self._busy = False
        self._task: asyncio.Task[None] | None = None
        self._write_paused = False
        self._reading_paused = False
        self._queue_full = False
        # Muted: nothing is read or handled until the throttle time (or admission) ends.
        self._muted = False
        self._unmute_handle: asyncio.TimerHandle | None = None
        self._throttle_check: asyncio.TimerHandle | None = None
        self._tags_checked: set[tuple[int, int]] = set()  # (api key, version) walked for unknown tags
        self._muted_by: ClientQuotaManager | None = None
        self.admitted = False  # counted by the connection quotas (released on close)
        self.closed = False
        self.idle = asyncio.Event()
        self.idle.set()

    # -- asyncio.Protocol ----------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not subclasses
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = (peer[0], peer[1])
        if self.sasl is None:
            self.principal = peer_principal(transport.get_extra_info("ssl_object"))
        self.broker.connections.add(self)
        self.admit()

    def admit(self) -> None:
        """Connection quotas at accept time (Kafka's ConnectionQuotas.inc): wait unread
        for a free slot under max.connections, close after the throttle time when over
        the ip's connection_creation_rate, close at once over max.connections.per.ip."""
        decision = self.broker.quota_managers.connections.admit(
            self.peer[0], throttling.now_ms(), self.listener
        )
        if decision.admission is Admission.ACCEPT:
            self.admitted = True
            if self._muted:
                self._unmute()
            return
        self._muted = True
        self._update_reading()
        if decision.admission is Admission.WAIT:
            self.broker.waiting_connections.append(self)
        elif decision.admission is Admission.THROTTLE:
            log.info(
                "closing %s after %d ms: over its connection creation rate",
                self.describe(),
                decision.throttle_ms,
            )
            self._unmute_handle = asyncio.get_running_loop().call_later(
                decision.throttle_ms / 1000, self.close
            )
        else:
            self.admitted = True
            log.info("closing %s: address has max.connections.per.ip connections", self.describe())
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.close()
        self.broker.connections.discard(self)
        self.idle.set()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._process()

    def data_received(self, data: bytes) -> None:
        if self._buffer:
            self._buffer += data
            view = memoryview(self._buffer)
        else:
            view = memoryview(data)
        pos = 0
        end = len(view)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(view, pos)
            if size < 0 or size > self.max_frame:
                log.warning(
                    "closing %s: request size %d outside 0..%d (socket.request.max.bytes)",
                    self.describe(),
                    size,
                    self.max_frame,
                )
                view.release()
                self.close()
                return
            if end - pos - 4 < size:
                break
            if self._buffer:
                # Frames sliced from our own buffer must be copied before it changes.
                self._pending.append(memoryview(bytes(view[pos + 4 : pos + 4 + size])))
            else:
                self._pending.append(view[pos + 4 : pos + 4 + size])
            pos += 4 + size
        if self._buffer:
            view.release()
            del self._buffer[:pos]
        elif pos < end:
            self._buffer += view[pos:]
        self._process()

    def resume(self) -> None:
        """Reads and handles again after a pause the broker imposed (metrics backlog)."""
        if not self.closed:
            self._process()

    def _update_reading(self) -> None:
        """Reading stops while muted or while too many requests are queued undecoded."""
        queued = len(self._pending)
        if queued > MAX_QUEUED_REQUESTS:
            self._queue_full = True
        elif queued <= MAX_QUEUED_REQUESTS // 2:
            self._queue_full = False
        sink = self.broker.metrics_sink
        pause = self._muted or self._queue_full or (sink is not None and sink.backlogged)
        if pause == self._reading_paused or self.transport is None or self.transport.is_closing():
            return
        self._reading_paused = pause
        if pause:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    # -- pipeline ------------------------------------------------------------
    def _process(self) -> None:
        sink = self.broker.metrics_sink
        while (
            self._pending
            and not self._busy
            and not self._muted
            and not self._write_paused
            and not self.closed
        ):
            if sink is not None and sink.backlogged:
                break  # resumed when the sink drains
            self._handle_frame(self._pending.popleft())
        self._update_reading()
        if not self._busy and not self._pending:
            self.idle.set()

    def _handle_frame(self, frame: memoryview) -> None:
        received_ns = time.monotonic_ns()
        sasl = self.sasl
        if sasl is not None and sasl.raw_tokens:
            self._handle_raw_token(sasl, frame)
            return
        try:
            api_key, api_version, correlation_id = peek_header(frame)
            spec = HANDLERS.get(api_key)
            if spec is None:
                self._peek_client_id(frame)
                self.broker.conformance.oddity(self, f"API key {api_key} is not advertised")
                raise MalformedRequest(f"unsupported API key {api_key}")
            if not spec.min_version <= api_version <= spec.max_version:
                self._peek_client_id(frame)
                self.broker.conformance.oddity(
                    self,
                    f"{api_name(api_key)} v{api_version} is outside the advertised "
                    f"v{spec.min_version}-{spec.max_version}",
                )
                if api_key == API_VERSIONS:
                    self._answer_unsupported_api_versions(
                        api_key, api_version, correlation_id, len(frame), received_ns
                    )
                    return
                raise MalformedRequest(f"unsupported version {api_version} of API key {api_key}")
            if sasl is not None:
                sasl.check_request(api_key)
            flexible = is_flexible(api_key, api_version)
            header, body_offset = decode_header(frame, flexible)
            request = decode_body(api_key, api_version, frame[body_offset:])
        except (MalformedRequest, IllegalSaslState) as exc:
            log.warning("closing %s: %s", self.describe(), exc)
            self.close()
            return
        if flexible and (api_key, api_version) not in self._tags_checked:
            # Once per API version and connection: the walk costs more than the decode.
            self._tags_checked.add((api_key, api_version))
            for path in unknown_tagged_fields(header) + unknown_tagged_fields(request):
                self.broker.conformance.oddity(self, f"unknown tagged field {path} in v{api_version}")
        self.client_id = header.client_id
        ctx = RequestContext(
            self.broker,
            self,
            api_key,
            api_version,
            correlation_id,
            header.client_id,
            len(frame),
            received_ns,
            resumed_ns=received_ns,
            # No quotas while authenticating: Kafka's authenticator runs before KafkaApis.
            quota_recorded=sasl is not None,
            header=header,
            request=request,
        )
        faults = self.broker.faults
        try:
            if faults.request_faults:
                result = faults.handle(ctx, request, spec.handler)
            else:
                result = spec.handler(ctx, request)
        except Disconnect as exc:
            self._disconnect(ctx, exc)
            return
        except Exception:
            log.exception("closing %s: handler for API key %d failed", self.describe(), api_key)
            self.close()
            return
        if inspect.iscoroutine(result):
            ctx.handler_ns, ctx.resumed_ns = time.monotonic_ns() - received_ns, None
            self._busy = True
            self.idle.clear()
            self._task = asyncio.get_running_loop().create_task(self._finish(ctx, result))
        else:
            self._respond(ctx, result)

    def _peek_client_id(self, frame: memoryview) -> None:
        """The client id of a request that will not be decoded (the conformance report
        files its oddity under it); it sits where header v1 has it in v2 as well."""
        try:
            self.client_id = decode_header(frame, False)[0].client_id
        except MalformedRequest:
            pass

    def _handle_raw_token(self, sasl: SaslSession, token: memoryview) -> None:
        """After a SaslHandshake v0 the client sends bare SASL tokens and gets bare
        challenges back; a failure closes the connection unanswered, as in Kafka."""
        try:
            challenge = sasl.evaluate(bytes(token))
        except SaslAuthenticationError as exc:
            log.warning("closing %s: SASL authentication failed: %s", self.describe(), exc)
            self.close()
            return
        if self.transport is not None:
            self.transport.writelines((_SIZE.pack(len(challenge)), challenge))
        if sasl.complete:
            self.authenticated(sasl)

    def authenticated(self, sasl: SaslSession) -> None:
        """Authentication succeeded: requests are now served as the SASL principal."""
        self.principal = sasl.principal
        self.sasl = None

    def fail_authentication(self, response: Any) -> Coroutine[Any, Any, Any]:
        """Answers a failed handshake or authentication after
        `connection.failed.authentication.delay.ms` and then closes, as Kafka's delayed
        close does (it slows down password guessing)."""
        self._close_after_response = True
        delay_s = self.broker.config.get_int("connection.failed.authentication.delay.ms") / 1000

        async def delayed() -> Any:
            await asyncio.sleep(delay_s)
            return response

        return delayed()

    def _close_soon(self) -> None:
        """Stops reading and closes a moment after the last response, so the client
        reads that response before it sees the connection end (kafka-python 3 drops data
        that arrives together with the FIN)."""
        self._pending.clear()
        self._muted = True
        self._update_reading()
        self._unmute_handle = asyncio.get_running_loop().call_later(CLOSE_LINGER_S, self.close)

    def _answer_unsupported_api_versions(
        self, api_key: int, api_version: int, correlation_id: int, request_bytes: int, received_ns: int
    ) -> None:
        """KIP-511: an unknown ApiVersions version is answered in v0 so the client can
        learn the supported range and retry."""
        response = api_versions.unsupported_version_response()
        size = self._send(response, api_key, 0, correlation_id)
        sink = self.broker.metrics_sink
        if sink is not None:
            ctx = RequestContext(
                self.broker, self, api_key, api_version, correlation_id, None, request_bytes, received_ns
            )
            done_ns = time.monotonic_ns()
            sink.add(request_row(ctx, response, size, done_ns - received_ns, done_ns))

    async def _finish(self, ctx: RequestContext, pending: Any) -> None:
        try:
            response = await pending
        except Disconnect as exc:  # a delayed fault
            self._disconnect(ctx, exc)
            return
        except Exception:
            log.exception("closing %s: handler for API key %d failed", self.describe(), ctx.api_key)
            self.close()
            return
        finally:
            self._busy = False
            self._task = None
        self._respond(ctx, response)
        self._process()

    def _respond(self, ctx: RequestContext, response: Any) -> None:
        """Quotas, then the response at once with its throttle time, then the mute
        (KIP-219: whatever the version, the throttle is served by not reading)."""
        if self.closed:
            return
        throttling.finish_request(ctx)
        quota_throttle_ms = ctx.throttle_ms
        faults = self.broker.faults
        if faults.throttles and response is not None:
            ctx.throttle_ms = max(ctx.throttle_ms, faults.forced_throttle_ms(ctx, response))
        stats = self.broker.throttle_stats.get(ctx.api_key)
        if stats is None:
            stats = self.broker.throttle_stats[ctx.api_key] = [0, 0, 0]
        stats[0] += 1
        if ctx.throttle_ms:
            stats[1] += ctx.throttle_ms
            stats[2] = max(stats[2], ctx.throttle_ms)
        handler_ns = ctx.thread_ns()
        size = encode_ns = 0
        done_ns = time.monotonic_ns()
        if response is not None:
            if ctx.throttle_ms:
                response.throttle_time_ms = ctx.throttle_ms
                ctx.encoded = None  # encoded before the throttle was known
            body = ctx.encoded[1] if ctx.encoded is not None and ctx.encoded[0] is response else None
            size = self._send(response, ctx.api_key, ctx.api_version, ctx.correlation_id, body)
            encode_ns = time.monotonic_ns() - done_ns
            done_ns += encode_ns
            throttling.record_encoding(ctx, encode_ns)
        if self._close_after_response:
            self._close_soon()
        elif ctx.throttle_ms > 0:
            muted_by = None
            if quota_throttle_ms > 0 and ctx.throttled_by is not None:
                muted_by, sensors = ctx.throttled_by
                muted_by.throttle(sensors, quota_throttle_ms, throttling.now_ms())
            self._mute(ctx.throttle_ms, muted_by)
        sink = self.broker.metrics_sink
        if sink is not None:
            sink.add(request_row(ctx, response, size, handler_ns + encode_ns, done_ns))
        self._record(ctx, response)

    def _disconnect(self, ctx: RequestContext, fault: Disconnect) -> None:
        log.info("closing %s: %s", self.describe(), fault)
        self._record(ctx, None)
        self.close()

    def _record(self, ctx: RequestContext, response: Any) -> None:
        """The harness's view of the request: the recording ring and the conformance report."""
        broker = self.broker
        broker.conformance.request(ctx, response)
        if broker.recorder.enabled:
            broker.recorder.add(ctx, response)

    def _send(
        self, response: Any, api_key: int, api_version: int, correlation_id: int, body: bytes | None = None
    ) -> int:
        """Writes the response; returns its size without the size prefix."""
        if self.transport is None or self.closed:
            return 0
        header, encoded = encode_response(response, api_key, api_version, correlation_id, body)
        self.transport.writelines((header, encoded))
        return len(header) - 4 + len(encoded)

    def _mute(self, throttle_ms: int, manager: ClientQuotaManager | None) -> None:
        """Reads nothing for `throttle_ms`. Shortly before the end, bytes that arrived
        meanwhile show a client that did not honour the throttle (conformance report)."""
        self._end_throttle()
        self._muted, self._muted_by = True, manager
        self._update_reading()
        loop = asyncio.get_running_loop()
        self._unmute_handle = loop.call_later(throttle_ms / 1000, self._unmute)
        waiting = unread_bytes(self)
        if waiting is not None:
            deadline = loop.time() + throttle_ms / 1000
            check_s = max(throttle_ms * 0.9, throttle_ms - THROTTLE_CHECK_MARGIN_MS) / 1000
            self._throttle_check = loop.call_later(check_s, self._check_throttle, waiting, deadline)

    def _check_throttle(self, waiting: int, deadline: float) -> None:
        self._throttle_check = None
        if self.closed or asyncio.get_running_loop().time() > deadline - THROTTLE_CHECK_LATE_S:
            return  # too late to tell an early request from a timely one
        now_waiting = unread_bytes(self)
        if now_waiting is not None:
            self.broker.conformance.throttle_checked(self, now_waiting > waiting)

    def _unmute(self) -> None:
        self._end_throttle()
        self._muted = False
        if not self.closed:
            self._process()

    def _end_throttle(self) -> None:
        if self._unmute_handle is not None:
            self._unmute_handle.cancel()
            self._unmute_handle = None
        if self._throttle_check is not None:
            self._throttle_check.cancel()
            self._throttle_check = None
        if self._muted_by is not None:
            self._muted_by.throttle_ended()
            self._muted_by = None

    def close(self) -> None:
        self._end_throttle()
        if not self.closed:
            self.broker.connection_closed(self)
        self.closed = True
        self._pending.clear()
        if self._task is not None:
            self._task.cancel()
        if self.transport is not None:
            self.transport.close()

    def describe(self) -> str:
        return f"connection {self.connection_id} from {self.peer[0]}:{self.peer[1]} (client_id={self.client_id!r})"
