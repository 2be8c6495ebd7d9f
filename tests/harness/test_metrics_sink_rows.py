"""The metrics row of a request stays exact where the sink takes shortcuts (issue 20).

The sink keeps a connection's own columns (broker, listener, connection id, host,
principal, client id, client software) in the connection's memo while its principal,
client id and client software stay, buffers rows flat, computes ts, handler_us,
total_us, api_name and run_id in the writer thread over whole columns, and splits files
by broker and UTC day with integer arithmetic. Each test changes what the shortcut
depends on and checks the rows against what was sent: a principal set by SASL and
renewed by re-authentication (librdkafka), client software and client ids changed on
one connection (raw frames: no client does that), many connections in one file, and
rows on both sides of a UTC midnight (a batch built by hand: no client picks the
broker's clock).
"""

from __future__ import annotations

import datetime
import os
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import Producer
from kafka import KafkaProducer
from kafka.protocol.metadata import ApiVersionsRequest

from broker import MockCluster
from broker.harness import metrics_sink
from broker.harness.metrics_sink import (
    DAY_US,
    EPOCH_OFFSET_NS,
    NULL_INT,
    NULLABLE_PACKED,
    ORIGIN_COLUMNS,
    PACK,
    PACKED,
    ROW_VALUES,
    ROW_WIDTH,
    MetricsSink,
    Origin,
    _floor_divide,
)
from tests.harness.test_metrics_sink import (
    RawClient,
    address,
    metadata_request,
    metrics_cluster,
    read_rows,
    visible_files,
)
from tests.security.test_sasl import confluent_config, sasl_config

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def by_connection(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    found: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: r["seq"]):
        found[row["connection_id"]].append(row)
    return found


def test_rows_follow_the_principal_through_authentication_and_reauthentication(tmp_path: Path) -> None:
    """librdkafka over SCRAM with a session lifetime: on each connection the rows before
    its first SaslAuthenticate carry User:ANONYMOUS, the rest User:carol, and the
    re-authentications (a new principal object each, equal to the last) change nothing."""
    metrics = tmp_path / "metrics"
    config = sasl_config(tmp_path, **{"connections.max.reauth.ms": "500", "metrics.dir": str(metrics)})
    with MockCluster(config=config) as cluster:
        cluster.create_topic("renewed")
        cluster.credentials.upsert_user("carol", "carol-secret")
        producer = Producer(
            {**confluent_config(cluster, "SCRAM-SHA-256", "carol", "carol-secret"), "linger.ms": 0}
        )
        errors: list[object] = []
        deadline = time.monotonic() + 2.5  # several session lifetimes
        while time.monotonic() < deadline:
            producer.produce("renewed", b"x", on_delivery=lambda err, _m: errors.append(err) if err else None)
            producer.flush(5)
            time.sleep(0.05)
        assert not errors
    rows = read_rows(metrics)
    reauthenticated = 0
    for connection_rows in by_connection(rows).values():
        authenticated = False
        for row in connection_rows:
            assert row["principal"] == ("User:carol" if authenticated else "User:ANONYMOUS"), row
            assert row["listener"] == "SASL_PLAINTEXT"
            assert row["client_software_name"] == "confluent-kafka-python"
            if row["api_name"] == "SaslAuthenticate":
                reauthenticated += authenticated
                authenticated = True
    assert reauthenticated >= 2, "no re-authentication happened"
    assert sum(row["api_name"] == "Produce" and row["principal"] == "User:carol" for row in rows) >= 10


def test_rows_follow_client_software_and_client_id_changes_on_one_connection(tmp_path: Path) -> None:
    """Raw frames on one connection: the client software changes by ApiVersions v3 (one
    field at a time, with one-character strings, which CPython shares, so an unchanged
    field is the very same object) and the client id from request to request, null too."""
    steps: list[tuple[str | None, tuple[str, str] | None]] = [
        ("first", None),  # a metadata request under each client id; a software change otherwise
        ("first", ("a", "1")),
        ("first", None),
        ("first", ("b", "1")),  # only the name changes
        ("second", None),
        ("second", ("b", "2")),  # only the version
        (None, None),
        ("first", None),
        ("first", ("b", "2")),  # the same values again: new objects, equal
        ("first", None),
    ]
    expected: list[tuple[str | None, str | None, str | None]] = []
    software: tuple[str | None, str | None] = (None, None)
    with metrics_cluster(tmp_path) as cluster, RawClient(address(cluster), None) as client:
        for client_id, change in steps:
            client.client_id = client_id
            if change is None:
                client.call(metadata_request())
            else:
                sent = client.call(
                    ApiVersionsRequest[3](client_software_name=change[0], client_software_version=change[1])
                )
                assert sent.response.error_code == 0
                software = change
            expected.append((client_id, *software))
    [connection_rows] = by_connection(read_rows(tmp_path)).values()
    assert [
        (r["client_id"], r["client_software_name"], r["client_software_version"]) for r in connection_rows
    ] == (expected)
    assert [r["correlation_id"] for r in connection_rows] == list(range(1, len(steps) + 1))


def test_many_connections_in_one_file_keep_their_own_columns(tmp_path: Path) -> None:
    """kafka-python producers with different client ids on two brokers, one roll: each
    row carries its own connection's columns."""
    with metrics_cluster(tmp_path, brokers=2, metrics_roll_ms=600_000) as cluster:
        cluster.create_topic("spread", partitions=4)
        for name in ("p-one", "p-two", "p-three"):
            producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id=name, linger_ms=0)
            for i in range(8):
                producer.send("spread", f"{name}-{i}".encode(), partition=i % 4).get(timeout=10)
            producer.close()
    rows = read_rows(tmp_path)
    assert {r["client_id"] for r in rows} == {"p-one", "p-two", "p-three"}
    assert {r["broker_id"] for r in rows} == {0, 1}
    connections = by_connection(rows)
    assert len(connections) >= 6  # each producer: a bootstrap connection and one per broker
    for connection_rows in connections.values():
        assert len({(r["client_id"], r["broker_id"]) for r in connection_rows}) == 1
        assert {(r["listener"], r["client_host"], r["principal"]) for r in connection_rows} == {
            ("PLAINTEXT", "127.0.0.1", "User:ANONYMOUS")
        }
        assert {r["client_software_name"] for r in connection_rows} == {"kafka-python"}
    produce = [r for r in rows if r["api_name"] == "Produce"]
    assert len(produce) == 24 and all(r["record_count"] == 1 for r in produce)


def _origin(broker_id: int, connection_id: int) -> Origin:
    origin = Origin.__new__(Origin)
    origin.values = (broker_id, "PLAINTEXT", connection_id, "127.0.0.1", "User:ANONYMOUS", "c", None, None)
    return origin


def _buffered_row(received_us: int, origin: Origin, seq: int) -> list[Any]:
    """One buffered row received at `received_us` (UTC µs), as MetricsSink.request_done lays it out."""
    received_ns = received_us * 1000 - EPOCH_OFFSET_NS
    fields: dict[str, Any] = dict(
        received_ns=received_ns,
        api_key=3,
        api_version=12,
        correlation_id=seq,
        request_bytes=30,
        response_bytes=40,
        busy_ns=1_500,
        done_ns=received_ns + 2_999,
        throttle_time_ms=0,
        throttle_cause=0,  # "none"
        error_code=0,
        error_count=0,
        record_count=NULL_INT,
        partition_count=NULL_INT,
        acks=NULL_INT,
        seq=seq,
        quotas_on=0,
    )
    row: dict[str, Any] = dict.fromkeys(ROW_VALUES)
    row.update(packed=PACK(*(fields[name] for name in PACKED)), origin=origin)
    return [row[name] for name in ROW_VALUES]


def test_a_batch_across_midnight_and_brokers_splits_into_one_file_each(tmp_path: Path) -> None:
    """The writer's split by broker and UTC day (integer µs, no datetime per row): the
    µs before midnight and the one at midnight go to different days; order within a
    file is the order rows were added; each file is named after its first row."""
    midnight = int(datetime.datetime(2031, 3, 9, tzinfo=datetime.UTC).timestamp()) * 1_000_000
    brokers = [_origin(0, 1), _origin(2, 7)]
    times = [midnight - 1, midnight, midnight - 5, midnight + DAY_US - 1, midnight + 3, midnight - DAY_US]
    times.append(midnight + DAY_US)
    values: list[Any] = []
    for seq, received in enumerate(times):
        values += _buffered_row(received, brokers[seq % 2], seq)
    sink = MetricsSink(tmp_path)
    try:
        failed, files, size, error = sink._write(values, 4)
    finally:
        sink._executor.shutdown()
    assert (failed, error) == ([], None)
    expected: dict[tuple[int, str], list[int]] = defaultdict(list)
    for seq, received in enumerate(times):
        day = datetime.datetime.fromtimestamp(received / 1e6, datetime.UTC).date().isoformat()
        expected[(seq % 2 * 2, day)].append(seq)
    assert files == len(expected) == 5 and size > 0
    found = {}
    for path in visible_files(tmp_path):
        broker_part, date_part, name = path.relative_to(tmp_path).parts
        table_rows = pq.read_table(path).to_pylist()
        key = (int(broker_part.removeprefix("broker=")), date_part.removeprefix("date="))
        found[key] = [r["seq"] for r in table_rows]
        first_us = (table_rows[0]["ts"] - EPOCH) // datetime.timedelta(microseconds=1)
        assert name == f"part-{first_us:016d}-{os.getpid()}-000004.parquet", name
        for r in table_rows:
            assert r["total_us"] == 2 and r["handler_us"] == 1  # 2,999 and 1,500 ns, floored
            assert r["ts"] == EPOCH + datetime.timedelta(microseconds=times[r["seq"]])
            assert r["api_name"] == "Metadata" and r["run_id"] == metrics_sink.RUN_ID
            assert (r["record_count"], r["partition_count"], r["acks"]) == (None, None, None)
    assert found == dict(expected)


def test_floor_divide_is_pythons_floor_division() -> None:
    rng = random.Random(20)
    numbers = [0, 1, -1, 999, -999, 1000, -1000, 1001, -1001, 2**62, -(2**62)]
    numbers += [rng.randrange(-(2**62), 2**62) for _ in range(2000)]
    for divisor in (1000, DAY_US, 7):
        got = _floor_divide(pa.array(numbers, pa.int64()), divisor).to_pylist()
        assert got == [n // divisor for n in numbers], divisor


def test_the_buffered_row_and_origin_layouts_cover_the_schema() -> None:
    """Every schema column comes from the packed integers, the buffered row, an origin,
    or is derived, once."""
    from spark.schema import COLUMN_NAMES

    derived = {"ts", "api_name", "handler_us", "total_us", "run_id"}
    packed = set(PACKED) - {"received_ns", "busy_ns", "done_ns"}
    from_row = set(ROW_VALUES) - {"packed", "origin"}
    sources = [packed, from_row, set(ORIGIN_COLUMNS), derived]
    assert set().union(*sources) == set(COLUMN_NAMES)
    assert sum(len(source) for source in sources) == len(COLUMN_NAMES)
    assert len(ROW_VALUES) == ROW_WIDTH < 30  # a BUILD_TUPLE: more than 30 items goes through a list
    assert set(NULLABLE_PACKED) <= set(PACKED)


def test_quotas_on_follows_quota_changes_on_one_connection(tmp_path: Path) -> None:
    """quotas_on is remembered per connection while the quota managers' epoch stays:
    each quota set or removed between two requests of one connection shows in the
    next row (raw frames; the quotas through the cluster's API)."""
    changes: list[tuple[dict[str, float], list[str], int]] = [
        ({}, [], 0),
        ({"producer_byte_rate": 1e9}, [], 1),
        ({"request_percentage": 500.0}, [], 1 | 4),
        ({"consumer_byte_rate": 1e9, "controller_mutation_rate": 1e6}, [], 1 | 2 | 4 | 8),
        ({}, ["producer_byte_rate", "request_percentage"], 2 | 8),
        ({}, ["consumer_byte_rate", "controller_mutation_rate"], 0),
    ]
    with metrics_cluster(tmp_path) as cluster, RawClient(address(cluster), "quoted") as client:
        for values, removed, _ in changes:
            if values or removed:
                cluster.quotas.alter({"client-id": "someone-else"}, set=values, remove=removed)
            client.call(metadata_request())
            client.call(metadata_request())  # the second from the memo
    rows = sorted(read_rows(tmp_path), key=lambda r: r["seq"])
    assert [r["quotas_on"] for r in rows] == [bits for _, _, bits in changes for _ in range(2)]
