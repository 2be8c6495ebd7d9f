"""aiokafka against the broker over TCP, on the same event loop as the broker."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from broker import MockCluster
from tests.workload import MESSAGES, check_consumed, message


async def produce(bootstrap: str, topic: str, numbers: range, **config: object) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    await producer.start()
    try:
        batch = [await producer.send(topic, key=message(i)[0], value=message(i)[1]) for i in numbers]
        await asyncio.gather(*batch)
    finally:
        await producer.stop()


async def consume(bootstrap: str, topic: str, group: str, count: int) -> dict[int, list[tuple[bytes, bytes]]]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    consumed: dict[int, list[tuple[bytes, bytes]]] = {}
    received = 0
    try:
        async with asyncio.timeout(60):
            while received < count:
                for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                    consumed.setdefault(tp.partition, []).extend((r.key, r.value) for r in records)
                    received += len(records)
        assert not any((await consumer.getmany(timeout_ms=300)).values()), "more messages than produced"
        await consumer.commit()
    finally:
        await consumer.stop()
    return consumed


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


async def test_produce_consume_commit_resume(cluster: MockCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    await create_topic(bootstrap, "orders", 3)
    await produce(bootstrap, "orders", range(MESSAGES))
    consumed = await consume(bootstrap, "orders", "billing", MESSAGES)
    assert sorted(consumed) == [0, 1, 2]
    check_consumed(consumed)
    await produce(bootstrap, "orders", range(MESSAGES, MESSAGES + 500))
    check_consumed(await consume(bootstrap, "orders", "billing", 500), count=500, first=MESSAGES)


async def test_gzip_batches_pass_through(cluster: MockCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    await create_topic(bootstrap, "zipped", 3)
    await produce(bootstrap, "zipped", range(2000), compression_type="gzip")
    check_consumed(await consume(bootstrap, "zipped", "g", 2000), count=2000)
