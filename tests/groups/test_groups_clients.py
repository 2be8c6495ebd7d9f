"""Real clients against the group coordinator: aiokafka, kafka-python and librdkafka.

Consumers in one group split a 6-partition topic, the survivor takes over every
partition when the other leaves, and a new consumer resumes from committed offsets.
Clusters have three brokers so that FindCoordinator routing and NOT_COORDINATOR are
exercised too. Heartbeats are fast (100 ms) so rebalances finish quickly.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

from broker import MockCluster

CONFIG = {"group.initial.rebalance.delay.ms": "0"}
FAST = {"heartbeat_interval_ms": 100, "session_timeout_ms": 6000, "auto_offset_reset": "earliest"}
TIMEOUT = 30.0


async def eventually(check: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def eventually_sync(check: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def partitions(consumer: Any) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


# -- aiokafka --------------------------------------------------------------------------
async def test_aiokafka_consumers_split_partitions_and_survivor_takes_all() -> None:
    async with MockCluster(brokers=3, config=CONFIG) as cluster:
        cluster.create_topic("six", 6)
        settings: dict[str, Any] = dict(bootstrap_servers=cluster.bootstrap_servers, group_id="split", **FAST)
        a = AIOKafkaConsumer("six", **settings)
        b = AIOKafkaConsumer("six", **settings)
        await a.start()
        try:
            await eventually(lambda: len(a.assignment()) == 6, "the first consumer to own everything")
            await b.start()
            try:
                await eventually(
                    lambda: len(a.assignment()) == 3 and len(b.assignment()) == 3,
                    "a 3/3 split",
                )
                assert partitions(a) | partitions(b) == set(range(6))
                described = cluster.groups.describe_group("split")
                assert described is not None and described.state == "Stable" and len(described.members) == 2
            finally:
                await b.stop()  # sends LeaveGroup
            await eventually(lambda: len(a.assignment()) == 6, "the survivor to own all 6 partitions")
        finally:
            await a.stop()
        described = cluster.groups.describe_group("split")
        assert described is not None and described.state == "Empty"


async def test_aiokafka_new_consumer_resumes_from_committed_offsets() -> None:
    async with MockCluster(brokers=3, config=CONFIG) as cluster:
        cluster.create_topic("resume", 6)
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
        await producer.start()
        try:
            for i in range(60):
                await producer.send_and_wait("resume", b"first-%d" % i, partition=i % 6)
            settings: dict[str, Any] = dict(
                bootstrap_servers=cluster.bootstrap_servers,
                group_id="resumers",
                enable_auto_commit=False,
                **FAST,
            )
            first = AIOKafkaConsumer("resume", **settings)
            await first.start()
            try:
                seen = await consume(first, 60)
                assert len(seen) == 60
                await first.commit()
                for index in range(6):
                    assert await first.committed(TopicPartition("resume", index)) == 10
            finally:
                await first.stop()

            for i in range(12):
                await producer.send_and_wait("resume", b"second-%d" % i, partition=i % 6)
            second = AIOKafkaConsumer("resume", **settings)
            await second.start()
            try:
                values = await consume(second, 12)
            finally:
                await second.stop()
            assert sorted(values) == sorted(b"second-%d" % i for i in range(12))
        finally:
            await producer.stop()


async def consume(consumer: AIOKafkaConsumer, count: int) -> list[bytes]:
    values: list[bytes] = []

    async def fill() -> None:
        while len(values) < count:
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                values.extend(record.value for record in records)

    await asyncio.wait_for(fill(), TIMEOUT)
    await asyncio.sleep(0.3)  # nothing beyond `count` arrives
    batches = await consumer.getmany(timeout_ms=100)
    values.extend(record.value for records in batches.values() for record in records)
    return values


# -- kafka-python (synchronous; one thread per consumer) ----------------------------------
class PollingConsumer(threading.Thread):
    """Owns a KafkaConsumer in its own thread (the client is not thread-safe) and polls it."""

    def __init__(self, topic: str, **config: Any) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.config = config
        self.assigned: set[int] = set()
        self.values: list[bytes] = []
        self.commit_requested = threading.Event()
        self.committed = threading.Event()
        self.stop_requested = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            consumer = KafkaConsumer(self.topic, **self.config)
            try:
                while not self.stop_requested.is_set():
                    for records in consumer.poll(timeout_ms=100).values():
                        self.values.extend(record.value for record in records)
                    self.assigned = partitions(consumer)
                    if self.commit_requested.is_set() and not self.committed.is_set():
                        consumer.commit()
                        self.committed.set()
            finally:
                consumer.close()  # sends LeaveGroup
        except BaseException as exc:  # surfaced by stop()
            self.error = exc

    def stop(self) -> None:
        self.stop_requested.set()
        self.join(TIMEOUT)
        if self.error is not None:
            raise self.error


def test_kafka_python_consumers_split_partitions_and_survivor_takes_all() -> None:
    with MockCluster(brokers=3, config=CONFIG) as cluster:
        cluster.create_topic("six", 6)
        settings = dict(bootstrap_servers=cluster.bootstrap_servers, group_id="kp-split", **FAST)
        a = PollingConsumer("six", **settings)
        b = PollingConsumer("six", **settings)
        a.start()
        try:
            eventually_sync(lambda: len(a.assigned) == 6, "the first consumer to own everything")
            b.start()
            try:
                eventually_sync(lambda: len(a.assigned) == 3 and len(b.assigned) == 3, "a 3/3 split")
                assert a.assigned | b.assigned == set(range(6))
            finally:
                b.stop()
            eventually_sync(lambda: len(a.assigned) == 6, "the survivor to own all 6 partitions")
        finally:
            a.stop()


def test_kafka_python_new_consumer_resumes_and_admin_sees_the_group() -> None:
    with MockCluster(brokers=3, config=CONFIG) as cluster:
        cluster.create_topic("resume", 6)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
        for i in range(60):
            producer.send("resume", b"first-%d" % i, partition=i % 6)
        producer.flush()
        settings = dict(
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="kp-resume",
            enable_auto_commit=False,
            **FAST,
        )
        first = PollingConsumer("resume", **settings)
        first.start()
        try:
            eventually_sync(lambda: len(first.values) == 60, "60 records")
            first.commit_requested.set()
            assert first.committed.wait(TIMEOUT)
        finally:
            first.stop()

        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            offsets = admin.list_group_offsets({"kp-resume": None})["kp-resume"]
            assert {tp.partition: meta.offset for tp, meta in offsets.items()} == dict.fromkeys(range(6), 10)
            listed = {g["group_id"]: g for g in admin.list_groups()}  # asks every broker
            assert listed["kp-resume"]["group_state"] == "Empty"
            assert listed["kp-resume"]["protocol_type"] == "consumer"
            described = admin.describe_groups(["kp-resume", "nobody"])
            assert (
                described["kp-resume"]["group_state"] == "Empty" and described["kp-resume"]["error"] is None
            )
            assert "GroupIdNotFound" in described["nobody"]["error"]

            for i in range(12):
                producer.send("resume", b"second-%d" % i, partition=i % 6)
            producer.flush()
            second = PollingConsumer("resume", **settings)
            second.start()
            try:
                eventually_sync(lambda: len(second.values) == 12, "the 12 new records")
                time.sleep(0.3)
                assert sorted(second.values) == sorted(b"second-%d" % i for i in range(12))
            finally:
                second.stop()

            assert admin.delete_groups(["kp-resume"]) == {"kp-resume": "OK"}
            assert cluster.groups.describe_group("kp-resume") is None
        finally:
            admin.close()
            producer.close()


# -- librdkafka ---------------------------------------------------------------------------
def test_confluent_kafka_consumer_joins_commits_and_fetches_committed() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with MockCluster(brokers=3, config=CONFIG) as cluster:
        cluster.create_topic("rd", 6)
        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for i in range(30):
            producer.produce("rd", value=b"v%d" % i, partition=i % 6)
        assert producer.flush(10) == 0
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "rd-group",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        try:
            consumer.subscribe(["rd"])
            received = 0
            deadline = time.monotonic() + TIMEOUT
            while received < 30 and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    received += 1
            assert received == 30
            consumer.commit(asynchronous=False)
            committed = consumer.committed(
                [confluent_kafka.TopicPartition("rd", i) for i in range(6)], timeout=10
            )
            assert [(tp.partition, tp.offset) for tp in committed] == [(i, 5) for i in range(6)]
        finally:
            consumer.close()
