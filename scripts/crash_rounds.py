#!/usr/bin/env python3
"""Crash safety of the state dir: rounds of kill -9 at random moments during quota, SCRAM,
dynamic-config and ACL changes.

    .venv/bin/python scripts/crash_rounds.py [--rounds 100] [--seed 1] [--max-kill-ms 1500]

Each round starts `python -m broker --state-dir DIR` (the same DIR every round, so each
round opens what the crashes before it left), lets eight clients change the four
persisted stores at once, and SIGKILLs the broker at a random moment (a tenth of the
rounds: during its start-up, before any client). The clients, each with its own key
space so their requests never touch the same key while in flight:

- quotas: kafka-python's network client sending AlterClientQuotas (its admin API has no
  call for it), three entities per request plus the removal of an earlier request's;
  and a raw socket pipelining the same requests four deep;
- SCRAM: confluent-kafka's and kafka-python's alter_user_scram_credentials, two users
  per request plus the deletion of an earlier request's users;
- dynamic configs: kafka-python's and confluent-kafka's incremental alter_configs (two or
  three keys of broker 0, sometimes a DELETE), and kafka-python's network client
  sending one IncrementalAlterConfigs for two resources (the cluster default, which
  neither admin API can name, and broker 0);
- ACLs: kafka-python's and confluent-kafka's create_acls (three bindings) and
  delete_acls (the three exact bindings of an earlier request).

After each kill the state dir is opened in-process (`MockCluster(config={"state.dir":
...})`) and checked against what the clients saw:

- it opens (and the next round's broker starts on it);
- every acknowledged request (its response arrived, error-free) is there, as later
  acknowledged requests left it;
- each request in flight at the kill is there entirely or not at all: never some of its
  entries, keys, users or bindings;
- nothing else is there.

Prints one line per round, then the totals and `violations: N`; exits 1 if any.
"""

from __future__ import annotations

import argparse
import hmac
import random
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import admin as ck
from kafka import KafkaAdminClient
from kafka import admin as ka
from kafka import errors as kafka_errors
from kafka.protocol.admin import AlterClientQuotasRequest, IncrementalAlterConfigsRequest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support (not installed)
from tests.support.process import BrokerProcess, BrokerProcessError  # noqa: E402
from tests.support.wire import decode_response, encode_request, read_frame  # noqa: E402

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SECURED = {"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"}
PREFIX = "crash-"  # every quota entity, SCRAM user and ACL principal the clients make
CONFIG_PREFIX = "crash."  # every config key they set
LIVE_MAX = 12  # a worker removes an earlier request's keys once it has this many alive
REMOVE_CHANCE = 0.35  # ... and with this chance below that
CLIENT_TIMEOUT_S = 10.0
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations
BROKER_RESOURCE = 4

Key = tuple[Any, ...]  # (store, ...): see `read_state`


# --------------------------------------------------------------------------- the model


@dataclass
class Request:
    """One request a client sent: what it writes (None: removes), and whose keys it
    removes (an earlier request of the same worker, acknowledged or found applied)."""

    rid: int
    worker: str
    store: str
    writes: dict[Key, Any]
    removes: int | None = None
    removed_keys: list[Key] = field(default_factory=list)
    payload: Any = None  # the client's own form of the request, where built ahead

    @property
    def created(self) -> list[Key]:
        return [key for key, value in self.writes.items() if value is not None]


@dataclass
class RoundResult:
    acked: Counter[str] = field(default_factory=Counter)  # per store
    in_flight: int = 0
    applied: int = 0  # in flight at the kill, found whole in the state dir
    not_applied: int = 0
    violations: list[str] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)  # before the kill; the request stays in flight


class Model:
    """What the state dir must hold: the acknowledged requests' writes (`expected`), plus
    the requests in flight, each all or nothing. Thread-safe: workers report to it."""

    def __init__(self) -> None:
        self.expected: dict[Key, Any] = {}
        self.in_flight: dict[int, Request] = {}
        self.live: dict[str, OrderedDict[int, list[Key]]] = {}  # per worker: removable requests
        self.round = RoundResult()
        self.killed = threading.Event()
        self.killed_at = 0.0
        self._ids = iter(range(1, 1 << 62))
        self._lock = threading.Lock()

    def kill(self) -> None:
        self.killed_at = time.monotonic()
        self.killed.set()

    def given_up(self) -> bool:
        """A second after the kill: answers that arrived before it have been delivered."""
        return self.killed.is_set() and time.monotonic() - self.killed_at > 1.0

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def claim(self, worker: str, rng: random.Random) -> tuple[int, list[Key]] | None:
        """An earlier request of `worker` whose keys the next request removes, or None."""
        with self._lock:
            live = self.live.setdefault(worker, OrderedDict())
            if live and (len(live) >= LIVE_MAX or rng.random() < REMOVE_CHANCE):
                return live.popitem(last=False)
            return None

    def sent(self, request: Request) -> None:
        with self._lock:
            self.in_flight[request.rid] = request

    def acked(self, request: Request) -> None:
        with self._lock:
            del self.in_flight[request.rid]
            self.round.acked[request.store] += 1
            self._apply(request)

    def failed(self, request: Request, error: str) -> None:
        """An error response (not a lost connection): the request was refused."""
        with self._lock:
            del self.in_flight[request.rid]
            if request.removes is not None:  # not removed after all
                self.live[request.worker][request.removes] = request.removed_keys
            if not self.killed.is_set():
                self.round.violations.append(f"{request.worker} request {request.rid} refused: {error}")

    def _apply(self, request: Request) -> None:
        for key, value in request.writes.items():
            if value is None:
                self.expected.pop(key, None)
            else:
                self.expected[key] = value
        if request.created and request.store != "configs":  # config keys are reused, never removed
            self.live.setdefault(request.worker, OrderedDict())[request.rid] = request.created

    def check(self, actual: dict[Key, Any], round_no: int) -> None:
        """Judges the state dir after a kill; then takes it as the new expected state."""
        result = self.round
        touched: set[Key] = set()
        for request in sorted(self.in_flight.values(), key=lambda r: r.rid):
            result.in_flight += 1
            touched.update(request.writes)
            applied = all(same(key, want, actual.get(key)) for key, want in request.writes.items())
            untouched = all(same(key, self.expected.get(key), actual.get(key)) for key in request.writes)
            if applied:
                result.applied += 1
                self._apply(request)
            elif untouched:
                result.not_applied += 1
                if request.removes is not None:
                    self.live[request.worker][request.removes] = request.removed_keys
            else:
                detail = {
                    str(key): ("applied" if same(key, want, actual.get(key)) else "not applied")
                    for key, want in request.writes.items()
                }
                result.violations.append(
                    f"round {round_no}: {request.worker} request {request.rid} half-applied: {detail}"
                )
        self.in_flight.clear()
        for key in sorted(set(self.expected) | set(actual), key=str):
            if key in touched:
                continue
            want, got = self.expected.get(key), actual.get(key)
            if not same(key, want, got):
                what = "missing" if got is None else ("unexpected" if want is None else "wrong value")
                result.violations.append(
                    f"round {round_no}: {what}: {key} (expected {want!r}, found {got!r})"
                )
        # The state dir as found is what the next round starts from.
        self.expected = dict(actual)
        for live in self.live.values():
            for rid, keys in list(live.items()):
                if not all(key in self.expected for key in keys):
                    del live[rid]  # only after a violation


def same(key: Key, want: Any, got: Any) -> bool:
    """Whether a value read back is the one written. SCRAM keys hold (iterations,
    password) on the client side and a ScramCredential in the store."""
    if want is None or got is None:
        return want is None and got is None
    if key[0] == "scram" and isinstance(want, tuple):
        from broker.security.scram import ScramMechanism, salted_password

        iterations, password = want
        mechanism = ScramMechanism.from_name(str(key[2]))
        assert mechanism is not None
        if got.iterations != iterations:
            return False
        salted = salted_password(mechanism, password, got.salt, iterations)
        stored_key = mechanism.hash(mechanism.hmac(salted, b"Client Key"))
        return hmac.compare_digest(stored_key, got.stored_key)
    return bool(want == got)


def read_state(state_dir: Path) -> dict[Key, Any]:
    """Everything the clients could have written, as the broker loads it from `state_dir`."""
    from broker import MockCluster

    state: dict[Key, Any] = {}
    with MockCluster(config={**SECURED, "state.dir": str(state_dir)}) as cluster:
        for entity, values in cluster.quotas.describe().items():
            if any(str(name).startswith(PREFIX) for name in entity.values()):
                components = tuple(sorted((t, str(n)) for t, n in entity.items()))
                for quota_key, value in values.items():
                    state["quota", components, quota_key] = value
        layers = {"": cluster.configs.cluster_default, "0": cluster.configs.per_broker.get(0, {})}
        for layer, configs in layers.items():
            for name, text in configs.items():
                if name.startswith(CONFIG_PREFIX):
                    state["config", layer, name] = text
        for described in cluster.credentials.describe(None):
            if described.user.startswith(PREFIX):
                for mechanism, _iterations in described.credentials:
                    credential = cluster.credentials.scram_credential(described.user, mechanism)
                    state["scram", described.user, mechanism.mechanism_name] = credential
        for binding in cluster.acls.list():
            if binding.principal.startswith("User:" + PREFIX):
                state[acl_key(binding)] = True
    return state


def acl_key(binding: Any) -> Key:
    return (
        "acl",
        int(binding.resource_type),
        binding.resource_name,
        int(binding.pattern_type),
        binding.principal,
        binding.host,
        int(binding.operation),
        int(binding.permission),
    )


# --------------------------------------------------------------------------- the workers


class Worker(threading.Thread):
    """One client changing one store, one request after the other, until the kill (or an
    error: its last request then stays in flight for the check to judge)."""

    store = ""

    def __init__(self, name: str, model: Model, bootstrap: str, seed: int) -> None:
        super().__init__(name=name, daemon=True)
        self.model = model
        self.bootstrap = bootstrap
        self.rng = random.Random(seed)
        self.ready = threading.Event()
        self.go = threading.Event()
        self.setup_error: BaseException | None = None
        self.sent = 0

    def run(self) -> None:
        try:
            self.connect()
        except BaseException as exc:  # reported by the round
            self.setup_error = exc
            self.ready.set()
            return
        self.ready.set()
        self.go.wait()
        try:
            self.work()
        except Exception as exc:  # the broker died under the client: the request stays in flight
            if not self.model.killed.is_set():  # a client-side timeout or bug: reported, not judged
                self.model.round.client_errors.append(f"{self.name}: {exc!r}")
        finally:
            self.disconnect()

    def work(self) -> None:
        while not self.model.killed.is_set():
            request = self.build(self.model.next_id())
            self.model.sent(request)
            self.sent += 1
            error = self.send(request)
            if error is None:
                self.model.acked(request)
            else:
                self.model.failed(request, error)
                return

    def removal(self) -> tuple[int | None, list[Key]]:
        claimed = self.model.claim(self.name, self.rng)
        return (None, []) if claimed is None else claimed

    def connect(self) -> None:
        raise NotImplementedError

    def build(self, rid: int) -> Request:
        raise NotImplementedError

    def send(self, request: Request) -> str | None:
        """None when acknowledged without error; the error otherwise; raises when the
        connection is lost (the request stays in flight)."""
        raise NotImplementedError

    def disconnect(self) -> None:
        pass


class KafkaPythonWorker(Worker):
    admin: Any = None

    def connect(self) -> None:
        self.admin = KafkaAdminClient(
            bootstrap_servers=self.bootstrap,
            client_id=self.name,
            request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000),
            reconnect_backoff_max_ms=200,
        )

    def send_struct(self, struct: Any) -> Any:
        """A request kafka-python's admin API has no call for, through its network client."""
        return self.admin._manager.run(self.admin._manager.send, struct)

    def disconnect(self) -> None:
        if self.admin is not None:
            try:
                self.admin.close()
            except Exception:
                pass


class ConfluentWorker(Worker):
    admin: Any = None

    def connect(self) -> None:
        self.admin = ck.AdminClient(
            {"bootstrap.servers": self.bootstrap, "client.id": self.name, "log_level": 0}
        )

    def wait(self, futures: dict[Any, Any]) -> str | None:
        """The request's errors from the broker (librdkafka's own, negative codes: the
        connection was lost, the request stays in flight). A second after the kill an
        unresolved future is given up on: an answer that arrived before the kill has
        been delivered by then, and any not delivered counts as in flight (allowed
        either way by the check)."""
        errors = []
        deadline = time.monotonic() + CLIENT_TIMEOUT_S + 5
        for future in futures.values():
            while not future.done():
                if time.monotonic() > deadline or self.model.given_up():
                    raise ConnectionError("no answer")
                time.sleep(0.005)
            error = future.exception()
            if error is not None:
                kafka_error: Any = error.args[0] if error.args else None
                code = kafka_error.code() if hasattr(kafka_error, "code") else 0
                if code < 0:
                    raise ConnectionError(str(error))
                errors.append(str(error))
        return "; ".join(errors) or None


# -- quotas


def quota_request(rid: int, removals: list[Key]) -> tuple[dict[Key, Any], list[Any]]:
    """Three new entities (a user, a client-id, a user/client-id pair), each with its own
    key and value, plus the removal of each key in `removals`."""
    entry = AlterClientQuotasRequest.EntryData
    user, client = f"{PREFIX}q{rid}-u", f"{PREFIX}q{rid}-c"
    sets = [
        ((("user", user),), "producer_byte_rate", 1000.0 + rid),
        ((("client-id", client),), "consumer_byte_rate", 2000.0 + rid),
        ((("client-id", client), ("user", user)), "request_percentage", 1.0 + rid % 997 / 8),
    ]
    writes: dict[Key, Any] = {("quota", components, k): v for components, k, v in sets}
    entries = [
        entry(
            entity=[entry.EntityData(entity_type=t, entity_name=n) for t, n in components],
            ops=[entry.OpData(key=k, value=v, remove=False)],
        )
        for components, k, v in sets
    ]
    for key in removals:
        _, components, quota_key = key
        writes[key] = None
        entries.append(
            entry(
                entity=[entry.EntityData(entity_type=t, entity_name=n) for t, n in components],
                ops=[entry.OpData(key=quota_key, value=0.0, remove=True)],
            )
        )
    return writes, entries


class QuotasKafkaPython(KafkaPythonWorker):
    store = "quotas"

    def build(self, rid: int) -> Request:
        removes, keys = self.removal()
        writes, entries = quota_request(rid, keys)
        struct = AlterClientQuotasRequest(
            entries=entries, validate_only=False
        )  # kafka-python picks the version
        return Request(rid, self.name, self.store, writes, removes, keys, payload=struct)

    def send(self, request: Request) -> str | None:
        response = self.send_struct(request.payload)
        errors = [f"{e.error_code} {e.error_message}" for e in response.entries if e.error_code]
        return "; ".join(errors) or None


class QuotasPipelined(Worker):
    """The same requests (v1) over a raw socket, DEPTH in flight at once."""

    store = "quotas"
    DEPTH = 4

    def connect(self) -> None:
        host, port = self.bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=CLIENT_TIMEOUT_S)

    def build(self, rid: int) -> Request:
        removes, keys = self.removal()
        writes, entries = quota_request(rid, keys)
        struct = AlterClientQuotasRequest[1](entries=entries, validate_only=False)
        return Request(rid, self.name, self.store, writes, removes, keys, payload=struct)

    def work(self) -> None:
        outstanding: deque[Request] = deque()
        while not self.model.killed.is_set():
            while len(outstanding) < self.DEPTH:
                request = self.build(self.model.next_id())
                self.model.sent(request)
                self.sent += 1
                self.sock.sendall(encode_request(request.payload, request.rid & 0x7FFFFFFF, self.name))
                outstanding.append(request)
            request = outstanding.popleft()
            response = decode_response(request.payload, read_frame(self.sock))
            if response.header.correlation_id != request.rid & 0x7FFFFFFF:
                self.model.round.violations.append(f"{self.name}: answers out of request order")
                return
            errors = [f"{e.error_code} {e.error_message}" for e in response.entries if e.error_code]
            if errors:
                self.model.failed(request, "; ".join(errors))
                return
            self.model.acked(request)

    def disconnect(self) -> None:
        self.sock.close()


# -- SCRAM

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def scram_writes(rid: int, removals: list[Key]) -> dict[Key, Any]:
    """Two new users (one per mechanism), iterations and password unique to the request."""
    writes: dict[Key, Any] = {}
    for i, mechanism in enumerate(MECHANISMS):
        writes["scram", f"{PREFIX}s{rid}-{i}", mechanism] = (4096 + rid % 4096, f"pw-{rid}-{i}")
    for key in removals:
        writes[key] = None
    return writes


class ScramConfluent(ConfluentWorker):
    store = "scram"

    def build(self, rid: int) -> Request:
        removes, keys = self.removal()
        return Request(rid, self.name, self.store, scram_writes(rid, keys), removes, keys)

    def send(self, request: Request) -> str | None:
        alterations: list[Any] = []
        for key, value in request.writes.items():
            _, user, mechanism = key
            kind = getattr(ck.ScramMechanism, str(mechanism).replace("-", "_"))
            if value is None:
                alterations.append(ck.UserScramCredentialDeletion(user, kind))
            else:
                iterations, password = value
                info = ck.ScramCredentialInfo(kind, iterations)
                alterations.append(ck.UserScramCredentialUpsertion(user, info, password.encode()))
        return self.wait(
            self.admin.alter_user_scram_credentials(alterations, request_timeout=CLIENT_TIMEOUT_S)
        )


class ScramKafkaPython(KafkaPythonWorker):
    store = "scram"

    def build(self, rid: int) -> Request:
        removes, keys = self.removal()
        return Request(rid, self.name, self.store, scram_writes(rid, keys), removes, keys)

    def send(self, request: Request) -> str | None:
        alterations: list[Any] = []
        for key, value in request.writes.items():
            _, user, mechanism = key
            kind = getattr(ka.ScramMechanism, str(mechanism).replace("-", "_"))
            if value is None:
                alterations.append(ka.UserScramCredentialDeletion(user, kind))
            else:
                iterations, password = value
                alterations.append(
                    ka.UserScramCredentialUpsertion(user, kind, password, iterations=iterations)
                )
        results = self.admin.alter_user_scram_credentials(alterations)
        errors = [f"{user}: {error}" for user, error in results.items() if error is not None]
        return "; ".join(errors) or None


# -- dynamic configs


def config_writes(
    rng: random.Random, rid: int, layer: str, keys: list[str], current: dict[Key, Any]
) -> dict[Key, Any]:
    """SET two or three of `keys` to values unique to the request; sometimes a DELETE."""
    chosen = rng.sample(keys, rng.choice((2, 3)) if len(keys) >= 3 else len(keys))
    writes: dict[Key, Any] = {("config", layer, name): f"{rid}" for name in chosen}
    present = [name for name in keys if name not in chosen and ("config", layer, name) in current]
    if present and rng.random() < 0.3:
        writes["config", layer, rng.choice(present)] = None
    return writes


class ConfigsKafkaPython(KafkaPythonWorker):
    store = "configs"
    KEYS = [f"{CONFIG_PREFIX}kp.k{i}" for i in range(4)]

    def build(self, rid: int) -> Request:
        writes = config_writes(self.rng, rid, "0", self.KEYS, self.model.expected)
        return Request(rid, self.name, self.store, writes)

    def send(self, request: Request) -> str | None:
        configs = {
            str(key[2]): ("SET", value) if value is not None else ("DELETE", None)
            for key, value in request.writes.items()
        }
        result = self.admin.alter_configs(
            [ka.ConfigResource(ka.ConfigResourceType.BROKER, "0", configs)],
            incremental=True,
            raise_on_unknown=False,
        )
        outcome = result["broker"]["0"]
        return None if outcome == "OK" else str(outcome)


class ConfigsConfluent(ConfluentWorker):
    store = "configs"
    KEYS = [f"{CONFIG_PREFIX}ck.k{i}" for i in range(4)]

    def build(self, rid: int) -> Request:
        writes = config_writes(self.rng, rid, "0", self.KEYS, self.model.expected)
        return Request(rid, self.name, self.store, writes)

    def send(self, request: Request) -> str | None:
        entries = [
            ck.ConfigEntry(
                str(key[2]),
                value,
                incremental_operation=ck.AlterConfigOpType.SET
                if value is not None
                else ck.AlterConfigOpType.DELETE,
            )
            for key, value in request.writes.items()
        ]
        resource = ck.ConfigResource(ck.ResourceType.BROKER, "0", incremental_configs=entries)
        return self.wait(self.admin.incremental_alter_configs([resource], request_timeout=CLIENT_TIMEOUT_S))


class ConfigsTwoResources(KafkaPythonWorker):
    """One IncrementalAlterConfigs naming the cluster default ("") and broker 0: both
    layers are written in one transaction, so both or neither."""

    store = "configs"
    LAYERS = {
        "": [f"{CONFIG_PREFIX}d.k{i}" for i in range(3)],
        "0": [f"{CONFIG_PREFIX}r0.k{i}" for i in range(3)],
    }

    def build(self, rid: int) -> Request:
        writes: dict[Key, Any] = {}
        for layer, keys in self.LAYERS.items():
            writes.update(config_writes(self.rng, rid, layer, keys, self.model.expected))
        return Request(rid, self.name, self.store, writes)

    def send(self, request: Request) -> str | None:
        resources = [
            (
                BROKER_RESOURCE,
                layer,
                [
                    (str(key[2]), SET if value is not None else DELETE, value)
                    for key, value in request.writes.items()
                    if key[1] == layer
                ],
            )
            for layer in self.LAYERS
        ]
        response = self.send_struct(IncrementalAlterConfigsRequest(resources=resources, validate_only=False))
        errors = [
            f"{r.resource_name!r}: {r.error_code} {r.error_message}"
            for r in response.responses
            if r.error_code
        ]
        return "; ".join(errors) or None


# -- ACLs

ACL_SHAPES = (  # (resource type, pattern type, operation): Kafka's codes
    (2, 3, 3),  # TOPIC, LITERAL, READ
    (3, 3, 3),  # GROUP, LITERAL, READ
    (2, 4, 4),  # TOPIC, PREFIXED, WRITE
)
ALLOW = 3


def acl_writes(rid: int, worker: str) -> dict[Key, Any]:
    principal = f"User:{PREFIX}{worker}-{rid}"
    return {
        ("acl", resource_type, f"{PREFIX}r{rid}-{i}", pattern, principal, "*", operation, ALLOW): True
        for i, (resource_type, pattern, operation) in enumerate(ACL_SHAPES)
    }


class AclWorker(Worker):
    """Creates three bindings per request, or deletes an earlier request's three."""

    store = "acls"

    def build(self, rid: int) -> Request:
        removes, keys = self.removal()
        if removes is not None:
            return Request(rid, self.name, self.store, dict.fromkeys(keys), removes, keys)
        return Request(rid, self.name, self.store, acl_writes(rid, self.name))


class AclsKafkaPython(AclWorker, KafkaPythonWorker):
    def send(self, request: Request) -> str | None:
        acls = [
            ka.ACL(
                principal,
                host,
                ka.ACLOperation(operation),
                ka.ACLPermissionType(permission),
                ka.ResourcePattern(ka.ResourceType(resource_type), name, ka.ACLResourcePatternType(pattern)),
            )
            for _, resource_type, name, pattern, principal, host, operation, permission in request.writes
        ]
        if request.removes is None:
            created = self.admin.create_acls(acls)
            return "; ".join(str(failed) for failed in created["failed"]) or None
        filters = [
            ka.ACLFilter(
                a.principal,
                a.host,
                a.operation,
                a.permission_type,
                ka.ResourcePatternFilter(
                    a.resource_pattern.resource_type,
                    a.resource_pattern.resource_name,
                    a.resource_pattern.pattern_type,
                ),
            )
            for a in acls
        ]
        errors = []
        for acl_filter, deleted, error in self.admin.delete_acls(filters):
            if error is not kafka_errors.NoError:
                errors.append(f"{acl_filter}: {error}")
            elif len(deleted) != 1:
                errors.append(f"{acl_filter} matched {len(deleted)} bindings, not 1")
        return "; ".join(errors) or None


class AclsConfluent(AclWorker, ConfluentWorker):
    def send(self, request: Request) -> str | None:
        bindings = [
            (
                ck.ResourceType(resource_type),
                name,
                ck.ResourcePatternType(pattern),
                principal,
                host,
                ck.AclOperation(operation),
                ck.AclPermissionType(permission),
            )
            for _, resource_type, name, pattern, principal, host, operation, permission in request.writes
        ]
        if request.removes is None:
            return self.wait(
                self.admin.create_acls(
                    [ck.AclBinding(*b) for b in bindings], request_timeout=CLIENT_TIMEOUT_S
                )
            )
        futures = self.admin.delete_acls(
            [ck.AclBindingFilter(*b) for b in bindings], request_timeout=CLIENT_TIMEOUT_S
        )
        error = self.wait(futures)
        if error is not None:
            return error
        counts = [len(future.result()) for future in futures.values()]
        return None if counts == [1, 1, 1] else f"the filters matched {counts} bindings, not one each"


WORKERS: list[type[Worker]] = [
    QuotasKafkaPython,
    QuotasPipelined,
    ScramConfluent,
    ScramKafkaPython,
    ConfigsKafkaPython,
    ConfigsConfluent,
    ConfigsTwoResources,
    AclsKafkaPython,
    AclsConfluent,
]


# --------------------------------------------------------------------------- the rounds


@contextmanager
def broker_on(state_dir: Path) -> Iterator[BrokerProcess]:
    overrides = [arg for key, value in SECURED.items() for arg in ("--override", f"{key}={value}")]
    process = BrokerProcess("--port", "0", "--state-dir", str(state_dir), *overrides)
    try:
        yield process
    finally:
        process.kill()


def run_round(
    round_no: int, model: Model, state_dir: Path, rng: random.Random, max_kill_s: float, startup_kill: bool
) -> tuple[RoundResult, str]:
    model.round = RoundResult()
    model.killed.clear()
    with broker_on(state_dir) as broker:
        if startup_kill:
            delay = rng.uniform(0.0, 0.5)
            time.sleep(delay)
            broker.kill()
            moment = f"during start-up, {delay:.3f} s after exec"
        else:
            try:
                bootstrap = broker.bootstrap_servers(timeout=60)
            except BrokerProcessError as exc:
                model.round.violations.append(
                    f"round {round_no}: the broker did not start on the state dir: {exc}"
                )
                return model.round, "not started"
            workers = [cls(f"{cls.__name__}", model, bootstrap, rng.getrandbits(32)) for cls in WORKERS]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.ready.wait(60)
                if worker.setup_error is not None:
                    model.round.violations.append(
                        f"round {round_no}: {worker.name} could not connect: {worker.setup_error!r}"
                    )
            delay = rng.uniform(0.0, max_kill_s)
            for worker in workers:
                worker.go.set()
            time.sleep(delay)
            model.kill()
            broker.kill()
            for worker in workers:
                worker.join(CLIENT_TIMEOUT_S + 20)
                if worker.is_alive():
                    model.round.violations.append(
                        f"round {round_no}: {worker.name} still waiting after the kill"
                    )
            sent = sum(w.sent for w in workers)
            moment = f"kill {delay:.3f} s into the changes ({sent} requests sent)"
        logged = [line for line in broker.lines if " ERROR " in line or line.startswith("Traceback")]
        model.round.violations += [f"round {round_no}: the broker logged: {line}" for line in logged]
    try:
        actual = read_state(state_dir)
    except Exception as exc:  # the state dir must always open
        model.round.violations.append(f"round {round_no}: the state dir did not open: {exc!r}")
        return model.round, moment
    model.check(actual, round_no)
    return model.round, moment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1, help="fixes kill times and request shapes")
    parser.add_argument("--max-kill-ms", type=float, default=1500, help="kills land uniformly in 0..this")
    parser.add_argument("--startup-kills", type=float, default=0.1, help="share of rounds killed at start-up")
    parser.add_argument("--state-dir", help="keep the state dir here (default: a temporary one, removed)")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    temporary = args.state_dir is None
    state_dir = Path(tempfile.mkdtemp(prefix="crash-rounds-") if temporary else args.state_dir) / "state"
    if state_dir.exists() and any(state_dir.iterdir()):
        raise SystemExit(f"{state_dir} is not empty: the model starts from an empty state dir")
    model = Model()
    totals = RoundResult()
    started = time.monotonic()
    startup_kills = 0
    print(
        f"seed {args.seed}, {args.rounds} rounds, kills within {args.max_kill_ms:.0f} ms, state dir {state_dir}"
    )
    try:
        for round_no in range(1, args.rounds + 1):
            round_started = time.monotonic()
            startup_kill = rng.random() < args.startup_kills
            startup_kills += startup_kill
            result, moment = run_round(round_no, model, state_dir, rng, args.max_kill_ms / 1000, startup_kill)
            totals.acked.update(result.acked)
            totals.in_flight += result.in_flight
            totals.applied += result.applied
            totals.not_applied += result.not_applied
            totals.violations += result.violations
            print(
                f"round {round_no}: {moment}; acknowledged {sum(result.acked.values())},"
                f" in flight {result.in_flight} ({result.applied} applied, {result.not_applied} not);"
                f" violations {len(result.violations)}; {time.monotonic() - round_started:.1f} s",
                flush=True,
            )
            for violation in result.violations:
                print(f"  VIOLATION {violation}", flush=True)
            for error in result.client_errors:
                print(f"  client error before the kill (its request counted in flight): {error}", flush=True)
            totals.client_errors += result.client_errors
    finally:
        if temporary:
            shutil.rmtree(state_dir.parent, ignore_errors=True)
    elapsed = time.monotonic() - started
    print(f"rounds: {args.rounds} ({startup_kills} killed during start-up)")
    print(
        f"acknowledged requests: {sum(totals.acked.values())} ("
        + ", ".join(f"{store} {totals.acked[store]}" for store in ("quotas", "scram", "configs", "acls"))
        + ")"
    )
    print(
        f"in flight at the kill: {totals.in_flight}"
        f" (found applied: {totals.applied}, found not applied: {totals.not_applied})"
    )
    print(f"state at the end: {len(model.expected)} keys")
    print(f"time: {elapsed:.1f} s ({elapsed / max(1, args.rounds):.2f} s per round)")
    print(f"client errors before a kill: {len(totals.client_errors)}")
    print(f"violations: {len(totals.violations)}")
    return 1 if totals.violations else 0


if __name__ == "__main__":
    sys.exit(main())
