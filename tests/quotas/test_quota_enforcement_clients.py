"""Client byte-rate quotas (producer_byte_rate, consumer_byte_rate) held by real clients
over TCP: confluent-kafka (librdkafka never backs off by itself; the broker's mute is
what holds it, KAFKA-QUOTAS.md §9) and kafka-python (which also waits client-side).

How rates are measured, and why:

* Windows are 3 x 1 s (quota.window.num=3) instead of 11 x 1 s, so a sensor's window is
  full after 3 s, not 11.
* Kafka's windowed Rate does not settle into a smooth flow by itself. A new sensor lets
  a first burst through (about (samples - 1) x quota). That burst sits in one sample, and
  when the sample expires samples x window later, the window sum drops and a burst as
  large gets through again. Delivery becomes a sawtooth with a period of about
  samples x window, and it does not die out (Apache Kafka's Rate does the same). In
  experiments, 6 s windows of it measured 0.65-1.5 x the quota depending on phase. So
  each test first offers the quota itself for one full window (WARMUP, paced by the
  client), which fills every sample evenly. Pacing starts once the client is connected,
  so no allowance builds up while it connects. After that, a client that sends as fast as
  it can is held to a smooth flow at the quota: every 6 s window measured within 4% of
  it. The rate checked is the least-squares slope of cumulative bytes over MEASURE.
* Reading `metrics()` changes what it reads. Measuring a Rate purges expired samples
  and restarts them at the time of the read (SampledStat.purgeObsoleteSamples; Kafka does
  the same on every metric read). Frequent reads shift the sample boundaries, which can
  start the sawtooth again: with reads every 50 ms, 8 s windows measured 0.83-1.10 x.
  So the broker-side readings are taken after the client-side window (READS, every
  50 ms), and their median is compared with the quota. byte-rate is exactly the quota
  when a throttle ends, and a client that always has data pushes it back above at once,
  so it reads a little over the quota (1.01-1.05 x seen).
* Messages are 8 KiB. Produce requests are at most 64 KiB, fetch responses at most
  32 KiB (one ~25 KiB batch). Kafka counts request header + body for produce and
  4 + response body for fetch. That is under 1% more than the payload the clients report
  (61 B per batch, about 10 B per record, about 100 B per request or response). The
  +-10% tolerance covers timing, not this overhead.
"""

from __future__ import annotations

import bisect
import collections
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from broker import MockCluster
from tests.conftest import FAST

pytestmark = pytest.mark.slow

WINDOWS = {**FAST, "quota.window.num": "3", "quota.window.size.seconds": "1"}
KiB = 1024
MiB = 1024 * KiB
SIZE = 8 * KiB
PAYLOAD = b"q" * SIZE
WARMUP = 3.0  # samples x window, offered at the quota: every sample filled evenly
SETTLE = 1.0  # from paced to flat out
MEASURE = 6.0  # client-side window
READS = 4.0  # broker-side readings afterwards, every 50 ms
TOLERANCE = 0.10
IN_FLIGHT = 32  # unacknowledged messages per partition (256 KiB): flushing ends quickly
PURGED = {KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT}


# -- measurement ---------------------------------------------------------------------
class ByteLog:
    """When each delivered or consumed message was seen, and its payload size."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.sizes: list[int] = []
        self._lock = threading.Lock()

    def add(self, size: int, at: float | None = None) -> None:
        with self._lock:
            self.times.append(time.monotonic() if at is None else at)
            self.sizes.append(size)

    @property
    def total(self) -> int:
        return sum(self.sizes)

    def bytes_between(self, start: float, end: float) -> int:
        with self._lock:
            return sum(s for t, s in zip(self.times, self.sizes, strict=True) if start <= t < end)

    def rate(self, start: float, end: float) -> float:
        """Bytes per second over [start, end): the least-squares slope of cumulative
        bytes sampled every 10 ms, which one message more or less at either end barely
        moves."""
        with self._lock:
            order = sorted(range(len(self.times)), key=self.times.__getitem__)
            times = [self.times[i] for i in order]
            cumulative = list(_running_sum(self.sizes[i] for i in order))
        xs = [start + k / 100 for k in range(int((end - start) * 100))]
        ys = []
        for x in xs:
            i = bisect.bisect_right(times, x)
            ys.append(cumulative[i - 1] if i else 0)
        mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
        covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
        return covariance / sum((x - mean_x) ** 2 for x in xs)


def _running_sum(values: Iterator[int]) -> Iterator[int]:
    total = 0
    for value in values:
        total += value
        yield total


def merged(*logs: ByteLog) -> ByteLog:
    union = ByteLog()
    for log in logs:
        for t, s in zip(log.times, log.sizes, strict=True):
            union.add(s, at=t)
    return union


class MetricSampler:
    """Reads the cluster's quota metrics every 50 ms on its own thread (kafka-python's
    calls block the test's thread)."""

    def __init__(self, cluster: MockCluster, period: float = 0.05) -> None:
        self.cluster = cluster
        self.period = period
        self.readings: list[list[Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metric-sampler", daemon=True)

    def __enter__(self) -> MetricSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.readings.append(self.cluster.metrics())

    def values(
        self, group: str, name: str, client_id: str, broker: int | None = None, user: str = ""
    ) -> list[float]:
        return [
            m.value
            for metrics in self.readings
            for m in metrics
            if (m.group, m.name, m.tags) == (group, name, {"user": user, "client-id": client_id})
            and (broker is None or m.broker == broker)
        ]

    def percentile(
        self, q: float, group: str, name: str, client_id: str, broker: int | None = None, user: str = ""
    ) -> float:
        values = sorted(self.values(group, name, client_id, broker, user))
        assert len(values) >= 20, f"too few {group} {name} readings for {user!r}/{client_id!r}: {values}"
        return values[round(q * (len(values) - 1))]

    def median(
        self, group: str, name: str, client_id: str, broker: int | None = None, user: str = ""
    ) -> float:
        return self.percentile(0.5, group, name, client_id, broker, user)


def assert_near(observed: float, expected: float, what: str, tolerance: float = TOLERANCE) -> None:
    ratio = observed / expected
    print(f"{what}: {ratio:.3f} x {expected / KiB:.0f} KiB/s")  # shown with -s, or on failure
    assert 1 - tolerance <= ratio <= 1 + tolerance, (
        f"{what}: {observed:.0f} B/s is {ratio:.3f} x {expected:.0f}"
    )


# -- producers -----------------------------------------------------------------------
class ConfluentProducer:
    """A confluent-kafka producer writing 8 KiB messages round-robin to its partitions.
    Each partition has at most IN_FLIGHT unacknowledged messages, so a throttled broker
    never starves the others' partitions and flushing is quick."""

    def __init__(
        self,
        cluster: MockCluster,
        client_id: str,
        topic: str,
        partitions: Sequence[int] = (0,),
        **config: Any,
    ) -> None:
        self.topic = topic
        self.partitions = list(partitions)
        self.log = ByteLog()
        self.per_partition = {p: ByteLog() for p in partitions}
        self.errors: list[Any] = []
        self.in_flight = dict.fromkeys(partitions, 0)
        self.phase_sent = dict.fromkeys(partitions, 0)
        self._next = 0
        self.producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "client.id": client_id,
                "linger.ms": 5,
                "batch.size": 64 * KiB,  # small requests: throttled at a fine grain
                # bounds above what IN_FLIGHT allows: never a BufferError
                "queue.buffering.max.kbytes": 4 * IN_FLIGHT * SIZE * len(self.partitions) // KiB,
                "queue.buffering.max.messages": 4 * IN_FLIGHT * len(self.partitions),
                **config,
            }
        )

    def _delivered(self, err: Any, msg: Any) -> None:
        self.in_flight[msg.partition()] -= 1
        if err is None:
            now = time.monotonic()
            self.log.add(len(msg.value()), at=now)
            self.per_partition[msg.partition()].add(len(msg.value()), at=now)
        elif err.code() not in PURGED:
            self.errors.append(err)

    def start_phase(self) -> None:
        self.phase_sent = dict.fromkeys(self.partitions, 0)

    def step(self, allowed: float | None) -> bool:
        """Produces one message to a partition with room (and, when paced, fewer than
        `allowed` bytes sent this phase); False when there is none."""
        self.producer.poll(0)
        for _ in self.partitions:
            partition = self.partitions[self._next]
            self._next = (self._next + 1) % len(self.partitions)
            if self.in_flight[partition] < IN_FLIGHT and (
                allowed is None or self.phase_sent[partition] < allowed
            ):
                self.producer.produce(self.topic, PAYLOAD, partition=partition, on_delivery=self._delivered)
                self.in_flight[partition] += 1
                self.phase_sent[partition] += SIZE
                return True
        return False

    def prime(self) -> None:
        """One message to each partition, acknowledged: connected to every leader."""
        for partition in self.partitions:
            self.producer.produce(self.topic, PAYLOAD, partition=partition, on_delivery=self._delivered)
            self.in_flight[partition] += 1
        assert self.producer.flush(10) == 0

    def wait(self, seconds: float) -> None:
        self.producer.poll(seconds)

    def finish(self, drain: float | None = None) -> None:
        """Delivers what is outstanding within `drain` seconds, or drops it (purge)."""
        if drain is None or self.producer.flush(drain) > 0:
            self.producer.purge()
            self.producer.flush(10)
        assert self.errors == []


class KafkaPythonProducer:
    """kafka-python's KafkaProducer with the same workload. It has no buffer_memory in
    3.x, so unacknowledged sends are bounded here."""

    def __init__(self, cluster: MockCluster, client_id: str, topic: str) -> None:
        self.topic = topic
        self.log = ByteLog()
        self.futures: collections.deque[Any] = collections.deque()
        self.phase_sent = 0
        self.producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, client_id=client_id, linger_ms=5, batch_size=64 * KiB
        )

    def start_phase(self) -> None:
        self.phase_sent = 0

    def step(self, allowed: float | None) -> bool:
        while self.futures and self.futures[0].is_done:
            self.futures.popleft().get()  # raises if the send failed
        if len(self.futures) >= IN_FLIGHT or (allowed is not None and self.phase_sent >= allowed):
            return False
        future = self.producer.send(self.topic, PAYLOAD, partition=0)
        future.add_callback(lambda _metadata: self.log.add(SIZE))
        self.futures.append(future)
        self.phase_sent += SIZE
        return True

    def prime(self) -> None:
        future = self.producer.send(self.topic, PAYLOAD, partition=0)
        future.add_callback(lambda _metadata: self.log.add(SIZE))
        future.get(timeout=10)

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def finish(self) -> None:
        self.producer.close(timeout=15)


AnyProducer = ConfluentProducer | KafkaPythonProducer


def drive(
    producers: Sequence[AnyProducer],
    seconds: float,
    pace: float | Sequence[float] | None = None,
    actions: Sequence[tuple[float, Callable[[], None]]] = (),
) -> float:
    """Keeps the producers writing for `seconds`: as fast as they can, or each partition
    paced at `pace` bytes/s (one pace for all, or one per producer). `actions` are
    (seconds in, call). Returns the start time. Pacing starts once connected, so that
    connecting does not build up an allowance that would go out in one burst."""
    paces = [pace] * len(producers) if pace is None or isinstance(pace, float | int) else list(pace)
    if pace is not None:
        for producer in producers:
            if producer.log.total == 0:
                producer.prime()
    start = time.monotonic()
    for producer in producers:
        producer.start_phase()
    pending = sorted(actions, key=lambda action: action[0])
    while (now := time.monotonic()) < start + seconds:
        while pending and start + pending[0][0] <= now:
            pending.pop(0)[1]()
        stepped = [
            producer.step(None if rate is None else rate * (now - start) + SIZE)
            for producer, rate in zip(producers, paces, strict=True)
        ]
        if not any(stepped):
            producers[0].wait(0.002)
    return start


def measure_producers(
    cluster: MockCluster, producers: Sequence[AnyProducer], pace: float | Sequence[float]
) -> tuple[tuple[float, float], MetricSampler]:
    """Warm-up at `pace`, then flat out. Returns the client-side window and the broker
    readings taken after it."""
    drive(producers, WARMUP, pace=pace)
    start = drive(producers, SETTLE + MEASURE)
    with MetricSampler(cluster) as sampler:
        drive(producers, READS)
    for producer in producers:
        producer.finish()
    return (start + SETTLE, start + SETTLE + MEASURE), sampler


def fill(cluster: MockCluster, topic: str, total: int) -> None:
    """Writes `total` bytes of 8 KiB messages unthrottled, in ~25 KiB batches (three
    messages), so a FETCH-byte fetch returns one whole batch."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "client.id": "filler",
            "linger.ms": 5,
            "batch.size": 32 * KiB,
        }
    )
    errors: list[Any] = []
    for _ in range(total // SIZE):
        while True:
            try:
                producer.produce(
                    topic, PAYLOAD, partition=0, on_delivery=lambda err, _m: err and errors.append(err)
                )
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config=WINDOWS) as running:
        yield running


@pytest.fixture
def cluster3() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config=WINDOWS) as running:
        yield running


def test_confluent_producer_held_to_producer_byte_rate(cluster: MockCluster) -> None:
    quota = 512 * KiB
    cluster.create_topic("rate", 1)
    cluster.quotas.alter({"client-id": "cp"}, set={"producer_byte_rate": quota})
    producer = ConfluentProducer(cluster, "cp", "rate")
    window, sampler = measure_producers(cluster, [producer], pace=quota)
    assert_near(producer.log.rate(*window), quota, "delivered (client side)")
    assert_near(sampler.median("Produce", "byte-rate", "cp"), quota, "broker byte-rate")
    assert sampler.median("Produce", "throttle-time", "cp") > 0


def test_confluent_throttle_cb_reports_broker_throttle_times(cluster: MockCluster) -> None:
    quota = 512 * KiB
    cluster.create_topic("throttled", 1)
    cluster.quotas.alter({"client-id": "cb"}, set={"producer_byte_rate": quota})
    events: list[Any] = []
    producer = ConfluentProducer(cluster, "cb", "throttled", throttle_cb=events.append)
    start = drive([producer], 5.0)
    # All acknowledged: every throttled response has reached the client.
    producer.finish(drain=15)
    elapsed = time.monotonic() - start
    throttled = [e for e in events if e.throttle_time > 0]
    assert len(throttled) >= 10, events
    port = cluster.bootstrap_servers.rsplit(":", 1)[1]
    assert {(e.broker_id, port in e.broker_name) for e in events} == {(0, True)}
    # throttle-time is the broker's average of the throttle times it sent (2 x 30 s samples).
    (metric,) = [
        m.value
        for m in cluster.metrics()
        if (m.group, m.name, m.tags) == ("Produce", "throttle-time", {"user": "", "client-id": "cb"})
    ]
    client_mean_ms = statistics.fmean(e.throttle_time * 1000 for e in throttled)
    print(
        f"{len(throttled)} throttles, client mean {client_mean_ms:.1f} ms, broker throttle-time {metric:.1f} ms"
    )
    assert client_mean_ms == pytest.approx(metric, rel=0.01)
    # One connection, muted for one throttle after another: the mutes fit in the run (the
    # last one may end after it), and a client that always has data is muted most of the
    # time after its first burst.
    total = sum(e.throttle_time for e in throttled)
    longest = max(e.throttle_time for e in throttled)
    assert 0.5 * (elapsed - WARMUP) <= total <= elapsed + longest, (total, elapsed, longest)


def test_kafka_python_producer_held_to_producer_byte_rate(cluster: MockCluster) -> None:
    quota = 512 * KiB
    cluster.create_topic("rate", 1)
    cluster.quotas.alter({"client-id": "kp"}, set={"producer_byte_rate": quota})
    producer = KafkaPythonProducer(cluster, "kp", "rate")
    window, sampler = measure_producers(cluster, [producer], pace=quota)
    assert_near(producer.log.rate(*window), quota, "delivered (client side)")
    assert_near(sampler.median("Produce", "byte-rate", "kp"), quota, "broker byte-rate")


# -- consumers -----------------------------------------------------------------------
CONSUMER_QUOTA = 512 * KiB
# More than the consumer reads in a test at the quota.
FILL = 10 * MiB
# A consumer can never get ahead of its quota: a fetch that would go over gets nothing,
# and its bytes are taken back. Each fetch has to wait until its whole size fits under
# the bound, so the window sum swings between bound - F and bound, and the flow runs
# about F / (2 x quota x window) below the quota. With the same window, 128 KiB
# fetches measured 0.91 x and 64 KiB fetches 0.945 x. Fetches of 32 KiB keep the gap at
# a few percent.
FETCH = 32 * KiB


class ConfluentReader:
    def __init__(self, cluster: MockCluster, client_id: str, topic: str) -> None:
        self.log = ByteLog()
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "client.id": client_id,
                "group.id": "quota-readers",
                "enable.auto.commit": False,
                # Small responses: see FETCH.
                "fetch.max.bytes": FETCH,
                "max.partition.fetch.bytes": FETCH,
                "message.max.bytes": FETCH,  # librdkafka wants fetch.max.bytes >= this
                # Prefetch little, and look again soon when the local queue is full (not
                # after the default 1 s), so that a paced application paces the fetches.
                "queued.max.messages.kbytes": 2 * FETCH // KiB,
                "fetch.queue.backoff.ms": 10,
            }
        )
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])

    def poll(self, timeout: float) -> None:
        msg = self.consumer.poll(timeout)
        if msg is not None:
            assert msg.error() is None, msg.error()
            self.log.add(len(msg.value()))

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonReader:
    def __init__(self, cluster: MockCluster, client_id: str, topic: str) -> None:
        self.log = ByteLog()
        self.consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            client_id=client_id,
            group_id=None,
            enable_auto_commit=False,
            fetch_max_bytes=FETCH,
            max_partition_fetch_bytes=FETCH,
        )
        partition = KafkaTopicPartition(topic, 0)
        self.consumer.assign([partition])
        self.consumer.seek_to_beginning(partition)

    def poll(self, timeout: float) -> None:
        # kafka-python fetches a partition again only once its records are consumed.
        for records in self.consumer.poll(timeout_ms=int(timeout * 1000)).values():
            now = time.monotonic()
            for record in records:
                self.log.add(len(record.value), at=now)

    def close(self) -> None:
        self.consumer.close()


def read(reader: ConfluentReader | KafkaPythonReader, seconds: float, pace: float | None = None) -> float:
    """Consumes for `seconds`, as fast as possible, or paced at `pace` bytes/s from the
    first message on (so that connecting does not build up an allowance taken in one go)."""
    if pace is not None:
        deadline = time.monotonic() + 15
        while reader.log.total == 0:
            assert time.monotonic() < deadline, "no message within 15 s"
            reader.poll(0.05)
    start = time.monotonic()
    base = reader.log.total
    while (now := time.monotonic()) < start + seconds:
        if pace is None or reader.log.total - base < pace * (now - start) + SIZE:
            reader.poll(0.05)
        else:
            time.sleep(0.002)
    return start


@pytest.mark.parametrize(
    "reader_class", [ConfluentReader, KafkaPythonReader], ids=["confluent", "kafka-python"]
)
def test_consumer_held_to_consumer_byte_rate(cluster: MockCluster, reader_class: type) -> None:
    cluster.create_topic("prefilled", 1)
    fill(cluster, "prefilled", FILL)
    cluster.quotas.alter({"client-id": "reader"}, set={"consumer_byte_rate": CONSUMER_QUOTA})
    reader = reader_class(cluster, "reader", "prefilled")
    read(reader, WARMUP, pace=CONSUMER_QUOTA)
    start = read(reader, SETTLE + MEASURE)
    with MetricSampler(cluster) as sampler:
        read(reader, READS)
    reader.close()
    assert reader.log.total < FILL, "read to the end: the topic is too small to measure the rate"
    # A little under the quota by construction (see FETCH): 0.956-0.961 x seen.
    assert_near(
        reader.log.rate(start + SETTLE, start + SETTLE + MEASURE), CONSUMER_QUOTA, "consumed (client side)"
    )
    assert_near(sampler.median("Fetch", "byte-rate", "reader"), CONSUMER_QUOTA, "broker byte-rate")


# -- changing quotas -----------------------------------------------------------------
def test_removing_the_quota_restores_full_speed(cluster: MockCluster) -> None:
    quota = 256 * KiB
    cluster.create_topic("freed", 1)
    cluster.quotas.alter({"client-id": "rm"}, set={"producer_byte_rate": quota})
    producer = ConfluentProducer(cluster, "rm", "freed")

    def remove() -> None:
        cluster.quotas.alter({"client-id": "rm"}, remove=["producer_byte_rate"])

    drive([producer], WARMUP, pace=quota)
    start = drive([producer], 6.0, actions=[(3.0, remove)])
    producer.finish()
    assert_near(producer.log.rate(start + 1.0, start + 3.0), quota, "before removing (2 s)", tolerance=0.25)
    # The throttle in progress at the removal (well under 1 s here) is still served.
    after = producer.log.bytes_between(start + 4.5, start + 6.0) / 1.5
    print(f"after removing the quota: {after / quota:.0f} x")
    assert after > 5 * quota, f"{after / quota:.1f} x the removed quota"


def test_raised_quota_applies_at_once_and_the_rate_follows(cluster: MockCluster) -> None:
    low, high = 256 * KiB, 1 * MiB
    cluster.create_topic("raised", 1)
    cluster.quotas.alter({"client-id": "up"}, set={"producer_byte_rate": low})
    producer = ConfluentProducer(cluster, "up", "raised")
    log = producer.log
    drive([producer], WARMUP, pace=low)
    start = drive([producer], 2.0)
    assert_near(log.rate(start + 0.5, start + 2.0), low, "before raising (1.5 s)", tolerance=0.25)
    cluster.quotas.alter({"client-id": "up"}, set={"producer_byte_rate": high})
    # The window is full at the old quota, which would hold the producer there. Offering
    # the new quota (which also seeds the window evenly again) gets it through at once.
    raised = drive([producer], WARMUP, pace=high)
    assert_near(log.rate(raised + 0.5, raised + WARMUP), high, "offered at the new quota", tolerance=0.25)
    start = drive([producer], SETTLE + MEASURE)
    with MetricSampler(cluster) as sampler:
        drive([producer], READS)
    producer.finish()
    assert_near(
        log.rate(start + SETTLE, start + SETTLE + MEASURE), high, "flat out after raising (client side)"
    )
    assert_near(sampler.median("Produce", "byte-rate", "up"), high, "broker byte-rate after raising")


# -- who shares an allowance ---------------------------------------------------------
def test_producers_with_one_client_id_share_its_quota(cluster: MockCluster) -> None:
    quota = 512 * KiB
    cluster.create_topic("shared", 2)
    cluster.quotas.alter({"client-id": "twin"}, set={"producer_byte_rate": quota})
    first = ConfluentProducer(cluster, "twin", "shared", partitions=(0,))
    second = ConfluentProducer(cluster, "twin", "shared", partitions=(1,))
    window, sampler = measure_producers(cluster, [first, second], pace=quota / 2)
    assert first.log.rate(*window) > 0 and second.log.rate(*window) > 0
    assert_near(merged(first.log, second.log).rate(*window), quota, "both producers together (client side)")
    assert_near(sampler.median("Produce", "byte-rate", "twin"), quota, "broker byte-rate")
    assert {
        m.tags["client-id"]
        for metrics in sampler.readings
        for m in metrics
        if m.group == "Produce" and m.tags
    } == {"twin"}


def test_default_client_id_quota_is_an_allowance_per_client_id(cluster: MockCluster) -> None:
    quota = 384 * KiB
    cluster.create_topic("own", 2)
    cluster.quotas.alter({"client-id": None}, set={"producer_byte_rate": quota})
    alpha = ConfluentProducer(cluster, "alpha", "own", partitions=(0,))
    beta = ConfluentProducer(cluster, "beta", "own", partitions=(1,))
    window, sampler = measure_producers(cluster, [alpha, beta], pace=quota)
    for producer, client_id in ((alpha, "alpha"), (beta, "beta")):
        assert_near(producer.log.rate(*window), quota, f"{client_id} delivered (client side)")
        assert_near(sampler.median("Produce", "byte-rate", client_id), quota, f"{client_id} broker byte-rate")


def test_authenticated_users_are_each_held_to_their_own_quota(tmp_path: Path) -> None:
    """alice and bob log in with SCRAM under the same client id; each user's quota
    (KIP-55: the quota user is the SASL principal's name) holds each to its own rate."""
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"alice": "alice-secret", "bob": "bob-secret"}))
    config = {**WINDOWS, "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.users.file": str(users)}
    quotas = {"alice": 256 * KiB, "bob": 640 * KiB}
    with MockCluster(config=config) as cluster:
        cluster.create_topic("users", 2)
        for user, quota in quotas.items():
            cluster.quotas.alter({"user": user}, set={"producer_byte_rate": quota})
        producers = [
            ConfluentProducer(
                cluster,
                "shared",
                "users",
                partitions=(partition,),
                **{
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "SCRAM-SHA-256",
                    "sasl.username": user,
                    "sasl.password": f"{user}-secret",
                },
            )
            for partition, user in enumerate(quotas)
        ]
        window, sampler = measure_producers(cluster, producers, pace=list(quotas.values()))
    for producer, (user, quota) in zip(producers, quotas.items(), strict=True):
        assert_near(producer.log.rate(*window), quota, f"{user} delivered (client side)")
        assert_near(sampler.median("Produce", "byte-rate", "", user=user), quota, f"{user} broker byte-rate")


def sasl(user: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


def test_quota_group_members_share_the_group_quota(tmp_path: Path) -> None:
    """QuotaGroupsCallback: alice and bob (different principals, different client ids)
    share analytics' allowance; carol, outside the group and without a quota, is not
    held back at all."""
    users = tmp_path / "users.json"
    users.write_text(json.dumps({u: f"{u}-secret" for u in ("alice", "bob", "carol")}))
    quota = 512 * KiB
    config = {
        **WINDOWS,
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.users.file": str(users),
        "client.quota.callback.class": "quotas.callbacks.quota_groups.QuotaGroupsCallback",
        "quota.groups": "analytics=User:alice,User:bob",
        "quota.group.analytics.producer_byte_rate": str(quota),
    }
    with MockCluster(config=config) as cluster:
        cluster.create_topic("grouped", 3)
        carol_throttles: list[Any] = []
        alice, bob, carol = (
            ConfluentProducer(cluster, f"{user}-app", "grouped", partitions=(i,), **sasl(user), **extra)
            for i, (user, extra) in enumerate(
                [("alice", {}), ("bob", {}), ("carol", {"throttle_cb": carol_throttles.append})]
            )
        )
        window, sampler = measure_producers(
            cluster, [alice, bob, carol], pace=[quota / 2, quota / 2, 4 * quota]
        )
    assert alice.log.rate(*window) > 0 and bob.log.rate(*window) > 0
    assert_near(merged(alice.log, bob.log).rate(*window), quota, "alice and bob together (client side)")
    assert_near(
        sampler.median("Produce", "byte-rate", "", user="analytics"), quota, "analytics broker byte-rate"
    )
    assert not [e for e in carol_throttles if e.throttle_time > 0]
    assert carol.log.rate(*window) > 2 * quota, "carol was held back"


def test_partition_proportional_quota_adds_up_to_the_total_over_brokers() -> None:
    """PartitionProportionalCallback on 3 brokers, one partition led by each: each broker
    holds a third of the quota, and a client producing to every partition gets the total."""
    total = 768 * KiB
    with MockCluster(
        brokers=3,
        config={
            **WINDOWS,
            "client.quota.callback.class": "quotas.callbacks.partition_proportional.PartitionProportionalCallback",
        },
    ) as cluster:
        cluster.create_topic("proportional", 3)
        leaders = {p.leader for p in cluster.state.topics["proportional"].partitions}
        assert len(leaders) == 3
        cluster.quotas.alter(
            {"user": None}, set={"producer_byte_rate": total}
        )  # every user, ANONYMOUS included
        producer = ConfluentProducer(cluster, "spread", "proportional", partitions=(0, 1, 2))
        window, sampler = measure_producers(cluster, [producer], pace=total / 3)
    assert_near(producer.log.rate(*window), total, "delivered over all brokers (client side)")
    for broker in leaders:
        assert_near(
            sampler.median("Produce", "byte-rate", "", broker=broker, user="ANONYMOUS"),
            total / 3,
            f"broker {broker} byte-rate",
        )


# -- several brokers -----------------------------------------------------------------
def test_quota_is_enforced_per_broker(cluster3: MockCluster) -> None:
    quota = 384 * KiB
    topic = cluster3.create_topic("spread", 3)
    leaders = [p.leader for p in topic.partitions]
    assert sorted(leaders) == [b.node_id for b in cluster3.brokers]
    cluster3.quotas.alter({"client-id": "wide"}, set={"producer_byte_rate": quota})
    producer = ConfluentProducer(cluster3, "wide", "spread", partitions=(0, 1, 2))
    window, sampler = measure_producers(cluster3, [producer], pace=quota)
    # Each broker measures only what it receives: three leaders, three allowances.
    assert_near(producer.log.rate(*window), 3 * quota, "delivered to all brokers (client side)")
    for partition, leader in enumerate(leaders):
        assert_near(
            producer.per_partition[partition].rate(*window), quota, f"partition {partition} (broker {leader})"
        )
        assert_near(
            sampler.median("Produce", "byte-rate", "wide", broker=leader), quota, f"broker {leader} byte-rate"
        )
