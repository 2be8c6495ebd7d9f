"""MockCluster from synchronous code: the cluster runs its own event loop in a thread."""

from __future__ import annotations

import itertools

from kafka import KafkaConsumer, KafkaProducer

from broker import MockCluster


def main() -> dict:
    config = {"group.initial.rebalance.delay.ms": 0, "num.partitions": 3}
    with MockCluster(brokers=3, config=config) as cluster:  # free ports on 127.0.0.1
        cluster.create_topic("orders", partitions=6, replication_factor=3)

        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
        for i in range(10):
            producer.send("orders", key=b"customer-%d" % (i % 3), value=b"order-%d" % i)
        producer.flush()
        producer.close()

        consumer = KafkaConsumer(
            "orders",
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="billing",
            auto_offset_reset="earliest",
            consumer_timeout_ms=10_000,  # stop iterating after 10 s without a message
        )
        values = sorted(message.value for message in itertools.islice(consumer, 10))
        consumer.close()

        # What the cluster holds, for assertions.
        layout = cluster.describe()  # brokers (id, host, port, up) and topics with leaders
        end_offsets = {p.index: p.log.high_watermark for p in cluster.state.topics["orders"].partitions}
        groups = cluster.list_groups()  # [{"group_id": "billing", "type": "classic", ...}]
    return {"values": values, "layout": layout, "end_offsets": end_offsets, "groups": groups}


if __name__ == "__main__":
    print(main())
