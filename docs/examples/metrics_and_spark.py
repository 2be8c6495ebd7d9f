"""Record one Parquet row per request while a producer runs under a quota.

Run it: python docs/examples/metrics_and_spark.py run/   (then docs/examples/metrics_and_spark.sh run/)
"""

from __future__ import annotations

import sys
from pathlib import Path

from kafka import KafkaProducer

from broker import MockCluster

QUOTA = 1_048_576
WINDOWS = {"quota.window.num": 2, "quota.window.size.seconds": 1}  # the what-if must be told these


def main(run_dir: str, total_bytes: int = 4_000_000) -> Path:
    run = Path(run_dir)
    config = {
        "metrics.dir": str(run / "metrics"),  # --metrics-dir on the command line
        "state.dir": str(run / "state"),  # quotas.sqlite: today's quotas, the what-if's baseline
        **WINDOWS,
    }
    with MockCluster(config=config) as cluster:
        cluster.create_topic("orders")
        cluster.quotas.alter({"client-id": "loader"}, set={"producer_byte_rate": QUOTA})
        for client_id in ("loader", "reporting"):  # only "loader" has a quota
            producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id=client_id)
            for _ in range(total_bytes // 10_000):
                producer.send("orders", b"x" * 10_000)
            producer.flush()
            producer.close()
    # Stopping the cluster wrote every buffered row.
    return run / "metrics"


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "run"))
