"""`cluster.quotas`: quota administration shared by the 48/49 handlers and the Python API.

Alterations are serialized by a lock; with a state dir each request's changes are
written to SQLite in one transaction on a dedicated executor thread (never on the event
loop) before they are applied in memory and announced to listeners.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from broker.persistence import PersistentStore
from quotas.entity import CLIENT_ID, IP, USER, QuotaEntity
from quotas.resolution import Resolved, resolve
from quotas.store import Alteration, AlterPlan, QuotaOp, QuotaStore, SqliteQuotaStorage
from quotas.validation import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    QuotaError,
    is_ip_literal,
    parse_filter,
)

ANY = object()  # describe(user=ANY): every entity that has a user component
HOST_LOOKUP_TIMEOUT_S = 2.0


class QuotaAdmin(PersistentStore):
    def __init__(
        self,
        storage: SqliteQuotaStorage | None = None,
        run: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
    ) -> None:
        """`run` executes a coroutine on the cluster's loop for synchronous callers (the
        thread-backed cluster); without it only the async API is available."""
        super().__init__(storage, run, "quota-store")
        self.storage: SqliteQuotaStorage | None = storage
        self.store = QuotaStore()
        # Ip entity host names -> the address each is enforced on (resolved when set).
        self.addresses: dict[str, str] = {}
        if storage is not None:
            changes = storage.load()
            # Persisted host names are resolved once at start, before any request is served.
            for entity, _key, _value in changes:
                name = entity.get(IP)
                if name and not is_ip_literal(name) and name not in self.addresses:
                    address = _resolve_now(name)
                    if address is not None:
                        self.addresses[name] = address
            self.store.apply(changes)

    def address_of(self, name: str) -> str:
        """The address an ip entity's name stands for (the name itself for a literal)."""
        return self.addresses.get(name, name)

    async def alter_entries(self, alterations: list[Alteration], validate_only: bool) -> AlterPlan:
        """Validates, persists (one transaction) and applies one AlterClientQuotas request."""
        hosts = await _resolve_hosts(alterations)
        async with self._lock:
            plan = self.store.plan(alterations, lambda name: is_ip_literal(name) or name in hosts)
            if not validate_only and plan.changes:
                self.addresses.update(hosts)
                await self._persist(plan.changes)
                self.store.apply(plan.changes)
        return plan

    # -- Python API for harnesses ------------------------------------------------
    async def alter_async(
        self,
        entity: dict[str, str | None],
        set: dict[str, float] | None = None,  # noqa: A002 - mirrors the HTTP API's field name
        remove: Iterable[str] = (),
        validate_only: bool = False,
    ) -> None:
        """Sets and removes keys on one entity, e.g.
        `alter({"user": "alice", "client-id": None}, set={"producer_byte_rate": 1024})`;
        raises QuotaError with Kafka's code and message when refused."""
        ops = [QuotaOp(key, float(value)) for key, value in (set or {}).items()]
        ops += [QuotaOp(key, 0.0, remove=True) for key in remove]
        plan = await self.alter_entries([Alteration(list(entity.items()), ops)], validate_only)
        for result in plan.results:
            if result.error_code:
                raise QuotaError(result.error_code, result.error_message or "")

    def alter(
        self,
        entity: dict[str, str | None],
        set: dict[str, float] | None = None,  # noqa: A002
        remove: Iterable[str] = (),
        validate_only: bool = False,
    ) -> None:
        """`alter_async` for synchronous callers of a thread-backed cluster."""
        if self._run is None:
            raise RuntimeError("on the cluster's own event loop use `await cluster.quotas.alter_async(...)`")
        self._run(self.alter_async(entity, set, remove, validate_only))

    def describe(self, strict: bool = False, **components: object) -> dict[QuotaEntity, dict[str, float]]:
        """Entities matching `user=`, `client_id=`, `ip=` (a name, None for the default,
        ANY for any); no components: every entity."""
        parsed: list[tuple[str, int, str | None]] = []
        for name, match in components.items():
            entity_type = {"user": USER, "client_id": CLIENT_ID, "ip": IP}[name]
            if match is ANY:
                parsed.append((entity_type, MATCH_SPECIFIED, None))
            elif match is None:
                parsed.append((entity_type, MATCH_DEFAULT, None))
            else:
                parsed.append((entity_type, MATCH_EXACT, str(match)))
        return dict(self.store.describe(parse_filter(parsed, strict)))

    def resolve(self, user: str = "ANONYMOUS", client_id: str = "") -> dict[str, Resolved]:
        """The quota per key a connection of `user` with `client_id` is held to."""
        return {r.key: r for r in resolve(self.store.index, user, client_id)}


def _first_address(infos: Iterable[tuple[Any, ...]]) -> str | None:
    """The address Java's InetAddress.getByName picks: IPv4 first (the JVM's default
    java.net.preferIPv6Addresses=false), else the first."""
    addresses = [(family, sockaddr[0]) for family, _, _, _, sockaddr in infos]
    for family, address in addresses:
        if family == socket.AF_INET:
            return str(address)
    return str(addresses[0][1]) if addresses else None


def _resolve_now(name: str) -> str | None:
    try:
        return _first_address(socket.getaddrinfo(name, None, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError):
        return None


async def _resolve_hosts(alterations: Iterable[Alteration]) -> dict[str, str]:
    """Ip entity names that are host names and resolve (Kafka accepts those), with the
    address each stands for, looked up without blocking the loop."""
    names = {
        name
        for alteration in alterations
        for entity_type, name in alteration.entity
        if entity_type == IP and name and not is_ip_literal(name)
    }
    loop = asyncio.get_running_loop()
    resolved = {}
    for name in names:
        try:
            infos = await asyncio.wait_for(
                loop.getaddrinfo(name, None, type=socket.SOCK_STREAM), HOST_LOOKUP_TIMEOUT_S
            )
        except (OSError, TimeoutError, UnicodeError):
            continue
        address = _first_address(infos)
        if address is not None:
            resolved[name] = address
    return resolved
