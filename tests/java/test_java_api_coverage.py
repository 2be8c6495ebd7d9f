"""The Java client's scenarios together send every API the broker serves (each scenario's
test checks what its cluster recorded: tests/java/runner.py's JAVA_SENDS)."""

from __future__ import annotations

from broker.handlers import HANDLERS
from messages.registry import api_name
from tests.java.runner import JAVA_SENDS, NOT_SENT_BY_JAVA


def test_the_java_scenarios_send_every_api_the_broker_serves() -> None:
    served = {api_name(key) for key in HANDLERS}
    sent = frozenset().union(*JAVA_SENDS.values())
    assert sent <= served
    assert served - sent == set(NOT_SENT_BY_JAVA)
