"""A kafka-python producer under a 1 MB/s quota, unauthenticated (principal User:ANONYMOUS).

Run it: python docs/examples/quota_producer.py  (about 15 s with Kafka's default windows)
"""

from __future__ import annotations

import time

from kafka import KafkaProducer

from broker import MockCluster

QUOTA = 1_048_576  # producer_byte_rate: bytes per second, per broker
MESSAGE = b"x" * 10_000


def produce(bootstrap: str, client_id: str, total_bytes: int, **client_config: object) -> dict:
    """Sends `total_bytes` of 10 kB messages as fast as the client can, and returns when each
    message was acknowledged and what the client's own throttle metrics say."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, **client_config)
    acked: list[float] = []  # seconds since the start, one entry per acknowledged message
    start = time.monotonic()
    for _ in range(total_bytes // len(MESSAGE)):
        future = producer.send("orders", MESSAGE)
        future.add_callback(lambda _metadata: acked.append(time.monotonic() - start))
    producer.flush()
    client_metrics = producer.metrics()["producer-metrics"]
    producer.close()
    return {"acked": acked, "throttle_time_max": client_metrics["throttle-time-max"]}


def per_second(acked: list[float]) -> list[float]:
    """MB acknowledged in each second of the run."""
    seconds = [0.0] * (int(max(acked)) + 1)
    for t in acked:
        seconds[int(t)] += len(MESSAGE) / 1e6
    return seconds


def main(window_num: int = 11, total_bytes: int = 15_000_000) -> dict:
    config = {"quota.window.num": window_num, "quota.window.size.seconds": 1}
    with MockCluster(config=config) as cluster:
        cluster.create_topic("orders")
        # Step 1: the quota. An unauthenticated client is User:ANONYMOUS, so name its
        # client id (or the default user: {"user": None}, or the default client id).
        cluster.quotas.alter({"client-id": "loader"}, set={"producer_byte_rate": QUOTA})
        print(cluster.quotas.resolve(client_id="loader")["producer_byte_rate"])

        # Step 2: produce flat out.
        result = produce(cluster.bootstrap_servers, "loader", total_bytes)

        # Step 3: see the throttle. What the broker answered, request by request ...
        produces = cluster.requests.list(api_key=0)  # the newest 256 requests are kept
        throttled = [r for r in produces if r["throttle_time_ms"] > 0]
        # ... and the broker's quota metrics, Kafka's names and tags.
        metrics = {
            m.name: m.value
            for m in cluster.metrics()
            if m.group == "Produce" and m.tags.get("client-id") == "loader"
        }

    for second, mb in enumerate(per_second(result["acked"])):
        print(f"second {second:2d}: {mb:5.2f} MB acknowledged")
    print(f"client: throttle-time-max {result['throttle_time_max']:.0f} ms")
    print(f"broker: {len(throttled)} of the last {len(produces)} produce responses throttled")
    print(
        f"broker: byte-rate {metrics['byte-rate']:.0f} B/s, throttle-time {metrics['throttle-time']:.0f} ms"
    )
    return {**result, "throttled": throttled, "produces": produces, "broker_metrics": metrics}


if __name__ == "__main__":
    main()
