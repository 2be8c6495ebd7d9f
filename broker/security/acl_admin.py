"""ACL administration shared by the ACL APIs' handlers and the Python API (`cluster.acls`):
validated creations and filtered deletions, persisted in `state.dir/acls.sqlite` (one
transaction per request, written off the event loop, so a kill -9 keeps every
acknowledged change and never half of a request) and applied to the authorizer."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from broker.persistence import PersistentStore
from broker.security.acls import (
    AclAuthorizer,
    AclBinding,
    AclFilter,
    InvalidAcl,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from quotas.store import open_state_db

_FIELDS = "resource_type, resource_name, pattern_type, principal, host, operation, permission"


class SqliteAclStorage:
    """The ACLs in SQLite, one row per binding. Used from one executor thread at a time."""

    def __init__(self, directory: str | Path) -> None:
        self.path, self._db = open_state_db(
            directory,
            "acls.sqlite",
            "CREATE TABLE IF NOT EXISTS acls (resource_type INTEGER NOT NULL, resource_name TEXT NOT NULL,"
            " pattern_type INTEGER NOT NULL, principal TEXT NOT NULL, host TEXT NOT NULL,"
            " operation INTEGER NOT NULL, permission INTEGER NOT NULL,"
            f" PRIMARY KEY ({_FIELDS}))",
        )

    def load(self) -> list[AclBinding]:
        return [_binding(row) for row in self._db.execute(f"SELECT {_FIELDS} FROM acls ORDER BY rowid")]

    def write(self, added: Sequence[AclBinding], removed: Sequence[AclBinding]) -> None:
        with self._db:  # one transaction
            self._db.execute("BEGIN IMMEDIATE")
            for binding in removed:
                self._db.execute(
                    "DELETE FROM acls WHERE resource_type = ? AND resource_name = ? AND pattern_type = ?"
                    " AND principal = ? AND host = ? AND operation = ? AND permission = ?",
                    _row(binding),
                )
            for binding in added:
                self._db.execute(
                    f"INSERT OR IGNORE INTO acls ({_FIELDS}) VALUES (?, ?, ?, ?, ?, ?, ?)", _row(binding)
                )

    def close(self) -> None:
        self._db.close()


def _row(binding: AclBinding) -> tuple[Any, ...]:
    return (
        int(binding.resource_type),
        binding.resource_name,
        int(binding.pattern_type),
        binding.principal,
        binding.host,
        int(binding.operation),
        int(binding.permission),
    )


def _binding(row: sqlite3.Row | tuple[Any, ...]) -> AclBinding:
    resource_type, name, pattern_type, principal, host, operation, permission = row
    return AclBinding(
        ResourceType(resource_type),
        name,
        PatternType(pattern_type),
        principal,
        host,
        Operation(operation),
        Permission(permission),
    )


class AclAdmin(PersistentStore):
    def __init__(
        self,
        acls: AclAuthorizer,
        storage: SqliteAclStorage | None = None,
        run: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
    ) -> None:
        """`run` executes a coroutine on the cluster's loop for synchronous callers."""
        super().__init__(storage, run, "acl-store")
        self.storage: SqliteAclStorage | None = storage
        self.acls = acls
        if storage is not None:
            for binding in storage.load():
                acls.add(binding)

    async def create_async(self, bindings: Sequence[AclBinding]) -> list[str | None]:
        """Validates each binding (its refusal message, or None) and stores the valid ones
        in one transaction."""
        refusals: list[str | None] = []
        valid: list[AclBinding] = []
        for binding in bindings:
            try:
                binding.validate()
            except InvalidAcl as exc:
                refusals.append(str(exc))
                continue
            refusals.append(None)
            valid.append(binding)
        await self._commit(valid)
        return refusals

    async def delete_async(self, filters: Sequence[AclFilter]) -> list[list[AclBinding]]:
        """The bindings each filter matches, all removed in one transaction (matched under
        the same lock as the write, so concurrent deletions never report one binding twice)."""
        async with self._lock:
            matched = [self.acls.matching(acl_filter) for acl_filter in filters]
            gone = list({b: None for found in matched for b in found})
            await self._write(gone, removing=True)
        return matched

    async def _commit(self, added: list[AclBinding]) -> None:
        async with self._lock:
            await self._write(added, removing=False)

    async def _write(self, bindings: list[AclBinding], removing: bool) -> None:
        """SQLite first, then memory, with the caller holding the lock. Shielded: a client
        that goes away mid-write cannot leave the store and the authorizer disagreeing."""
        if not bindings:
            return

        async def write() -> None:
            added, removed = ([], bindings) if removing else (bindings, [])
            await self._persist(added, removed)
            for binding in bindings:
                if removing:
                    self.acls.remove(binding)
                else:
                    self.acls.add(binding)

        await asyncio.shield(write())

    # -- Python API for harnesses --------------------------------------------------
    def add(
        self,
        principal: str,
        operation: str,
        resource_type: str,
        name: str,
        *,
        pattern: str = "LITERAL",
        permission: str = "ALLOW",
        host: str = "*",
    ) -> None:
        """`cluster.acls.add("User:alice", "READ", "TOPIC", "orders")`; raises InvalidAcl."""
        binding = AclBinding(
            ResourceType[resource_type],
            name,
            PatternType[pattern],
            principal,
            host,
            Operation[operation],
            Permission[permission],
        )
        (refusal,) = self._sync(self.create_async([binding]))
        if refusal is not None:
            raise InvalidAcl(refusal)

    def remove(self, **match: str) -> list[AclBinding]:
        """Deletes what a filter of `principal=`, `operation=`, `resource_type=`, `name=`,
        `pattern=` (default ANY), `permission=`, `host=` matches; returns it."""
        (gone,) = self._sync(self.delete_async([acl_filter_of(match)]))
        return gone

    def list(self, **match: str) -> list[AclBinding]:
        """The bindings a filter (as `remove` takes it) matches; no arguments: all. Read on
        the cluster's loop, where they change."""
        acl_filter = acl_filter_of(match)

        async def read() -> list[AclBinding]:
            return self.acls.matching(acl_filter)

        return self._sync(read()) if self._run is not None else self.acls.matching(acl_filter)

    def _sync(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        if self._run is None:
            coroutine.close()
            raise RuntimeError("on the cluster's own event loop use the *_async methods")
        return self._run(coroutine)


def acl_filter_of(match: dict[str, str]) -> AclFilter:
    unknown = set(match) - {
        "principal",
        "operation",
        "resource_type",
        "name",
        "pattern",
        "permission",
        "host",
    }
    if unknown:
        raise TypeError(f"unknown ACL filter fields: {sorted(unknown)}")
    return AclFilter(
        ResourceType[match.get("resource_type", "ANY")],
        match.get("name"),
        PatternType[match.get("pattern", "ANY")],
        match.get("principal"),
        match.get("host"),
        Operation[match.get("operation", "ANY")],
        Permission[match.get("permission", "ANY")],
    )
