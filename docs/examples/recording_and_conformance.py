"""Record what two clients send, and see which of them honours throttle_time_ms.

Run it: python docs/examples/recording_and_conformance.py /tmp/out
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from confluent_kafka import Producer
from kafka import KafkaProducer

from broker import MockCluster

PRODUCE = 0


def main(out: str) -> dict:
    config = {
        "record.file": f"{out}/requests.jsonl",  # every request and response, as JSON lines
        "conformance.report.file": f"{out}/conformance.json",  # written when the cluster stops
    }
    with MockCluster(config=config) as cluster:
        cluster.create_topic("orders")
        # Three throttled produce responses for each client: 300 ms each.
        for client_id in ("kp", "ck"):
            cluster.faults.throttle(client_id, throttle_ms=300, count=3, api_key=PRODUCE)

        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="kp")
        for i in range(5):
            producer.send("orders", b"kp-%d" % i).get(timeout=10)
        producer.close()

        librdkafka = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "ck"})
        for i in range(5):
            librdkafka.produce("orders", b"ck-%d" % i)
            librdkafka.flush(10)  # one request each, so the throttle lies between them
        del librdkafka

        # The recording, newest last: decoded requests and responses as dicts.
        produces = cluster.requests.list(api_key=PRODUCE)
        report = cluster.conformance.report()

    lines = Path(out, "requests.jsonl").read_text().splitlines()
    return {
        "produces": produces,
        "report": report,
        "report_file": json.loads(Path(out, "conformance.json").read_text()),
        "recorded_lines": [json.loads(line) for line in lines],
    }


def summary(report: dict) -> list[tuple]:
    """(software, version, throttled responses, honoured) per client."""
    return [
        (
            c["software_name"],
            c["software_version"],
            c["throttle"]["throttled_responses"],
            c["throttle"]["honoured"],
        )
        for c in report["clients"]
    ]


if __name__ == "__main__":
    result = main(sys.argv[1] if len(sys.argv) > 1 else ".")
    for produce in result["produces"]:
        print(produce["client_id"], produce["api"], produce["api_version"], produce["throttle_time_ms"])
    for row in summary(result["report"]):
        print(*row)
