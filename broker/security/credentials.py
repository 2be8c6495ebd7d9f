"""`cluster.credentials`: SASL users and SCRAM credentials, shared by the SASL servers,
the DescribeUserScramCredentials (50) / AlterUserScramCredentials (51) handlers and the
Python API; and the delegation tokens SCRAM also accepts (`credentials.tokens`,
delegation_tokens.py).

Two sources. `sasl.users.file` (JSON `{"user": "password"}`) plays the part of Kafka's
JAAS `user_<name>` options: PLAIN checks those passwords, and SCRAM credentials for both
mechanisms are derived from them at load. AlterUserScramCredentials changes are the
dynamic layer: with a state dir they go to SQLite (one transaction per request, on a
dedicated executor thread, serialized by a lock, before being applied in memory) and
override the file for that (user, mechanism) on every load; a deletion is stored as a
tombstone so a file user deleted through the API stays deleted after a restart.
Validation, codes and messages are Kafka's ScramControlManager's; descriptions follow
its ScramImage.describe.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from broker.persistence import PersistentStore
from broker.security.delegation_tokens import TokenStore
from broker.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    credential_from_password,
    credential_from_salted_password,
    new_salt,
    salted_password,
)
from protocol.errors import ErrorCode
from quotas.store import open_state_db

if TYPE_CHECKING:
    from broker.config.broker_config import BrokerConfig

ALL_MECHANISMS = (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
Key = tuple[str, ScramMechanism]
Change = tuple[str, ScramMechanism, ScramCredential | None]  # None: deleted (a tombstone)


class CredentialError(Exception):
    """A refused alteration from the Python API, with Kafka's code and message."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Deletion:
    user: str
    mechanism: int  # the wire type: unknown types are answered, not rejected early


@dataclass(frozen=True, slots=True)
class Upsertion:
    user: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True, slots=True)
class AlterResult:
    user: str
    error_code: int = ErrorCode.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DescribeResult:
    user: str
    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    credentials: tuple[tuple[ScramMechanism, int], ...] = ()  # (mechanism, iterations)


@dataclass(slots=True)
class AlterPlan:
    results: list[AlterResult] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)


class SqliteCredentialStorage:
    """API-made credential changes in SQLite; a row with NULL keys is a deletion.

    WAL with synchronous=NORMAL, as the quota store: a committed request survives the
    process being killed. Not thread-safe: called from one executor thread at a time.
    """

    def __init__(self, directory: str | Path) -> None:
        self.path, self._db = open_state_db(
            directory,
            "credentials.sqlite",
            "CREATE TABLE IF NOT EXISTS scram_credentials ("
            " user TEXT NOT NULL, mechanism INTEGER NOT NULL,"
            " salt BLOB, stored_key BLOB, server_key BLOB, iterations INTEGER,"
            " PRIMARY KEY (user, mechanism))",
        )

    def load(self) -> list[Change]:
        rows = self._db.execute(
            "SELECT user, mechanism, salt, stored_key, server_key, iterations FROM scram_credentials ORDER BY rowid"
        ).fetchall()
        changes: list[Change] = []
        for user, type_code, salt, stored_key, server_key, iterations in rows:
            mechanism = ScramMechanism.from_type(type_code)
            if mechanism is None:
                continue  # written by a later version knowing more mechanisms
            credential = (
                None if stored_key is None else ScramCredential(salt, stored_key, server_key, iterations)
            )
            changes.append((user, mechanism, credential))
        return changes

    def write(self, changes: Sequence[Change]) -> None:
        with self._db:  # one transaction
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                "INSERT INTO scram_credentials (user, mechanism, salt, stored_key, server_key, iterations)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user, mechanism) DO UPDATE SET salt = excluded.salt,"
                " stored_key = excluded.stored_key, server_key = excluded.server_key, iterations = excluded.iterations",
                [
                    (user, mechanism.type_code)
                    + ((None,) * 4 if c is None else (c.salt, c.stored_key, c.server_key, c.iterations))
                    for user, mechanism, c in changes
                ],
            )

    def close(self) -> None:
        self._db.close()


def load_users_file(path: str | Path) -> dict[str, str]:
    """`sasl.users.file`: a JSON object of user name to password."""
    users = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(users, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in users.items()
    ):
        raise ValueError(f"{path}: sasl.users.file must be a JSON object of user name to password")
    return users


class CredentialStore(PersistentStore):
    def __init__(
        self,
        users: Mapping[str, str] | None = None,
        storage: SqliteCredentialStorage | None = None,
        run: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
        tokens: TokenStore | None = None,
    ) -> None:
        """`users`: the users file's passwords; `run` executes a coroutine on the
        cluster's loop for synchronous callers, as QuotaAdmin's does; `tokens`: the
        delegation tokens SCRAM also authenticates (default: none, tokens disabled)."""
        super().__init__(storage, run, "credential-store")
        self.storage: SqliteCredentialStorage | None = storage
        self.tokens = tokens if tokens is not None else TokenStore(run=run)
        self._passwords = dict(users or {})
        overrides = (
            {(user, mechanism): credential for user, mechanism, credential in storage.load()}
            if storage is not None
            else {}
        )
        self._credentials: dict[Key, ScramCredential] = {}
        for user, password in self._passwords.items():
            for mechanism in ALL_MECHANISMS:
                if (user, mechanism) not in overrides:
                    self._credentials[user, mechanism] = credential_from_password(mechanism, password)
        self._apply((user, mechanism, credential) for (user, mechanism), credential in overrides.items())

    @classmethod
    def from_config(
        cls, config: BrokerConfig, run: Callable[[Coroutine[Any, Any, Any]], Any] | None = None
    ) -> CredentialStore:
        users_file, state_dir = config.get_str("sasl.users.file"), config.get_str("state.dir")
        return cls(
            load_users_file(users_file) if users_file else None,
            SqliteCredentialStorage(state_dir) if state_dir else None,
            run,
            TokenStore.from_config(config, run),
        )

    # -- what the SASL servers ask --------------------------------------------------
    def check_plain(self, user: str, password: str) -> bool:
        """PLAIN against the users file, compared in constant time."""
        expected = self._passwords.get(user)
        matches = hmac.compare_digest(password.encode("utf-8"), (expected or "").encode("utf-8"))
        return expected is not None and matches

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._credentials.get((user, mechanism))

    # -- DescribeUserScramCredentials -----------------------------------------------
    def describe(self, users: Sequence[str] | None) -> list[DescribeResult]:
        """ScramImage.describe: null or empty `users` describes every user with a
        credential; a repeated name is DUPLICATE_RESOURCE, one without any credential
        RESOURCE_NOT_FOUND. Synchronous: alterations apply in memory in one step."""
        if not users:
            users = sorted({user for user, _ in self._credentials})
        counts: dict[str, int] = {}
        for user in users:
            counts[user] = counts.get(user, 0) + 1
        results = []
        for user, count in counts.items():
            if count > 1:
                results.append(
                    DescribeResult(
                        user,
                        ErrorCode.DUPLICATE_RESOURCE,
                        f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}",
                    )
                )
                continue
            found = tuple(
                (m, c.iterations) for m in ALL_MECHANISMS if (c := self._credentials.get((user, m)))
            )
            if found:
                results.append(DescribeResult(user, credentials=found))
            else:
                results.append(
                    DescribeResult(
                        user,
                        ErrorCode.RESOURCE_NOT_FOUND,
                        f"Attempt to describe a user credential that does not exist: {user}",
                    )
                )
        return results

    # -- AlterUserScramCredentials --------------------------------------------------
    async def alter(
        self, deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]
    ) -> list[AlterResult]:
        """Validates, persists (one transaction) and applies one request; per-user results."""
        async with self._lock:
            plan = self.plan(deletions, upsertions)
            await self._commit(plan.changes)
        return plan.results

    def plan(self, deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]) -> AlterPlan:
        """ScramControlManager.alterCredentials: a user may appear once per request (a
        second deletion or upsertion makes it DUPLICATE_RESOURCE and drops the first);
        every other user's alteration still applies. Results: deletions, then
        upsertions, then errors, each in request order."""
        to_delete: dict[str, Deletion] = {}
        to_upsert: dict[str, Upsertion] = {}
        errors: dict[str, tuple[int, str | None]] = {}
        duplicate = (
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        )
        for deletion in deletions:
            if deletion.user in errors:
                continue
            if to_delete.pop(deletion.user, None) is not None:
                errors[deletion.user] = duplicate
            elif (error := self._validate_deletion(deletion)) is not None:
                errors[deletion.user] = error
            else:
                to_delete[deletion.user] = deletion
        for upsertion in upsertions:
            if upsertion.user in errors:
                continue
            if (
                to_delete.pop(upsertion.user, None) is not None
                or to_upsert.pop(upsertion.user, None) is not None
            ):
                errors[upsertion.user] = duplicate
            elif (error := _validate_upsertion(upsertion)) is not None:
                errors[upsertion.user] = error
            else:
                to_upsert[upsertion.user] = upsertion
        plan = AlterPlan()
        for deletion in to_delete.values():
            plan.results.append(AlterResult(deletion.user))
            plan.changes.append((deletion.user, _known(deletion.mechanism), None))
        for upsertion in to_upsert.values():
            mechanism = _known(upsertion.mechanism)
            if not upsertion.salted_password:
                # Kafka's HMAC refuses an empty key ("Empty key"); an unexpected
                # exception is UNKNOWN_SERVER_ERROR with no message.
                errors[upsertion.user] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
                continue
            credential = credential_from_salted_password(
                mechanism, upsertion.salt, upsertion.salted_password, upsertion.iterations
            )
            plan.results.append(AlterResult(upsertion.user))
            plan.changes.append((upsertion.user, mechanism, credential))
        plan.results.extend(AlterResult(user, code, message) for user, (code, message) in errors.items())
        return plan

    def _validate_deletion(self, deletion: Deletion) -> tuple[int, str] | None:
        error = _validate_user_and_mechanism(deletion.user, deletion.mechanism)
        if error is None and (deletion.user, _known(deletion.mechanism)) not in self._credentials:
            return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        return error

    async def _commit(self, changes: list[Change]) -> None:
        """Persist first (off the loop), then apply: memory never holds what disk lacks."""
        if not changes:
            return
        await self._persist(changes)
        self._apply(changes)

    def _apply(self, changes: Iterable[Change]) -> None:
        for user, mechanism, credential in changes:
            if credential is None:
                self._credentials.pop((user, mechanism), None)
            else:
                self._credentials[user, mechanism] = credential

    # -- Python API for harnesses ------------------------------------------------------
    async def upsert_user_async(
        self,
        name: str,
        password: str,
        mechanisms: Iterable[ScramMechanism] = ALL_MECHANISMS,
        iterations: int = MIN_ITERATIONS,
    ) -> None:
        """Sets `name`'s SCRAM password for each mechanism in one transaction, validated
        as an AlterUserScramCredentials upsertion; raises CredentialError when refused."""
        upsertions = []
        for mechanism in mechanisms:
            salt = new_salt()
            salted = salted_password(mechanism, password, salt, iterations)
            upsertions.append(Upsertion(name, mechanism.type_code, iterations, salt, salted))
        await self._alter_each([], upsertions)

    def upsert_user(
        self,
        name: str,
        password: str,
        mechanisms: Iterable[ScramMechanism] = ALL_MECHANISMS,
        iterations: int = MIN_ITERATIONS,
    ) -> None:
        """`upsert_user_async` for synchronous callers of a thread-backed cluster."""
        self._call(self.upsert_user_async(name, password, mechanisms, iterations))

    async def delete_user_async(
        self, name: str, mechanisms: Iterable[ScramMechanism] = ALL_MECHANISMS
    ) -> None:
        """Deletes `name`'s credentials for each mechanism in one transaction; raises
        CredentialError (RESOURCE_NOT_FOUND) if one of them does not exist."""
        await self._alter_each([Deletion(name, m.type_code) for m in mechanisms], [])

    def delete_user(self, name: str, mechanisms: Iterable[ScramMechanism] = ALL_MECHANISMS) -> None:
        self._call(self.delete_user_async(name, mechanisms))

    async def _alter_each(self, deletions: list[Deletion], upsertions: list[Upsertion]) -> None:
        """Each alteration validated as its own request (so one user may have several
        mechanisms changed), all committed in one transaction or none."""
        async with self._lock:
            changes: list[Change] = []
            plans = [self.plan([d], []) for d in deletions] + [self.plan([], [u]) for u in upsertions]
            for plan in plans:
                for result in plan.results:
                    if result.error_code:
                        raise CredentialError(result.error_code, result.error_message)
                changes.extend(plan.changes)
            await self._commit(changes)

    def close(self) -> None:
        self.tokens.close()
        super().close()

    def _call(self, coro: Coroutine[Any, Any, None]) -> None:
        if self._run is None:
            coro.close()
            raise RuntimeError("on the cluster's own event loop await the *_async form of this call")
        self._run(coro)


def _known(type_code: int) -> ScramMechanism:
    mechanism = ScramMechanism.from_type(type_code)
    assert mechanism is not None, "validated before"
    return mechanism


def _validate_user_and_mechanism(user: str, type_code: int) -> tuple[int, str] | None:
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if ScramMechanism.from_type(type_code) is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _validate_upsertion(upsertion: Upsertion) -> tuple[int, str] | None:
    error = _validate_user_and_mechanism(upsertion.user, upsertion.mechanism)
    if error is not None:
        return error
    if upsertion.iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None
