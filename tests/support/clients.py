"""What benchmarks and tests that drive real clients share: the clients' log lines kept
in memory, and waiting until a client sees a topic.

librdkafka (through confluent-kafka's `logger` setting) and kafka-python log through
`logging`; a benchmark keeps their lines to search them (librdkafka's mock cluster logs
its address) or to quote them when a run fails, without the noise of throttled clients
on the terminal.

Imports only the stdlib: clients are passed in, not imported.
"""

from __future__ import annotations

import logging
import time
from typing import Any


class ClientLog(logging.Handler):
    """Keeps the messages of the records it handles (the first `keep`, when given)."""

    def __init__(self, keep: int | None = None) -> None:
        super().__init__(logging.DEBUG)
        self.keep = keep
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if self.keep is None or len(self.lines) < self.keep:
            self.lines.append(record.getMessage())

    def errors(self) -> list[str]:
        """The lines that report an error or a failure."""
        return [line for line in self.lines if "rror" in line or "FAIL" in line]


def client_logger(
    name: str, level: int = logging.INFO, keep: int | None = None
) -> tuple[logging.Logger, ClientLog]:
    """A logger `bench.<name>` for a client's `logger` setting, whose records go only to
    the returned handler (not to the root logger's handlers)."""
    logger = logging.getLogger(f"bench.{name}")
    logger.setLevel(level)
    logger.propagate = False
    handler = ClientLog(keep)
    logger.handlers[:] = [handler]
    return logger, handler


def wait_for_topic(client: Any, topic: str, deadline: float, partitions: int | None = None) -> list[int]:
    """The partitions of `topic` once `client` (a confluent-kafka Producer, Consumer or
    AdminClient) sees it without error and with a leader for every partition (and
    `partitions` of them, when given); a Metadata request for an unknown topic also
    auto-creates it where the broker does that. TimeoutError after `deadline`
    (time.monotonic())."""
    while True:
        metadata = client.list_topics(topic, timeout=10).topics.get(topic)
        if (
            metadata is not None
            and metadata.error is None
            and metadata.partitions
            and all(p.leader >= 0 for p in metadata.partitions.values())
            and (partitions is None or len(metadata.partitions) == partitions)
        ):
            return sorted(metadata.partitions)
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} not visible to the client: {metadata and metadata.error}")
        time.sleep(0.05)
