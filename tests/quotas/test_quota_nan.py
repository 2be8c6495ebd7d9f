"""NaN and infinite quota values, as Apache Kafka 4.4 treats them.

ClientQuotaControlManager.validateQuotaKeyValue refuses a value that is not finite (NaN,
+Infinity, -Infinity) for every key, before the sign and the key type's range checks:
INVALID_REQUEST (42) "Quota KEY must be a finite number". So such a value is never stored
and never reaches enforcement.

State written by older versions of this broker, which stored NaN and infinities, is
cleaned on load: those keys are dropped (from the file too), so a NaN
connection_creation_rate (which Kafka's `.toInt` would narrow to 0 connections/s) can no
longer refuse every connection from an address.

The values are sent through kafka-python's network client (its generated
AlterClientQuotasRequest; neither kafka-python nor confluent-kafka has a high-level
alter_client_quotas) and through this project's `kafka-client-quotas` tool.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.protocol.admin import AlterClientQuotasRequest

from broker import MockCluster
from broker.tools.client_quotas import main as client_quotas_main

INVALID_REQUEST = 42
Entity = dict[str, str | None]

NOT_FINITE = [
    pytest.param({"user": "u"}, "request_percentage", math.nan, id="request_percentage-nan"),
    pytest.param({"user": "u"}, "request_percentage", math.inf, id="request_percentage-inf"),
    pytest.param({"client-id": None}, "controller_mutation_rate", math.nan, id="mutation-nan"),
    pytest.param({"client-id": "c"}, "controller_mutation_rate", math.inf, id="mutation-inf"),
    pytest.param({"user": None}, "producer_byte_rate", math.nan, id="producer-nan"),
    pytest.param({"client-id": "c"}, "producer_byte_rate", math.inf, id="producer-inf"),
    pytest.param({"user": "u", "client-id": "c"}, "consumer_byte_rate", math.inf, id="consumer-inf"),
    pytest.param({"user": "u"}, "consumer_byte_rate", -math.inf, id="consumer--inf"),
    pytest.param({"ip": "127.0.0.1"}, "connection_creation_rate", math.nan, id="connection-nan"),
    pytest.param({"ip": None}, "connection_creation_rate", math.inf, id="connection-inf"),
]


@contextmanager
def admin_of(cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    try:
        yield client
    finally:
        client.close()


def alter_over_the_wire(
    cluster: MockCluster, entity: Entity, key: str, value: float
) -> list[tuple[int, str]]:
    """One AlterClientQuotas entry for `entity` plus a valid one, through kafka-python's
    network client: the (code, message) of each entry."""
    entries = [
        AlterClientQuotasRequest.EntryData(
            entity=[
                AlterClientQuotasRequest.EntryData.EntityData(entity_type=t, entity_name=n)
                for t, n in pairs.items()
            ],
            ops=[AlterClientQuotasRequest.EntryData.OpData(key=k, value=v, remove=False)],
        )
        for pairs, k, v in ((entity, key, value), ({"user": "valid"}, "producer_byte_rate", 4096.0))
    ]
    with admin_of(cluster) as admin:
        request = AlterClientQuotasRequest(entries=entries, validate_only=False)
        response = admin._manager.run(admin._manager.send, request)
    return [(e.error_code, e.error_message) for e in response.entries]


@pytest.mark.parametrize(("entity", "key", "value"), NOT_FINITE)
def test_not_finite_values_are_refused_and_not_stored(
    sync_cluster: MockCluster, entity: Entity, key: str, value: float
) -> None:
    results = alter_over_the_wire(sync_cluster, entity, key, value)
    assert results == [(INVALID_REQUEST, f"Quota {key} must be a finite number"), (0, None)]
    assert {e.display(): v for e, v in sync_cluster.quotas.describe().items()} == {
        "{user=valid}": {"producer_byte_rate": 4096.0}
    }


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "NaN", "Infinity"])
def test_the_client_quotas_tool_reports_kafkas_refusal(
    sync_cluster: MockCluster, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    code = client_quotas_main(
        [
            "--bootstrap-server",
            sync_cluster.bootstrap_servers,
            "--alter",
            "--names",
            "client-id=app",
            "--add",
            f"request_percentage={text}",
            "--output",
            "json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert json.loads(out) == {
        "entity": {"client-id": "app"},
        "error": {
            "code": INVALID_REQUEST,
            "name": "INVALID_REQUEST",
            "message": "Quota request_percentage must be a finite number",
        },
    }
    assert sync_cluster.quotas.describe() == {}


def write_legacy_store(state_dir: Path, rows: list[tuple[Entity, str, float]]) -> None:
    """A quotas.sqlite as an older version wrote it, non-finite values included."""
    with MockCluster(brokers=1, config={"state.dir": str(state_dir)}):
        pass  # creates the file with the current schema
    db = sqlite3.connect(state_dir / "quotas.sqlite")
    with db:
        db.executemany(
            "INSERT INTO client_quotas (entity, quota_key, value) VALUES (?, ?, ?)",
            [
                (json.dumps(entity, sort_keys=True), key, struct.pack(">d", value))
                for entity, key, value in rows
            ],
        )
    db.close()


def test_a_nan_connection_rate_from_an_older_store_cannot_refuse_connections(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Loaded from an older store, the NaN rate on 127.0.0.1 (and an infinite request
    percentage) are dropped with a warning, the finite quotas kept; a consumer connects
    and reads normally; the next start finds the file already clean."""
    write_legacy_store(
        tmp_path,
        [
            ({"ip": "127.0.0.1"}, "connection_creation_rate", math.nan),
            ({"ip": None}, "connection_creation_rate", 50.0),
            ({"user": "alice"}, "request_percentage", math.inf),
            ({"user": "alice"}, "producer_byte_rate", 1024.0),
        ],
    )
    caplog.set_level(logging.WARNING, logger="quotas.store")
    with MockCluster(brokers=1, config={"state.dir": str(tmp_path)}) as cluster:
        stored = {e.display(): v for e, v in cluster.quotas.describe().items()}
        assert stored == {
            "{ip=<default>}": {"connection_creation_rate": 50.0},
            "{user=alice}": {"producer_byte_rate": 1024.0},
        }
        dropped = [r.getMessage() for r in caplog.records if r.name == "quotas.store"]
        assert len(dropped) == 2 and all("not a finite number" in m for m in dropped), dropped
        cluster.create_topic("after-nan")
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000, consumer_timeout_ms=5000
        )
        try:
            assert "after-nan" in consumer.topics()  # connected and answered
        finally:
            consumer.close()
    caplog.clear()
    with MockCluster(brokers=1, config={"state.dir": str(tmp_path)}) as cluster:
        assert len(cluster.quotas.describe()) == 2
    assert not [r for r in caplog.records if r.name == "quotas.store"]
