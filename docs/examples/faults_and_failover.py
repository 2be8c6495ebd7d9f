"""Faults and failover: an injected error a producer retries through, a slow broker, a
broker that goes down and the partition leader that moves, and a forced throttle."""

from __future__ import annotations

import time

from kafka import KafkaProducer

from broker import MockCluster

PRODUCE, FETCH = 0, 1
NOT_LEADER_OR_FOLLOWER = 6


def leader_of(cluster: MockCluster, topic: str, partition: int) -> int:
    (found,) = [t for t in cluster.describe()["topics"] if t["name"] == topic]
    return found["partitions"][partition]["leader"]


def main() -> dict:
    seen: dict = {}
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("orders", partitions=1, replication_factor=3)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="app", retries=5)

        # 1. An error on the next two produce requests: the producer refreshes its
        #    metadata, retries, and the record is delivered once.
        fault = cluster.faults.add(api_key=PRODUCE, error_code=NOT_LEADER_OR_FOLLOWER, count=2)
        seen["offset_after_errors"] = producer.send("orders", b"first").get(timeout=30).offset
        seen["fault_left"] = [f for f in cluster.faults.list() if f.id == fault.id]  # spent: gone

        # 2. Latency: every produce to this client waits 300 ms before it is handled.
        slow = cluster.faults.add(api_key=PRODUCE, latency_ms=300, client_id="app")
        start = time.monotonic()
        producer.send("orders", b"slow").get(timeout=30)
        seen["slow_send_s"] = time.monotonic() - start
        cluster.faults.remove(slow.id)

        # 3. The leader's broker goes down: another replica leads, the producer follows.
        old_leader = leader_of(cluster, "orders", 0)
        cluster.stop_broker(old_leader)
        seen["new_leader"] = leader_of(cluster, "orders", 0)
        seen["offset_after_failover"] = producer.send("orders", b"after failover").get(timeout=30).offset
        cluster.start_broker(old_leader)  # back on its ports; leadership stays moved
        seen["old_leader"] = old_leader
        seen["leader_after_restart"] = leader_of(cluster, "orders", 0)

        # 4. Move the leader back by hand (a leader election with a new epoch).
        cluster.move_leader("orders", 0, old_leader)
        seen["offset_after_move"] = producer.send("orders", b"moved back").get(timeout=30).offset

        # 5. A forced throttle: the next produce response says throttle_time_ms=500 and
        #    the connection is muted for that long, as under a real quota.
        cluster.faults.throttle("app", throttle_ms=500, count=1, api_key=PRODUCE)
        producer.send("orders", b"throttled").get(timeout=30)
        start = time.monotonic()
        producer.send("orders", b"after the throttle").get(timeout=30)
        seen["after_throttle_s"] = time.monotonic() - start
        producer.close()
        seen["throttled"] = [
            r["throttle_time_ms"] for r in cluster.requests.list(api_key=PRODUCE) if r["throttle_time_ms"]
        ]
    return seen


if __name__ == "__main__":
    print(main())
