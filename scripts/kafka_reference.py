"""Starts the reference Apache Kafka (tests/differential/reference.py), prints its bootstrap
servers, and stops it on Ctrl-C or SIGTERM. Run through scripts/kafka-reference."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.differential.reference import KAFKA_VERSION, ReferenceError, ReferenceKafka  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=int, default=1, help="combined broker+controller nodes (ids 0..N-1)")
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        reference = ReferenceKafka(args.brokers).start()
    except ReferenceError as exc:
        print(f"kafka-reference: {exc}", file=sys.stderr)
        return 2
    try:
        print(
            f"Apache Kafka {KAFKA_VERSION} ({args.brokers} node(s), cluster {reference.cluster_id}) "
            f"started in {reference.start_seconds:.1f} s; logs in {reference.root}",
            file=sys.stderr,
        )
        print(reference.bootstrap_servers, flush=True)
        try:
            while not stop.wait(1):
                pass
        except KeyboardInterrupt:
            pass
    finally:
        reference.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
