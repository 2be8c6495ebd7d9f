"""The soak (`scripts/soak.py`) at CI scale, and its checks on their own.

The CI run is the script for 2 minutes against one broker process with its defaults
(faults, member churn, admin and quota changes, retention); it must pass. The full run is
`scripts/soak` (10 minutes). The unit tests below feed the soak's ledger and journal by
hand, so that a check which never fires in a passing run is still known to fire.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "soak.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("soak_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


soak = _load()


@pytest.mark.slow
def test_soak_two_minutes_passes() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--minutes", "2"],
        cwd=SCRIPT.parent.parent,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = f"stdout:\n{run.stdout}\nstderr:\n{run.stderr[-5000:]}"
    assert run.returncode == 0, output
    assert "soak: passed" in run.stdout, output
    for group in soak.GROUPS:  # every expected record read by both groups, none missing
        found = re.search(rf"{group} \(\w+\): consumed ([\d,]+) of ([\d,]+) expected", run.stdout)
        assert found is not None and found.group(1) == found.group(2), output
        assert int(found.group(2).replace(",", "")) > 10_000, output
    assert re.search(r"faults injected: [1-9]\d*", run.stdout), output
    assert re.search(r"member churns: [1-9]", run.stdout), output
    assert re.search(r", 0 unexplained", run.stdout), output
    assert "growth last/reference" in run.stdout, output


# -- the checks ------------------------------------------------------------------------------
class FakeMessage:
    """What Ledger.consumed reads of a confluent-kafka Message."""

    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None) -> None:
        self._where = (topic, partition, offset)
        self._key = key

    def topic(self) -> str:
        return self._where[0]

    def partition(self) -> int:
        return self._where[1]

    def offset(self) -> int:
        return self._where[2]

    def key(self) -> bytes | None:
        return self._key


def _record(ledger: Any, partition: int, offset: int, txn: int | None = None) -> int:
    topic = soak.TXN_TOPIC if txn is not None else soak.IDEM_TOPIC
    (record_id,) = ledger.new_ids(topic, 1, txn=txn)
    ledger.delivered(record_id, partition, offset)
    return int(record_id)


def test_a_record_read_again_is_allowed_above_the_committed_offset_only() -> None:
    ledger = soak.Ledger()
    group = "soak-classic"
    first, second = _record(ledger, 0, 10), _record(ledger, 0, 11)
    for record_id, offset in ((first, 10), (second, 11), (first, 10)):  # read again before a commit
        ledger.consumed(group, FakeMessage(soak.IDEM_TOPIC, 0, offset, str(record_id).encode()))
    found = ledger.groups[group]
    assert found.redelivered == 1 and not found.duplicates_after_commit
    ledger.committed(group, [TopicPartition(soak.IDEM_TOPIC, 0, 12)])
    ledger.consumed(group, FakeMessage(soak.IDEM_TOPIC, 0, 11, str(second).encode()))
    assert len(found.duplicates_after_commit) == 1
    assert found.position[(soak.IDEM_TOPIC, 0)] == 12


def test_the_same_id_at_two_offsets_is_a_duplicate_in_the_log() -> None:
    ledger = soak.Ledger()
    record_id = _record(ledger, 1, 5)
    for offset in (5, 9):
        ledger.consumed("soak-consumer", FakeMessage(soak.IDEM_TOPIC, 1, offset, str(record_id).encode()))
    assert ledger.groups["soak-consumer"].duplicates_in_log == [
        f"id {record_id} at ('{soak.IDEM_TOPIC}', 1, 5) and {soak.IDEM_TOPIC}[1]@9"
    ]


def test_a_transformer_output_twice_in_the_log_is_a_duplicate() -> None:
    ledger = soak.Ledger()
    source = _record(ledger, 0, 0)
    for offset in (3, 7):  # an aborted output made visible, say, then the committed one
        ledger.delivered_eos(source, 1, offset)
        ledger.consumed("soak-classic", FakeMessage(soak.EOS_TOPIC, 1, offset, b"e%d" % source))
    assert len(ledger.groups["soak-classic"].duplicates_in_log) == 1
    assert soak.eos_id(source) in ledger.groups["soak-classic"].consumed


def test_a_record_never_produced_is_unknown() -> None:
    ledger = soak.Ledger()
    ledger.consumed("soak-classic", FakeMessage(soak.IDEM_TOPIC, 0, 0, b"12345"))
    ledger.consumed("soak-classic", FakeMessage(soak.IDEM_TOPIC, 0, 1, None))
    ledger.consumed("soak-classic", FakeMessage(soak.EOS_TOPIC, 0, 0, b"e12345"))  # the output of no input
    assert ledger.groups["soak-classic"].unknown == ["soak-idem[0]@1 key None"]  # no id at all
    assert len(ledger.unknown("soak-classic")) == 2  # ids never produced, judged at the end


def test_expected_records_are_acked_idempotent_ones_committed_transactions_and_outputs() -> None:
    ledger = soak.Ledger()
    plain = _record(ledger, 0, 0)
    committed, aborted, undecided = (_record(ledger, 0, n, txn=n) for n in (1, 2, 3))
    ledger.txn_outcome.update({1: "committed", 2: "aborted", 3: "unknown"})
    (unacked,) = ledger.new_ids(soak.IDEM_TOPIC, 1)
    assert ledger.expected() == {plain, committed, soak.eos_id(plain)}  # one transformer output per input
    assert aborted not in ledger.expected() and undecided not in ledger.expected()
    assert unacked not in ledger.expected()


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


def test_an_error_is_explained_only_by_an_event_for_its_client_code_and_time() -> None:
    clock = FakeClock()
    journal = soak.Journal(clock)
    clock.t = 10.0
    event = journal.event("fault", "Heartbeat COORDINATOR_NOT_AVAILABLE", ["member-1"], [15])
    clock.t = 11.0
    event.end = 11.0
    for client, code, at in (
        ("member-1", 15, 12.0),  # explained
        ("member-1", 15, 11.0 + soak.GRACE_S + 1),  # too late
        ("member-2", 15, 12.0),  # another client
        ("member-1", 6, 12.0),  # another error
        ("member-1", 15, 8.0),  # before the fault
    ):
        clock.t = at
        journal.error(client, "error_cb", [code], "x")
    unexplained = journal.explain()
    assert [e.explained_by for e in journal.errors].count(None) == 4
    assert journal.errors[0].explained_by == "fault: Heartbeat COORDINATOR_NOT_AVAILABLE"
    assert len(unexplained) == 4


def test_purged_deliveries_of_an_abort_need_no_fault() -> None:
    journal = soak.Journal(FakeClock())
    journal.error("soak-txn", "delivery", [KafkaError._PURGE_QUEUE], "purged")
    journal.error("soak-txn", "delivery", [KafkaError._MSG_TIMED_OUT], "timed out")
    assert [e.codes for e in journal.explain()] == [{KafkaError._MSG_TIMED_OUT}]


def test_librdkafka_log_lines_are_read_for_their_error_codes() -> None:
    assert soak.codes_in(
        "FAIL [soak-idem#producer-3] [thrd:127.0.0.1:1/0]: 127.0.0.1:1/0: Disconnected: connection "
        "closed by peer: receive 0 after POLLIN (after 11995ms in state UP)"
    ) == {KafkaError._TRANSPORT}
    assert 6 in soak.codes_in("Produce failed: Broker: Not leader for partition")
    assert soak.codes_in("SESSTMOUT: Consumer group session timed out") == set()
    assert soak.codes_in("REQTMOUT: 127.0.0.1:1/1: Timed out 0 in-flight, 0 retry-queued, 2 out-queue") == {
        KafkaError._TIMED_OUT
    }


def test_rss_is_flat_against_the_window_after_retention_began() -> None:
    flat = [(t * 2.0, 100 * 2**20) for t in range(60)]  # 120 s, 100 MiB throughout
    lines, violations = soak.rss_verdict(flat, 120.0, ramp=20.0)
    assert not violations and "+0.0 %" in lines[-1]
    growing = [(t, r + int(t * 0.2 * 2**20)) for t, r in flat]  # 0.2 MiB/s: +11 % from 30-60 s to the end
    assert soak.rss_verdict(growing, 120.0, ramp=20.0)[1] == ["broker RSS grew +11.0 % under retention"]
    assert soak.rss_verdict(flat, 120.0, ramp=None)[1]  # retention never deleted: no verdict
    lines, violations = soak.rss_verdict(flat, 120.0, ramp=70.0)  # windows of 25 s: 70-95 s, 95-120 s
    assert not violations and "reference (70-95 s)" in lines[0]
    assert soak.rss_verdict(flat, 120.0, ramp=95.0)[1]  # too late for a reference window
