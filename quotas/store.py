"""The client-quota config store: validated alterations, filtered descriptions, listeners.

Pure logic: validation and planning happen here, persistence is a separate object the
broker drives off its event loop, and every applied change reaches the enforcement side
through `QuotaListener`s (nothing polls the store).
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from protocol.errors import ErrorCode
from quotas.entity import QuotaEntity
from quotas.java import hashmap_capacity, hashmap_order
from quotas.resolution import QuotaIndex
from quotas.validation import (
    QuotaError,
    QuotaFilter,
    allowed_keys,
    is_ip_literal,
    validate_entity,
    validate_value,
)

Change = tuple[QuotaEntity, str, float | None]  # None: the key is removed

log = logging.getLogger("quotas.store")


class QuotaListener(Protocol):
    def quota_changed(self, entity: QuotaEntity, key: str, value: float | None) -> None: ...


@dataclass(frozen=True, slots=True)
class QuotaOp:
    key: str
    value: float
    remove: bool = False


@dataclass(frozen=True, slots=True)
class Alteration:
    """One AlterClientQuotas entry: entity components as sent, and the ops on it."""

    entity: Sequence[tuple[str, str | None]]
    ops: Sequence[QuotaOp]


@dataclass(slots=True)
class AlterResult:
    entity: QuotaEntity
    error_code: int = 0
    error_message: str | None = None


@dataclass(slots=True)
class AlterPlan:
    """Per-entity results, in first-appearance order, and the changes to apply."""

    results: list[AlterResult] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)


class QuotaStore:
    def __init__(self) -> None:
        self.configs: dict[QuotaEntity, dict[str, float]] = {}
        self.index = QuotaIndex()
        self.listeners: list[QuotaListener] = []

    def plan(
        self, alterations: Iterable[Alteration], is_valid_host: Callable[[str], bool] = is_ip_literal
    ) -> AlterPlan:
        """Validates a request as Kafka's ClientQuotaControlManager does: per entity, all
        or nothing; a duplicate key or a repeated entity makes that entity INVALID_REQUEST
        ("Ignoring duplicate entity"), while the other entities still apply."""
        plan = AlterPlan()
        results: dict[QuotaEntity, AlterResult] = {}
        for alteration in alterations:
            entity = QuotaEntity(dict(alteration.entity))  # types repeated in one entry: last wins
            ops: dict[str, float | None] = {}
            duplicate_key = False
            for op in alteration.ops:
                if op.key in ops:
                    duplicate_key = True
                ops[op.key] = None if op.remove else op.value
            if duplicate_key or entity in results:
                result = results.setdefault(entity, AlterResult(entity))
                result.error_code, result.error_message = (
                    ErrorCode.INVALID_REQUEST,
                    f"Ignoring duplicate entity {entity}",
                )
                continue
            result = results[entity] = AlterResult(entity)
            try:
                plan.changes.extend(self._plan_entity(entity, ops, len(alteration.ops), is_valid_host))
            except QuotaError as exc:
                result.error_code, result.error_message = exc.code, exc.message
        plan.results = list(results.values())
        return plan

    def _plan_entity(
        self,
        entity: QuotaEntity,
        ops: dict[str, float | None],
        op_count: int,
        is_valid_host: Callable[[str], bool],
    ) -> list[Change]:
        """Kafka's alterClientQuotaEntity. Its ops are a `new HashMap<>(ops.size())` built
        from the request's ops, so they are validated (and the first invalid one reported)
        and written in that HashMap's iteration order, not in request order."""
        validate_entity(entity)
        keys = allowed_keys(entity, is_valid_host)
        current = self.configs.get(entity, {})
        changes: list[Change] = []
        for key in hashmap_order(ops, hashmap_capacity(op_count, len(ops))):
            value = ops[key]
            if value is None:
                if key in current:  # removing an unset key is a no-op, never an error
                    changes.append((entity, key, None))
                continue
            validate_value(keys, key, value)
            if current.get(key) != value:  # an equal value is a success that changes nothing
                changes.append((entity, key, value))
        return changes

    def apply(self, changes: Iterable[Change]) -> None:
        for entity, key, value in changes:
            config = self.configs.setdefault(entity, {})
            if value is None:
                config.pop(key, None)
                if not config:
                    del self.configs[entity]
            else:
                config[key] = value
            self.index.set(entity, key, value)
            for listener in self.listeners:
                listener.quota_changed(entity, key, value)

    def describe(self, quota_filter: QuotaFilter) -> list[tuple[QuotaEntity, dict[str, float]]]:
        """Entities matching the filter with their values (a linear scan, as in Kafka)."""
        return [
            (entity, dict(values)) for entity, values in self.configs.items() if quota_filter.matches(entity)
        ]


_DOUBLE = struct.Struct(">d")  # values kept bit-exact (SQLite's REAL would turn NaN into NULL)


def open_state_db(directory: str | Path, filename: str, schema: str) -> tuple[Path, sqlite3.Connection]:
    """A SQLite file of the state dir, created with `schema` if new. WAL with
    synchronous=NORMAL: a committed transaction survives the process being killed (it is
    in the WAL before commit returns); a power cut may lose the last ones. The connection
    is used from one executor thread at a time, never from the event loop."""
    Path(directory).mkdir(parents=True, exist_ok=True)
    path = Path(directory) / filename
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(schema)
    return path, db


class SqliteQuotaStorage:
    """Quota configs in SQLite: one transaction per AlterClientQuotas request.

    WAL with synchronous=NORMAL: a committed transaction survives the process being
    killed (it is in the WAL before commit returns); a power cut may lose the last ones.
    Not thread-safe: the broker calls it from one executor thread at a time.
    """

    def __init__(self, directory: str | Path) -> None:
        self.path, self._db = open_state_db(
            directory,
            "quotas.sqlite",
            "CREATE TABLE IF NOT EXISTS client_quotas ("
            " entity TEXT NOT NULL, quota_key TEXT NOT NULL, value BLOB NOT NULL,"
            " PRIMARY KEY (entity, quota_key))",
        )

    def load(self) -> list[Change]:
        rows = self._db.execute(
            "SELECT entity, quota_key, value FROM client_quotas ORDER BY rowid"
        ).fetchall()
        changes: list[Change] = []
        dropped: list[tuple[str, str]] = []
        for entity, key, value in rows:
            number = _DOUBLE.unpack(value)[0]
            if math.isfinite(number):
                changes.append((QuotaEntity(json.loads(entity)), key, number))
            else:
                dropped.append((entity, key))
        if dropped:
            # Older versions took NaN and infinities, which Kafka refuses ("must be a finite
            # number"). Such a value is no quota Kafka could hold; a NaN
            # connection_creation_rate would even refuse every connection from its address.
            # So it is dropped, from the file too, and the key is unset, as if removed.
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("DELETE FROM client_quotas WHERE entity = ? AND quota_key = ?", dropped)
            for entity, key in dropped:
                log.warning("dropped the stored quota %s of %s: not a finite number", key, entity)
        return changes

    def write(self, changes: Sequence[Change]) -> None:
        if not changes:
            return
        with self._db:  # one transaction
            self._db.execute("BEGIN IMMEDIATE")
            for entity, key, value in changes:
                encoded = json.dumps(entity.to_json(), sort_keys=True)
                if value is None:
                    self._db.execute(
                        "DELETE FROM client_quotas WHERE entity = ? AND quota_key = ?", (encoded, key)
                    )
                else:
                    self._db.execute(
                        "INSERT INTO client_quotas (entity, quota_key, value) VALUES (?, ?, ?)"
                        " ON CONFLICT (entity, quota_key) DO UPDATE SET value = excluded.value",
                        (encoded, key, _DOUBLE.pack(value)),
                    )

    def close(self) -> None:
        self._db.close()
