"""Graceful shutdown: SIGTERM to `python -m broker` under load.

Producers and a consumer group (confluent-kafka), raw-socket clients asking one request
after the other, and a kafka-python client altering client quotas all run against a
child with the metrics sink and a state dir on; then SIGTERM. The child must:

- exit 0 (the time it took is printed; the issue's target is 5 s, asserted here only
  as "it exited" within a generous bound, as the machine may be busy);
- answer each request it took in or close its connection (no client is left waiting);
- have written exactly one Parquet row per request answered: counted on the client side
  where a client can count (the raw clients' correlation ids, kafka-python's acknowledged
  AlterClientQuotas requests, the records of the producers' acknowledged messages), and
  for every client against the broker's own recording (`--record`), flushed on the same
  way out;
- have left the state dir closed (its SQLite write-ahead logs checkpointed away) and
  holding every acknowledged quota alteration.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from broker import MockCluster
from tests.support.process import BrokerProcess
from tests.support.wire import decode_response, encode_request, quota_alteration, read_frame

TOPIC = "load"
EXIT_TIMEOUT_S = 60.0  # generous: the target is 5 s, the machine may be busy


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def read_rows(directory: Path) -> list[dict[str, Any]]:
    """Every row of every visible Parquet file (hidden names are writes in progress)."""
    rows: list[dict[str, Any]] = []
    for folder, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("_")]
        for name in files:
            if not name.startswith("."):
                rows.extend(pq.read_table(Path(folder, name)).to_pylist())
    return rows


class RawLoad(threading.Thread):
    """Metadata and ApiVersions one after the other on one connection, until the broker
    answers no more: `answered` holds the correlation ids whose answer arrived."""

    def __init__(self, address: tuple[str, int], client_id: str) -> None:
        super().__init__(name=client_id, daemon=True)
        self.client_id = client_id
        self.sock = socket.create_connection(address, timeout=30)
        self.answered: list[int] = []
        self.sent = 0
        self.ended: BaseException | None = None

    def run(self) -> None:
        try:
            while True:
                correlation_id = self.sent
                request = MetadataRequest[12](topics=[]) if correlation_id % 2 else ApiVersionsRequest[3]()
                self.sock.sendall(encode_request(request, correlation_id, self.client_id))
                self.sent += 1
                response = decode_response(request, read_frame(self.sock))
                assert response.header.correlation_id == correlation_id
                self.answered.append(correlation_id)
        except (OSError, ConnectionError) as exc:  # closed by the broker: what shutdown does
            self.ended = exc
        finally:
            self.sock.close()


class LibrdkafkaLoad(threading.Thread):
    """One confluent-kafka client, polled until `done` (so delivery reports of every
    answer it got are counted)."""

    def __init__(self, client_id: str) -> None:
        super().__init__(name=client_id, daemon=True)
        self.client_id = client_id
        self.done = threading.Event()
        self.config = {"client.id": client_id, "log_level": 0}


class ProducerLoad(LibrdkafkaLoad):
    def __init__(self, bootstrap: str, client_id: str) -> None:
        super().__init__(client_id)
        self.delivered = 0
        self.producer = Producer({**self.config, "bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 2})

    def _delivered(self, error: Any, _message: Any) -> None:
        if error is None:
            self.delivered += 1

    def run(self) -> None:
        i = 0
        while not self.done.is_set():
            try:
                self.producer.produce(TOPIC, b"value-%d" % i, on_delivery=self._delivered)
                i += 1
            except BufferError:  # the broker is gone (or slow): wait for the queue
                self.producer.poll(0.05)
            self.producer.poll(0)
            if i % 50 == 0:
                time.sleep(0.005)  # load, not a flood: the consumers and the rest get their turn


class ConsumerLoad(LibrdkafkaLoad):
    def __init__(self, bootstrap: str, client_id: str) -> None:
        super().__init__(client_id)
        self.consumed = 0
        self.consumer = Consumer(
            {
                **self.config,
                "bootstrap.servers": bootstrap,
                "group.id": "shutdown-group",
                "auto.offset.reset": "earliest",
            }
        )
        self.consumer.subscribe([TOPIC])

    def run(self) -> None:
        while not self.done.is_set():
            try:
                message = self.consumer.poll(0.05)
            except KafkaException:
                continue
            if message is not None and message.error() is None:
                self.consumed += 1


class QuotaLoad(threading.Thread):
    """kafka-python altering one new user's quota per request, one after the other."""

    def __init__(self, bootstrap: str, client_id: str) -> None:
        super().__init__(name=client_id, daemon=True)
        self.client_id = client_id
        self.admin = KafkaAdminClient(
            bootstrap_servers=bootstrap, client_id=client_id, request_timeout_ms=30000
        )
        self.acked: list[int] = []

    def run(self) -> None:
        i = 0
        try:
            while True:
                entry = quota_alteration([("user", f"shutdown-{i}")], {"producer_byte_rate": 1000.0 + i})
                request = AlterClientQuotasRequest(entries=[entry], validate_only=False)
                response = self.admin._manager.run(self.admin._manager.send, request)
                assert [e.error_code for e in response.entries] == [0]
                self.acked.append(i)
                i += 1
        except Exception:  # the broker went away
            pass
        finally:
            self.admin.close()


@pytest.fixture
def child(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(
        "--port",
        "0",
        "--metrics-dir",
        str(tmp_path / "metrics"),
        "--state-dir",
        str(tmp_path / "state"),
        "--override",
        "group.initial.rebalance.delay.ms=0",
        "--override",
        "metrics.roll.ms=500",
        "--record",
        str(tmp_path / "recording.jsonl"),
    )
    yield process
    process.kill()


def test_sigterm_under_load_answers_flushes_and_exits_zero(tmp_path: Path, child: BrokerProcess) -> None:
    bootstrap = child.bootstrap_servers()
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(30)
    producers = [ProducerLoad(bootstrap, f"producer-{i}") for i in range(2)]
    consumers = [ConsumerLoad(bootstrap, f"consumer-{i}") for i in range(2)]
    raw = [RawLoad(child.address(), f"raw-{i}") for i in range(2)]
    quotas = QuotaLoad(bootstrap, "quotas")
    librdkafka: list[LibrdkafkaLoad] = [*producers, *consumers]
    for thread in [*producers, *consumers, *raw, quotas]:
        thread.start()
    wait_for(lambda: all(p.delivered >= 500 for p in producers), "producers to deliver")
    wait_for(lambda: sum(c.consumed for c in consumers) >= 500, "consumers to consume")
    wait_for(lambda: all(len(r.answered) >= 50 for r in raw) and len(quotas.acked) >= 20, "the other load")

    started = time.monotonic()
    child.proc.send_signal(signal.SIGTERM)
    code = child.wait(timeout=EXIT_TIMEOUT_S)
    took = time.monotonic() - started
    assert code == 0, child.stderr
    stopped = child.wait_line(r"stopped in (\d+) ms").group(1)
    print(f"\nSIGTERM under load: exit 0 after {took:.2f} s (the cluster's stop: {stopped} ms; target 5 s)")
    logged = [line for line in child.lines if " ERROR " in line or "Traceback" in line]
    assert logged == [], child.stderr

    # Every request was answered or its connection closed: no client is left waiting.
    for thread in [*raw, quotas]:
        thread.join(30)
        assert not thread.is_alive(), f"{thread.name} still waiting for an answer"
    for thread in raw:
        assert thread.ended is not None
        assert thread.sent - len(thread.answered) <= 1  # at most the one in flight, unanswered
    # Delivery reports of the answers the producers got are in after a few polls.
    delivered = [-1] * len(producers)
    while delivered != [p.delivered for p in producers]:
        delivered = [p.delivered for p in producers]
        time.sleep(0.5)
    for load in librdkafka:
        load.done.set()

    rows = read_rows(tmp_path / "metrics")
    recorded = [json.loads(line) for line in (tmp_path / "recording.jsonl").read_text().splitlines()]
    per_client = Counter(row["client_id"] for row in rows)
    print(f"rows {len(rows)}, recorded {len(recorded)}; per client {dict(sorted(per_client.items()))}")
    # One row per request answered, counted by the clients that can count them ...
    for thread in raw:
        keys = Counter(row["correlation_id"] for row in rows if row["client_id"] == thread.client_id)
        assert keys == Counter(thread.answered), thread.client_id
    quota_rows = [r for r in rows if r["client_id"] == "quotas" and r["api_name"] == "AlterClientQuotas"]
    assert len(quota_rows) == len(quotas.acked)
    for producer in producers:  # every acknowledged message came in an answered Produce with a row
        produced = [r for r in rows if r["client_id"] == producer.client_id and r["api_name"] == "Produce"]
        assert sum(r["record_count"] for r in produced if r["error_code"] == 0) == producer.delivered
    for consumer in consumers:  # every consumed message came in an answered Fetch with a row
        fetched = [r for r in rows if r["client_id"] == consumer.client_id and r["api_name"] == "Fetch"]
        assert sum(r["record_count"] for r in fetched) >= consumer.consumed
    # ... and, for every client, exactly the requests the broker's recording saw answered.
    assert Counter((r["connection_id"], r["correlation_id"]) for r in rows) == Counter(
        (r["connection"], r["correlation_id"]) for r in recorded
    )

    # State: closed cleanly (no write-ahead log left to replay) and every acknowledged change kept.
    state = tmp_path / "state"
    assert sorted(p.name for p in state.iterdir() if p.name.endswith(("-wal", "-shm"))) == []
    with MockCluster(config={"state.dir": str(state)}) as reopened:
        stored = {dict(entity)["user"] for entity in reopened.quotas.describe()}
    assert {f"shutdown-{i}" for i in quotas.acked} <= stored

    for load in librdkafka:
        load.join(30)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_start_up_is_kept_and_exits_zero(tmp_path: Path, sig: signal.Signals) -> None:
    """Before the broker is imported and its state dir opened: not the default sudden
    death but a start and a clean stop."""
    state = tmp_path / "state"
    process = BrokerProcess("--port", "0", "--state-dir", str(state), "--log-level", "debug")
    try:
        process.wait_line(r"broker: starting$")
        process.proc.send_signal(sig)
        assert process.wait(timeout=EXIT_TIMEOUT_S) == 0, process.stderr
        assert process.wait_line(r"stopped in \d+ ms")
        assert "Traceback" not in process.stderr
    finally:
        process.kill()
    assert sorted(p.name for p in state.iterdir() if p.name.endswith(("-wal", "-shm"))) == []
