"""A confluent-kafka producer logged in as SCRAM user alice, under a 1 MB/s user quota.

Run it: python docs/examples/quota_producer_sasl.py
"""

from __future__ import annotations

import json
import time

from confluent_kafka import Producer

from broker import MockCluster

QUOTA = 1_048_576  # producer_byte_rate of User:alice, bytes per second, per broker
MESSAGE = b"x" * 10_000


def produce(bootstrap: str, total_bytes: int) -> dict:
    """Sends `total_bytes` of 10 kB messages as alice, flat out, and returns when each was
    acknowledged and what librdkafka said about throttling."""
    throttle_events: list[float] = []  # seconds, one per throttled response
    stats: list[dict] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "throttle_cb": lambda event: throttle_events.append(event.throttle_time),
            "statistics.interval.ms": 500,
            "stats_cb": lambda raw: stats.append(json.loads(raw)),
        }
    )
    acked: list[float] = []
    start = time.monotonic()

    def delivered(err: object, _msg: object) -> None:
        if err is None:
            acked.append(time.monotonic() - start)

    for _ in range(total_bytes // len(MESSAGE)):
        while True:
            try:
                producer.produce("orders", MESSAGE, on_delivery=delivered)
                break
            except BufferError:  # librdkafka's queue is full: serve callbacks, retry
                producer.poll(0.05)
    producer.flush(60)
    # librdkafka's statistics: per broker, "throttle" summarises recent throttle times (ms).
    throttle_stats = [b["throttle"] for s in stats for b in s["brokers"].values() if b["throttle"]["cnt"]]
    return {"acked": acked, "throttle_events": throttle_events, "throttle_stats": throttle_stats}


def main(window_num: int = 11, total_bytes: int = 15_000_000) -> dict:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "quota.window.num": window_num,
        "quota.window.size.seconds": 1,
    }
    with MockCluster(config=config) as cluster:
        cluster.create_topic("orders")
        # Step 1: the user and its quota. SCRAM credentials can be added at runtime
        # (PLAIN users come from sasl.users.file instead).
        cluster.credentials.upsert_user("alice", "alice-secret")
        cluster.quotas.alter({"user": "alice"}, set={"producer_byte_rate": QUOTA})

        # Step 2: produce flat out, logged in as alice, watching the throttle.
        result = produce(cluster.bootstrap_for("SASL_PLAINTEXT"), total_bytes)

        # Step 3: the broker's side: alice's Produce sensor (user tag "alice").
        metrics = {
            m.name: m.value
            for m in cluster.metrics()
            if m.group == "Produce" and m.tags.get("user") == "alice"
        }

    acked, events = result["acked"], result["throttle_events"]
    print(f"{len(acked) * len(MESSAGE) / 1e6:.1f} MB in {max(acked):.1f} s")
    throttled = [t for t in events if t > 0]  # librdkafka also calls it with 0 when a throttle ends
    print(f"throttle_cb: {len(throttled)} throttled responses, longest {max(throttled, default=0):.3f} s")
    print(
        f"broker: byte-rate {metrics['byte-rate']:.0f} B/s, throttle-time {metrics['throttle-time']:.0f} ms"
    )
    return {**result, "broker_metrics": metrics}


if __name__ == "__main__":
    main()
