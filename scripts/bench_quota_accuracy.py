#!/usr/bin/env python3
"""How closely producer_byte_rate and consumer_byte_rate hold clients to their quota.

For kafka-python and confluent-kafka, producing and consuming, under 1 MiB/s and
10 MiB/s client-id quotas, each case 60 s: the rate observed after the first 11 s divided
by the quota (target |ratio - 1| <= 0.03), next to the same client's unthrottled rate.

    .venv/bin/python scripts/bench_quota_accuracy.py                  # 8 cases x 60 s (~12 min)
    .venv/bin/python scripts/bench_quota_accuracy.py --quick          # 15 s cases: a smoke run
    .venv/bin/python scripts/bench_quota_accuracy.py --seconds 30 --clients confluent --directions produce
    .venv/bin/python scripts/bench_quota_accuracy.py --timeline       # also per-second rates of every case

or as `scripts/bench_quota_accuracy.py ...` with the virtualenv activated (the shebang is
`/usr/bin/env python3`).

What is counted. Kafka measures a produce request by its size, header and body without
the 4-byte size prefix, and a fetch by 4 + the response body's size (KAFKA-QUOTAS.md
section 3); a throttled fetch is answered empty and its bytes are taken back. The ratio
uses exactly those bytes, as the broker counted them: the broker runs in a child process
(this script with `--broker-child`: a MockCluster on its own loop thread) whose quota
managers' record/unrecord/throttle methods are wrapped to keep running totals per
client-id and quota type, read once a second with the monotonic clock the quota sensors
use. That is the number the quota is compared with, the same way for every client
(kafka-python keeps no cumulative byte counts; librdkafka's include size prefixes,
response headers, other requests and the empty throttled fetches).

Cross-check: confluent-kafka's own statistics (stats_cb) are turned into the same units
(produce: txbytes - 4 x requests; fetch: rxbytes - 8 x responses, i.e. without the size
prefix and the correlation id) and compared with the broker's count over the whole case,
once the client is quiet (producer: queue purged, in-flight requests acknowledged;
consumer: partitions paused) and the broker's count has stopped moving: "wire/broker",
expected within about 0.1 % (other requests, flexible response headers' tag byte and
empty throttled fetch responses make the difference). Within the run the two do not
compare: a muted connection leaves megabytes of sent requests in the socket buffers.

Also shown: the client-visible payload rate, message values acknowledged to the producer
or handed to the consuming application, below the Kafka-counted rate by the record batch
framing (about 1 % with 1 KiB values).

Kafka's quota is bursty, and so is this broker's: the sampled Rate lets a new sensor's
first burst (~10 x quota) through, and each time a sample holding a burst expires, 11
windows later, about as much passes again at once; a client that is always over its
quota gets a burst every 12-14 s and a trickle in between (see Case.cycles and
`--timeline`). A fixed window such as [11 s, 60 s] therefore holds a whole number of
bursts whatever its length, and its ratio depends on the phase (it starts right before
the second burst: ~4 bursts in ~3.8 cycles, biased high by several %). The "cycles"
column is the rate from the start of one burst to the start of a later one, the long-run
rate; longer `--seconds` bring the fixed-window ratio towards it.

How it is made comparable:

- Each case gets a fresh broker process and a client-id of its own, so the quota's
  sensor is new when the clock starts, as for a client connecting to a real cluster;
  the first `--warmup` s (11: the quota's 11 x 1 s windows) are left out of the ratio.
- The reference is the same client, same direction, no quota on its client-id, measured
  in the same run (`--reference-seconds`, from 1 s on). Another client-id has quotas in
  every case, references included, so that the broker records (and counts) the bench
  client's bytes in all runs. When the reference is below the quota the quota cannot
  bind and no ratio is given; within 10 % above it the client may be what limits.
- The broker runs in its own process: client and broker share no GIL (`--in-process`
  runs it on a thread of this process instead, to see what that changes).
- Producers send `--size`-byte values without keys (acks=1, linger 5 ms) to a
  4-partition topic. Consumers assign the 4 partitions of a topic prefilled with
  `--prefill-mib` MiB (by a producer without quota, before the clock) and seek back to
  offset 0 at the end of each partition, so they never run dry.
- Both clients batch and fetch at most 256 KiB per partition: Kafka counts whole
  requests and responses, and with the clients' 1 MiB defaults one fetch of 4
  partitions is 4 s of a 1 MiB/s quota, so a 49 s window would hold about 12 of them
  and its rate would move by 8 % with one more or one less (kafka-python's default
  16 KiB batches would also hold it to 10-15 MiB/s here, right at the 10 MiB/s quota).
- confluent-kafka does not back off on throttle_time_ms (librdkafka keeps sending; the
  broker's mute holds it back); kafka-python 3 pauses the connection itself as well.

Exit status: 0 when every case ran (whatever the ratios, unless `--max-error` is given and
a bindable ratio is further from 1: 3), 1 when a case failed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support (not installed)
from tests.support.clients import ClientLog, client_logger, wait_for_topic  # noqa: E402
from tests.support.process import BrokerProcess  # noqa: E402

MIB = 1024 * 1024
PARTITIONS = 4
TOPIC_PRODUCE = "quota-produce"
TOPIC_CONSUME = "quota-consume"
PRODUCE_RETENTION = 256 * MIB  # per partition: an unthrottled reference must not fill the broker's memory
BYSTANDER = "bench-bystander"  # has the quotas that keep the quota managers recording
CLIENTS = ("confluent", "kafka-python")
DIRECTIONS = ("produce", "consume")
QUOTA_KEY = {"produce": "producer_byte_rate", "consume": "consumer_byte_rate"}
MARGIN = 1.1  # a reference below MARGIN x quota may be client-bound
CHUNK = 256 * 1024  # producer batches and per-partition fetches (see the docstring)


class BenchError(RuntimeError):
    pass


# -- the broker and what it counted ---------------------------------------------------


_TOTALS: dict[tuple[str, str], list[float]] | None = None


def _install_counters() -> dict[tuple[str, str], list[float]]:
    """Wraps the broker's produce and fetch recording and the quota managers'
    unrecord/throttle (in the process that runs the broker, once) and returns the totals
    they keep: (direction, client-id) -> [bytes counted, throttles, throttle ms]. Every
    case uses a client-id of its own. The produce and fetch paths record on their sensors
    directly (no manager call per request), so their records are counted where the
    request's sensors are known: after `record_produce` / `record_fetch`."""
    global _TOTALS
    if _TOTALS is not None:
        return _TOTALS
    from broker import throttling
    from quotas.callback import ClientQuotaType
    from quotas.manager import ClientQuotaManager

    watched = {ClientQuotaType.PRODUCE: "produce", ClientQuotaType.FETCH: "consume"}
    totals: dict[tuple[str, str], list[float]] = {}
    record_produce, record_fetch = throttling.record_produce, throttling.record_fetch
    unrecord, throttle = ClientQuotaManager.unrecord, ClientQuotaManager.throttle

    def direction_entry(direction: str, sensors: Any) -> list[float]:
        key = (direction, sensors.tags.get("client-id", ""))
        found = totals.get(key)
        if found is None:
            found = totals[key] = [0.0, 0, 0]
        return found

    def entry(manager: Any, sensors: Any) -> list[float] | None:
        direction = watched.get(manager.quota_type)
        return None if direction is None else direction_entry(direction, sensors)

    def counting_record_produce(ctx: Any, acks: int) -> None:
        record_produce(ctx, acks)
        if ctx.quota_sensors is not None:  # recorded on the produce quota's sensors
            direction_entry("produce", ctx.quota_sensors)[0] += ctx.request_bytes

    def counting_record_fetch(ctx: Any, response_size: int) -> bool:
        throttled = record_fetch(ctx, response_size)
        if ctx.quota_sensors is not None:  # recorded on the fetch quota's sensors
            direction_entry("consume", ctx.quota_sensors)[0] += response_size
        return throttled

    def counting_unrecord(self: Any, sensors: Any, value: float, now_ms: int) -> None:
        found = entry(self, sensors)
        if found is not None:
            found[0] -= value
        unrecord(self, sensors, value, now_ms)

    def counting_throttle(self: Any, sensors: Any, throttle_ms: int, now_ms: int) -> None:
        found = entry(self, sensors)
        if found is not None:
            found[1] += 1
            found[2] += throttle_ms
        throttle(self, sensors, throttle_ms, now_ms)

    throttling.record_produce = counting_record_produce
    throttling.record_fetch = counting_record_fetch
    ClientQuotaManager.unrecord = counting_unrecord  # type: ignore[method-assign]
    ClientQuotaManager.throttle = counting_throttle  # type: ignore[method-assign]
    _TOTALS = totals
    return totals


class LocalBroker:
    """A MockCluster of this process (the child's, or ours with --in-process)."""

    def __init__(self, overrides: dict[str, str]) -> None:
        from broker.mock_cluster import MockCluster

        self.totals = _install_counters()
        self.cluster = MockCluster(config=overrides)
        self.cluster.__enter__()
        self.bootstrap_servers = self.cluster.bootstrap_servers

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        if op == "topic":
            self.cluster.create_topic(request["name"], request["partitions"], 1, request.get("config"))
        elif op == "alter":
            self.cluster.quotas.alter(request["entity"], set=request["set"])
        elif op == "counters":
            client_id = request["client_id"]

            def read() -> dict[str, Any]:
                now = time.monotonic()
                return {
                    "t": now,
                    **{d: list(self.totals.get((d, client_id), [0.0, 0, 0])) for d in DIRECTIONS},
                }

            return self.cluster.on_loop(read)
        else:
            raise ValueError(f"unknown op {op!r}")
        return {}

    def request(self, **request: Any) -> dict[str, Any]:
        return self.handle(request)

    def close(self) -> None:
        self.cluster.__exit__(None, None, None)


class ChildBroker:
    """This script run as `--broker-child` in its own process, driven over its stdin."""

    def __init__(self, overrides: dict[str, str]) -> None:
        self._process = BrokerProcess(
            *[f"{k}={v}" for k, v in overrides.items()],
            command=[sys.executable, str(Path(__file__).resolve()), "--broker-child"],
            control=True,
        )
        self._lock = threading.Lock()
        started = self._read()
        self.bootstrap_servers = started["bootstrap"]

    def _read(self) -> dict[str, Any]:
        line = self._process.read_line()
        if not line:
            code = self._process.wait(10)
            raise BenchError(f"broker process exited ({code}):\n{self._process.stderr}")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise BenchError(f"broker process: {reply['error']}")
        return reply

    def request(self, **request: Any) -> dict[str, Any]:
        with self._lock:
            self._process.send_line(json.dumps(request))
            return self._read()

    def close(self) -> None:
        self._process.stop(timeout=15)


def broker_child(argv: list[str]) -> int:
    """The child side: a broker, its bootstrap address on stdout, then one JSON reply per
    JSON request line on stdin until {"op": "quit"} or EOF."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    overrides = dict(item.split("=", 1) for item in argv)
    broker = LocalBroker(overrides)
    try:
        print(json.dumps({"bootstrap": broker.bootstrap_servers}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            if request["op"] == "quit":
                break
            try:
                reply = broker.handle(request)
            except Exception as exc:  # reported to the parent, which fails the case
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            print(json.dumps(reply), flush=True)
    finally:
        broker.close()
    return 0


# -- clients ----------------------------------------------------------------------------


def _client_logger(name: str) -> tuple[logging.Logger, ClientLog]:
    """A client's log lines (the first 1000), kept instead of reaching stderr."""
    return client_logger(name, logging.INFO, keep=1000)


class Workload:
    """One client in one direction. `payload` counts value bytes acknowledged (produce)
    or handed to the application (consume); `wire` keeps (monotonic s, Kafka-counted
    bytes) from the client's own statistics where it has cumulative ones."""

    def __init__(self, bootstrap: str, client_id: str, size: int) -> None:
        self.bootstrap = bootstrap
        self.client_id = client_id
        self.size = size
        self.messages = 0
        self.errors: list[str] = []
        self.wire: list[tuple[float, float]] = []

    @property
    def payload(self) -> int:
        return self.messages * self.size

    def prepare(self) -> None:
        """Connects and fetches metadata, before the clock starts."""

    def run(self, deadline: float) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def quiesce(self, settled: Callable[[], bool]) -> bool:
        """Stops all traffic (after `run`), serving the client until `settled()` says the
        broker's count stopped moving, then once more for a fresh statistics report.
        False when the client has no statistics to compare with."""
        return False

    def _stats(self, direction: str) -> Callable[[str], None]:
        """stats_cb turning librdkafka's per-broker counters into Kafka-counted bytes."""

        def on_stats(text: str) -> None:
            stats = json.loads(text)
            total = 0.0
            for broker in stats.get("brokers", {}).values():
                if broker.get("nodeid", -1) < 0:
                    continue  # bootstrap and coordinator handles: metadata only
                if direction == "produce":
                    total += broker["txbytes"] - 4 * broker["tx"]
                else:
                    total += broker["rxbytes"] - 8 * broker["rx"]
            self.wire.append((stats["ts"] / 1e6, total))  # librdkafka's ts: CLOCK_MONOTONIC in us

        return on_stats


class ConfluentProducer(Workload):
    def prepare(self) -> None:
        from confluent_kafka import KafkaError, Producer

        logger, self._log = _client_logger(f"producer-{self.client_id}")

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                self.messages += 1
            elif len(self.errors) < 10 and err.code() != KafkaError._PURGE_QUEUE:  # close() purges
                self.errors.append(str(err))

        self.producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": self.client_id,
                "acks": 1,
                "linger.ms": 5,
                "batch.size": CHUNK,
                "statistics.interval.ms": 1000,
                "stats_cb": self._stats("produce"),
                "error_cb": lambda err: self.errors.append(str(err)),
                "on_delivery": delivered,
                "logger": logger,
            }
        )
        wait_for_topic(self.producer, TOPIC_PRODUCE, time.monotonic() + 30, PARTITIONS)

    def run(self, deadline: float) -> None:
        produce, poll, clock = self.producer.produce, self.producer.poll, time.monotonic
        value = os.urandom(self.size)
        sent = 0
        while True:
            try:
                produce(TOPIC_PRODUCE, value)
            except BufferError:  # queue full: wait for acks (or for the mute to end)
                poll(0.005)
                if clock() >= deadline:
                    break
                continue
            sent += 1
            if sent & 255 == 0:
                poll(0)
                if clock() >= deadline:
                    break

    def quiesce(self, settled: Callable[[], bool]) -> bool:
        self.producer.purge(in_queue=True, in_flight=False)  # what was sent still gets acked
        deadline = time.monotonic() + 60
        while (len(self.producer) or not settled()) and time.monotonic() < deadline:
            self.producer.poll(0.2)
        reports = len(self.wire)
        while len(self.wire) <= reports + 1 and time.monotonic() < deadline:
            self.producer.poll(0.2)
        return not len(self.producer) and time.monotonic() < deadline

    def close(self) -> None:
        self.producer.purge()
        self.producer.flush(1)


class ConfluentConsumer(Workload):
    def prepare(self) -> None:
        from confluent_kafka import Consumer

        logger, self._log = _client_logger(f"consumer-{self.client_id}")
        self.consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": self.client_id,
                "group.id": "bench-quota-accuracy",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                # As in bench_throughput: on a full prefetch queue the client would stop
                # fetching for 1 s; in the reference that, not the client, would set the rate.
                "fetch.queue.backoff.ms": 10,
                # At the end of the data a fetch long-polls (500 ms by default) before the
                # seek back to offset 0 can take effect.
                "fetch.wait.max.ms": 10,
                "max.partition.fetch.bytes": CHUNK,
                "statistics.interval.ms": 1000,
                "stats_cb": self._stats("consume"),
                "error_cb": lambda err: self.errors.append(str(err)),
                "logger": logger,
            }
        )
        wait_for_topic(self.consumer, TOPIC_CONSUME, time.monotonic() + 30, PARTITIONS)

    def run(self, deadline: float) -> None:
        from confluent_kafka import KafkaError, TopicPartition

        consumer = self.consumer
        consumer.assign([TopicPartition(TOPIC_CONSUME, p, 0) for p in range(PARTITIONS)])
        consume, clock = consumer.consume, time.monotonic
        while clock() < deadline:
            batch = consume(10000, 0.05)
            good = len(batch)
            for message in batch:
                error = message.error()
                if error is None:
                    continue
                good -= 1
                if error.code() == KafkaError._PARTITION_EOF:
                    partition = message.partition()
                    assert partition is not None  # an end-of-partition event names its partition
                    consumer.seek(TopicPartition(TOPIC_CONSUME, partition, 0))
                elif len(self.errors) < 10:
                    self.errors.append(str(error))
            self.messages += good

    def quiesce(self, settled: Callable[[], bool]) -> bool:
        self.consumer.pause(self.consumer.assignment())
        deadline = time.monotonic() + 30
        while not settled() and time.monotonic() < deadline:
            self.consumer.consume(10000, 0.2)
        reports = len(self.wire)
        while len(self.wire) <= reports + 1 and time.monotonic() < deadline:
            self.consumer.consume(10000, 0.2)
        return time.monotonic() < deadline

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonProducer(Workload):
    def prepare(self) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            client_id=self.client_id,
            acks=1,
            linger_ms=5,
            # The default 16 KiB batches hold kafka-python to 10-15 MiB/s here, right at
            # the 10 MiB/s quota.
            batch_size=CHUNK,
            max_block_ms=120_000,
        )
        if not self.producer.partitions_for(TOPIC_PRODUCE):
            raise BenchError(f"kafka-python sees no partitions of {TOPIC_PRODUCE}")

    def run(self, deadline: float) -> None:
        send, clock = self.producer.send, time.monotonic
        value = os.urandom(self.size)

        def acked(_metadata: Any) -> None:
            self.messages += 1

        def failed(exc: BaseException) -> None:
            if len(self.errors) < 10:
                self.errors.append(repr(exc))

        sent = 0
        while True:
            send(TOPIC_PRODUCE, value).add_callback(acked).add_errback(failed)
            sent += 1
            if sent & 63 == 0 and clock() >= deadline:
                break

    def close(self) -> None:
        from kafka.errors import KafkaTimeoutError

        try:
            self.producer.close(timeout=0)
        except KafkaTimeoutError:
            # close() flushes before it stops the sender thread, and a throttled backlog
            # does not flush in time: stop the sender (its batches fail), then close.
            self.producer._sender.force_close()
            self.producer._sender.join(10)
            self.producer.close(timeout=0)


class KafkaPythonConsumer(Workload):
    def prepare(self) -> None:
        from kafka import KafkaConsumer, TopicPartition

        self.consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            client_id=self.client_id,
            group_id=None,
            enable_auto_commit=False,
            max_poll_records=10000,
            fetch_max_wait_ms=10,  # see ConfluentConsumer
            max_partition_fetch_bytes=CHUNK,
        )
        self.partitions = [TopicPartition(TOPIC_CONSUME, p) for p in range(PARTITIONS)]
        self.ends = self.consumer.end_offsets(self.partitions)

    def run(self, deadline: float) -> None:
        consumer = self.consumer
        consumer.assign(self.partitions)
        for partition in self.partitions:
            consumer.seek(partition, 0)
        poll, clock, ends = consumer.poll, time.monotonic, self.ends
        while clock() < deadline:
            for partition, records in poll(timeout_ms=50).items():
                self.messages += len(records)
                if records[-1].offset + 1 >= ends[partition]:
                    consumer.seek(partition, 0)

    def close(self) -> None:
        self.consumer.close(autocommit=False)


WORKLOADS: dict[tuple[str, str], type[Workload]] = {
    ("confluent", "produce"): ConfluentProducer,
    ("confluent", "consume"): ConfluentConsumer,
    ("kafka-python", "produce"): KafkaPythonProducer,
    ("kafka-python", "consume"): KafkaPythonConsumer,
}


def prefill(bootstrap: str, size: int, total_bytes: int) -> None:
    """Fills the consume topic (client-id bench-prefill, not quota'd), before the clock."""
    from confluent_kafka import Producer

    errors: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "bench-prefill",
            "acks": 1,
            "linger.ms": 5,
            "logger": _client_logger("prefill")[0],
            "error_cb": lambda err: errors.append(str(err)),
        }
    )
    value = os.urandom(size)
    for i in range(max(PARTITIONS, total_bytes // size)):
        while True:
            try:
                producer.produce(TOPIC_CONSUME, value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120):
        raise BenchError(f"prefill not delivered: {errors}")


# -- one case ---------------------------------------------------------------------------


@dataclass
class Sample:
    at: float  # seconds since the clock started (the mark it was taken for)
    t_client: float  # monotonic s when the client's counters were read
    payload: int
    t_broker: float  # monotonic s on the broker's loop
    counted: float
    throttles: int
    throttle_ms: int


@dataclass
class Case:
    client: str
    direction: str
    quota: float | None  # bytes/s; None: the reference
    seconds: float
    warmup: float
    samples: list[Sample] = field(default_factory=list)
    wire_ratio: float | None = None  # whole case, client quiet: client's count / broker's
    t0: float = 0.0
    errors: list[str] = field(default_factory=list)

    def _window(self) -> tuple[Sample, Sample]:
        first = next(s for s in self.samples if s.at >= self.warmup)
        return first, self.samples[-1]

    def counted_rate(self) -> float:
        a, b = self._window()
        return (b.counted - a.counted) / (b.t_broker - a.t_broker)

    def payload_rate(self) -> float:
        a, b = self._window()
        return (b.payload - a.payload) / (b.t_client - a.t_client)

    def cycles(self) -> tuple[float, int] | None:
        """Kafka-counted rate over whole burst cycles after the warmup, and how many.

        Kafka's sampled Rate (reproduced by the broker) lets a client that is always
        over its quota through in bursts: when a sample that holds a burst expires, 11
        windows after its last event, the measured rate drops and about as much passes
        again at once; the first burst, ~10 x quota in the first second, repeats every
        12-14 s in this way (apache/kafka's TokenBucket javadoc, KIP-599: "a unique and
        large sample can hold the average above the quota until it is discarded"). A
        window of fixed length holds a whole number of bursts, so its rate depends on
        where the bursts fall: [11 s, 60 s] starts right before the second burst and
        holds about 4 bursts in 3.8 cycles. Measured from the start of one burst
        (an interval over 2 x quota after one that was not) to the start of another, the
        rate is the long-run one whatever the phase. None without two burst starts."""
        assert self.quota is not None
        samples = [s for s in self.samples if s.at >= self.warmup]
        starts: list[Sample] = []
        bursting = False
        for before, after in zip(samples, samples[1:], strict=False):
            burst = (after.counted - before.counted) / (after.t_broker - before.t_broker) > 2 * self.quota
            if burst and not bursting:
                starts.append(before)
            bursting = burst
        if len(starts) < 2:
            return None
        first, last = starts[0], starts[-1]
        return (last.counted - first.counted) / (last.t_broker - first.t_broker), len(starts) - 1

    def throttles(self) -> tuple[int, float]:
        """Throttled responses in the window and their mean throttle time (ms)."""
        a, b = self._window()
        count = b.throttles - a.throttles
        return count, (b.throttle_ms - a.throttle_ms) / count if count else 0.0


def run_case(
    args: argparse.Namespace, client: str, direction: str, quota: float | None, seconds: float, warmup: float
) -> Case:
    tag = "ref" if quota is None else f"{quota / MIB:g}MiB"
    client_id = f"bench-{client}-{direction}-{tag}"
    overrides = {"log.retention.bytes": "-1"}
    broker = LocalBroker(overrides) if args.in_process else ChildBroker(overrides)
    case = Case(client, direction, quota, seconds, warmup)
    workload: Workload | None = None
    try:
        broker.request(
            op="topic",
            name=TOPIC_PRODUCE,
            partitions=PARTITIONS,
            config={"retention.bytes": str(PRODUCE_RETENTION)},
        )
        broker.request(op="topic", name=TOPIC_CONSUME, partitions=PARTITIONS, config={})
        broker.request(
            op="alter",
            entity={"client-id": BYSTANDER},
            set={"producer_byte_rate": MIB, "consumer_byte_rate": MIB},
        )
        if direction == "consume":
            prefill(broker.bootstrap_servers, args.size, int(args.prefill_mib * MIB))
        if quota is not None:
            broker.request(op="alter", entity={"client-id": client_id}, set={QUOTA_KEY[direction]: quota})
        workload = WORKLOADS[client, direction](broker.bootstrap_servers, client_id, args.size)
        workload.prepare()
        marks = sorted({float(k) for k in range(1, int(seconds) + 1)} | {warmup, seconds})
        stop = threading.Event()
        sampler_error: list[BaseException] = []

        def sample(at: float) -> None:
            assert workload is not None
            payload, t_client = workload.payload, time.monotonic()
            reply = broker.request(op="counters", client_id=client_id)
            counted, throttles, throttle_ms = reply[direction]
            case.samples.append(
                Sample(at, t_client, payload, reply["t"], counted, int(throttles), int(throttle_ms))
            )

        def sampler() -> None:
            try:
                for at in marks:
                    if stop.wait(max(0.0, case.t0 + at - time.monotonic())):
                        return
                    sample(at)
            except BaseException as exc:  # surfaced by the main thread
                sampler_error.append(exc)

        case.t0 = time.monotonic()
        thread = threading.Thread(target=sampler, name="sampler", daemon=True)
        thread.start()
        try:
            workload.run(case.t0 + seconds)
        finally:
            thread.join(timeout=max(5.0, case.t0 + seconds + 5 - time.monotonic()))
            stop.set()
        if sampler_error:
            raise BenchError(f"sampling failed: {sampler_error[0]!r}")
        if not case.samples or case.samples[-1].at < seconds:
            raise BenchError("the run ended before its last sample")
        case.errors = list(workload.errors)
        case.wire_ratio = wire_check(broker, client_id, direction, workload)
        if case.samples[-1].counted <= 0:
            raise BenchError(f"the broker counted no bytes for {client_id}; client errors: {workload.errors}")
    finally:
        if workload is not None:
            try:
                workload.close()
            except Exception as exc:  # closing a throttled client must not hide the result
                print(f"  (closing {client} {direction}: {exc!r})", file=sys.stderr)
        broker.close()
    return case


def wire_check(
    broker: LocalBroker | ChildBroker, client_id: str, direction: str, workload: Workload
) -> float | None:
    """Whole case: the client's own count in Kafka's units / the broker's, both taken once
    the client is quiet and the broker's count has stopped moving."""
    last: list[float] = []

    def settled() -> bool:
        counted = broker.request(op="counters", client_id=client_id)[direction][0]
        done = bool(last) and counted == last[-1]
        last.append(counted)
        if not done:
            time.sleep(0.5)  # two equal readings at least 0.5 s apart
        return done

    if not workload.quiesce(settled) or not workload.wire:
        return None
    counted = broker.request(op="counters", client_id=client_id)[direction][0]
    if counted != last[-1] or counted <= 0:
        return None  # moved again after the last statistics report
    return workload.wire[-1][1] / counted


# -- output -----------------------------------------------------------------------------


def _mib(rate: float) -> str:
    return f"{rate / MIB:.3f}" if rate < 10 * MIB else f"{rate / MIB:.2f}"


def print_timeline(case: Case) -> None:
    print(f"    timeline {case.client} {case.direction} quota {_quota_text(case.quota)} (per interval):")
    print(f"    {'t s':>6} {'Kafka MiB/s':>12} {'payload MiB/s':>14} {'throttles':>10} {'throttle ms':>12}")
    previous = None
    for sample in case.samples:
        if previous is not None:
            span_b = sample.t_broker - previous.t_broker
            span_c = sample.t_client - previous.t_client
            print(
                f"    {sample.at:>6.1f} {(sample.counted - previous.counted) / span_b / MIB:>12.3f} "
                f"{(sample.payload - previous.payload) / span_c / MIB:>14.3f} "
                f"{sample.throttles - previous.throttles:>10} {sample.throttle_ms - previous.throttle_ms:>12}"
            )
        previous = sample


def _quota_text(quota: float | None) -> str:
    return "none" if quota is None else f"{quota / MIB:g} MiB/s"


HEADER = (
    f"{'client':<13} {'direction':<9} {'quota':>10} {'reference':>10} {'payload':>9} {'Kafka':>9} "
    f"{'ratio':>7} {'cycles':>10} {'wire/broker':>11} {'throttles':>9} {'avg ms':>7}  note"
)


def table_row(case: Case, reference: Case) -> tuple[str, float | None]:
    """The row and its ratio (None when the quota cannot bind)."""
    assert case.quota is not None
    ref_rate = reference.counted_rate()
    rate = case.counted_rate()
    count, avg_ms = case.throttles()
    wire = case.wire_ratio
    cycles = case.cycles()
    cycles_text = "-" if cycles is None else f"{cycles[0] / case.quota:.3f}x{cycles[1]}"
    observed = rate / case.quota
    ratio: float | None = observed
    if ref_rate < case.quota:
        note = f"reference below the quota: not bindable (observed/reference {rate / ref_rate:.3f})"
        ratio_text = cycles_text = "n/a"
        ratio = None
    else:
        ratio_text = f"{observed:.3f}"
        note = "within 3 %" if abs(observed - 1) <= 0.03 else "OFF TARGET"
        if ref_rate < MARGIN * case.quota:
            note += f"; reference < {MARGIN:g} x quota: may be client-bound"
    if case.errors:
        note += f"; client errors: {case.errors[:2]}"
    row = (
        f"{case.client:<13} {case.direction:<9} {_quota_text(case.quota):>10} {_mib(ref_rate):>10} "
        f"{_mib(case.payload_rate()):>9} {_mib(rate):>9} {ratio_text:>7} {cycles_text:>10} "
        f"{'-' if wire is None else f'{wire:.4f}':>11} {count:>9} {avg_ms:>7.0f}  {note}"
    )
    return row, ratio


# -- main -------------------------------------------------------------------------------


def _csv(text: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if allowed is not None:
        for item in items:
            if item not in allowed:
                raise argparse.ArgumentTypeError(f"{item!r} is not one of {', '.join(allowed)}")
    return items


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench_quota_accuracy",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=None, help="length of each quota case (default 60)")
    parser.add_argument(
        "--warmup",
        type=float,
        default=11.0,
        help="seconds left out of the ratio (default 11: the quota windows)",
    )
    parser.add_argument(
        "--reference-seconds",
        type=float,
        default=None,
        help="length of each unthrottled reference (default 10)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 15 s cases, 3 s references, 32 MiB prefill"
    )
    parser.add_argument(
        "--clients", type=lambda t: _csv(t, CLIENTS), default=list(CLIENTS), help="confluent,kafka-python"
    )
    parser.add_argument(
        "--directions", type=lambda t: _csv(t, DIRECTIONS), default=list(DIRECTIONS), help="produce,consume"
    )
    parser.add_argument("--quotas", type=_csv, default=["1", "10"], help="quotas in MiB/s (default 1,10)")
    parser.add_argument("--size", type=int, default=1024, help="bytes per message value (default 1024)")
    parser.add_argument(
        "--prefill-mib",
        type=float,
        default=None,
        help="data in the consumers' topic (default 128, --quick 32)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the broker on a thread of this process (shares the GIL)",
    )
    parser.add_argument("--timeline", action="store_true", help="print each case's per-second rates")
    parser.add_argument(
        "--max-error",
        type=float,
        default=None,
        help="exit 3 when a bindable |ratio - 1| exceeds this (default: report only)",
    )
    args = parser.parse_args(argv)
    if args.seconds is None:
        args.seconds = 15.0 if args.quick else 60.0
    if args.reference_seconds is None:
        args.reference_seconds = 3.0 if args.quick else 10.0
    if args.prefill_mib is None:
        args.prefill_mib = 32.0 if args.quick else 128.0
    try:
        args.quotas = [float(q) * MIB for q in args.quotas]
    except ValueError:
        parser.error("--quotas takes numbers (MiB/s)")
    if min(args.quotas, default=0) <= 0 or args.size < 1 or args.prefill_mib <= 0:
        parser.error("--quotas, --size and --prefill-mib must be positive")
    if not 0 <= args.warmup < args.seconds:
        parser.error("--warmup must be at least 0 and shorter than --seconds")
    if args.reference_seconds <= 0:
        parser.error("--reference-seconds must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--broker-child"]:
        return broker_child(argv[1:])
    args = parse_args(argv)
    logging.getLogger("kafka").setLevel(logging.ERROR)  # kafka-python warns on every throttled response
    import confluent_kafka
    import kafka

    print(
        f"bench_quota_accuracy: {args.seconds:g} s per case, ratio over [{args.warmup:g} s, end], "
        f"references {args.reference_seconds:g} s, {args.size} B values, broker "
        f"{'in this process (shared GIL)' if args.in_process else 'in a child process'}; "
        f"confluent-kafka {confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]}), "
        f"kafka-python {kafka.__version__}; rates in MiB/s",
        flush=True,
    )
    rows: list[str] = []
    ratios: list[float] = []
    try:
        for client in args.clients:
            for direction in args.directions:
                reference = run_case(
                    args,
                    client,
                    direction,
                    None,
                    args.reference_seconds,
                    min(1.0, args.reference_seconds / 4),
                )
                print(
                    f"  {client} {direction} reference: {_mib(reference.counted_rate())} MiB/s Kafka-counted, "
                    f"{_mib(reference.payload_rate())} MiB/s payload"
                    + ("" if reference.wire_ratio is None else f", wire/broker {reference.wire_ratio:.4f}"),
                    flush=True,
                )
                if args.timeline:
                    print_timeline(reference)
                for quota in args.quotas:
                    case = run_case(args, client, direction, quota, args.seconds, args.warmup)
                    row, ratio = table_row(case, reference)
                    print(f"  {row}", flush=True)
                    if args.timeline:
                        print_timeline(case)
                    rows.append(row)
                    if ratio is not None:
                        ratios.append(ratio)
    except (BenchError, OSError) as exc:
        print(f"bench_quota_accuracy: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    print()
    print(HEADER)
    for row in rows:
        print(row)
    print(
        "reference: the same client unthrottled, this run (Kafka-counted); payload: message values;\n"
        f"Kafka: bytes the broker counted against the quota; ratio: Kafka / quota over [{args.warmup:g} s, end]"
        " (target |ratio - 1| <= 0.03);\n"
        "cycles: Kafka / quota over whole burst cycles (x how many), the long-run rate whatever the phase of\n"
        "  the ~13 s bursts of Kafka's sampled quota windows (see Case.cycles); -: fewer than 2 bursts;\n"
        "wire/broker: confluent-kafka's statistics in Kafka's units / the broker's count, whole case;\n"
        "throttles: throttled responses in the window; avg ms: their mean throttle time",
        flush=True,
    )
    if args.seconds - args.warmup < 40:
        print(
            f"note: a {args.seconds - args.warmup:g} s window holds fewer than 3 burst cycles: "
            "its ratios depend mostly on where the bursts fall",
            flush=True,
        )
    if args.max_error is not None and any(abs(r - 1) > args.max_error for r in ratios):
        print(f"bench_quota_accuracy: a ratio is further than {args.max_error} from 1", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
