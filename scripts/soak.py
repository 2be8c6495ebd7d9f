#!/usr/bin/env python3
"""Soak: real clients, admin and quota changes and injected faults against one broker
process for a set time, then checks that nothing was lost, duplicated or leaked.

    scripts/soak                          # 10 minutes
    scripts/soak --minutes 2              # what CI runs (tests/reliability/test_soak.py)
    .venv/bin/python scripts/soak.py --minutes 1 --brokers 3 --seed 7 --verbose

What runs (confluent-kafka/librdkafka clients, each on its own thread, unique client ids):

- an idempotent producer (acks=all) writing records with unique ids to `soak-idem`;
- a transactional producer writing transactions of records with unique ids to
  `soak-txn`, committing most and aborting some (flushed first, so the aborted records
  are in the log);
- an exactly-once transformer: reads `soak-idem` (KIP-848 group `soak-eos`,
  read_committed) and writes one output per input to `soak-eos-out` in transactions that
  commit the input offsets too (send_offsets_to_transaction); replaced in turn by a new
  one with the same transactional id, which fences it;
- a bulk producer (acks=1, 4 KiB values) to `soak-bulk`, the traffic that keeps retention
  deleting segments (nobody checks its records);
- two consumer groups reading `soak-idem`, `soak-txn` and `soak-eos-out` with
  read_committed: one with the classic protocol (librdkafka's eager range/roundrobin
  assignment), one with KIP-848's (`group.protocol=consumer`), two members each; every
  `--churn` seconds one member of a group leaves (committing first) and a new one joins
  (or the transformer is replaced). Offsets are committed synchronously after each batch
  and when partitions are revoked;
- an admin client creating, altering, extending and deleting scratch topics and
  describing topics, configs, groups, offsets and the cluster;
- quota changes (client-id producer/consumer byte rates, request percentage, controller
  mutation rate, the default client-id entity) alternately through the HTTP control
  plane and AlterClientQuotas over the wire (kafka-python, as kafka-client-quotas sends
  it), each read back;
- injected faults (HTTP control plane, /v1/faults and /v1/throttle), one every
  --fault-interval, aimed at one client and spent after a few requests: retriable errors
  on Produce, Fetch, Heartbeat, ConsumerGroupHeartbeat, OffsetCommit, FindCoordinator,
  AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn and CreateTopics, latency
  on Fetch and Metadata, disconnects on Produce, Fetch, OffsetCommit, EndTxn and
  Metadata, forced throttles; with --brokers > 1 also leader moves and broker bounces
  (a broker stopped for 5 s every --bounce seconds);
- an ApiVersions canary on its own connection every 0.5 s: a broker that answers
  nothing for 5 s is a stall, and its thread stacks are dumped (faulthandler, SIGUSR1).

The broker runs with log.retention.bytes (--retention-bytes per partition) on every
topic, the checked ones included: retention is sized so that consumers keep up (each
checked partition keeps thousands of offsets, tens of seconds of its traffic) and the
soak asserts that they do. A record deleted by retention before a group read it is
reported as "lost to retention", apart from records missing from the log.

What it checks (any violation: exit status 1):

- per group, every acknowledged record (an idempotent producer's delivery report, a
  committed transaction's records, one transformer output per acknowledged input) is
  consumed, none twice: the same id at two offsets is a duplicate in the log, and a
  record delivered again below the offset the group had already committed is a
  duplicate delivery. A record delivered again at or above the committed offset is the
  at-least-once redelivery Kafka allows after a refused commit or a member's exit; it is
  counted, not failed;
- read_committed consumers see no record of an aborted transaction, and no record that
  was never produced;
- no client error (error callbacks, delivery reports, failed calls, librdkafka log lines
  at warning or worse) beyond those the soak caused: each error must match an injected
  fault (by error code, or a disconnect for transport errors), a churn (the rebalance
  errors of commits, the fenced transformer) or a bounce, aimed at that client, within
  GRACE_S of it;
- at the end the broker holds what clients were told: each group's committed offsets
  (OffsetFetch) are the last commits acknowledged, the groups are empty, no transaction
  is left open, no deleted scratch topic is back; quota values read back as set;
- the broker logs no error or traceback, never stalls, stays up and exits 0 on SIGTERM;
- broker RSS (/proc/<pid>/status VmRSS) is flat: with windows of W = min(60 s, duration/4),
  the median of the last W is within +10 % of the reference window's, the W after
  retention has begun deleting from every soak partition (as scripts/bench_memory.py).

Exit status: 0 when every check passed, 1 on a violation, 2 when the soak could not run.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import logging
import os
import random
import re
import signal
import socket
import statistics
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a file: the broker's packages from the checkout
    sys.path.insert(0, str(ROOT))

import kafka.errors  # noqa: E402
from confluent_kafka import (  # noqa: E402
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from tests.support.process import BrokerProcess, BrokerProcessError  # noqa: E402

IDEM_TOPIC = "soak-idem"
TXN_TOPIC = "soak-txn"
BULK_TOPIC = "soak-bulk"
EOS_TOPIC = "soak-eos-out"
CHECKED_TOPICS = (IDEM_TOPIC, TXN_TOPIC, EOS_TOPIC)
PARTITIONS = {IDEM_TOPIC: 4, TXN_TOPIC: 2, EOS_TOPIC: 2, BULK_TOPIC: 4}
EOS_GROUP = "soak-eos"  # the transformer's own group (KIP-848), offsets committed in its transactions
GROUPS = {"soak-classic": "classic", "soak-consumer": "consumer"}  # group id -> protocol
MEMBERS = 2  # per group
GRACE_S = 10.0  # errors up to this long after a fault or churn ended are its own
CHURN_S = 20.0  # a churn's rebalance is over within this (twice the session timeout)
WINDOW_S = 60.0
FLAT_TARGET = 0.10
BULK_RECORD = 4096
TXN_RECORDS = 20  # per transaction
TXN_VALUE_FACTOR = 2  # transactional values x --record-bytes: soak-txn fills its retention in ~50 s
ABORT_RATIO = 0.2
DRAIN_S = 90.0  # longest wait for the groups to read what was acknowledged
MAX_SCRATCH = 4  # scratch topics alive at once
TXN_TIMEOUT_S = 30.0
CANARY_S = 0.5  # between the canary's ApiVersions requests
STALL_S = 5.0  # an ApiVersions unanswered this long: the broker stalled
WORKER_STALL_S = 30.0  # a producer or the transformer without progress this long: stalled
DEBUG_LINES = 20000  # librdkafka debug lines kept per --debug client

# librdkafka's own codes (negative) and Kafka's (positive) that the soak can cause.
TRANSPORT = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
    }
)
REBALANCE = frozenset(
    {
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.STALE_MEMBER_EPOCH,
        KafkaError.FENCED_MEMBER_EPOCH,
        KafkaError._ASSIGNMENT_LOST,
        KafkaError._STATE,  # a commit between an assignment's loss and the next one
        KafkaError._NO_OFFSET,
    }
)
PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})
LEADER_MOVE = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.LEADER_NOT_AVAILABLE,
    }
)

# A stopped broker: its connections drop, its partitions and coordinators move, and what
# clients had queued for it times out (librdkafka decommissions a broker that leaves the
# metadata: its queued requests are never sent), within their socket.timeout.ms (60 s).
FAILOVER = (
    LEADER_MOVE
    | TRANSPORT
    | {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError._TIMED_OUT}
)
BOUNCE_S = 5.0  # how long a bounced broker stays down
REQUEST_TIMEOUT_S = 60.0  # librdkafka's socket.timeout.ms

BROKER_OVERRIDES = (
    "group.initial.rebalance.delay.ms=0",
    "group.consumer.heartbeat.interval.ms=1000",
    "group.consumer.min.heartbeat.interval.ms=500",
    "group.consumer.session.timeout.ms=10000",
    "group.consumer.min.session.timeout.ms=5000",
    "log.retention.check.interval.ms=1000",
)


# `python -m broker` that dumps every thread's stack to stderr on SIGUSR1 (the canary's stalls).
BROKER_COMMAND = (
    sys.executable,
    "-c",
    "import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True); "
    "sys.argv[0] = 'kafka-mock-broker'; from broker.cli import main; sys.exit(main())",
)


class SoakError(RuntimeError):
    """The soak could not run (not a finding about the broker)."""


def error_name(code: int | None) -> str:
    if code is None:
        return "(no code)"
    try:
        return KafkaError(code).name()
    except Exception:  # noqa: BLE001 - any code librdkafka does not know
        return str(code)


# librdkafka's descriptions of its errors, to find the code a log line speaks of.
_DESCRIPTIONS: dict[str, int] = {}
for _code in range(-200, 130):
    try:
        _text = KafkaError(_code).str()
    except Exception:  # noqa: BLE001
        continue
    if _text and not _text.startswith(("Unknown", "Success", "Err-")) and len(_text) > 12:
        _DESCRIPTIONS[_text] = _code
_TRANSPORT_TEXT = re.compile(
    r"Disconnected|Connection reset|Connection refused|Broker transport failure|Receive failed|"
    r"Send failed|connection close|brokers are down|Broken pipe",
    re.IGNORECASE,
)


_TIMEOUT_TEXT = re.compile(r"Timed out \d+ in-flight")


def codes_in(text: str) -> set[int]:
    """The error codes a librdkafka log line names (by their descriptions)."""
    found = {code for description, code in _DESCRIPTIONS.items() if description in text}
    if _TRANSPORT_TEXT.search(text):
        found.add(KafkaError._TRANSPORT)
    if _TIMEOUT_TEXT.search(text):  # REQTMOUT: requests that went unanswered
        found.add(KafkaError._TIMED_OUT)
    return found


# -- events that explain errors, and the errors ----------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.start = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.start


@dataclass
class Event:
    """Something the soak did that clients may see errors from: a fault, a churn, a leader move."""

    kind: str
    what: str
    start: float
    clients: frozenset[str] | None  # None: any client
    codes: frozenset[int]
    end: float | None = None
    fired: int = 0

    def explains(self, error: ClientError) -> bool:
        if self.clients is not None and error.client not in self.clients:
            return False
        if not self.start - 1.0 <= error.t <= (error.t if self.end is None else self.end) + GRACE_S:
            return False
        return bool(error.codes & self.codes)


@dataclass
class ClientError:
    t: float
    client: str
    source: str  # error_cb, log, delivery, consume, commit, txn, admin, quota
    codes: set[int]
    text: str
    explained_by: str | None = None

    @property
    def kind(self) -> str:
        names = sorted(error_name(code) for code in self.codes) or ["(unrecognized)"]
        return f"{self.source}: {'/'.join(names)}"


class Journal:
    """Events and client errors, and the explanation of each error."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lock = threading.Lock()
        self.events: list[Event] = []
        self.errors: list[ClientError] = []
        self.throttled: Counter[str] = Counter()
        self.verbose = False  # print each error as it comes

    def event(
        self, kind: str, what: str, clients: Iterable[str] | None, codes: Iterable[int], done: bool = False
    ) -> Event:
        now = self.clock.now()
        event = Event(
            kind,
            what,
            now,
            None if clients is None else frozenset(clients),
            frozenset(codes),
            now if done else None,
        )
        with self.lock:
            self.events.append(event)
        return event

    def error(self, client: str, source: str, codes: Iterable[int | None], text: str) -> None:
        found = ClientError(self.clock.now(), client, source, {c for c in codes if c is not None}, text)
        with self.lock:
            self.errors.append(found)
        if self.verbose:
            print(f"  ! {found.t:7.1f} s {client}: {found.kind}: {text[:200]}", flush=True)

    def kafka_error(self, client: str, source: str, err: KafkaError) -> None:
        self.error(client, source, [err.code()], err.str())

    def explain(self) -> list[ClientError]:
        """Marks each error with the event that explains it; returns the unexplained ones."""
        with self.lock:
            events, errors = list(self.events), list(self.errors)
        unexplained = []
        for error in errors:
            if error.codes and error.codes <= PURGED:
                error.explained_by = "purged by a transaction's abort"
                continue
            cause = next((event for event in events if event.explains(error)), None)
            if cause is None:
                unexplained.append(error)
            else:
                error.explained_by = f"{cause.kind}: {cause.what}"
        return unexplained


class ClientLogHandler(logging.Handler):
    """librdkafka's log lines at warning or worse (syslog levels 0-4) become client errors;
    with --debug, every line is kept too (the last DEBUG_LINES, written out at the end)."""

    def __init__(self, journal: Journal, client: str, keep: bool) -> None:
        super().__init__(logging.DEBUG)
        self.journal = journal
        self.client = client
        self.kept: deque[str] | None = deque(maxlen=DEBUG_LINES) if keep else None
        self.last = ""
        self.repeats = 0

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if self.kept is not None:
            if text == self.last:  # librdkafka repeats some lines in a tight loop
                self.repeats += 1
            else:
                if self.repeats:
                    self.kept.append(f"          (the line above {self.repeats:,} more times)")
                self.last, self.repeats = text, 0
                self.kept.append(f"{self.journal.clock.now():9.3f} {record.levelname} {text}")
        if record.levelno >= logging.WARNING:
            self.journal.error(self.client, "log", codes_in(text), text)


def client_settings(soak: Soak, client_id: str) -> dict[str, Any]:
    """What every librdkafka client of the soak sets: its id, error callback, logger (and
    librdkafka's debug contexts when --debug names the client)."""
    debug = soak.args.debug.get(client_id)
    handler = ClientLogHandler(soak.journal, client_id, keep=debug is not None)
    if debug is not None:
        soak.debug_logs[client_id] = handler
    logger = logging.getLogger(f"soak.{client_id}")
    logger.setLevel(logging.DEBUG if debug else logging.WARNING)
    logger.propagate = False
    logger.handlers[:] = [handler]

    def on_error(err: KafkaError) -> None:
        soak.journal.kafka_error(client_id, "error_cb", err)

    def on_throttle(event: Any) -> None:
        soak.journal.throttled[client_id] += 1

    return {
        "bootstrap.servers": soak.bootstrap,
        "client.id": client_id,
        # No KIP-1102 re-bootstrap when the client's only connection drops (an injected
        # disconnect with one broker): librdkafka 2.16 decommissions the broker then, and a
        # coordinator request cached on it never completes (librdkafka #5511, open).
        "metadata.recovery.strategy": "none",
        # The topics exist. A producer handle (the admin client's too) asks for auto-creation
        # by default, and its periodic Metadata refresh of a topic still in its cache would
        # create a deleted scratch topic again (as Kafka does with auto.create.topics.enable).
        "allow.auto.create.topics": False,
        "error_cb": on_error,
        "throttle_cb": on_throttle,
        "logger": logger,
        **({"debug": debug} if debug else {}),
    }


# -- the ledger of records ---------------------------------------------------------------------
@dataclass
class GroupLedger:
    consumed: dict[int, tuple[str, int, int]] = field(default_factory=dict)  # id -> first (t, p, o)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)  # next offset committed
    position: dict[tuple[str, int], int] = field(default_factory=dict)  # highest offset read + 1
    deliveries: int = 0
    redelivered: int = 0  # again at or above the committed offset: allowed
    duplicates_after_commit: list[str] = field(default_factory=list)
    duplicates_in_log: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # no such id was produced
    max_lag: dict[str, int] = field(default_factory=dict)  # topic -> offsets, over the soak's samples


def eos_id(source: int) -> int:
    """The id of the transformer's output for input record `source` (negative: apart)."""
    return -source - 1


class Ledger:
    """Every checked record's id, where it was acknowledged and who read it. The
    transformer's outputs are keyed `e<input id>` and counted under eos_id(input id)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._ids = itertools.count()
        self.sent: dict[int, str] = {}  # id -> topic
        self.acked: dict[int, tuple[int, int]] = {}  # id -> (partition, offset)
        self.failed: dict[int, str] = {}  # id -> delivery error
        self.txn_of: dict[int, int] = {}  # id -> transaction number
        self.txn_outcome: dict[int, str] = {}  # committed | aborted | unknown | open
        self.groups = {group: GroupLedger() for group in GROUPS}
        self.high: dict[tuple[str, int], int] = defaultdict(lambda: -1)  # highest acked offset
        self.eos_committed: set[int] = set()  # inputs whose output transaction committed
        self.eos_commits = 0  # outputs committed, counting an input twice if it was twice

    def new_ids(self, topic: str, count: int, txn: int | None = None) -> list[int]:
        with self.lock:
            ids = [next(self._ids) for _ in range(count)]
            for record_id in ids:
                self.sent[record_id] = topic
                if txn is not None:
                    self.txn_of[record_id] = txn
        return ids

    def delivered(self, record_id: int, partition: int, offset: int) -> None:
        with self.lock:
            self.acked[record_id] = (partition, offset)
            key = (self.sent[record_id], partition)
            if offset > self.high[key]:
                self.high[key] = offset

    def delivered_eos(self, source: int, partition: int, offset: int) -> None:
        """A transformer output written (its transaction may still abort)."""
        with self.lock:
            record_id = eos_id(source)
            self.sent[record_id] = EOS_TOPIC
            self.acked[record_id] = (partition, offset)
            if offset > self.high[(EOS_TOPIC, partition)]:
                self.high[(EOS_TOPIC, partition)] = offset

    def committed_eos(self, sources: Iterable[int]) -> None:
        with self.lock:
            for source in sources:
                self.eos_commits += 1
                self.eos_committed.add(source)

    def failed_delivery(self, record_id: int, text: str) -> None:
        with self.lock:
            self.failed[record_id] = text

    def consumed(self, group: str, message: Message) -> None:
        topic, partition, offset = (
            str(message.topic()),
            int(message.partition() or 0),
            int(message.offset() or 0),
        )
        key = message.key()
        where = f"{topic}[{partition}]@{offset}"
        with self.lock:
            ledger = self.groups[group]
            ledger.deliveries += 1
            tp = (topic, partition)
            if offset + 1 > ledger.position.get(tp, 0):
                ledger.position[tp] = offset + 1
            record_id: int | None
            try:
                if key is not None and key.startswith(b"e"):
                    record_id = eos_id(int(key[1:]))
                else:
                    record_id = int(key) if key is not None else None
            except ValueError:
                record_id = None
            if record_id is None:
                ledger.unknown.append(f"{where} key {key!r}")
                return
            first = ledger.consumed.get(record_id)
            if first is None:
                ledger.consumed[record_id] = (topic, partition, offset)
            elif first != (topic, partition, offset):
                ledger.duplicates_in_log.append(f"id {record_id} at {first} and {where}")
            elif offset < ledger.committed.get(tp, -1):
                ledger.duplicates_after_commit.append(
                    f"id {record_id} {where} again after offset {ledger.committed[tp]} was committed"
                )
            else:
                ledger.redelivered += 1

    def committed(self, group: str, offsets: Iterable[TopicPartition]) -> None:
        with self.lock:
            ledger = self.groups[group]
            for tp in offsets:
                if tp.error is None and tp.offset >= 0:
                    key = (tp.topic, tp.partition)
                    ledger.committed[key] = max(ledger.committed.get(key, -1), tp.offset)

    def expected(self) -> set[int]:
        """Ids every group must read: acked idempotent records, records of committed
        transactions, and one transformer output per acked idempotent record."""
        with self.lock:
            found = {
                record_id
                for record_id in self.acked
                if record_id >= 0
                and (
                    record_id not in self.txn_of
                    or self.txn_outcome.get(self.txn_of[record_id]) == "committed"
                )
            }
            return found | {eos_id(r) for r in found if self.sent[r] == IDEM_TOPIC}

    def unknown(self, group: str) -> list[str]:
        """What the group read that was never produced (an output of an input never produced included)."""
        with self.lock:
            return [
                f"id {r} at {where}" for r, where in self.groups[group].consumed.items() if r not in self.sent
            ]

    def sample_lag(self) -> dict[str, int]:
        """Per group, the largest (highest acked offset + 1 - offset read up to) of any partition."""
        with self.lock:
            lags = {}
            for group, ledger in self.groups.items():
                lags[group] = 0
                for (topic, partition), high in self.high.items():
                    lag = high + 1 - ledger.position.get((topic, partition), 0)
                    ledger.max_lag[topic] = max(ledger.max_lag.get(topic, 0), lag)
                    lags[group] = max(lags[group], lag)
            return lags


# -- workers ----------------------------------------------------------------------------------
class Worker(threading.Thread):
    """A thread that runs `step` until stopped, reporting an escaped exception as a violation."""

    def __init__(self, soak: Soak, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.soak = soak
        self.stopping = threading.Event()
        self.crashed: str | None = None
        self.progress = 0  # bumped on useful work: a stalled worker is a finding
        self.last_progress = soak.clock.now()

    def advanced(self, amount: int = 1) -> None:
        self.progress += amount
        self.last_progress = self.soak.clock.now()

    def run(self) -> None:
        try:
            self.body()
        except Exception as exc:  # noqa: BLE001 - reported as a violation, the soak goes on
            self.crashed = f"{type(exc).__name__}: {exc}"
            self.soak.journal.error(self.name, "crash", [], self.crashed)

    def body(self) -> None:
        raise NotImplementedError

    def stop(self, timeout: float = 60.0) -> None:
        self.stopping.set()
        self.join(timeout)


class Pacer:
    """How many units are due at a steady `rate` per second since it started."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.start = time.monotonic()
        self.done = 0

    def due(self) -> int:
        return max(0, int((time.monotonic() - self.start) * self.rate) - self.done)


class IdempotentProducer(Worker):
    def __init__(self, soak: Soak) -> None:
        super().__init__(soak, "soak-idem")
        self.producer = Producer(
            {
                **client_settings(soak, self.name),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
            }
        )
        self.value = b"x" * soak.args.record_bytes
        self.produced = 0

    def body(self) -> None:
        pacer = Pacer(self.soak.args.rate)
        ledger = self.soak.ledger
        while not self.stopping.is_set():
            due = min(pacer.due(), 2000)
            if due:
                for record_id in ledger.new_ids(IDEM_TOPIC, due):
                    self._produce(record_id)
                pacer.done += due
                self.produced += due
            self.producer.poll(0.01)
        left = self.producer.flush(60)
        if left:
            self.soak.journal.error(self.name, "delivery", [], f"{left} records undelivered after 60 s")

    def _produce(self, record_id: int) -> None:
        key = str(record_id).encode()

        def delivered(err: KafkaError | None, message: Message) -> None:
            if err is not None:
                self.soak.ledger.failed_delivery(record_id, err.str())
                self.soak.journal.kafka_error(self.name, "delivery", err)
            else:
                self.soak.ledger.delivered(
                    record_id, int(message.partition() or 0), int(message.offset() or 0)
                )
                self.advanced()

        while True:
            try:
                self.producer.produce(IDEM_TOPIC, self.value, key, on_delivery=delivered)
                return
            except BufferError:
                self.producer.poll(0.05)


def finish_transaction(journal: Journal, name: str, producer: Producer, commit: bool) -> str:
    """Commits (or aborts) the open transaction as librdkafka asks: retriable errors are
    retried, an abortable one turns the commit into an abort. Returns the outcome:
    committed, aborted, or unknown (a fatal error: the producer must be replaced)."""
    for _attempt in range(5):
        try:
            if commit:
                producer.commit_transaction(TXN_TIMEOUT_S)
                return "committed"
            producer.abort_transaction(TXN_TIMEOUT_S)
            return "aborted"
        except KafkaException as exc:
            err = exc.args[0]
            journal.kafka_error(name, "txn", err)
            if err.retriable():
                continue
            if commit and err.txn_requires_abort():
                commit = False
                continue
            return "unknown"
    return "unknown"


class TransactionalProducer(Worker):
    def __init__(self, soak: Soak) -> None:
        super().__init__(soak, "soak-txn")
        self.value = b"t" * (soak.args.record_bytes * TXN_VALUE_FACTOR)
        self.producer = self._new_producer()
        self.transactions: Counter[str] = Counter()
        self.produced = 0
        self.rng = random.Random(soak.args.seed + 1)

    def _new_producer(self) -> Producer:
        producer = Producer(
            {
                **client_settings(self.soak, self.name),
                "transactional.id": "soak-txn",
                "linger.ms": 5,
                "transaction.timeout.ms": 60000,
            }
        )
        producer.init_transactions(TXN_TIMEOUT_S)
        return producer

    def body(self) -> None:
        pacer = Pacer(self.soak.args.txn_rate)
        number = 0
        while not self.stopping.is_set():
            if not pacer.due():
                time.sleep(0.01)
                continue
            pacer.done += 1
            number += 1
            outcome = self._transaction(number)
            with self.soak.ledger.lock:
                self.soak.ledger.txn_outcome[number] = outcome
            self.transactions[outcome] += 1
            if outcome == "unknown":
                self.producer = self._new_producer()
            self.advanced()

    def _transaction(self, number: int) -> str:
        ledger = self.soak.ledger
        with ledger.lock:
            ledger.txn_outcome[number] = "open"
        ids = ledger.new_ids(TXN_TOPIC, TXN_RECORDS, txn=number)
        abort = self.rng.random() < ABORT_RATIO
        try:
            self.producer.begin_transaction()
            for record_id in ids:
                self._produce(record_id)
            self.produced += len(ids)
            if abort:
                left = self.producer.flush(TXN_TIMEOUT_S)  # the aborted records reach the log
                if left:
                    self.soak.journal.error(self.name, "txn", [], f"{left} records unflushed before abort")
        except KafkaException as exc:
            err = exc.args[0]
            self.soak.journal.kafka_error(self.name, "txn", err)
            if err.fatal():
                return "unknown"
            abort = True
        return self._finish(commit=not abort)

    def _finish(self, commit: bool) -> str:
        return finish_transaction(self.soak.journal, self.name, self.producer, commit)

    def _produce(self, record_id: int) -> None:
        key = str(record_id).encode()

        def delivered(err: KafkaError | None, message: Message) -> None:
            if err is not None:
                self.soak.ledger.failed_delivery(record_id, err.str())
                self.soak.journal.kafka_error(self.name, "delivery", err)
            else:
                self.soak.ledger.delivered(
                    record_id, int(message.partition() or 0), int(message.offset() or 0)
                )

        while True:
            try:
                self.producer.produce(TXN_TOPIC, self.value, key, on_delivery=delivered)
                return
            except BufferError:
                self.producer.poll(0.05)


class Transformer(Worker):
    """Exactly-once consume-transform-produce (KIP-98/KIP-447): reads `soak-idem` in a
    KIP-848 group with read_committed and writes one output per input (key `e<input id>`)
    to `soak-eos-out`, in a transaction that also commits the inputs' offsets
    (send_offsets_to_transaction). A transaction that does not commit restarts the
    consumer, which resumes from the committed offsets: every input once in the output."""

    def __init__(self, soak: Soak, number: int) -> None:
        super().__init__(soak, f"soak-eos-{number}")
        self.value = b"e" * soak.args.record_bytes
        self.transactions: Counter[str] = Counter()
        self.restarts = 0
        self.consumer = self._new_consumer()
        self.producer = self._new_producer()

    def _new_consumer(self) -> Consumer:
        return Consumer(
            {
                **client_settings(self.soak, self.name),
                "group.id": EOS_GROUP,
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )

    def _new_producer(self) -> Producer:
        producer = Producer(
            {
                **client_settings(self.soak, self.name),
                "transactional.id": "soak-eos",  # each new transformer fences the one before
                "linger.ms": 5,
                "transaction.timeout.ms": 60000,
            }
        )
        producer.init_transactions(TXN_TIMEOUT_S)
        return producer

    def body(self) -> None:
        self.consumer.subscribe([IDEM_TOPIC])
        while not self.stopping.is_set():
            messages = []
            for message in self.consumer.consume(500, 0.2):
                err = message.error()
                if err is not None:
                    self.soak.journal.kafka_error(self.name, "consume", err)
                else:
                    messages.append(message)
            if not messages:
                continue
            outcome = self._transaction(messages)
            self.transactions[outcome] += 1
            if outcome == "committed":
                self.advanced(len(messages))
                continue
            if self.stopping.is_set():  # fenced by the transformer replacing this one
                break
            self.restarts += 1  # resume from the committed offsets
            self.consumer.close()
            self.consumer = self._new_consumer()
            self.consumer.subscribe([IDEM_TOPIC])
            if outcome == "unknown":
                self.producer = self._new_producer()
        self.consumer.close()

    def _transaction(self, messages: list[Message]) -> str:
        sources = [int(message.key() or b"-1") for message in messages]
        try:
            self.producer.begin_transaction()
            for source in sources:
                self._produce(source)
            positions = [tp for tp in self.consumer.position(self.consumer.assignment()) if tp.offset >= 0]
            self.producer.send_offsets_to_transaction(
                positions, self.consumer.consumer_group_metadata(), TXN_TIMEOUT_S
            )
        except KafkaException as exc:
            err = exc.args[0]
            self.soak.journal.kafka_error(self.name, "txn", err)
            if err.fatal():
                return "unknown"
            return finish_transaction(self.soak.journal, self.name, self.producer, commit=False)
        outcome = finish_transaction(self.soak.journal, self.name, self.producer, commit=True)
        if outcome == "committed":
            self.soak.ledger.committed_eos(sources)
        return outcome

    def _produce(self, source: int) -> None:
        def delivered(err: KafkaError | None, message: Message) -> None:
            if err is not None:
                self.soak.journal.kafka_error(self.name, "delivery", err)
            else:
                self.soak.ledger.delivered_eos(
                    source, int(message.partition() or 0), int(message.offset() or 0)
                )

        while True:
            try:
                self.producer.produce(EOS_TOPIC, self.value, b"e%d" % source, on_delivery=delivered)
                return
            except BufferError:
                self.producer.poll(0.05)


class BulkProducer(Worker):
    """acks=1 4 KiB records to the retained bulk topic: what keeps retention busy."""

    def __init__(self, soak: Soak) -> None:
        super().__init__(soak, "soak-bulk")
        self.producer = Producer(
            {
                **client_settings(soak, self.name),
                "acks": 1,
                "enable.idempotence": False,
                "linger.ms": 10,
                "queue.buffering.max.kbytes": 16384,
            }
        )
        self.value = os.urandom(BULK_RECORD)
        self.produced = 0
        self.acked = 0

    def body(self) -> None:
        pacer = Pacer(self.soak.args.bulk_rate * 1e6 / BULK_RECORD)
        while not self.stopping.is_set():
            due = min(pacer.due(), 1000)
            for _ in range(due):
                try:
                    self.producer.produce(BULK_TOPIC, self.value, on_delivery=self._delivered)
                except BufferError:
                    break  # the producer is behind (throttled): drop what is due
                self.produced += 1
            pacer.done += due
            self.producer.poll(0.01)
        self.producer.flush(60)

    def _delivered(self, err: KafkaError | None, _message: Message) -> None:
        if err is not None:
            self.soak.journal.kafka_error(self.name, "delivery", err)
        else:
            self.acked += 1
            self.advanced()


class Member(Worker):
    """One consumer group member: read_committed, synchronous commits after each batch
    and before its partitions are revoked, so that only a refused commit or its own exit
    lets a record be read again."""

    def __init__(self, soak: Soak, group: str, index: int) -> None:
        super().__init__(soak, f"{group}-{index}")
        self.group = group
        protocol = GROUPS[group]
        settings = {
            **client_settings(soak, self.name),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
        if protocol == "classic":
            settings.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000})
        else:
            settings["group.protocol"] = "consumer"
        self.consumer = Consumer(settings)
        self.consumed = 0

    def body(self) -> None:
        self.consumer.subscribe(list(CHECKED_TOPICS), on_revoke=self._revoked, on_lost=self._lost)
        while not self.stopping.is_set():
            messages = self.consumer.consume(500, 0.2)
            read = 0
            for message in messages:
                err = message.error()
                if err is not None:
                    self.soak.journal.kafka_error(self.name, "consume", err)
                    continue
                self.soak.ledger.consumed(self.group, message)
                read += 1
            if read:
                self.consumed += read
                self._commit()
                self.advanced(read)
        self._commit()
        self.consumer.close()

    def _commit(self) -> None:
        try:
            offsets = self.consumer.commit(asynchronous=False)
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() != KafkaError._NO_OFFSET:
                self.soak.journal.kafka_error(self.name, "commit", err)
            return
        if offsets:
            for tp in offsets:
                if tp.error is not None:
                    self.soak.journal.kafka_error(self.name, "commit", tp.error)
            self.soak.ledger.committed(self.group, offsets)

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._commit()

    def _lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.soak.journal.error(self.name, "consume", [KafkaError._ASSIGNMENT_LOST], f"lost {partitions}")


class AdminWorker(Worker):
    """Scratch topics created, altered, extended and deleted; topics, configs, groups,
    offsets and the cluster described. Every failed future is a client error."""

    def __init__(self, soak: Soak) -> None:
        super().__init__(soak, "soak-admin")
        self.admin = AdminClient(client_settings(soak, self.name))
        self.rng = random.Random(soak.args.seed + 2)
        self.scratch: list[str] = []
        self.numbers = itertools.count()
        self.operations: Counter[str] = Counter()
        self.offsets_client: Any = None  # kafka-python's admin client, with bounces

    def body(self) -> None:
        actions: list[Callable[[], None]] = [
            self.create,
            self.create,
            self.delete,
            self.alter_topic,
            self.add_partitions,
            self.describe_topics,
            self.describe_configs,
            self.describe_groups,
            self.group_offsets,
            self.list_offsets,
            self.describe_cluster,
        ]
        while not self.stopping.wait(self.soak.args.admin_interval):
            action = self.rng.choice(actions)
            self.operations[action.__name__] += 1
            self.attempt(action)
            self.admin.poll(0)  # serves its error callback and log lines
            self.advanced()
        while self.scratch:
            self.attempt(self.delete)
        if self.offsets_client is not None:
            self.offsets_client.close()

    def attempt(self, action: Callable[[], None]) -> None:
        """One operation; its failure is a client error naming it (a timeout has no code)."""
        try:
            action()
        except KafkaException as exc:
            err = exc.args[0]
            self.soak.journal.error(self.name, "admin", [err.code()], f"{action.__name__}: {err.str()}")
        except concurrent.futures.TimeoutError:
            self.soak.journal.error(self.name, "admin", [], f"{action.__name__}: no answer in 30 s")
        except kafka.errors.KafkaError as exc:  # kafka-python's (group calls with bounces)
            code = getattr(exc, "errno", None)
            if isinstance(exc, (kafka.errors.KafkaConnectionError, kafka.errors.NodeNotReadyError)):
                code = KafkaError._TRANSPORT  # a connection to a stopped broker
            self.soak.journal.error(self.name, "admin", [code], f"{action.__name__}: {exc!r}")
            if self.offsets_client is not None:
                # kafka-python 3.0.12's admin client caches a group's coordinator for good,
                # NOT_COORDINATOR or not: a new client looks it up again.
                self.offsets_client.close()
                self.offsets_client = None

    def _wait(self, futures: dict[Any, Any]) -> None:
        for future in futures.values():
            future.result(timeout=30)

    def create(self) -> None:
        if len(self.scratch) >= MAX_SCRATCH:
            self.delete()
            return
        name = f"soak-scratch-{next(self.numbers)}"
        topic = NewTopic(name, self.rng.randint(1, 3), config={"retention.ms": "600000"})
        self._wait(self.admin.create_topics([topic], operation_timeout=10))
        self.scratch.append(name)

    def delete(self) -> None:
        if not self.scratch:
            return
        name = self.scratch.pop(0)
        self._wait(self.admin.delete_topics([name], operation_timeout=10))

    def alter_topic(self) -> None:
        if not self.scratch:
            return
        resource = ConfigResource(
            ConfigResource.Type.TOPIC,
            self.rng.choice(self.scratch),
            incremental_configs=[
                ConfigEntry(
                    "retention.ms",
                    str(self.rng.randint(60_000, 600_000)),
                    incremental_operation=AlterConfigOpType.SET,
                ),
                ConfigEntry(
                    "cleanup.policy",
                    self.rng.choice(["delete", "compact"]),
                    incremental_operation=AlterConfigOpType.SET,
                ),
            ],
        )
        self._wait(self.admin.incremental_alter_configs([resource]))

    def add_partitions(self) -> None:
        if not self.scratch:
            return
        name = self.rng.choice(self.scratch)
        topic = self.admin.list_topics(name, timeout=10).topics.get(name)
        if topic is None or topic.error is not None or len(topic.partitions) >= 6:
            return
        self._wait(self.admin.create_partitions([NewPartitions(name, len(topic.partitions) + 1)]))

    def describe_topics(self) -> None:
        names = [*CHECKED_TOPICS, BULK_TOPIC, *self.scratch[:1]]
        self._wait(self.admin.describe_topics(TopicCollection(names)))

    def describe_configs(self) -> None:
        resources = [
            ConfigResource(ConfigResource.Type.TOPIC, self.rng.choice([*CHECKED_TOPICS, BULK_TOPIC])),
            ConfigResource(ConfigResource.Type.BROKER, "0"),
        ]
        self._wait(self.admin.describe_configs(resources))

    @property
    def bounced(self) -> bool:
        """Broker bounces move coordinators: librdkafka's admin client then crashes the
        process in its coordinator requests. ListConsumerGroupOffsets on the
        NOT_COORDINATOR a moved coordinator answers segfaults (rd_kafka_cgrp_op on the
        admin client's missing group handle, librdkafka #5040), and a coordinator lookup
        during a bounce fails the assertion `eonce->refcnt > 0` in
        rd_kafka_admin_coord_response_parse. With bounces the coordinator-bound admin
        calls go through kafka-python instead (DescribeGroups of the classic group: it
        has no ConsumerGroupDescribe)."""
        return self.soak.args.brokers > 1 and self.soak.args.bounce > 0

    def kafka_python(self) -> Any:
        if self.offsets_client is None:
            from kafka import KafkaAdminClient

            self.offsets_client = KafkaAdminClient(bootstrap_servers=self.soak.bootstrap, client_id=self.name)
        return self.offsets_client

    def describe_groups(self) -> None:
        if self.bounced:
            client = self.kafka_python()
            client.list_groups()
            classic = [g for g, protocol in GROUPS.items() if protocol == "classic"]
            for group, found in client.describe_groups(classic).items():
                if found.get("error"):
                    raise KafkaException(
                        KafkaError(KafkaError.UNKNOWN, f"describe_groups {group}: {found['error']}")
                    )
            return
        self.admin.list_consumer_groups().result(timeout=30)
        self._wait(self.admin.describe_consumer_groups(list(GROUPS)))

    def group_offsets(self) -> None:
        group = self.rng.choice([*GROUPS, EOS_GROUP])
        if self.bounced:
            self.kafka_python().list_group_offsets(group)
            return
        self._wait(self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]))

    def list_offsets(self) -> None:
        spec = self.rng.choice([OffsetSpec.earliest(), OffsetSpec.latest(), OffsetSpec.max_timestamp()])
        topic = self.rng.choice(CHECKED_TOPICS)
        request = {TopicPartition(topic, p): spec for p in range(PARTITIONS[topic])}
        self._wait(self.admin.list_offsets(request))

    def describe_cluster(self) -> None:
        self.admin.describe_cluster().result(timeout=30)


class QuotaWorker(Worker):
    """Client quotas set and removed through the HTTP control plane and over the wire
    (AlterClientQuotas from kafka-python, as kafka-client-quotas sends it), each read back."""

    def __init__(self, soak: Soak) -> None:
        super().__init__(soak, "soak-quotas")
        self.rng = random.Random(soak.args.seed + 3)
        self.expected: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = {}
        self.mismatches: list[str] = []
        self.alterations: Counter[str] = Counter()
        self.client: Any = None

    def body(self) -> None:
        from broker.tools.client_quotas import QuotaClient

        self.client = QuotaClient(self.soak.bootstrap, {"client_id": self.name})
        try:
            while not self.stopping.wait(self.soak.args.quota_interval):
                self.step()
                self.advanced()
            for entity in list(self.expected):  # leave no quota behind
                self.alter(entity, {key: None for key in self.expected[entity]}, over_http=True)
        finally:
            self.client.close()

    def step(self) -> None:
        bulk = self.soak.args.bulk_rate * 1e6
        members = [m.name for m in self.soak.members]
        choices: list[tuple[tuple[tuple[str, str | None], ...], str, float]] = [
            ((("client-id", "soak-bulk"),), "producer_byte_rate", self.rng.choice([0.5, 1.5, 4]) * bulk),
            ((("client-id", self.rng.choice(members)),), "consumer_byte_rate", 20e6),
            ((("client-id", "soak-admin"),), "request_percentage", 200.0),
            ((("client-id", None),), "producer_byte_rate", 50e6),
            ((("client-id", None),), "controller_mutation_rate", 100.0),
        ]
        entity, key, value = self.rng.choice(choices)
        remove = key in self.expected.get(entity, {}) and self.rng.random() < 0.5
        self.alter(entity, {key: None if remove else value}, over_http=self.rng.random() < 0.5)

    def alter(
        self, entity: tuple[tuple[str, str | None], ...], ops: dict[str, float | None], over_http: bool
    ) -> None:
        how = "http" if over_http else "wire"
        self.alterations[how] += 1
        if over_http:
            body = {
                "entity": dict(entity),
                "set": {k: v for k, v in ops.items() if v is not None},
                "remove": [k for k, v in ops.items() if v is None],
            }
            self.soak.http("POST", "/v1/quotas", body)
        else:
            from broker.tools.client_quotas import Component, alter_quotas

            components = [
                Component(entity_type, 0 if name is not None else 1, name) for entity_type, name in entity
            ]
            for outcome in alter_quotas(self.client, components, list(ops.items()), validate_only=False):
                if outcome.error_code:
                    self.soak.journal.error(
                        self.name, "quota", [outcome.error_code], outcome.error_message or "AlterClientQuotas"
                    )
                    return
        values = self.expected.setdefault(entity, {})
        for key, value in ops.items():
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
        if not values:
            del self.expected[entity]
        self.check(entity)

    def check(self, entity: tuple[tuple[str, str | None], ...]) -> None:
        """The entity's values read back through the other path than the last change."""
        query = "&".join(f"{t}={urllib.parse.quote('<default>' if n is None else n)}" for t, n in entity)
        found = self.soak.http("GET", f"/v1/quotas?{query}&strict=true")
        seen = found[0]["values"] if found else {}
        want = self.expected.get(entity, {})
        if {k: float(v) for k, v in seen.items()} != want:
            self.mismatches.append(f"{dict(entity)}: read {seen}, expected {want}")


class FaultWorker(Worker):
    """Injects one fault every --fault-interval seconds, aimed at one client, and follows
    each until it is spent (or removes it after 20 s)."""

    def __init__(self, soak: Soak) -> None:
        super().__init__(soak, "soak-faults")
        self.rng = random.Random(soak.args.seed + 4)
        self.live: dict[int, tuple[Event, float]] = {}  # fault id -> (event, added at)
        self.injected: Counter[str] = Counter()
        self.down: tuple[int, float, Event] | None = None  # a bounced broker: (id, back at, event)

    def body(self) -> None:
        next_fault = self.soak.clock.now() + self.soak.args.fault_interval
        bounces = self.soak.args.bounce if self.soak.args.brokers > 1 else 0.0
        next_bounce = bounces / 2
        while not self.stopping.wait(0.5):
            self.follow()
            if bounces and self.soak.clock.now() >= next_bounce:
                next_bounce += bounces
                self.bounce()
            if self.soak.clock.now() >= next_fault:
                next_fault += self.soak.args.fault_interval
                self.inject()
                self.advanced()
        self.clear()

    def members(self, protocol: str | None = None) -> list[str]:
        return [
            m.name
            for m in self.soak.members
            if m.is_alive() and (protocol is None or GROUPS[m.group] == protocol)
        ]

    def inject(self) -> None:
        member = self.rng.choice(self.members())
        classic = self.rng.choice(self.members("classic") or [member])
        modern = self.rng.choice(self.members("consumer") or [member])
        eos = self.soak.transformer.name
        anyone = self.rng.choice(["soak-idem", "soak-txn", "soak-bulk", "soak-admin", eos, member])
        menu: list[tuple[str, dict[str, Any], frozenset[int]]] = [
            (
                "TxnOffsetCommit COORDINATOR_NOT_AVAILABLE",
                {"api_key": 28, "error_code": 15, "client_id": eos, "count": 1},
                frozenset({15}),
            ),
            (
                "AddOffsetsToTxn CONCURRENT_TRANSACTIONS",
                {"api_key": 25, "error_code": 51, "client_id": eos, "count": 1},
                frozenset({51}),
            ),
            (
                "Produce NOT_LEADER eos",
                {"api_key": 0, "error_code": 6, "client_id": eos, "count": 1},
                LEADER_MOVE,
            ),
            (
                "Fetch disconnect eos",
                {"api_key": 1, "disconnect": True, "client_id": eos, "count": 1},
                TRANSPORT,
            ),
            (
                "EndTxn disconnect",
                {"api_key": 26, "disconnect": True, "client_id": "soak-txn", "count": 1},
                TRANSPORT,
            ),
            (
                "Produce NOT_LEADER",
                {"api_key": 0, "error_code": 6, "client_id": "soak-idem", "count": 2},
                LEADER_MOVE,
            ),
            (
                "Produce NOT_LEADER txn",
                {"api_key": 0, "error_code": 6, "client_id": "soak-txn", "count": 1},
                LEADER_MOVE,
            ),
            (
                "Produce disconnect",
                {"api_key": 0, "disconnect": True, "client_id": "soak-idem", "count": 1},
                TRANSPORT,
            ),
            (
                "Fetch latency",
                {"api_key": 1, "latency_ms": 300, "client_id": member, "count": 5},
                frozenset(),
            ),
            (
                "Fetch NOT_LEADER",
                {"api_key": 1, "error_code": 6, "client_id": member, "count": 2},
                LEADER_MOVE,
            ),
            (
                "Fetch disconnect",
                {"api_key": 1, "disconnect": True, "client_id": member, "count": 1},
                TRANSPORT,
            ),
            (
                "Heartbeat COORDINATOR_NOT_AVAILABLE",
                {"api_key": 12, "error_code": 15, "client_id": classic, "count": 1},
                frozenset({15}),
            ),
            (
                "ConsumerGroupHeartbeat COORDINATOR_NOT_AVAILABLE",
                {"api_key": 68, "error_code": 15, "client_id": modern, "count": 1},
                frozenset({15}),
            ),
            (
                "OffsetCommit COORDINATOR_NOT_AVAILABLE",
                {"api_key": 8, "error_code": 15, "client_id": member, "count": 1},
                frozenset({15}),
            ),
            (
                "OffsetCommit disconnect",
                {"api_key": 8, "disconnect": True, "client_id": member, "count": 1},
                TRANSPORT,
            ),
            (
                "FindCoordinator COORDINATOR_NOT_AVAILABLE",
                {"api_key": 10, "error_code": 15, "client_id": member, "count": 1},
                frozenset({15}),
            ),
            (
                "EndTxn CONCURRENT_TRANSACTIONS",
                {"api_key": 26, "error_code": 51, "client_id": "soak-txn", "count": 1},
                frozenset({51}),
            ),
            (
                "AddPartitionsToTxn COORDINATOR_LOAD_IN_PROGRESS",
                {"api_key": 24, "error_code": 14, "client_id": "soak-txn", "count": 1},
                frozenset({14}),
            ),
            (
                "CreateTopics REQUEST_TIMED_OUT",
                {"api_key": 19, "error_code": 7, "client_id": "soak-admin", "count": 1},
                frozenset({7}),
            ),
            (
                "Metadata latency",
                {"api_key": 3, "latency_ms": 200, "client_id": anyone, "count": 3},
                frozenset(),
            ),
            (
                "Metadata disconnect",
                {"api_key": 3, "disconnect": True, "client_id": anyone, "count": 1},
                TRANSPORT,
            ),
        ]
        if self.rng.random() < 0.1:
            client = self.rng.choice(["soak-idem", "soak-bulk", member])
            self.soak.http("POST", "/v1/throttle", {"client_id": client, "throttle_ms": 500, "count": 2})
            self.soak.journal.event("throttle", f"throttle 500 ms x2 {client}", [client], [], done=True)
            self.injected["forced throttle"] += 1
            return
        if self.soak.args.brokers > 1 and self.rng.random() < 0.15:
            self.move_leader()
            return
        what, payload, codes = self.rng.choice(menu)
        fault = self.soak.http("POST", "/v1/faults", payload)
        client = payload["client_id"]
        event = self.soak.journal.event(
            "fault", f"{what} -> {client}", [client], codes | TRANSPORT_IF(payload)
        )
        self.live[fault["id"]] = (event, self.soak.clock.now())
        self.injected[what] += 1

    def move_leader(self) -> None:
        topic = self.rng.choice([*CHECKED_TOPICS, BULK_TOPIC])
        partition = self.rng.randrange(PARTITIONS[topic])
        broker = self.rng.randrange(self.soak.args.brokers)
        if self.down is not None and self.down[0] == broker:
            return  # not to a bounced broker (BROKER_NOT_AVAILABLE)
        self.soak.http("POST", "/v1/leaders", {"topic": topic, "partition": partition, "broker": broker})
        self.soak.journal.event(
            "leader move", f"{topic}[{partition}] -> {broker}", None, LEADER_MOVE, done=True
        )
        self.injected["leader move"] += 1

    def bounce(self) -> None:
        """A broker stops for BOUNCE_S: its connections drop, its partitions and
        coordinators fail over, then it starts again. Not the canary's (0), and not the
        transformer's group or transaction coordinator: librdkafka 2.16's
        send_offsets_to_transaction hangs for good, its timeout notwithstanding, once the
        group coordinator it cached is decommissioned (librdkafka #5511, open)."""
        spared = {0, *self.transformer_coordinators()}
        candidates = [n for n in range(self.soak.args.brokers) if n not in spared]
        if not candidates:
            return
        node = self.rng.choice(candidates)
        self.soak.http("POST", f"/v1/brokers/{node}/stop")
        event = self.soak.journal.event("broker bounce", f"broker {node} down {BOUNCE_S:g} s", None, FAILOVER)
        self.down = (node, self.soak.clock.now() + BOUNCE_S, event)
        self.injected["broker bounce"] += 1

    def transformer_coordinators(self) -> set[int]:
        """FindCoordinator (v4) for the transformer's group and transactional id."""
        from kafka.protocol.metadata import FindCoordinatorRequest

        from tests.support.wire import round_trip

        found = set()
        with socket.create_connection(self.soak.broker.address(), timeout=10) as sock:
            for key_type in (0, 1):  # group, transaction
                request = FindCoordinatorRequest[4](key_type=key_type, coordinator_keys=[EOS_GROUP])
                response = round_trip(sock, request, key_type + 1, self.name)
                found |= {c.node_id for c in response.coordinators if c.error_code == 0}
        return found

    def restart(self, force: bool = False) -> None:
        if self.down is not None and (force or self.soak.clock.now() >= self.down[1]):
            node, _at, event = self.down
            self.soak.http("POST", f"/v1/brokers/{node}/start")
            event.end = self.soak.clock.now() + REQUEST_TIMEOUT_S
            self.down = None

    def follow(self) -> None:
        self.restart()
        if not self.live:
            return
        listed = {fault["id"]: fault for fault in self.soak.http("GET", "/v1/faults")}
        now = self.soak.clock.now()
        for fault_id, (event, added) in list(self.live.items()):
            if fault_id in listed:
                event.fired = listed[fault_id]["fired"]
                if now - added < 20:
                    continue
                try:
                    self.soak.http("DELETE", f"/v1/faults/{fault_id}")
                except SoakError:
                    pass  # spent meanwhile
            else:
                event.fired = max(event.fired, 1)
            event.end = now
            del self.live[fault_id]

    def clear(self) -> None:
        self.restart(force=True)
        self.soak.http("DELETE", "/v1/faults")
        now = self.soak.clock.now()
        for event, _added in self.live.values():
            event.end = now
        self.live.clear()


def TRANSPORT_IF(payload: dict[str, Any]) -> frozenset[int]:  # noqa: N802 - reads as a constant
    """A disconnect fault explains transport errors; a latency fault explains nothing."""
    return TRANSPORT if payload.get("disconnect") else frozenset()


class Sampler(Worker):
    """RSS, the soak topics' log start offsets (has retention begun everywhere?) and lags."""

    def __init__(self, soak: Soak) -> None:
        super().__init__(soak, "soak-sampler")
        self.rss: list[tuple[float, int]] = []
        self.cpu: list[tuple[float, float]] = []  # (seconds, broker CPU seconds so far)
        self.stalls: dict[str, tuple[float, float]] = {}  # producer -> (since, longest time without progress)
        self.ramp_done: float | None = None  # when every retained partition had lost its first batch
        self.watermarks = Consumer(
            {**client_settings(soak, self.name), "group.id": "soak-sampler", "enable.auto.commit": False}
        )
        self.last_print = 0.0

    def body(self) -> None:
        interval = self.soak.args.interval
        while not self.stopping.wait(interval):
            now = self.soak.clock.now()
            self.rss.append((now, rss(self.soak.broker.pid)))
            self.cpu.append((now, cpu_seconds(self.soak.broker.pid)))
            if self.ramp_done is None and all(low > 0 for low, _high in self.offsets().values()):
                self.ramp_done = now
            lags = self.soak.ledger.sample_lag()
            soak = self.soak
            for worker in (soak.idem, soak.txn, soak.bulk, soak.transformer):
                gap = now - worker.last_progress
                if gap > self.stalls.get(worker.name, (0.0, 0.0))[1]:
                    self.stalls[worker.name] = (worker.last_progress, gap)
            self.advanced()
            if self.soak.args.verbose or now - self.last_print >= 30:
                self.last_print = now
                self.soak.progress(lags)
        self.watermarks.close()

    def offsets(self) -> dict[tuple[str, int], tuple[int, int]]:
        found = {}
        for topic in (*CHECKED_TOPICS, BULK_TOPIC):
            for partition in range(PARTITIONS[topic]):
                try:
                    found[(topic, partition)] = self.watermarks.get_watermark_offsets(
                        TopicPartition(topic, partition), timeout=2
                    )
                except KafkaException as exc:
                    self.soak.journal.kafka_error(self.name, "admin", exc.args[0])
                    found[(topic, partition)] = (0, 0)
        return found


class Canary(Worker):
    """ApiVersions on its own connection every CANARY_S: the broker's responsiveness. A
    request unanswered for STALL_S is a stall; the broker's Python stacks are dumped then
    (faulthandler on SIGUSR1, into its stderr) so that the report shows where it hung."""

    def __init__(self, soak: Soak) -> None:
        super().__init__(soak, "soak-canary")
        self.latencies: list[float] = []
        self.stalls: list[tuple[float, float]] = []  # (started at, seconds unanswered)
        self.dumps = 0

    def body(self) -> None:
        from kafka.protocol.metadata import ApiVersionsRequest

        from tests.support.wire import encode_request, read_frame

        host, port = self.soak.broker.address()
        correlation = itertools.count(1)
        sock = socket.create_connection((host, port), timeout=30)
        try:
            while not self.stopping.wait(CANARY_S):
                frame = encode_request(ApiVersionsRequest[3](), next(correlation), self.name)
                sent = self.soak.clock.now()
                sock.sendall(frame)
                sock.settimeout(STALL_S)
                try:
                    read_frame(sock)
                except TimeoutError:
                    self.dump_stacks(sent)
                    sock.settimeout(300)
                    read_frame(sock)
                took = self.soak.clock.now() - sent
                self.latencies.append(took)
                if took >= STALL_S:
                    self.stalls.append((sent, took))
                self.advanced()
        finally:
            sock.close()

    def dump_stacks(self, since: float) -> None:
        if self.dumps < 3 and self.soak.broker.proc.poll() is None:
            self.dumps += 1
            print(f"  ! broker unanswered since {since:.1f} s: dumping its stacks (SIGUSR1)", flush=True)
            os.kill(self.soak.broker.pid, signal.SIGUSR1)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss(pid: int) -> int:
    """VmRSS of a process in bytes (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def mib(value: float) -> str:
    return f"{value / 2**20:,.1f} MiB"


# -- the soak ---------------------------------------------------------------------------------
class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.clock = Clock()
        self.journal = Journal(self.clock)
        self.journal.verbose = args.verbose
        self.ledger = Ledger()
        self.members: list[Member] = []
        self.retired: list[Member] = []
        self.member_numbers = {group: itertools.count() for group in GROUPS}
        self.transformer_numbers = itertools.count()
        self.transformer: Transformer
        self.retired_transformers: list[Transformer] = []
        self.violations: list[str] = []
        self.broker: BrokerProcess
        self.bootstrap = ""
        self.admin_url = ""
        self.debug_logs: dict[str, ClientLogHandler] = {}

    # -- the control plane
    def http(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.admin_url + path, data=data, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            raise SoakError(f"{method} {path}: {exc.code} {exc.read()[:300]!r}") from None
        except OSError as exc:
            raise SoakError(f"{method} {path}: {exc}") from None
        return json.loads(text) if text else None

    # -- start and stop
    def start_broker(self) -> None:
        arguments = ["--port", "0", "--admin-port", "0", "--brokers", str(self.args.brokers)]
        for override in (
            *BROKER_OVERRIDES,
            f"log.retention.bytes={self.args.retention_bytes}",
            *self.args.override,
        ):
            arguments += ["--override", override]
        self.broker = BrokerProcess(*arguments, command=BROKER_COMMAND)
        try:
            self.broker.wait_listening(self.args.brokers, timeout=30)
            port = int(self.broker.wait_line(r"admin API on http://127\.0\.0\.1:(\d+)").group(1))
        except BrokerProcessError:
            self.broker.kill()
            raise
        self.admin_url = f"http://127.0.0.1:{port}"
        self.bootstrap = ",".join(
            f"{host}:{port}"
            for listeners in self.broker.wait_listening(self.args.brokers).values()
            for host, port in [listeners["PLAINTEXT"]]
        )

    def create_topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "client.id": "soak-setup"})
        replicas = min(3, self.args.brokers)
        futures = admin.create_topics(
            [NewTopic(topic, count, replicas) for topic, count in PARTITIONS.items()], operation_timeout=10
        )
        for future in futures.values():
            future.result(timeout=30)
        deadline = time.monotonic() + 30
        while True:
            topics = admin.list_topics(timeout=10).topics
            if all(
                t in topics and topics[t].error is None and len(topics[t].partitions) == n
                for t, n in PARTITIONS.items()
            ):
                return
            if time.monotonic() > deadline:
                raise SoakError("the soak topics did not appear in Metadata")
            time.sleep(0.1)

    def add_member(self, group: str) -> Member:
        member = Member(self, group, next(self.member_numbers[group]))
        self.members.append(member)
        member.start()
        return member

    def churn(self, group: str) -> None:
        """The group's oldest member leaves (committing first), then a new one joins; or
        the transformer is replaced by a new one (fencing it: same transactional id)."""
        if group == EOS_GROUP:
            self.replace_transformer()
            return
        current = [m for m in self.members if m.group == group]
        leaving = current[0]
        joining = Member(self, group, next(self.member_numbers[group]))
        clients = {m.name for m in current} | {joining.name}
        event = self.journal.event(
            "churn", f"{leaving.name} leaves {group}, {joining.name} joins", clients, REBALANCE
        )
        leaving.stop()
        self.members.remove(leaving)
        self.retired.append(leaving)
        self.members.append(joining)
        joining.start()
        event.end = self.clock.now() + CHURN_S  # the rebalance's errors come within it

    def replace_transformer(self) -> None:
        leaving = self.transformer
        leaving.stopping.set()  # it may be in a transaction: the new one's init_transactions fences it
        joining = Transformer(self, next(self.transformer_numbers))
        event = self.journal.event(
            "churn",
            f"{leaving.name} replaced by {joining.name}",
            {leaving.name, joining.name},
            REBALANCE | {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH},
        )
        leaving.stop()
        self.retired_transformers.append(leaving)
        self.transformer = joining
        joining.start()
        event.end = self.clock.now() + CHURN_S

    def run(self) -> int:
        args = self.args
        duration = args.minutes * 60
        self.start_broker()
        try:
            self.create_topics()
            print(
                f"soak: {args.minutes:g} min against {args.brokers} broker(s) (pid {self.broker.pid}), "
                f"log.retention.bytes={args.retention_bytes:,}, seed {args.seed}; idempotent "
                f"{args.rate:g} records/s, transactional {args.txn_rate:g} txn/s x {TXN_RECORDS}, "
                f"bulk {args.bulk_rate:g} MB/s; a fault every {args.fault_interval:g} s, churn every "
                f"{args.churn:g} s",
                flush=True,
            )
            self.clock = self.journal.clock = Clock()
            self.sampler = Sampler(self)
            self.canary = Canary(self)
            self.idem = IdempotentProducer(self)
            self.txn = TransactionalProducer(self)
            self.bulk = BulkProducer(self)
            self.admin = AdminWorker(self)
            self.quotas = QuotaWorker(self)
            self.faults = FaultWorker(self)
            self.transformer = Transformer(self, next(self.transformer_numbers))
            for group in GROUPS:
                for _ in range(MEMBERS):
                    self.add_member(group)
            workers: list[Worker] = [
                self.sampler,
                self.canary,
                self.idem,
                self.txn,
                self.bulk,
                self.admin,
                self.quotas,
                self.transformer,
            ]
            for worker in workers:
                worker.start()
            if not args.no_faults:
                self.faults.start()
            next_churn = args.churn
            groups = itertools.cycle([*GROUPS, EOS_GROUP])
            while self.clock.now() < duration:
                time.sleep(0.5)
                if self.broker.proc.poll() is not None:
                    raise SoakError(f"the broker exited with {self.broker.proc.returncode}")
                if args.churn and self.clock.now() >= next_churn:
                    next_churn += args.churn
                    self.churn(next(groups))
            self.end = self.clock.now()
            self.shutdown()
        finally:
            self.broker_code = self.broker.stop(timeout=20)
        return self.report()

    def shutdown(self) -> None:
        """Faults, quotas and admin stop; producers finish; the groups read what is left."""
        if self.faults.is_alive():
            self.faults.stop()
        else:
            self.http("DELETE", "/v1/faults")
        for worker in (self.quotas, self.admin, self.idem, self.txn, self.bulk):
            worker.stop(timeout=120)
        self.sampler.stop()
        self.canary.stop()
        expected = self.ledger.expected()
        inputs = {r for r in expected if r >= 0 and self.ledger.sent[r] == IDEM_TOPIC}
        drained_at = self.clock.now()
        deadline = drained_at + DRAIN_S
        while self.clock.now() < deadline:  # the transformer first: the groups read its output
            with self.ledger.lock:
                if inputs <= self.ledger.eos_committed or all(
                    expected <= g.consumed.keys() for g in self.ledger.groups.values()
                ):
                    break
            time.sleep(0.5)
        self.transformer.stop()
        while self.clock.now() < deadline:
            with self.ledger.lock:
                if all(expected <= g.consumed.keys() for g in self.ledger.groups.values()):
                    break
            time.sleep(0.5)
        self.drain_s = self.clock.now() - drained_at
        for member in self.members:
            member.stop()
        offsets = self.final_offsets()
        self.low_watermarks = {tp: low for tp, (low, _high) in offsets.items()}
        self.retained_records = min(high - low for low, high in offsets.values())
        self.retained = {
            topic: min(high - low for (t, _p), (low, high) in offsets.items() if t == topic)
            for topic in CHECKED_TOPICS
        }
        self.final_state = self.read_final_state()

    def read_final_state(self) -> list[str]:
        """What the broker holds once every client is done, against what the clients were
        told: each group's committed offsets (OffsetFetch) equal to the last commits
        acknowledged, groups empty, no transaction left open, no scratch topic left."""
        findings = []
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "client.id": "soak-final"})
        for group, led in self.ledger.groups.items():
            result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(
                30
            )
            stored = {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}
            wrong = {
                tp: (stored.get(tp), offset)
                for tp, offset in led.committed.items()
                if stored.get(tp) != offset
            }
            if wrong:
                findings.append(f"{group}: committed offsets (stored, acknowledged) differ: {wrong}")
        for found in self.http("GET", "/v1/groups")["groups"]:
            if found["group_id"] in GROUPS and found["state"] not in ("Empty", "Dead"):
                findings.append(f"group {found['group_id']} is {found['state']} after every member left")
        for txn in self.http("GET", "/v1/transactions")["transactions"]:
            if txn["state"] not in ("Empty", "CompleteCommit", "CompleteAbort"):
                findings.append(f"transaction {txn['transactional_id']} left {txn['state']}")
        topics = {t["name"] for t in self.http("GET", "/v1/cluster")["topics"]}
        leftover = sorted(t for t in topics if t.startswith("soak-scratch"))
        if leftover:
            findings.append(f"scratch topics left after their deletion: {leftover}")
        return findings

    def final_offsets(self) -> dict[tuple[str, int], tuple[int, int]]:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-final"})
        try:
            return {
                (topic, p): consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                for topic in CHECKED_TOPICS
                for p in range(PARTITIONS[topic])
            }
        finally:
            consumer.close()

    def progress(self, lags: dict[str, int]) -> None:
        with self.ledger.lock:
            consumed = {g: len(led.consumed) for g, led in self.ledger.groups.items()}
            acked = len(self.ledger.acked)
        with self.journal.lock:
            errors = len(self.journal.errors)
            faults = sum(1 for e in self.journal.events if e.kind == "fault")
        cpu = self.sampler.cpu[-6:]
        share = (cpu[-1][1] - cpu[0][1]) / (cpu[-1][0] - cpu[0][0]) if len(cpu) > 1 else 0.0
        print(
            f"  {self.clock.now():6.0f} s  RSS {mib(rss(self.broker.pid)):>11}  CPU {share * 100:3.0f} %  "
            f"acked {acked:,}  "
            + "  ".join(f"{g} {n:,} (lag {lags[g]:,})" for g, n in consumed.items())
            + f"  bulk {self.bulk.acked:,}  faults {faults}  client errors {errors}",
            flush=True,
        )

    # -- the verdict
    def report(self) -> int:
        ledger, journal = self.ledger, self.journal
        violations = self.violations
        print("\n== records", flush=True)
        expected = ledger.expected()
        idem_acked = sum(1 for r in ledger.acked if r >= 0 and r not in ledger.txn_of)
        outcomes = Counter(ledger.txn_outcome.values())
        print(
            f"  idempotent: produced {self.idem.produced:,}, acked {idem_acked:,}, delivery failed "
            f"{sum(1 for r in ledger.failed if r not in ledger.txn_of):,}"
        )
        print(
            f"  transactional: {sum(outcomes.values()):,} transactions ({outcomes['committed']:,} committed, "
            f"{outcomes['aborted']:,} aborted, {outcomes['unknown']:,} unknown outcome), "
            f"{self.txn.produced:,} records produced, {sum(1 for r in expected if r in ledger.txn_of):,} committed"
        )
        transformers = [*self.retired_transformers, self.transformer]
        eos = sum((t.transactions for t in transformers), Counter())
        print(
            f"  transformer (exactly-once, {len(transformers)} in turn): {sum(eos.values()):,} transactions "
            f"({eos['committed']:,} committed, {eos['aborted']:,} aborted, {eos['unknown']:,} unknown), "
            f"{ledger.eos_commits:,} outputs committed for {len(ledger.eos_committed):,} inputs, "
            f"{sum(t.restarts for t in transformers)} restarts from the committed offsets"
        )
        print(f"  bulk: produced {self.bulk.produced:,}, acked {self.bulk.acked:,} ({BULK_RECORD} B)")
        aborted = {r for r, t in ledger.txn_of.items() if ledger.txn_outcome.get(t) == "aborted"}
        for group, led in ledger.groups.items():
            consumed = led.consumed.keys()
            missing = expected - consumed
            lost = {
                r
                for r in missing
                if r in ledger.acked
                and ledger.acked[r][1] < self.low_watermarks.get((ledger.sent[r], ledger.acked[r][0]), 0)
            }
            seen_aborted = consumed & aborted
            never_produced = led.unknown + ledger.unknown(group)
            failed_seen = consumed & ledger.failed.keys()
            print(
                f"  {group} ({GROUPS[group]}): consumed {len(consumed):,} of {len(expected):,} expected "
                f"({led.deliveries:,} deliveries, {led.redelivered:,} redelivered above the committed offset); "
                f"missing {len(missing - lost):,}, lost to retention {len(lost):,}, duplicates in the log "
                f"{len(led.duplicates_in_log):,}, duplicates below the committed offset "
                f"{len(led.duplicates_after_commit):,}, aborted seen {len(seen_aborted):,}, unknown "
                f"{len(never_produced):,}"
            )
            print(
                "    largest lag (offsets behind the last acknowledged, per partition) against what "
                "retention kept at the end: "
                + ", ".join(
                    f"{topic} {led.max_lag.get(topic, 0):,} of {self.retained.get(topic, 0):,}"
                    for topic in CHECKED_TOPICS
                )
            )
            if failed_seen:
                print(f"    ({len(failed_seen):,} records read whose delivery report was an error)")
            for what, items in (
                ("records missing (still in the log)", sorted(missing - lost)),
                ("records lost to retention (the group fell behind)", sorted(lost)),
                ("duplicates in the log", led.duplicates_in_log),
                ("duplicates below the committed offset", led.duplicates_after_commit),
                ("aborted records read with read_committed", sorted(seen_aborted)),
                ("records never produced", never_produced),
            ):
                if items:
                    shown = ", ".join(str(i) for i in list(items)[:5])
                    violations.append(f"{group}: {len(items):,} {what}: {shown}")
        if not expected:
            violations.append("no record was acknowledged")
        print(f"  final state: {'as acknowledged' if not self.final_state else '; '.join(self.final_state)}")
        violations += self.final_state
        print(
            f"  drained in {self.drain_s:.1f} s after the producers stopped; at the end the checked "
            f"partitions retained at least {self.retained_records:,} offsets each (the lag retention allows)"
        )

        print("\n== activity")
        print(f"  admin operations: {dict(sorted(self.admin.operations.items()))}")
        print(
            f"  quota alterations: {dict(self.quotas.alterations)}, read-back mismatches "
            f"{len(self.quotas.mismatches)}"
        )
        violations += [f"quota read back wrong: {m}" for m in self.quotas.mismatches[:5]]
        print(
            f"  faults injected: {sum(self.faults.injected.values())} {dict(sorted(self.faults.injected.items()))}"
        )
        print(
            "  longest time without progress: "
            + ", ".join(f"{name} {gap:.1f} s" for name, (_since, gap) in sorted(self.sampler.stalls.items()))
        )
        churns = sum(1 for e in journal.events if e.kind == "churn")
        print(f"  member churns: {churns}; throttle callbacks: {dict(journal.throttled)}")

        if self.args.verbose:
            print("\n== events")
            for event in journal.events:
                end = "open" if event.end is None else f"{event.end:.1f}"
                print(f"  {event.start:7.1f}-{end:>7} s {event.kind}: {event.what} (fired {event.fired})")
        print("\n== client errors")
        unexplained = journal.explain()
        explained = Counter(e.kind for e in journal.errors if e.explained_by is not None)
        print(f"  {len(journal.errors):,} in all, {len(unexplained):,} unexplained")
        for kind, count in sorted(explained.items()):
            print(f"    explained  {count:5,}  {kind}")
        for kind, count in sorted(Counter(e.kind for e in unexplained).items()):
            print(f"    UNEXPLAINED {count:4,}  {kind}")
        if self.args.verbose:
            for error in journal.errors:
                if error.explained_by is not None:
                    print(
                        f"      {error.t:7.1f} s {error.client}: {error.kind}: {error.text[:160]} <- {error.explained_by}"
                    )
        for error in unexplained[:15]:
            print(f"      {error.t:7.1f} s {error.client}: {error.kind}: {error.text[:200]}")
        if unexplained:
            violations.append(f"{len(unexplained)} client errors not caused by the soak")
        for worker in [
            self.idem,
            self.txn,
            self.bulk,
            self.admin,
            self.quotas,
            self.sampler,
            self.canary,
            *self.members,
            *self.retired,
            *self.retired_transformers,
            self.transformer,
            self.faults,
        ]:
            if worker.crashed:
                violations.append(f"{worker.name} crashed: {worker.crashed}")

        print("\n== broker")
        bad = [
            line for line in self.broker.lines if re.search(r"\b(ERROR|CRITICAL)\b|Traceback|Exception", line)
        ]
        warnings = Counter(
            re.sub(r"\d+", "N", line.split(" - ", 1)[-1])[:120]
            for line in self.broker.lines
            if "WARNING" in line
        )
        latencies = sorted(self.canary.latencies) or [0.0]
        cpu = self.sampler.cpu
        share = (cpu[-1][1] - cpu[0][1]) / (cpu[-1][0] - cpu[0][0]) if len(cpu) > 1 else 0.0
        print(
            f"  CPU {share * 100:.0f} % of a core; canary ApiVersions every {CANARY_S:g} s: "
            f"{len(self.canary.latencies):,} answered, median {statistics.median(latencies) * 1000:.1f} ms, "
            f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms, max {latencies[-1] * 1000:.0f} ms"
        )
        if self.canary.dumps:
            stacks = [
                line
                for line in self.broker.lines
                if line.startswith(("Thread 0x", "Current thread", "  File "))
                or "most recent call first" in line
            ]
            print(f"  broker stacks at the stalls ({self.canary.dumps} dumps):")
            for line in stacks[:150]:
                print(f"    {line}")
        for name, (since, gap) in sorted(self.sampler.stalls.items()):
            if gap > WORKER_STALL_S:
                violations.append(f"{name} made no progress for {gap:.0f} s from {since:.0f} s")
                self.print_stack(name)
        for started, took in self.canary.stalls:
            violations.append(f"the broker answered nothing for {took:.1f} s from {started:.1f} s")
        print(
            f"  exit status {self.broker_code} on SIGTERM; {len(bad)} error lines, "
            f"{sum(warnings.values())} warnings"
        )
        for line, count in warnings.most_common(8):
            print(f"    warning x{count}: {line}")
        for line in bad[:10]:
            print(f"    {line[:300]}")
        if bad:
            violations.append(f"the broker logged {len(bad)} error lines")
        if self.broker_code != 0:
            violations.append(f"the broker exited with {self.broker_code} on SIGTERM")

        print("\n== RSS")
        violations += self.rss_report()

        for client, handler in self.debug_logs.items():
            path = Path(f"soak-debug-{client}.log").resolve()
            path.write_text("\n".join(handler.kept or ()) + "\n")
            print(f"librdkafka debug lines of {client}: {path}")
        print()
        if violations:
            print(f"soak: FAILED ({len(violations)} violations)")
            for violation in violations:
                print(f"  - {violation}")
            return 1
        print("soak: passed")
        return 0

    def print_stack(self, name: str) -> None:
        """Where a stalled worker's thread is now (the client call it is blocked in)."""
        for thread in threading.enumerate():
            frame = sys._current_frames().get(thread.ident or -1)
            if thread.name == name and frame is not None:
                print(f"  {name} is at:")
                for line in traceback.format_stack(frame)[-4:]:
                    print("    " + line.rstrip().replace("\n", "\n    "))

    def rss_report(self) -> list[str]:
        samples = [(t, r) for t, r in self.sampler.rss if t <= self.end]
        ramp = self.sampler.ramp_done
        print(
            f"  {len(samples)} samples every {self.args.interval:g} s; retention deleting from every "
            f"partition after {'(never)' if ramp is None else f'{ramp:.0f} s'}"
        )
        lines, violations = rss_verdict(samples, self.end, ramp)
        for line in lines:
            print(f"  {line}")
        return violations


def rss_verdict(
    samples: list[tuple[float, int]], end: float, ramp: float | None
) -> tuple[list[str], list[str]]:
    """RSS flat under retention, as scripts/bench_memory.py judges it: with W = min(60 s,
    duration/4), shortened (to no less than W/2) to fit twice after the ramp, the median
    of the last W against the reference, the W from when retention deletes everywhere
    (`ramp`, at least W in). Returns (lines, violations)."""
    if ramp is None:
        return [], [
            "retention never began deleting on every partition: raise --minutes or lower --retention-bytes"
        ]
    usual = min(WINDOW_S, end / 4)
    window = min(usual, (end - ramp) / 2)  # both windows after the ramp
    if window < usual / 2:
        return [], [f"retention began too late ({ramp:.0f} s) for a reference window before the last"]
    start = max(window, ramp)
    first = [r for t, r in samples if t < window]
    reference = [r for t, r in samples if start <= t < start + window]
    last = [r for t, r in samples if t >= end - window]
    if not first or not reference or not last or start + window > end - window:
        return [], [f"retention began too late ({ramp:.0f} s) for a reference window before the last"]
    growth = statistics.median(last) / statistics.median(reference) - 1
    lines = [
        f"median RSS: first {window:.0f} s {mib(statistics.median(first))}, reference "
        f"({start:.0f}-{start + window:.0f} s) {mib(statistics.median(reference))}, last {window:.0f} s "
        f"{mib(statistics.median(last))}; max {mib(max(r for _, r in samples))}",
        f"growth last/reference: {growth * 100:+.1f} % (limit +{FLAT_TARGET * 100:g} %)",
    ]
    if growth > FLAT_TARGET:
        return lines, [f"broker RSS grew {growth * 100:+.1f} % under retention"]
    return lines, []


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="soak",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the load runs (default 10)")
    parser.add_argument("--brokers", type=int, default=1, help="brokers in the broker process (default 1)")
    parser.add_argument(
        "--retention-bytes",
        type=int,
        default=2**20,
        help="log.retention.bytes per partition (default 1 MiB)",
    )
    parser.add_argument("--rate", type=float, default=1000.0, help="idempotent records/s (default 1000)")
    parser.add_argument("--record-bytes", type=int, default=200, help="value size of checked records (200)")
    parser.add_argument("--txn-rate", type=float, default=5.0, help="transactions/s (default 5)")
    parser.add_argument("--bulk-rate", type=float, default=1.0, help="bulk MB/s (default 1)")
    parser.add_argument("--fault-interval", type=float, default=3.0, help="seconds between faults (3)")
    parser.add_argument("--no-faults", action="store_true", help="inject no faults")
    parser.add_argument(
        "--bounce",
        type=float,
        default=60.0,
        help=f"with --brokers > 1: seconds between broker bounces (down {BOUNCE_S:g} s; 60; 0: none)",
    )
    parser.add_argument(
        "--churn", type=float, default=30.0, help="seconds between member churns (30; 0: none)"
    )
    parser.add_argument("--admin-interval", type=float, default=0.5, help="seconds between admin calls (0.5)")
    parser.add_argument("--quota-interval", type=float, default=2.0, help="seconds between quota changes (2)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between RSS samples (2)")
    parser.add_argument("--seed", type=int, default=1, help="random choices (default 1)")
    parser.add_argument("--verbose", action="store_true", help="a progress line per sample")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="another broker config (repeatable)",
    )
    parser.add_argument(
        "--debug",
        action="append",
        default=[],
        metavar="CLIENT=CONTEXTS",
        help="librdkafka debug contexts for one client (e.g. soak-admin=admin,broker,protocol);\n"
        f"its last {DEBUG_LINES:,} log lines go to soak-debug-CLIENT.log",
    )
    args = parser.parse_args(argv)
    try:
        args.debug = dict(item.split("=", 1) for item in args.debug)
    except ValueError:
        parser.error("--debug takes CLIENT=CONTEXTS")
    if args.minutes <= 0 or args.brokers < 1 or args.retention_bytes < 1:
        parser.error("--minutes, --brokers and --retention-bytes must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return Soak(args).run()
    except (SoakError, BrokerProcessError, KafkaException) as exc:
        print(f"soak: could not run: {exc}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
