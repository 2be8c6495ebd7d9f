"""One client connection: framing, request order, muting and raw SASL tokens.

Requests are handled one at a time in arrival order, as Kafka does per connection, so
pipelined requests are answered in order. Each frame goes to the broker's request
pipeline (pipeline.py), which answers it at once (the fast path: no task is created) or
returns a coroutine for requests that wait (long-poll fetch, group joins); then the
connection holds later requests until it completes. Nothing here knows what plugs into
the pipeline.
"""

from __future__ import annotations

import asyncio
import logging
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
# Stop reading from a client that has this many undecoded requests queued.
MAX_QUEUED_REQUESTS = 64
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

    def __init__(self, broker: ConnectionOwner, listener: str) -> None:
        Connection._next_id += 1
        self.connection_id = Connection._next_id
        self.broker = broker
        self.pipeline = broker.pipeline
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
        # KIP-368: the mechanism and lifetime of the authenticated SASL session (0: no end),
        # and when it ends (monotonic ns; None: never).
        self.sasl_mechanism = ""
        self.session_lifetime_ms = 0
        self.session_expires_ns: int | None = None
        self.close_after_response = False
        self._buffer = bytearray()
        self._pending: deque[memoryview] = deque()
        self._unsent: list[Any] | None = None  # responses held for one write (see _process)
        self._busy = False
        self._task: asyncio.Task[None] | None = None
        self._write_paused = False
        self._reading_paused = False
        self._queue_full = False
        # Muted: nothing is read or handled until the throttle time (or admission) ends.
        self._muted = False
        self.mute_deadline: float | None = None  # loop time the throttle's mute ends
        self._unmute_handle: asyncio.TimerHandle | None = None
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
        """Reads and handles again after the pipeline's hold ends."""
        if not self.closed:
            self._process()

    def _update_reading(self) -> None:
        """Reading stops while muted, while too many requests are queued undecoded, or
        while the pipeline is held (an observer that cannot keep up)."""
        queued = len(self._pending)
        if queued > MAX_QUEUED_REQUESTS:
            self._queue_full = True
        elif queued <= MAX_QUEUED_REQUESTS // 2:
            self._queue_full = False
        pause = self._muted or self._queue_full or self.pipeline.held
        if pause == self._reading_paused or self.transport is None or self.transport.is_closing():
            return
        self._reading_paused = pause
        if pause:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    # -- requests, in order ----------------------------------------------------
    def _process(self) -> None:
        if self._unsent is not None:  # already processing, further up the stack
            return
        # Responses to the frames handled here go out together at the end, in one write
        # (one writev): a client that pipelines gets one system call, not one per response.
        self._unsent = []
        try:
            self._handle_pending()
        finally:
            self._flush()
        self._update_reading()
        if not self._busy and not self._pending:
            self.idle.set()

    def _handle_pending(self) -> None:
        pipeline = self.pipeline
        while (
            self._pending
            and not self._busy
            and not self._muted
            and not self._write_paused
            and not self.closed
            and not pipeline.held  # resumed when the hold ends
        ):
            frame = self._pending.popleft()
            sasl = self.sasl
            if sasl is not None and sasl.raw_tokens:
                self._handle_raw_token(sasl, frame)
                continue
            waiting = pipeline.handle(self, frame)
            if waiting is not None:
                self._busy = True
                self.idle.clear()
                self._task = asyncio.get_running_loop().create_task(self._finish(waiting))

    async def _finish(self, waiting: Coroutine[Any, Any, None]) -> None:
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
        elif self.transport is not None and not self.closed:
            self.transport.writelines(chunks)

    def _flush(self) -> None:
        unsent, self._unsent = self._unsent, None
        if unsent and self.transport is not None and not self.transport.is_closing():
            self.transport.writelines(unsent)

    # -- SASL ------------------------------------------------------------------
    def _handle_raw_token(self, sasl: SaslSession, token: memoryview) -> None:
        """After a SaslHandshake v0 the client sends bare SASL tokens and gets bare
        challenges back; a failure closes the connection unanswered, as in Kafka."""
        try:
            challenge = sasl.evaluate(bytes(token))
        except SaslAuthenticationError as exc:
            log.warning("closing %s: SASL authentication failed: %s", self.describe(), exc)
            self.close()
            return
        self.send([_SIZE.pack(len(challenge)), challenge])
        if sasl.complete:
            self.authenticated(sasl)

    def authenticated(self, sasl: SaslSession) -> None:
        """Authentication (or re-authentication) succeeded: requests are now served as the
        SASL principal, for `connections.max.reauth.ms` (per listener or broker-wide)."""
        self.principal = sasl.principal
        self.sasl = None
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

    def close_soon(self) -> None:
        """Stops reading and closes a moment after the last response, so the client
        reads that response before it sees the connection end (kafka-python 3 drops data
        that arrives together with the FIN)."""
        self._pending.clear()
        self._muted = True
        self._update_reading()
        self._unmute_handle = asyncio.get_running_loop().call_later(CLOSE_LINGER_S, self.close)

    # -- muting ----------------------------------------------------------------
    def mute(self, throttle_ms: int, manager: ClientQuotaManager | None) -> None:
        """Reads nothing for `throttle_ms`; `manager` (the quota that was violated)
        counts the connection as throttled meanwhile."""
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
