"""One client connection: framing, request order, muting and raw SASL tokens.

Requests are handled one at a time in arrival order, as Kafka does per connection, so
pipelined requests are answered in order. Each frame goes to the broker's request
pipeline (pipeline.py), which answers it at once (the fast path: no task is created) or
returns a coroutine for requests that wait (long-poll fetch, group joins); then the
connection holds later requests until it completes. Nothing here knows what plugs into
the pipeline.

Memory per connection is bounded whatever the client does: a frame by
`socket.request.max.bytes` (`sasl.server.max.receive.size` before SASL authentication
completes), undecoded requests by MAX_QUEUED_REQUESTS / MAX_QUEUED_BYTES, and answers by
the transport's write buffer: requests are handled (and read) only while the transport
takes what is written (asyncio's pause_writing/resume_writing), and one round of answers
is cut at ROUND_BYTES, so a client that never reads holds at most about one round and one
response. Kafka reads one request per connection and mutes it until its answer is sent;
this is that bound with pipelining kept.

`last_active` is when something was last read or written (Kafka's Selector updates its
idle timer on any activity on the channel); the broker's periodic sweep closes
connections idle for `connections.max.idle.ms`. A TLS connection's handshake runs here
too (the TLS layer is put under the connection once admitted), so it counts against the
connection limits from accept and is closed by the same sweep if it never completes, as in
Kafka.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import logging
import ssl
import struct
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any, Protocol

from broker import throttling
from broker.config.broker_config import BrokerConfig
from broker.pipeline import RequestPipeline
from broker.security.credentials import CredentialStore
from broker.security.sasl import SaslSession, enabled_mechanisms, new_session
from broker.security.scram import SaslAuthenticationError
from broker.security.tls import peer_principal
from quotas.callback import ANONYMOUS, KafkaPrincipal
from quotas.connections import Admission
from quotas.manager import ClientQuotaManager, QuotaManagers

log = logging.getLogger("broker.connection")

_SIZE = struct.Struct(">i")
# Stop reading from a client that has this many undecoded requests (or bytes) queued.
MAX_QUEUED_REQUESTS = 64
MAX_QUEUED_BYTES = 1 << 20
# Answers written in one round (one writelines) at most before the transport is asked
# whether it takes more (pause_writing): a pipelining client that never reads cannot make
# the broker answer a whole read's worth of requests into memory.
ROUND_BYTES = 256 << 10
_monotonic = time.monotonic


def _ssl_protocol_class(loop: asyncio.AbstractEventLoop) -> Any:
    """The SSLProtocol of the running loop's own start_tls: uvloop's (C) or asyncio's."""
    if type(loop).__module__.startswith("uvloop"):
        from uvloop.loop import SSLProtocol  # type: ignore[attr-defined]

        return SSLProtocol
    return asyncio.sslproto.SSLProtocol


CLOSE_LINGER_S = 0.05  # between a failed authentication's answer and the close


class ConnectionOwner(Protocol):
    """What a connection needs of the broker that accepted it."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def credentials(self) -> CredentialStore: ...
    @property
    def quota_managers(self) -> QuotaManagers: ...
    @property
    def pipeline(self) -> RequestPipeline: ...
    @property
    def connections(self) -> set[Connection]: ...
    @property
    def waiting_connections(self) -> deque[Connection]: ...
    def connection_closed(self, connection: Connection) -> None: ...


class Connection(asyncio.Protocol):
    _next_id = 0

    def __init__(self, broker: ConnectionOwner, listener: str, tls: ssl.SSLContext | None = None) -> None:
        Connection._next_id += 1
        self.connection_id = Connection._next_id
        self.broker = broker
        self.pipeline = broker.pipeline
        self.listener = listener
        self.transport: asyncio.Transport | None = None
        # TLS listeners: the handshake runs once the connection is admitted (_start_tls);
        # until then the bytes read (the ClientHello) are kept for the TLS layer.
        self._tls = tls
        self._handshaking = tls is not None
        self._tls_layer: asyncio.BaseProtocol | None = None
        self._early_data: list[bytes] = []
        self.peer = ("", 0)
        self.client_id: str | None = None
        self.client_software_name = ""
        self.client_software_version = ""
        self.principal: KafkaPrincipal = ANONYMOUS
        self.memo: dict[Any, Any] = {}  # per stage or observer (ConnectionView.memo)
        # Until authentication completes on a SASL listener; None afterwards and elsewhere.
        self.sasl: SaslSession | None = new_session(broker.config, listener, broker.credentials)
        self.max_frame = self._frame_limit()
        # KIP-368: the mechanism and lifetime of the authenticated SASL session (0: no end),
        # and when it ends (monotonic ns; None: never).
        self.sasl_mechanism = ""
        self.session_lifetime_ms = 0
        self.session_expires_ns: int | None = None
        self.close_after_response = False
        self._buffer = bytearray()
        self._pending: deque[memoryview] = deque()
        self._pending_bytes = 0  # of the frames in _pending, size prefixes included
        self._unsent: list[Any] | None = None  # responses held for one write (see _process)
        self._unsent_bytes = 0
        self._round_scheduled = False
        # When something was last read or written (monotonic s), for connections.max.idle.ms,
        # and since when the incomplete frame in _buffer has been read with reading on
        # (socket.request.receive.timeout.ms).
        self.last_active = _monotonic()
        self.receive_started: float | None = None
        self._busy = False
        self._task: asyncio.Task[None] | None = None
        self._task_started = False
        self._write_paused = False
        self._reading_paused = False
        self._queue_full = False
        # Muted: nothing is read or handled until the throttle time (or admission) ends.
        self._muted = False
        self.mute_deadline: float | None = None  # loop time the throttle's mute ends
        self._unmute_handle: asyncio.TimerHandle | None = None
        self._close_handle: asyncio.TimerHandle | None = None  # a close on its way: stays muted
        self._muted_by: ClientQuotaManager | None = None
        self.admitted = False  # counted by the connection quotas (released on close)
        self.closed = False
        self.idle = asyncio.Event()
        self.idle.set()
        self._idle_set = True  # mirrors idle.is_set() without a call per round

    # -- asyncio.Protocol ----------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._tls_layer is not None:  # again, from the TLS layer: its handshake completed
            self._tls_ready(transport)
            return
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not subclasses
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = (peer[0], peer[1])
        self.last_active = _monotonic()
        if self.sasl is None and not self._handshaking:
            self.principal = peer_principal(transport.get_extra_info("ssl_object"))
        self.broker.connections.add(self)
        self.admit()
        if self._reading_paused:
            # uvloop starts reading after connection_made whatever it asked: pause again.
            asyncio.get_running_loop().call_soon(self._pause_again)

    def _pause_again(self) -> None:
        if (
            self._reading_paused
            and self._tls_layer is None
            and not self.closed
            and self.transport is not None
        ):
            self.transport.pause_reading()

    def admit(self) -> None:
        """Connection quotas at accept time (Kafka's ConnectionQuotas.inc): wait unread
        for a free slot under max.connections, close after the throttle time when over
        the ip's connection_creation_rate, close at once over max.connections.per.ip."""
        decision = self.broker.quota_managers.connections.admit(
            self.peer[0], throttling.now_ms(), self.listener
        )
        if decision.admission is Admission.ACCEPT:
            self.admitted = True
            self.last_active = _monotonic()  # the idle clock starts at admission
            if self._handshaking and self._tls_layer is None:
                self._start_tls()
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
            self._close_handle = asyncio.get_running_loop().call_later(
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
        self._idle_set = True

    def _start_tls(self) -> None:
        """Puts the TLS layer (the loop's own SSLProtocol, as start_tls does, but at once,
        before anything more is read) under this connection and hands it what was read
        before admission. The handshake is bounded by connections.max.idle.ms from
        admission (asyncio's default of 60 s when that is off) and by the idle sweep; its
        end calls connection_made again with the TLS transport."""
        raw = self.transport
        assert raw is not None and self._tls is not None
        loop = asyncio.get_running_loop()
        idle_ms = self.broker.config.get_int("connections.max.idle.ms")
        waiter = loop.create_future()
        waiter.add_done_callback(self._handshake_done)
        layer = _ssl_protocol_class(loop)(
            loop,
            self,
            self._tls,
            waiter,
            server_side=True,
            ssl_handshake_timeout=idle_ms / 1000 if idle_ms > 0 else None,
        )
        self._tls_layer = layer
        raw.set_protocol(layer)
        layer.connection_made(raw)
        early, self._early_data = self._early_data, []
        for data in early:
            view = memoryview(data)
            while view and not self.closed:
                buffer = layer.get_buffer(len(view))
                count = min(len(buffer), len(view))
                buffer[:count] = view[:count]
                layer.buffer_updated(count)
                view = view[count:]
        if self._reading_paused:
            raw.resume_reading()

    def _tls_ready(self, transport: asyncio.BaseTransport) -> None:
        """The handshake completed: requests come through the TLS transport from now on."""
        self.transport = transport  # type: ignore[assignment]
        self._handshaking = False
        self._reading_paused = False  # the TLS transport reads from the start
        if self.sasl is None:
            self.principal = peer_principal(transport.get_extra_info("ssl_object"))
        self.last_active = _monotonic()
        self._update_reading()

    def _handshake_done(self, waiter: asyncio.Future[None]) -> None:
        """A handshake that failed (a TLS error, a reset, the timeout, closed by the idle
        sweep or the broker stopping) closes the connection: the TLS layer reports no
        connection_lost before its handshake completed."""
        if waiter.cancelled() or waiter.exception() is None:
            return
        if not self.closed:
            log.info("closing %s: TLS handshake failed: %r", self.describe(), waiter.exception())
        self.connection_lost(None)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self.last_active = _monotonic()
        self._process()

    def data_received(self, data: bytes) -> None:
        self.last_active = _monotonic()
        if self._handshaking:  # the start of a TLS handshake, read before admission
            self._early_data.append(bytes(data))
            self._update_reading()
            return
        view = memoryview(data)
        end = len(view)
        pos = 0
        if self._buffer:
            pos = self._complete_buffered_frame(view)
            if pos < 0:
                return
        # Complete frames are views of the read itself: only a frame cut by a read's end
        # is copied (into _buffer), not the reads around it.
        pending = self._pending
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(view, pos)
            if size < 0 or size > self.max_frame:
                self._refuse_frame(size)
                return
            if end - pos - 4 < size:
                break
            pending.append(view[pos + 4 : pos + 4 + size])
            pos += 4 + size
            self._pending_bytes += 4 + size
        if pos < end:  # (then _buffer was empty: a frame it held took all it lacked)
            self._buffer += view[pos:]
            self.receive_started = self.last_active  # a new frame started in this read
        elif not self._buffer:
            self.receive_started = None
        self._process()

    def _complete_buffered_frame(self, view: memoryview) -> int:
        """Adds to the frame begun in an earlier read (in _buffer) what it lacks from
        `view`, queues it once whole; how much of `view` it took, or -1 when the
        connection is closing (its size was refused)."""
        buffer = self._buffer
        pos = 0
        if len(buffer) < 4:
            pos = min(4 - len(buffer), len(view))
            buffer += view[:pos]
            if len(buffer) < 4:
                return pos
        (size,) = _SIZE.unpack_from(buffer)
        if size < 0 or size > self.max_frame:
            self._refuse_frame(size)
            return -1
        missing = 4 + size - len(buffer)
        taken = min(missing, len(view) - pos)
        buffer += view[pos : pos + taken]
        if taken == missing:
            # The buffer becomes the frame's own storage; the next cut frame gets another.
            self._pending.append(memoryview(buffer).toreadonly()[4:])
            self._pending_bytes += 4 + size
            self._buffer = bytearray()
        return pos + taken

    def _frame_limit(self) -> int:
        """socket.request.max.bytes; before SASL authentication completes (or while a
        session re-authenticates) sasl.server.max.receive.size too, as Kafka's
        SaslServerAuthenticator reads its frames."""
        limit = self.broker.config.get_int("socket.request.max.bytes")
        if self.sasl is not None:
            limit = min(
                limit, int(self.broker.config.for_listener(self.listener, "sasl.server.max.receive.size"))
            )
        return limit

    def _refuse_frame(self, size: int) -> None:
        """A size prefix beyond the limit, refused before its body is read (Kafka's
        InvalidReceiveException): closed at once; before authentication, as a failed
        authentication, after connection.failed.authentication.delay.ms and unanswered."""
        authenticating = self.sasl is not None
        log.warning(
            "closing %s: request size %d outside 0..%d (%s)",
            self.describe(),
            size,
            self.max_frame,
            "sasl.server.max.receive.size" if authenticating else "socket.request.max.bytes",
        )
        if authenticating:
            self._close_after_failed_authentication()
        else:
            self.close()

    def _close_after_failed_authentication(self) -> None:
        """Reads nothing more and closes after connection.failed.authentication.delay.ms."""
        delay_ms = self.broker.config.get_int("connection.failed.authentication.delay.ms")
        if delay_ms <= 0:
            self.close()
            return
        self._buffer.clear()
        self.receive_started = None
        self.close_soon(delay_ms / 1000)

    def resume(self) -> None:
        """Reads and handles again after the pipeline's hold ends."""
        if not self.closed:
            self._process()

    def _update_reading(self) -> None:
        """Reading stops while muted, while too many requests (or bytes) are queued
        undecoded, while the transport takes no more answers (the client is not reading
        them), during a TLS handshake, or while the pipeline is held (an observer that
        cannot keep up)."""
        queued = len(self._pending)
        if queued > MAX_QUEUED_REQUESTS or self._pending_bytes > MAX_QUEUED_BYTES:
            self._queue_full = True
        elif queued <= MAX_QUEUED_REQUESTS // 2 and self._pending_bytes <= MAX_QUEUED_BYTES // 2:
            self._queue_full = False
        pause = (
            self._muted or self._queue_full or self._write_paused or self._handshaking or self.pipeline.held
        )
        if pause == self._reading_paused or self.transport is None or self.transport.is_closing():
            return
        if self._tls_layer is not None and self._handshaking:
            return  # the TLS layer reads the handshake off the transport: leave it be
        self._reading_paused = pause
        if pause:
            self.transport.pause_reading()
            self.receive_started = None  # the broker's pause is not the client's slowness
        else:
            self.transport.resume_reading()
            if self._buffer:
                self.receive_started = _monotonic()

    # -- requests, in order ----------------------------------------------------
    def _process(self) -> None:
        if self._unsent is not None:  # already processing, further up the stack
            return
        # Responses to the frames handled here go out together at the end, in one write
        # (one writev): a client that pipelines gets one system call, not one per response.
        # A round ends at ROUND_BYTES of answers; the next comes after the other
        # connections' turn on the loop, and only if the transport took these without
        # pausing writing.
        self._unsent = []
        self._unsent_bytes = 0
        try:
            self._handle_pending()
        finally:
            full = self._unsent_bytes >= ROUND_BYTES
            self._flush()
        if full and self._pending and not self._round_scheduled:
            self._round_scheduled = True
            asyncio.get_running_loop().call_soon(self._next_round)
        if (
            self._pending
            or self._reading_paused
            or self._queue_full
            or self._muted
            or self._write_paused
            or self._handshaking
            or self.pipeline.held
        ):
            self._update_reading()  # else reading stays on: nothing to change
        if not self._idle_set and not self._busy and not self._pending:
            self.idle.set()
            self._idle_set = True

    def _next_round(self) -> None:
        self._round_scheduled = False
        if not self.closed:
            self._process()

    def _handle_pending(self) -> None:
        pipeline = self.pipeline
        while (
            self._pending
            and not self._busy
            and not self._muted
            and not self._write_paused
            and not self.closed
            and not pipeline.held  # resumed when the hold ends
            and self._unsent_bytes < ROUND_BYTES
        ):
            frame = self._pending.popleft()
            self._pending_bytes -= len(frame) + 4
            sasl = self.sasl
            if sasl is not None and sasl.raw_tokens:
                self._handle_raw_token(sasl, frame)
                continue
            waiting = pipeline.handle(self, frame)
            if waiting is not None:
                self._busy = True
                self.idle.clear()
                self._idle_set = False
                self._task_started = False
                self._task = asyncio.get_running_loop().create_task(self._finish(waiting))

    async def _finish(self, waiting: Coroutine[Any, Any, None]) -> None:
        self._task_started = True
        try:
            await waiting
        finally:
            self._busy = False
            self._task = None
        self._process()

    def send(self, chunks: list[Any]) -> None:
        """Writes one response (its size and header, then its body's chunks, never
        joined), at once or with the others of this round of `_process`."""
        if self._unsent is not None:
            self._unsent += chunks
            self._unsent_bytes += _SIZE.unpack_from(chunks[0])[0]
        elif self.transport is not None and not self.closed:
            self.last_active = _monotonic()
            self.transport.writelines(chunks)

    def _flush(self) -> None:
        unsent, self._unsent = self._unsent, None
        if unsent and self.transport is not None and not self.transport.is_closing():
            self.last_active = _monotonic()
            self.transport.writelines(unsent)

    # -- SASL ------------------------------------------------------------------
    def _handle_raw_token(self, sasl: SaslSession, token: memoryview) -> None:
        """After a SaslHandshake v0 the client sends bare SASL tokens and gets bare
        challenges back; a failure closes the connection unanswered, as in Kafka, after
        connection.failed.authentication.delay.ms (KafkaChannel's delayed close on an
        authentication failure: it slows down password guessing)."""
        try:
            challenge = sasl.evaluate(bytes(token))
        except SaslAuthenticationError as exc:
            log.warning("closing %s: SASL authentication failed: %s", self.describe(), exc)
            self._close_after_failed_authentication()
            return
        self.send([_SIZE.pack(len(challenge)), challenge])
        if sasl.complete:
            self.authenticated(sasl)

    def authenticated(self, sasl: SaslSession) -> None:
        """Authentication (or re-authentication) succeeded: requests are now served as the
        SASL principal, for `connections.max.reauth.ms` (per listener or broker-wide)."""
        self.principal = sasl.principal
        self.sasl = None
        self.max_frame = self._frame_limit()
        self.sasl_mechanism = sasl.mechanism
        self.session_lifetime_ms = int(
            self.broker.config.for_listener(self.listener, "connections.max.reauth.ms")
        )
        expiry_ms = sasl.credential_expiry_ms
        if expiry_ms is not None:
            # A delegation token's session ends with the token (SaslServerAuthenticator's
            # calcCompletionTimesAndReturnSessionLifetimeMs): an expired one at once.
            remaining = max(0, expiry_ms - int(time.time() * 1000))
            if self.session_lifetime_ms > 0:
                remaining = min(remaining, self.session_lifetime_ms)
            self.session_lifetime_ms = remaining
        self.session_expires_ns = (
            time.monotonic_ns() + self.session_lifetime_ms * 1_000_000
            if self.session_lifetime_ms > 0 or expiry_ms is not None
            else None
        )

    def start_reauthentication(self) -> SaslSession | None:
        """A SaslHandshake after authentication: a new session for the same mechanism and
        principal (KIP-368), when this session has a lifetime; None otherwise."""
        if not self.sasl_mechanism or self.session_lifetime_ms <= 0:
            return None
        self.sasl = SaslSession(
            enabled_mechanisms(self.broker.config, self.listener),
            self.broker.credentials,
            reauthenticating=(self.sasl_mechanism, self.principal),
        )
        self.max_frame = self._frame_limit()
        return self.sasl

    def fail_authentication(self, response: Any) -> Coroutine[Any, Any, Any]:
        """Answers a failed handshake or authentication after
        `connection.failed.authentication.delay.ms` and then closes, as Kafka's delayed
        close does (it slows down password guessing)."""
        self.close_after_response = True
        delay_s = self.broker.config.get_int("connection.failed.authentication.delay.ms") / 1000

        async def delayed() -> Any:
            await asyncio.sleep(delay_s)
            return response

        return delayed()

    def close_soon(self, delay_s: float = CLOSE_LINGER_S) -> None:
        """Stops reading and closes a moment after the last response, so the client
        reads that response before it sees the connection end (kafka-python 3 drops data
        that arrives together with the FIN)."""
        if self.closed:
            return
        self._end_throttle()  # a pending unmute must not reopen a closing connection
        self._pending.clear()
        self._pending_bytes = 0
        self._muted = True
        self._update_reading()
        loop = asyncio.get_running_loop()
        when = loop.time() + delay_s
        if self._close_handle is not None:
            if self._close_handle.when() <= when:
                return  # an earlier close stands
            self._close_handle.cancel()
        self._close_handle = loop.call_at(when, self.close)

    # -- muting ----------------------------------------------------------------
    def mute(self, throttle_ms: int, manager: ClientQuotaManager | None) -> None:
        """Reads nothing for `throttle_ms`; `manager` (the quota that was violated)
        counts the connection as throttled meanwhile."""
        if self._close_handle is not None:
            return  # closing: muted until the close anyway
        self._end_throttle()
        self._muted, self._muted_by = True, manager
        self._update_reading()
        loop = asyncio.get_running_loop()
        self.mute_deadline = loop.time() + throttle_ms / 1000
        self._unmute_handle = loop.call_later(throttle_ms / 1000, self._unmute)

    def _unmute(self) -> None:
        self._end_throttle()
        self._muted = False
        if not self.closed:
            self._process()

    def _end_throttle(self) -> None:
        self.mute_deadline = None
        if self._unmute_handle is not None:
            self._unmute_handle.cancel()
            self._unmute_handle = None
        if self._muted_by is not None:
            self._muted_by.throttle_ended()
            self._muted_by = None

    def close(self) -> None:
        self._flush()  # what was answered before the close still goes out
        self._end_throttle()
        if self._close_handle is not None:
            self._close_handle.cancel()
            self._close_handle = None
        if not self.closed:
            self.broker.connection_closed(self)
        self.closed = True
        self._pending.clear()
        self._pending_bytes = 0
        task = self._task
        if task is not None and self._task_started:
            task.cancel()
        elif task is not None:
            # Closed in the loop turn its frame was read in (a bad size prefix in the next
            # read): a task cancelled before its first step drops the request's coroutine
            # unawaited, the request not done and its handler's cleanup not run. Kafka
            # carries out what it read; the request starts, then is cancelled.
            task.get_loop().call_soon(task.cancel)
        if self.transport is not None:
            self.transport.close()

    def describe(self) -> str:
        return f"connection {self.connection_id} from {self.peer[0]}:{self.peer[1]} (client_id={self.client_id!r})"
