"""Client quotas survive a restart (state.dir) and a kill -9 mid-stream.

Clean restart: alterations over TCP, the cluster stopped, a new MockCluster on the same
state dir describes the same entities with bit-identical values (the smallest and
largest doubles, 0.1 + 0.2), defaults, the literal "<default>" name, and removals honoured.

Crash: `python -m broker --port 0 --state-dir DIR` as a child process, a raw-socket
client pipelining AlterClientQuotas requests, SIGKILL after a few hundred
acknowledgements; a fresh broker on DIR must open the store and hold every alteration
whose response arrived (in-flight ones may or may not be there).
"""

from __future__ import annotations

import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from broker import MockCluster
from tests.kill9 import stream_until_killed
from tests.support.process import BrokerProcess

Key = frozenset[tuple[str, str | None]]
AlterEntry = AlterClientQuotasRequest.EntryData
Op = tuple[str, float, bool]

PBR = "producer_byte_rate"
CBR = "consumer_byte_rate"
RP = "request_percentage"
CMR = "controller_mutation_rate"
CCR = "connection_creation_rate"


def bits(value: float) -> bytes:
    return struct.pack(">d", value)


# ----------------------------------------------------------------- kafka-python helpers


def send(admin: KafkaAdminClient, request: Any) -> Any:
    return admin._manager.run(admin._manager.send, request)


def alter(
    admin: KafkaAdminClient,
    changes: list[tuple[list[tuple[str, str | None]], list[Op]]],
    validate_only: bool = False,
) -> list[int]:
    entries = [
        AlterEntry(
            entity=[AlterEntry.EntityData(entity_type=t, entity_name=n) for t, n in pairs],
            ops=[AlterEntry.OpData(key=k, value=v, remove=r) for k, v, r in ops],
        )
        for pairs, ops in changes
    ]
    response = send(admin, AlterClientQuotasRequest(entries=entries, validate_only=validate_only))
    return [r.error_code for r in response.entries]


def snapshot(admin: KafkaAdminClient) -> dict[Key, dict[str, bytes]]:
    """Every entity with its values as raw IEEE-754 bits (so NaN compares equal to itself)."""
    response = send(admin, DescribeClientQuotasRequest(components=[], strict=False))
    assert response.error_code == 0
    return {
        frozenset((c.entity_type, c.entity_name) for c in e.entity): {v.key: bits(v.value) for v in e.values}
        for e in response.entries
    }


def stored_in(cluster: MockCluster) -> dict[Key, dict[str, float]]:
    """The Python API's view (every entity), keyed like `snapshot`."""
    return {frozenset(entity.items()): values for entity, values in cluster.quotas.describe().items()}


def admin_for(cluster: MockCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)


# ------------------------------------------------------------------------ clean restart

FIRST_ROUND: list[tuple[list[tuple[str, str | None]], list[Op]]] = [
    ([("user", "alice")], [(PBR, 1024.0, False), (RP, 0.1 + 0.2, False), (CMR, 2.5, False)]),
    ([("user", "bob")], [(PBR, 1.0, False)]),
    ([("user", "tiny")], [(RP, 5e-324, False)]),
    ([("user", "huge")], [(RP, sys.float_info.max, False), (CMR, sys.float_info.max, False)]),
    ([("user", "big")], [(PBR, float(2**63), False), (CBR, float(2**53), False)]),
    ([("user", None)], [(PBR, 5000.0, False)]),
    ([("user", "<default>")], [(PBR, 6000.0, False)]),
    ([("client-id", None)], [(CBR, 7000.0, False)]),
    ([("client-id", "c1"), ("user", None)], [(RP, 12.5, False)]),
    ([("user", None), ("client-id", None)], [(RP, 13.5, False)]),
    ([("user", "CN=alice,O=x"), ("client-id", "app")], [(PBR, 100.0, False)]),
    ([("ip", None)], [(CCR, 10.0, False)]),
    ([("ip", "192.0.2.7")], [(CCR, 2147483647.0, False)]),
    ([("user", "gone")], [(PBR, 1.0, False), (CBR, 2.0, False)]),
]

SECOND_ROUND: list[tuple[list[tuple[str, str | None]], list[Op]]] = [
    ([("user", "alice")], [(RP, 0.0, True)]),  # one key removed, the others stay
    ([("user", "bob")], [(PBR, 2.0, False)]),  # a later value wins
    ([("user", "gone")], [(PBR, 0.0, True), (CBR, -1.0, True)]),  # every key removed: the entity goes
    ([("user", "never")], [(PBR, 0.0, True)]),  # removing an unset key writes nothing
]

EXPECTED_AFTER_TWO_ROUNDS: dict[Key, dict[str, bytes]] = {
    frozenset({("user", "alice")}): {PBR: bits(1024.0), CMR: bits(2.5)},
    frozenset({("user", "bob")}): {PBR: bits(2.0)},
    frozenset({("user", "tiny")}): {RP: bits(5e-324)},
    frozenset({("user", "huge")}): {RP: bits(sys.float_info.max), CMR: bits(sys.float_info.max)},
    frozenset({("user", "big")}): {PBR: bits(float(2**63)), CBR: bits(float(2**53))},
    frozenset({("user", None)}): {PBR: bits(5000.0)},
    frozenset({("user", "<default>")}): {PBR: bits(6000.0)},
    frozenset({("client-id", None)}): {CBR: bits(7000.0)},
    frozenset({("client-id", "c1"), ("user", None)}): {RP: bits(12.5)},
    frozenset({("user", None), ("client-id", None)}): {RP: bits(13.5)},
    frozenset({("user", "CN=alice,O=x"), ("client-id", "app")}): {PBR: bits(100.0)},
    frozenset({("ip", None)}): {CCR: bits(10.0)},
    frozenset({("ip", "192.0.2.7")}): {CCR: bits(2147483647.0)},
}


def test_quotas_survive_a_clean_restart(tmp_path: Path) -> None:
    config = {"state.dir": str(tmp_path / "state")}
    with MockCluster(config=config) as first:
        admin = admin_for(first)
        assert alter(admin, FIRST_ROUND) == [0] * len(FIRST_ROUND)
        assert alter(admin, SECOND_ROUND) == [0] * len(SECOND_ROUND)
        # Neither a refused entity nor a validate-only request is written.
        assert alter(admin, [([("user", "refused")], [(PBR, 1.5, False)])]) == [42]
        assert alter(admin, [([("user", "dry")], [(PBR, 1.0, False)])], validate_only=True) == [0]
        before = snapshot(admin)
        resolved_before = first.quotas.resolve(user="CN=alice,O=x", client_id="app")
        admin.close()
    assert before == EXPECTED_AFTER_TWO_ROUNDS

    with MockCluster(config=config) as second:
        admin = admin_for(second)
        assert snapshot(admin) == EXPECTED_AFTER_TWO_ROUNDS
        # The resolution index is rebuilt from the store too, not only the entity table.
        resolved_after = second.quotas.resolve(user="CN=alice,O=x", client_id="app")
        assert {k: (r.value, r.entity) for k, r in resolved_after.items()} == {
            k: (r.value, r.entity) for k, r in resolved_before.items()
        }
        assert resolved_after[PBR].value == 100.0
        assert resolved_after[RP].value == 13.5
        # Changes made after a restart are persisted as well.
        assert alter(admin, [([("user", "alice")], [(PBR, 0.0, True), (CMR, 0.0, True)])]) == [0]
        assert alter(admin, [([("user", "late")], [(CBR, 42.0, False)])]) == [0]
        admin.close()

    with MockCluster(config=config) as third:
        admin = admin_for(third)
        expected = dict(EXPECTED_AFTER_TWO_ROUNDS)
        del expected[frozenset({("user", "alice")})]
        expected[frozenset({("user", "late")})] = {CBR: bits(42.0)}
        assert snapshot(admin) == expected
        admin.close()


def test_python_api_alterations_are_persisted(tmp_path: Path) -> None:
    config = {"state.dir": str(tmp_path / "deep" / "er")}  # created on demand
    with MockCluster(config=config) as first:
        first.quotas.alter({"user": None, "client-id": None}, set={PBR: 1e6})
        first.quotas.alter({"client-id": "c"}, set={RP: 0.1 + 0.2})
    with MockCluster(config=config) as second:
        assert {k: {q: bits(v) for q, v in vals.items()} for k, vals in stored_in(second).items()} == {
            frozenset({("user", None), ("client-id", None)}): {PBR: bits(1e6)},
            frozenset({("client-id", "c")}): {RP: bits(0.1 + 0.2)},
        }


def test_an_ip_quota_named_by_host_is_enforced_on_its_address_after_a_restart(tmp_path: Path) -> None:
    """Stored under the name it was given, applied to the address the name resolves to."""
    config = {"state.dir": str(tmp_path / "state")}
    with MockCluster(config=config) as first:
        first.quotas.alter({"ip": "localhost"}, set={"connection_creation_rate": 7})
    with MockCluster(config=config) as second:
        assert frozenset({("ip", "localhost")}) in stored_in(second)
        connections = second.brokers[0].quota_managers.connections
        assert second.on_loop(lambda: connections.rate_limit("127.0.0.1")) == 7


def test_no_state_dir_means_nothing_kept(tmp_path: Path) -> None:
    with MockCluster() as first:
        first.quotas.alter({"user": "u"}, set={PBR: 1.0})
    with MockCluster() as second:
        assert stored_in(second) == {}


# ------------------------------------------------------------------------------ kill -9


def _compact(text: str) -> bytes:
    raw = text.encode()
    assert len(raw) + 1 < 0x80
    return bytes([len(raw) + 1]) + raw


def _entry(user: str, quota_key: str, value: float) -> bytes:
    return (
        b"\x02"
        + _compact("user")
        + _compact(user)
        + b"\x00"  # Entity [user=...]
        + b"\x02"
        + _compact(quota_key)
        + bits(value)
        + b"\x00"
        + b"\x00"  # Ops [set]
        + b"\x00"
    )


def stream_request(i: int) -> bytes:
    """AlterClientQuotas v1 #i: a new entity k<i> and the shared entity set to i + 1, in one request."""
    header = struct.pack(">hhih", 49, 1, i, 3) + b"raw" + b"\x00"
    body = (
        b"\x03"
        + _entry(f"k{i}", RP, distinct_value(i))
        + _entry("shared", PBR, float(i + 1))
        + b"\x00"
        + b"\x00"
    )
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def stream_response(i: int) -> bytes:
    def ok(user: str) -> bytes:
        return b"\x00\x00" + b"\x00" + b"\x02" + _compact("user") + _compact(user) + b"\x00" + b"\x00"

    payload = struct.pack(">iBi", i, 0, 0) + b"\x03" + ok(f"k{i}") + ok("shared") + b"\x00"
    return struct.pack(">i", len(payload)) + payload


def distinct_value(i: int) -> float:
    return 1.0 + i / 7.0  # a different, non-trivial bit pattern per request


@pytest.fixture
def child(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess("--port", "0", "--state-dir", str(tmp_path / "state"))
    yield process
    process.kill()


KILL_AFTER = 300
MAX_REQUESTS = 20000


def test_acknowledged_alterations_survive_kill_9(tmp_path: Path, child: BrokerProcess) -> None:
    def check(i: int, frame: bytes) -> None:
        assert struct.unpack(">i", frame[4:8])[0] == i, "responses out of order"
        assert frame == stream_response(i), f"alteration {i} was not acknowledged with error 0: {frame.hex()}"

    stream = stream_until_killed(child, stream_request, check, KILL_AFTER, MAX_REQUESTS)
    acked = stream.acked
    assert stream.sent > len(acked), "nothing was in flight at the kill; the test proves less than intended"

    with MockCluster(config={"state.dir": str(tmp_path / "state")}) as reopened:
        stored = stored_in(reopened)
    persisted = sorted(
        int(name[1:])
        for entity in stored
        for entity_type, name in entity
        if entity_type == "user" and name is not None and name.startswith("k")
    )
    # Every acknowledged alteration is there, with its exact value.
    for i in acked:
        assert bits(stored[frozenset({("user", f"k{i}")})][RP]) == bits(distinct_value(i))
    # Requests are applied one at a time, each in one transaction: what survived is a
    # prefix of the stream, and the shared entity carries the value of its last request.
    assert persisted == list(range(len(persisted)))
    assert len(persisted) >= len(acked)
    assert stored[frozenset({("user", "shared")})] == {PBR: float(len(persisted))}


def test_store_opens_after_kill_before_any_write(tmp_path: Path, child: BrokerProcess) -> None:
    child.address()
    time.sleep(0.1)
    child.kill()
    with MockCluster(config={"state.dir": str(tmp_path / "state")}) as reopened:
        assert stored_in(reopened) == {}
        reopened.quotas.alter({"user": "after"}, set={PBR: 1.0})
        assert stored_in(reopened) == {frozenset({("user", "after")}): {PBR: 1.0}}
