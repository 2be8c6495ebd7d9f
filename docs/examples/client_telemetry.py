"""KIP-714 client telemetry: subscribe librdkafka producers to their metrics and read
what they push."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from broker import MockCluster


def main(timeout_s: float = 30.0) -> dict:
    with MockCluster(config={"telemetry.enabled": "true"}) as cluster:  # off by default
        cluster.create_topic("orders")
        # A subscription: which metrics (name prefixes), how often, and for which clients.
        cluster.client_metrics.set(
            "apps", ["org.apache.kafka.producer."], interval_ms=500, match={"client_id": "app-.*"}
        )
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "app-1"})
        deadline = time.monotonic() + timeout_s
        while not cluster.client_metrics.pushes() and time.monotonic() < deadline:
            producer.produce("orders", b"x")
            producer.poll(0.1)
        producer.flush(10)
        pushes = cluster.client_metrics.pushes()  # decoded, oldest first
        instances = cluster.client_metrics.instances()
        subscriptions = cluster.client_metrics.subscriptions()
        del producer
    names = sorted({point.name for push in pushes for point in push.points})
    return {"pushes": pushes, "names": names, "instances": instances, "subscriptions": subscriptions}


if __name__ == "__main__":
    result = main()
    push = result["pushes"][0]
    print(push.client.client_id, push.client.software_name, len(push.points), "points")
    for name in result["names"]:
        print(name)
