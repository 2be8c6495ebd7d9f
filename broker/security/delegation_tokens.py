"""`cluster.credentials.tokens`: delegation tokens (KIP-48, KIP-373), issued, renewed,
expired and swept as Kafka 4.x's DelegationTokenControlManager does, looked up by the
SCRAM servers as its DelegationTokenCache serves them.

A token is an id (a random Kafka Uuid string) and an HMAC-SHA512 of that id under
`delegation.token.secret.key`; a client authenticates with SCRAM and `tokenauth=true`,
the id as user name and the HMAC in base64 as password, and is then its owner. Without
a secret key every token API answers DELEGATION_TOKEN_AUTH_DISABLED. A token expires at
its expiry timestamp (issue + `delegation.token.expiry.time.ms`, moved on by renewals)
and never lives past its max timestamp (issue + `delegation.token.max.lifetime.ms`, or
less if asked); expired tokens stay findable (and answer DELEGATION_TOKEN_EXPIRED) until
the sweep every `delegation.token.expiry.check.interval.ms` removes them, as Kafka's
controller does. With a state dir, tokens are kept in `delegation_tokens.sqlite` (one
transaction per change, written off the event loop) as Kafka keeps them in its metadata
log; their HMACs are not stored but derived again from the secret key at load, so a
changed key invalidates them, as in Kafka.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from broker.persistence import PersistentStore
from broker.security.scram import (
    MIN_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    TokenCredential,
    credential_from_password,
)
from protocol.errors import ErrorCode
from protocol.uuids import random_uuid_string
from quotas.callback import KafkaPrincipal
from quotas.store import open_state_db

if TYPE_CHECKING:
    from broker.config.broker_config import BrokerConfig

log = logging.getLogger("broker.delegation_tokens")

SECRET_KEY = "delegation.token.secret.key"
SECRET_KEY_ALIAS = "delegation.token.master.key"  # the key's name before Kafka 2.x deprecated it
MAX_LIFETIME = "delegation.token.max.lifetime.ms"
EXPIRY_TIME = "delegation.token.expiry.time.ms"
CHECK_INTERVAL = "delegation.token.expiry.check.interval.ms"
ERROR_TIMESTAMP = -1  # DelegationTokenManager.ERROR_TIMESTAMP: what the broker's refusals carry
USER_TYPE = "User"


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class Token:
    """Kafka's TokenInformation with its HMAC (a DelegationToken)."""

    token_id: str
    owner: KafkaPrincipal
    requester: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int
    hmac: bytes
    # SCRAM credentials from the HMAC as password, made on first use per mechanism (a
    # random salt each, MIN_ITERATIONS, as DelegationTokenManager.prepareScramCredentials).
    _credentials: dict[ScramMechanism, ScramCredential] = field(
        default_factory=dict, repr=False, compare=False
    )

    def expired(self, at_ms: int) -> bool:
        return self.max_ms < at_ms or self.expiry_ms < at_ms

    def owner_or_renewer(self, principal: KafkaPrincipal) -> bool:
        """TokenInformation.ownerOrRenewer: who may describe the token (the requester too)."""
        return principal in (self.owner, self.requester) or principal in self.renewers

    def may_renew(self, principal: KafkaPrincipal) -> bool:
        """DelegationTokenControlManager.allowedToRenew: its owner or a renewer (also for expiry)."""
        return principal == self.owner or principal in self.renewers

    def credential(self, mechanism: ScramMechanism) -> ScramCredential:
        found = self._credentials.get(mechanism)
        if found is None:
            password = base64.b64encode(self.hmac).decode("ascii")
            found = self._credentials[mechanism] = credential_from_password(
                mechanism, password, MIN_ITERATIONS
            )
        return found


@dataclass(frozen=True, slots=True)
class Outcome:
    """A token request's answer: its error code and the response's expiry timestamp."""

    error_code: int
    expiry_ms: int = 0  # the response field's default when the controller refuses


Change = tuple[Sequence[Token], Sequence[str]]  # tokens written, token ids removed


def _principal(value: Sequence[str]) -> KafkaPrincipal:
    return KafkaPrincipal(value[0], value[1])


def _pair(principal: KafkaPrincipal) -> list[str]:
    return [principal.principal_type, principal.name]


class SqliteTokenStorage:
    """The tokens in SQLite, one row each, without their HMACs (derived from the secret
    key at load, as Kafka's DelegationTokenRecord carries none). Used from one executor
    thread at a time."""

    def __init__(self, directory: str | Path) -> None:
        self.path, self._db = open_state_db(
            directory,
            "delegation_tokens.sqlite",
            "CREATE TABLE IF NOT EXISTS delegation_tokens (token_id TEXT PRIMARY KEY,"
            " owner TEXT NOT NULL, requester TEXT NOT NULL, renewers TEXT NOT NULL,"
            " issue_ms INTEGER NOT NULL, max_ms INTEGER NOT NULL, expiry_ms INTEGER NOT NULL)",
        )

    def load(self, hmac_of: Callable[[str], bytes]) -> list[Token]:
        rows = self._db.execute(
            "SELECT token_id, owner, requester, renewers, issue_ms, max_ms, expiry_ms"
            " FROM delegation_tokens ORDER BY rowid"
        ).fetchall()
        return [
            Token(
                token_id,
                _principal(json.loads(owner)),
                _principal(json.loads(requester)),
                tuple(_principal(r) for r in json.loads(renewers)),
                issue_ms,
                max_ms,
                expiry_ms,
                hmac_of(token_id),
            )
            for token_id, owner, requester, renewers, issue_ms, max_ms, expiry_ms in rows
        ]

    def write(self, written: Sequence[Token], removed: Sequence[str]) -> None:
        with self._db:  # one transaction
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("DELETE FROM delegation_tokens WHERE token_id = ?", [(t,) for t in removed])
            self._db.executemany(
                "INSERT INTO delegation_tokens (token_id, owner, requester, renewers, issue_ms, max_ms,"
                " expiry_ms) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token_id) DO UPDATE SET"
                " expiry_ms = excluded.expiry_ms",
                [
                    (
                        t.token_id,
                        json.dumps(_pair(t.owner)),
                        json.dumps(_pair(t.requester)),
                        json.dumps([_pair(r) for r in t.renewers]),
                        t.issue_ms,
                        t.max_ms,
                        t.expiry_ms,
                    )
                    for t in written
                ],
            )

    def close(self) -> None:
        self._db.close()


class TokenStore(PersistentStore):
    def __init__(
        self,
        secret_key: str | None = None,
        max_lifetime_ms: int = 7 * 24 * 3600 * 1000,
        expiry_time_ms: int = 24 * 3600 * 1000,
        check_interval_ms: int = 3600 * 1000,
        storage: SqliteTokenStorage | None = None,
        run: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        """`secret_key`: delegation.token.secret.key (None or empty: tokens disabled);
        `clock` gives wall-clock milliseconds (replaceable by tests)."""
        super().__init__(storage, run, "delegation-tokens")
        self.storage: SqliteTokenStorage | None = storage
        self._key = secret_key.encode("utf-8") if secret_key else None
        self.max_lifetime_ms = max_lifetime_ms
        self.expiry_time_ms = expiry_time_ms
        self.check_interval_ms = check_interval_ms
        self.clock = clock
        self._tokens: dict[str, Token] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._sweeper: asyncio.Task[None] | None = None
        if storage is not None and self.enabled:  # without the key they could not be used
            for token in storage.load(self.hmac_for):
                self._add(token)

    @classmethod
    def from_config(
        cls, config: BrokerConfig, run: Callable[[Coroutine[Any, Any, Any]], Any] | None = None
    ) -> TokenStore:
        """The delegation.token.* settings (the secret key under either of its names);
        ValueError for a duration below 1 ms, which Kafka's ConfigDef refuses."""
        durations = {}
        for key in (MAX_LIFETIME, EXPIRY_TIME, CHECK_INTERVAL):
            value = int(config.get_str(key))
            if value < 1:
                raise ValueError(f"Invalid value {value} for configuration {key}: Value must be at least 1")
            durations[key] = value
        state_dir = config.get_str("state.dir")
        return cls(
            config.get_str(SECRET_KEY) or config.get_str(SECRET_KEY_ALIAS) or None,
            durations[MAX_LIFETIME],
            durations[EXPIRY_TIME],
            durations[CHECK_INTERVAL],
            SqliteTokenStorage(state_dir) if state_dir else None,
            run,
        )

    @property
    def enabled(self) -> bool:
        """Kafka's tokenAuthEnabled: a non-empty secret key is configured."""
        return self._key is not None

    def hmac_for(self, token_id: str) -> bytes:
        assert self._key is not None
        return hmac.digest(self._key, token_id.encode("utf-8"), hashlib.sha512)

    # -- what the SCRAM servers and DescribeDelegationToken read -------------------------
    def token_credential(self, token_id: str, mechanism: ScramMechanism) -> TokenCredential | None:
        """ScramServerCallbackHandler's token callback: None for an unknown (or swept)
        token; an expired one not yet swept is still found, and the session it opens
        ends at once (its lifetime is what remains until the expiry)."""
        self._ensure_sweeper()
        token = self._tokens.get(token_id)
        if token is None:
            return None
        return TokenCredential(token.owner.name, token.credential(mechanism), token.expiry_ms)

    def tokens(self) -> list[Token]:
        """Every token not yet swept, in issue order (copies: changing one changes nothing)."""
        self._ensure_sweeper()
        return [replace(t) for t in self._tokens.values()]

    def find(self, token_id: str) -> Token | None:
        token = self._tokens.get(token_id)
        return None if token is None else replace(token)

    # -- CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken ---------------
    async def create(
        self,
        owner: KafkaPrincipal,
        requester: KafkaPrincipal,
        renewers: Iterable[KafkaPrincipal],
        max_lifetime_ms: int,
    ) -> tuple[int, Token | None]:
        """DelegationTokenControlManager.createDelegationToken: the token (persisted,
        then served) or the error code (AUTH_DISABLED, INVALID_PRINCIPAL_TYPE)."""
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, None
        renewers = tuple(renewers)
        if any(r.principal_type != USER_TYPE for r in renewers):
            return ErrorCode.INVALID_PRINCIPAL_TYPE, None
        self._ensure_sweeper()
        async with self._lock:
            now = self.clock()
            lifetime = self.max_lifetime_ms
            if max_lifetime_ms > 0:
                lifetime = min(lifetime, max_lifetime_ms)
            max_ms = now + lifetime
            token_id = random_uuid_string()
            while token_id in self._tokens:  # 122 random bits: never, but cheap to rule out
                token_id = random_uuid_string()
            token = Token(
                token_id,
                KafkaPrincipal(owner.principal_type, owner.name),
                KafkaPrincipal(requester.principal_type, requester.name),
                tuple(KafkaPrincipal(r.principal_type, r.name) for r in renewers),
                now,
                max_ms,
                min(max_ms, now + self.expiry_time_ms),
                self.hmac_for(token_id),
            )
            await self._commit([token], [])
        return ErrorCode.NONE, replace(token)

    async def renew(self, token_hmac: bytes, principal: KafkaPrincipal, renew_period_ms: int) -> Outcome:
        """renewDelegationToken: a period of 0 or less renews by expiry.time.ms, a larger
        one by at most that; never past the token's max timestamp."""
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        self._ensure_sweeper()
        async with self._lock:
            now = self.clock()
            token, refusal = self._checked(token_hmac, principal, now)
            if token is None:
                return refusal
            period = self.expiry_time_ms
            if renew_period_ms > 0:
                period = min(period, renew_period_ms)
            expiry = min(token.max_ms, now + period)
            await self._commit([replace(token, expiry_ms=expiry)], [])
        return Outcome(ErrorCode.NONE, expiry)

    async def expire(self, token_hmac: bytes, principal: KafkaPrincipal, expiry_period_ms: int) -> Outcome:
        """expireDelegationToken: a negative period removes the token now (the response
        carries that period as its timestamp); another sets its expiry to now + period,
        capped at its max timestamp."""
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        self._ensure_sweeper()
        async with self._lock:
            now = self.clock()
            token, refusal = self._checked(token_hmac, principal, now)
            if token is None:
                return refusal
            if expiry_period_ms < 0:
                await self._commit([], [token.token_id])
                return Outcome(ErrorCode.NONE, expiry_period_ms)
            expiry = min(token.max_ms, now + expiry_period_ms)
            await self._commit([replace(token, expiry_ms=expiry)], [])
        return Outcome(ErrorCode.NONE, expiry)

    def _checked(
        self, token_hmac: bytes, principal: KafkaPrincipal, now: int
    ) -> tuple[Token | None, Outcome]:
        """Kafka's checks before a renewal or expiry, in its order."""
        token_id = self._by_hmac.get(bytes(token_hmac))
        token = None if token_id is None else self._tokens.get(token_id)
        if token is None:
            return None, Outcome(ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        if token.expired(now):
            return None, Outcome(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        if not token.may_renew(principal):
            return None, Outcome(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        return token, Outcome(ErrorCode.NONE)

    # -- Python API for harnesses ------------------------------------------------------
    async def issue_async(self, owner: str, renewers: Sequence[str] = (), max_lifetime_ms: int = -1) -> Token:
        """A token for User:`owner` (renewers: user names), as if the owner asked for
        it; ValueError with Kafka's code when tokens are disabled."""
        user = KafkaPrincipal(USER_TYPE, owner)
        code, token = await self.create(
            user, user, [KafkaPrincipal(USER_TYPE, r) for r in renewers], max_lifetime_ms
        )
        if token is None:
            raise ValueError(f"[{code}] no token issued (is {SECRET_KEY} set?)")
        return token

    def issue(self, owner: str, renewers: Sequence[str] = (), max_lifetime_ms: int = -1) -> Token:
        """`issue_async` for synchronous callers of a thread-backed cluster."""
        if self._run is None:
            raise RuntimeError("on the cluster's own event loop await issue_async")
        token: Token = self._run(self.issue_async(owner, renewers, max_lifetime_ms))
        return token

    # -- the controller's periodic sweep -----------------------------------------------
    async def sweep(self) -> list[str]:
        """sweepExpiredDelegationTokens: removes every token past its expiry or max
        timestamp; returns their ids."""
        async with self._lock:
            now = self.clock()
            gone = [t.token_id for t in self._tokens.values() if t.expired(now)]
            await self._commit([], gone)
        for token_id in gone:
            log.info("Delegation token expired for token: %s", token_id)
        return gone

    def _ensure_sweeper(self) -> None:
        """Starts the sweep on the running loop the first time tokens are used (a store
        made before the cluster's loop runs cannot start it earlier)."""
        if self._sweeper is not None or not self.enabled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # used outside the cluster's loop (unit tests): no sweeping
            return
        self._sweeper = loop.create_task(self._sweep_periodically())

    async def _sweep_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.check_interval_ms / 1000)
            try:
                await self.sweep()
            except Exception:  # one failed pass must not end the sweeps
                log.exception("sweeping expired delegation tokens failed")

    # -- applying changes ---------------------------------------------------------------
    async def _commit(self, written: list[Token], removed: list[str]) -> None:
        """Persist first (off the loop), then apply: memory never holds what disk lacks."""
        if not written and not removed:
            return
        await self._persist(written, removed)
        for token_id in removed:
            self._remove(token_id)
        for token in written:
            self._add(token)

    def _add(self, token: Token) -> None:
        old = self._tokens.get(token.token_id)
        if old is not None:
            token._credentials = old._credentials  # same HMAC: the credentials still hold
        self._tokens[token.token_id] = token
        self._by_hmac[token.hmac] = token.token_id

    def _remove(self, token_id: str) -> None:
        token = self._tokens.pop(token_id, None)
        if token is not None:
            self._by_hmac.pop(token.hmac, None)

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        super().close()
