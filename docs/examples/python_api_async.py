"""MockCluster from asyncio code: the cluster runs on the caller's event loop."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from broker import MockCluster


async def main() -> list[bytes]:
    async with MockCluster(config={"group.initial.rebalance.delay.ms": 0}) as cluster:
        cluster.create_topic("events", partitions=2)
        # On the cluster's own loop, calls that change state have *_async forms.
        await cluster.quotas.alter_async({"client-id": "ingest"}, set={"producer_byte_rate": 1_048_576})

        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="ingest")
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait("events", b"event-%d" % i, partition=i % 2)
        finally:
            await producer.stop()

        consumer = AIOKafkaConsumer(
            "events", bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            values: list[bytes] = []
            while len(values) < 5:
                batches = await consumer.getmany(timeout_ms=1000)
                values += [record.value for records in batches.values() for record in records]
        finally:
            await consumer.stop()
    return sorted(values)


if __name__ == "__main__":
    print(asyncio.run(main()))
