"""The harness covers KIP-848's APIs like the others: a fault on ConsumerGroupHeartbeat
that librdkafka recovers from, the recording, the conformance report, the metrics rows
and the HTTP control plane's /v1/groups."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from broker import MockCluster
from protocol.errors import ErrorCode

HEARTBEAT = 68
CONFIG = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "admin.port": "0",
}


def get(cluster: MockCluster, path: str) -> Any:
    assert cluster.admin is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{cluster.admin.port}{path}", timeout=10) as response:
        return json.load(response)


def test_fault_recording_conformance_metrics_and_http_cover_the_heartbeat(tmp_path: Path) -> None:
    with MockCluster(config={**CONFIG, "metrics.dir": str(tmp_path)}) as cluster:
        cluster.create_topic("h", 2)
        cluster.faults.add(api_key=HEARTBEAT, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, count=2)
        member = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "harnessed",
                "group.protocol": "consumer",
                "client.id": "modern",
            }
        )
        try:
            member.subscribe(["h"])
            deadline = time.monotonic() + 30
            while len(member.assignment()) < 2:  # librdkafka finds the coordinator again and rejoins
                assert time.monotonic() < deadline, "no assignment after the injected errors"
                member.poll(0.1)
            heartbeats = cluster.requests.list(api_key=HEARTBEAT)
            assert [r["response"]["error_code"] for r in heartbeats[:2]] == [15, 15]
            assert heartbeats[2]["response"]["error_code"] == 0
            assert get(cluster, "/v1/groups?type=consumer") == {
                "groups": [
                    {
                        "group_id": "harnessed",
                        "type": "consumer",
                        "protocol_type": "consumer",
                        "state": "Stable",
                    }
                ]
            }
            described = get(cluster, "/v1/groups/harnessed")
            assert (described["state"], described["assignor"]) == ("Stable", "uniform")
            [row] = described["members"]
            assert (row["client_id"], row["assignment"], row["target_assignment"]) == (
                "modern",
                {"h": [0, 1]},
                {"h": [0, 1]},
            )
        finally:
            member.close()
        report = cluster.conformance.report()
    [client] = [c for c in report["clients"] if "modern" in c["client_ids"]]
    assert {
        "api_key": HEARTBEAT,
        "api": "ConsumerGroupHeartbeat",
        "error_code": 15,
        "error": "COORDINATOR_NOT_AVAILABLE",
        "count": 2,
    } in client["errors"]
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path).to_pylist()
    assert any(row["api_name"] == "ConsumerGroupHeartbeat" for row in rows)
