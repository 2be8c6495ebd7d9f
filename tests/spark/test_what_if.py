"""The quota what-if (issue 21): recorded requests replayed under proposed quotas.

Fast tests check the proposal formats, the grouping and the replay's time model on
hand-made rows. Slow ones prove it against the broker itself: a run recorded under
quotas replays to its own throttle times exactly, row for row; a run recorded without
quotas predicts, within 15 %, the throttle time and throughput of the same workload run
for real under a 1 MiB/s producer quota (per client library); a user default in a
proposal changes exactly the clients Kafka's precedence says it should.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from quotas.callback import ANONYMOUS, ClientQuotaType
from quotas.entity import QuotaEntity
from quotas.manager import ClientQuotaManager
from quotas.sensor import WindowConfig
from spark.quota_replay import (
    CAUSE_NAMES,
    INPUT_COLUMNS,
    QUOTA_TYPES,
    ProposalError,
    ReplayConfig,
    apply_changes,
    assign_groups,
    proposed_limits,
    read_proposal,
    replay_columns,
)
from tests.conftest import FAST
from tests.spark_session import spark_fixture  # noqa: F401

KiB = 1024
MiB = 1024 * KiB
RUN = 1_700_000_000_000_000  # a run_id


# -- proposals ---------------------------------------------------------------------------


def test_proposals_in_the_control_planes_json_and_a_state_dirs_sqlite(tmp_path: Path) -> None:
    from quotas.store import SqliteQuotaStorage

    state = tmp_path / "state"
    storage = SqliteQuotaStorage(state)
    storage.write(
        [
            (QuotaEntity({"user": "alice"}), "producer_byte_rate", 1000.0),
            (QuotaEntity({"user": None, "client-id": None}), "request_percentage", 25.0),
            (QuotaEntity({"ip": None}), "connection_creation_rate", 5.0),
        ]
    )
    storage.close()
    today = read_proposal(state / "quotas.sqlite")
    assert read_proposal(state) == today  # the state dir itself names its quotas.sqlite
    # POST /v1/quotas bodies (a list, applied in order) and GET /v1/quotas entries.
    post = tmp_path / "post.json"
    post.write_text(
        json.dumps(
            [
                {
                    "entity": {"user": "alice"},
                    "set": {"consumer_byte_rate": 2000},
                    "remove": ["producer_byte_rate"],
                },
                {"entity": {"client-id": "app"}, "set": {"producer_byte_rate": 300}, "validate_only": True},
                {"entity": {"user": None}, "set": {"producer_byte_rate": 500}},
            ]
        )
    )
    get = tmp_path / "get.json"
    get.write_text(json.dumps({"entity": {"client-id": "etl"}, "values": {"producer_byte_rate": 700.0}}))
    configs = apply_changes([*today, *read_proposal(post), *read_proposal(get)])
    assert configs == {
        QuotaEntity({"user": "alice"}): {"consumer_byte_rate": 2000.0},
        QuotaEntity({"user": None, "client-id": None}): {"request_percentage": 25.0},
        QuotaEntity({"ip": None}): {"connection_creation_rate": 5.0},
        QuotaEntity({"user": None}): {"producer_byte_rate": 500.0},
        QuotaEntity({"client-id": "etl"}): {"producer_byte_rate": 700.0},
    }
    config = ReplayConfig.of(configs, samples=3, window_seconds=2)
    assert config.window == WindowConfig(3, 2000)
    assert config.entities() == configs
    callback = config.callback()
    assert callback.has_quotas(ClientQuotaType.PRODUCE) and not callback.has_quotas(
        ClientQuotaType.CONTROLLER_MUTATION
    )


@pytest.mark.parametrize(
    "body, message",
    [
        ({"entity": {"user": "a"}, "set": {"producer_byte_rate": 0}}, "above 0"),
        ({"entity": {"user": "a"}, "set": {"connection_creation_rate": 5}}, "not a quota key"),
        ({"entity": {"ip": "1.2.3.4"}, "set": {"producer_byte_rate": 5}}, "not a quota key"),
        ({"entity": {"team": "a"}, "set": {"producer_byte_rate": 5}}, "unknown entity type"),
        ({"entity": {"user": ""}, "set": {"producer_byte_rate": 5}}, "non-empty name"),
        ({"entity": {"user": "a", "ip": None}, "set": {}}, "ip entity"),
        ({"set": {"producer_byte_rate": 5}}, '"entity"'),
        ({"entity": {"user": "a"}, "sett": {}}, "unknown fields"),
        # Refused by the control plane (Kafka's types: LONG and INT keys are whole numbers).
        ({"entity": {"user": "a"}, "set": {"producer_byte_rate": 1048576.5}}, "cannot be a fractional value"),
        (
            {"entity": {"ip": None}, "values": {"connection_creation_rate": 2.5}},
            "cannot be a fractional value",
        ),
        ({"entity": {"client-id": None}, "set": {"consumer_byte_rate": 1e20}}, "too large for a LONG"),
    ],
)
def test_proposal_errors_say_what_is_wrong(tmp_path: Path, body: dict[str, Any], message: str) -> None:
    """A proposal the HTTP control plane would refuse is refused, with the reason."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(body))
    with pytest.raises(ProposalError, match=message):
        read_proposal(path)
    with pytest.raises(ProposalError, match="neither"):
        (tmp_path / "junk").write_text("{not json")
        read_proposal(tmp_path / "junk")


@pytest.mark.parametrize(
    "entity, key, value",
    [
        ({"user": "a"}, "producer_byte_rate", 1048576.5),
        ({"client-id": None}, "consumer_byte_rate", 1e20),
        ({"ip": None}, "connection_creation_rate", 2.5),
        ({"ip": None}, "connection_creation_rate", float(2**31)),
        ({"user": "a"}, "producer_byte_rate", float(2**63 - 1)),
        ({"user": "a"}, "request_percentage", 0.5),
        ({"user": "a"}, "controller_mutation_rate", 1e300),
    ],
)
def test_proposal_value_rules_are_the_control_planes(
    tmp_path: Path, entity: dict[str, str | None], key: str, value: float
) -> None:
    """A value the control plane refuses (Kafka's LONG and INT keys take whole numbers in
    range) is refused in a proposal with the same message; one it takes is taken."""
    from quotas.entity import QuotaEntity
    from quotas.validation import QuotaError, allowed_keys, validate_value

    refused: str | None = None
    try:
        validate_value(allowed_keys(QuotaEntity(entity)), key, value)
    except QuotaError as exc:
        refused = str(exc)
    path = tmp_path / "proposal.json"
    path.write_text(json.dumps({"entity": entity, "set": {key: value}}))
    if refused is None:
        read_proposal(path)
    else:
        with pytest.raises(ProposalError, match=re.escape(refused)):
            read_proposal(path)


def test_what_if_command_line_refuses_bad_arguments_before_starting_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spark import cli

    good = tmp_path / "good.json"
    good.write_text(json.dumps({"entity": {"user": None}, "set": {"producer_byte_rate": 1000}}))
    base = ["what-if", "--metrics", str(tmp_path), "--out", str(tmp_path / "out")]
    for argv, message in (
        ([*base, "--quotas", str(tmp_path / "missing.json")], "--quotas"),
        ([*base, "--quotas", str(good), "--window", "soon"], "bad window"),
        ([*base, "--quotas", str(good), "--model", "half"], "invalid choice"),
        ([*base, "--quotas", str(good), "--quota-window-num", "0"], "at least 1"),
        ([*base, "--quotas", str(good), "--since", "yesterday"], "bad time"),
        (base, "--quotas"),
    ):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2, argv
        assert message in capsys.readouterr().err, argv
    # A metrics directory that does not exist: said at once, without starting Spark (which
    # logs a Java stack trace before its own PATH_NOT_FOUND), for the report too.
    missing = str(tmp_path / "missing")
    for argv, prog in (
        (["what-if", "--metrics", missing, "--quotas", str(good), "--out", str(tmp_path / "out")], "what-if"),
        (["--metrics", missing, "--out", str(tmp_path / "out")], ""),
        (["--metrics", f"file://{missing}", "--out", str(tmp_path / "out")], ""),
    ):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert f"kafka-mock-report{' ' + prog if prog else ''}: --metrics" in err, err
        assert "no such file or directory" in err and "Spark" not in err, err
    assert not (tmp_path / "out").exists()
    # An output "directory" that is a file: the same (it was a FileExistsError traceback).
    (tmp_path / "file").write_text("")
    for argv in (
        ["what-if", "--metrics", str(tmp_path), "--quotas", str(good), "--out", str(tmp_path / "file")],
        ["--metrics", str(tmp_path), "--out", str(tmp_path / "file")],
    ):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "--out" in err and "not a directory" in err and "Spark" not in err, err


# -- groups and the time model on hand-made rows ------------------------------------------


def test_groups_join_identities_that_share_a_sensor_or_a_connection() -> None:
    config = ReplayConfig.of({QuotaEntity({"user": None}): {"producer_byte_rate": 1000.0}})
    identities = [
        (0, RUN, 1, "User:alice", "a"),
        (0, RUN, 2, "User:alice", "b"),  # same user: one sensor (a default user: per user)
        (0, RUN, 3, "User:bob", "a"),
        (0, RUN, 4, "User:ANONYMOUS", "c"),  # a SASL connection before and after login
        (0, RUN, 4, "User:carol", "c"),
        (1, RUN, 9, "User:alice", "a"),  # another broker: its own sensors
    ]
    groups = assign_groups(identities, config)
    assert groups[identities[0]] == groups[identities[1]]
    assert groups[identities[3]] == groups[identities[4]]
    assert len({groups[i] for i in (identities[0], identities[2], identities[3], identities[5])}) == 4
    # No quota at all: every connection alone.
    assert len(set(assign_groups(identities, ReplayConfig.of({})).values())) == 5


def columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {name: [r.get(name) for r in rows] for name in INPUT_COLUMNS}


def produce_rows(
    count: int, every_ms: int, size: int, connection: int = 1, **extra: Any
) -> list[dict[str, Any]]:
    """A producer recorded without quotas (schema 2: quotas_on 0): `count` requests of
    `size` bytes, one every `every_ms`, each handled in 2 ms."""
    return [
        {
            "ts_us": RUN + i * every_ms * 1000,
            "broker_id": 0,
            "run_id": RUN,
            "connection_id": connection,
            "seq": i,
            "principal": "User:ANONYMOUS",
            "client_id": "app",
            "api_key": 0,
            "api_version": 9,
            "acks": 1,
            "error_code": 0,
            "request_bytes": size,
            "response_bytes": 60,
            "handler_us": 1500,
            "total_us": 2000,
            "throttle_time_ms": 0,
            "throttle_cause": "none",
            "quotas_on": 0,
            **extra,
        }
        for i in range(count)
    ]


def test_closed_loop_shifts_a_connection_by_its_mutes_and_open_loop_does_not() -> None:
    rows = produce_rows(40, every_ms=100, size=50_000)  # 500 kB/s
    quota = {QuotaEntity({"client-id": "app"}): {"producer_byte_rate": 100_000.0}}
    opened = replay_columns(columns(rows), ReplayConfig.of(quota, samples=3, closed_loop=False))
    closed = replay_columns(columns(rows), ReplayConfig.of(quota, samples=3))

    # Open loop: every request at its time, throttled as the broker's own manager would.
    manager = ClientQuotaManager(
        ClientQuotaType.PRODUCE, ReplayConfig.of(quota).callback(), WindowConfig(3, 1000)
    )
    sensors = manager.sensors_for(ANONYMOUS, "app", 0)
    expected = [manager.record(sensors, 50_000, (r["ts_us"] + 2000) // 1000) for r in rows]
    assert opened["predicted_throttle_ms"] == expected
    assert opened["predicted_ts_us"] == [r["ts_us"] for r in rows]
    assert sum(expected) > 10_000 and expected[0] == 0  # a first burst passes, then throttles

    # Closed loop: each request comes later by every mute before it; the gaps are kept.
    shift = 0
    for i, r in enumerate(rows):
        assert closed["predicted_ts_us"][i] == r["ts_us"] + shift
        assert closed["shift_ms"][i] * 1000 == shift
        shift += closed["predicted_throttle_ms"][i] * 1000
    # Spread out, the same bytes need far less throttling than in the open loop, and
    # they take about as long as the quota allows: 2 MB at 100 kB/s, less the first burst.
    assert 0 < sum(closed["predicted_throttle_ms"]) < sum(expected) / 10
    span_s = (closed["predicted_ts_us"][-1] - closed["predicted_ts_us"][0]) / 1e6
    assert 0.9 <= 40 * 50_000 / span_s / 100_000 <= 1.2
    assert CAUSE_NAMES.index("produce") in closed["predicted_cause"]
    assert set(closed["quota_type"]) == {QUOTA_TYPES.index("produce")}
    assert proposed_limits([("User:ANONYMOUS", "app")], ReplayConfig.of(quota)) == [
        ("User:ANONYMOUS", "app", "produce", 100_000.0, "", "app", "{client-id=app}"),
        ("User:ANONYMOUS", "app", "fetch", None, "", "", ""),
        ("User:ANONYMOUS", "app", "request", None, "", "", ""),
    ]

    # No quota in the proposal: nothing throttled, nothing moves.
    free = replay_columns(columns(rows), ReplayConfig.of({}))
    assert set(free["predicted_throttle_ms"]) == {0} and free["predicted_ts_us"] == [r["ts_us"] for r in rows]


def test_a_throttle_the_proposal_removes_brings_later_requests_sooner() -> None:
    """Recorded under a quota (exact inputs), replayed without it: the recorded mutes go,
    and the connection's later requests come that much sooner (never before the one
    they followed)."""
    rows = produce_rows(5, every_ms=500, size=1000)
    for r in rows:
        r.update(quotas_on=1, quota_ms=r["ts_us"] // 1000 + 1, quota_bytes=1000.0)
    rows[1].update(throttle_time_ms=400, throttle_cause="produce")
    rows[3].update(throttle_time_ms=900, throttle_cause="produce")
    out = replay_columns(columns(rows), ReplayConfig.of({}))
    assert out["predicted_throttle_ms"] == [0] * 5
    assert out["shift_ms"] == [0, 0, -400, -400, -900]  # the 900 ms mute: clamped at the gap
    # A forced (fault) throttle is not the proposal's to remove.
    rows[1].update(throttle_cause="none")
    assert replay_columns(columns(rows), ReplayConfig.of({}))["predicted_throttle_ms"][1] == 400


# -- Spark: a recorded run replays exactly -------------------------------------------------


def share_fetch_all(cluster: Any, topic: str, count: int) -> None:
    """A share group member (raw ShareFetch, client id "sharer") reads `count` records of
    `topic`, accepting each fetch's records in the next: under the default-user fetch
    quota, as a share fetch is measured as a fetch."""
    from messages.registry import request_class
    from protocol.api_keys import ApiKey
    from tests.support.wire import round_trip

    fetch = request_class(ApiKey.SHARE_FETCH)[2]
    topic_id = cluster.groups.cluster.topics[topic].topic_id
    partitions = range(len(cluster.groups.cluster.topics[topic].partitions))
    cluster.groups.cluster.group_configs["sharers"] = {"share.auto.offset.reset": "earliest"}
    socks = {}
    for node in {p.leader for p in cluster.groups.cluster.topics[topic].partitions}:
        endpoint = cluster.broker(node).advertised_endpoint("PLAINTEXT")
        socks[node] = socket.create_connection((endpoint.host, endpoint.port), timeout=30)
    leaders = {p.index: p.leader for p in cluster.groups.cluster.topics[topic].partitions}
    epochs = dict.fromkeys(socks, 0)
    acks: dict[int, list[Any]] = {}
    got, deadline, correlation = 0, time.monotonic() + 60, 0
    while got < count and time.monotonic() < deadline:
        for node, sock in socks.items():
            mine = [p for p in partitions if leaders[p] == node]
            batch = fetch.FetchTopic.FetchPartition.AcknowledgementBatch
            wanted = [
                fetch.FetchTopic.FetchPartition(
                    partition_index=p,
                    acknowledgement_batches=[
                        batch(first_offset=f, last_offset=last, acknowledge_types=[1])
                        for f, last in acks.pop(p, [])
                    ]
                    if epochs[node]
                    else [],
                )
                for p in mine
            ]
            correlation += 1
            answer = round_trip(
                sock,
                fetch(
                    group_id="sharers", member_id="sharer-1", share_session_epoch=epochs[node], max_wait_ms=100,
                    min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500, share_acquire_mode=0,
                    is_renew_ack=False, topics=[fetch.FetchTopic(topic_id=topic_id, partitions=wanted)],
                    forgotten_topics_data=[],
                ),
                correlation,
                "sharer",
            )  # fmt: skip
            assert answer.error_code == 0, answer
            epochs[node] += 1
            for t in answer.responses:
                for p in t.partitions:
                    for r in p.acquired_records:
                        acks.setdefault(p.partition_index, []).append((r.first_offset, r.last_offset))
                        got += r.last_offset - r.first_offset + 1
    for sock in socks.values():
        sock.close()
    assert got >= count


def record_under_quotas(metrics: Path, state: Path) -> None:
    """Two brokers, quotas set before any client connects (kept in state/quotas.sqlite),
    and at once: a librdkafka producer and a kafka-python producer under producer quotas,
    a kafka-python acks=0 producer under the default client-id quota, a librdkafka
    consumer under a default-user fetch quota, and a client polling metadata under a
    request_percentage quota (which puts every request of every client on the request
    quota's sensors)."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaProducer

    from broker import MockCluster

    config = {
        **FAST,
        "metrics.dir": str(metrics),
        "state.dir": str(state),
        "metrics.roll.ms": "500",
        "quota.window.num": "3",
    }
    with MockCluster(brokers=2, config=config) as cluster:
        cluster.create_topic("orders", partitions=4)
        cluster.quotas.alter({"client-id": "ck"}, set={"producer_byte_rate": 300_000})
        cluster.quotas.alter({"client-id": "kp"}, set={"producer_byte_rate": 150_000})
        cluster.quotas.alter({"client-id": None}, set={"producer_byte_rate": 400_000})
        cluster.quotas.alter({"user": None}, set={"consumer_byte_rate": 400_000})
        cluster.quotas.alter({"client-id": "meta"}, set={"request_percentage": 0.02})
        bootstrap = cluster.bootstrap_servers

        def librdkafka_producer() -> None:
            producer = Producer({"bootstrap.servers": bootstrap, "client.id": "ck", "linger.ms": 5})
            for _ in range(2500):
                while True:
                    try:
                        producer.produce("orders", b"c" * 1000)
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
            assert producer.flush(120) == 0

        def kafka_python_producer(client_id: str, acks: int, count: int) -> None:
            producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, acks=acks, linger_ms=2)
            for _ in range(count):
                producer.send("orders", b"k" * 1000)
            producer.flush()
            producer.close()

        def metadata_poller() -> None:
            admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "meta"})
            for _ in range(40):
                admin.list_topics(timeout=30)

        workers = [
            threading.Thread(target=librdkafka_producer),
            threading.Thread(target=kafka_python_producer, args=("kp", 1, 1200)),
            threading.Thread(target=kafka_python_producer, args=("fire", 0, 1500)),
            threading.Thread(target=metadata_poller),
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "readers",
                "client.id": "reader",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["orders"])
        got, deadline = 0, time.monotonic() + 60
        while got < 4000 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                got += 1
        consumer.close()
        share_fetch_all(cluster, "orders", 1000)


@pytest.mark.slow
def test_replaying_a_recorded_run_under_its_own_quotas_gives_every_recorded_throttle(
    spark: Any, tmp_path: Path
) -> None:
    import pyarrow.dataset as ds

    from spark import what_if

    metrics, state = tmp_path / "metrics", tmp_path / "state"
    record_under_quotas(metrics, state)
    recorded = ds.dataset(metrics, format="parquet", partitioning="hive").to_table().to_pylist()
    causes = {r["throttle_cause"] for r in recorded if r["throttle_time_ms"] > 0}
    assert {"produce", "fetch", "request"} <= causes, causes  # every replayed quota type throttled
    shared = [r for r in recorded if r["api_name"] == "ShareFetch"]
    assert any(r["throttle_cause"] == "fetch" for r in shared)  # share fetches are fetches to quotas
    assert any(r["acks"] == 0 and r["quota_bytes"] and r["request_time"] is None for r in recorded)
    assert all(r["quotas_on"] == 7 and r["seq"] is not None for r in recorded)
    print(
        f"\nrecorded {len(recorded)} requests, {sum(r['throttle_time_ms'] > 0 for r in recorded)} throttled"
    )

    for model in ("closed", "open"):
        out = tmp_path / f"out-{model}"
        result = what_if(
            str(metrics), str(state / "quotas.sqlite"), str(out), spark=spark, model=model, window_num=3,
            progress=lambda _: None,
        )  # fmt: skip
        assert result.rows == len(recorded)
        rows = spark.read.parquet(str(out / "requests")).collect()
        assert len(rows) == len(recorded)
        wrong = [r.asDict() for r in rows if r["predicted_throttle_ms"] != r["observed_throttle_ms"]]
        assert not wrong, wrong[:5]
        assert all(r["predicted_ts"] == r["ts"] for r in rows)  # nothing moved
        throttled = [r for r in rows if r["observed_throttle_ms"] > 0]
        assert len(throttled) >= 20
        assert all(r["predicted_cause"] == r["observed_cause"] for r in throttled)

        # Quotas are per broker: an entity's rates are summed over the brokers its requests
        # went to, and the page says how many, against limit x brokers.
        entities = spark.read.parquet(str(out / "entities")).collect()
        page = (out / "index.html").read_text(encoding="utf-8")
        api_of = {"produce": {0}, "fetch": {1, 78}, "request": None}  # 78: ShareFetch
        for r in entities:
            keys = api_of[r["quota_type"]]
            expected = {
                x["broker_id"]
                for x in recorded
                if (x["principal"], x["client_id"]) == (r["principal"], r["client_id"])
                and (keys is None or x["api_key"] in keys)
            }
            assert r["brokers"] == len(expected), r
            if r["rank"] <= 8 and r["brokers"] > 1 and r["proposed_limit"] is not None:
                assert f"its requests went to {r['brokers']} brokers: " in page
        assert any(r["brokers"] == 2 for r in entities)
        assert "proposed limit (per broker)" in page
        # The page's total counts each request once, though with a request quota in play
        # a produce or fetch is in its entity's produce or fetch row and in its request row.
        assert {r["quota_type"] for r in entities} == {"produce", "fetch", "request"}
        total = sum(r["throttle_time_ms"] for r in recorded)
        assert f"throttled {total:,} ms as recorded, {total:,} ms as predicted." in page


# -- Spark: precedence --------------------------------------------------------------------

ENTITIES = [  # (principal, client id): every one produces 50 kB/s on its own connection
    ("User:alice", "app-a"),
    ("User:alice", "app-b"),
    ("User:bob", "app-a"),
    ("User:carol", "etl"),
    ("User:ANONYMOUS", "app-a"),
    ("User:dave", "special"),
]


def write_traffic(root: Path, seconds: int = 20) -> Path:
    """Recorded without quotas (schema 2): each entity sends 5,000-byte produce requests
    every 100 ms on its own connection to broker 0."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    from spark.schema import COLUMN_NAMES, arrow_schema

    start = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
    rows = []
    for step in range(seconds * 10):
        for number, (principal, client_id) in enumerate(ENTITIES):
            row: dict[str, Any] = dict.fromkeys(COLUMN_NAMES)
            row.update(
                ts=start + dt.timedelta(milliseconds=100 * step + 7 * number),
                broker_id=0,
                listener="PLAINTEXT",
                connection_id=number + 1,
                client_host="127.0.0.1",
                principal=principal,
                client_id=client_id,
                api_key=0,
                api_name="Produce",
                api_version=9,
                correlation_id=step,
                request_bytes=5000,
                response_bytes=60,
                handler_us=900,
                total_us=1200,
                throttle_time_ms=0,
                throttle_cause="none",
                error_code=0,
                error_count=0,
                acks=1,
                run_id=RUN,
                seq=len(rows),
                quotas_on=0,
            )
            rows.append(row)
    path = root / "broker=0" / "date=2024-05-01" / "part-0.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=arrow_schema()), path)
    return root


def run_cli(argv: list[str]) -> str:
    from spark import cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(argv) == 0, err.getvalue()
    return err.getvalue()


@pytest.mark.slow
def test_a_user_default_changes_exactly_the_clients_precedence_gives_it(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    metrics = write_traffic(tmp_path / "metrics")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(
        json.dumps(
            [
                {"entity": {"user": "alice"}, "values": {"producer_byte_rate": 50_000}},  # level 3
                {"entity": {"client-id": "etl"}, "values": {"producer_byte_rate": 50_000}},  # level 7
                {
                    "entity": {"user": "dave", "client-id": "special"},
                    "values": {"producer_byte_rate": 1e9},
                },  # 1
            ]
        )
    )
    default_user = tmp_path / "default-user.json"
    default_user.write_text(json.dumps({"entity": {"user": None}, "set": {"producer_byte_rate": 20_000}}))
    before, after = tmp_path / "before", tmp_path / "after"
    common = ["--metrics", str(metrics), "--quota-window-num", "3"]
    run_cli(["what-if", *common, "--quotas", str(baseline), "--out", str(before)])
    err = run_cli(
        ["what-if", *common, "--quotas", str(baseline), "--quotas", str(default_user), "--out", str(after)]
    )
    assert "using the active Spark session" in err and "1,200 requests" in err and "replayed" in err

    def by_entity(out: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
        found: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in sorted(pq.read_table(out / "requests").to_pylist(), key=lambda r: r["seq"]):
            found.setdefault((r["principal"], r["client_id"]), []).append(r)
        return found

    # --until: the first 10 s only, replayed from empty sensors.
    half = tmp_path / "half"
    err = run_cli(
        ["what-if", *common, "--quotas", str(baseline), "--until", "2024-05-01T12:00:10Z", "--out", str(half)]
    )
    assert "600 requests" in err and pq.read_table(half / "requests").num_rows == 600

    old, new = by_entity(before), by_entity(after)
    changed = {entity for entity in ENTITIES if old[entity] != new[entity]}
    # Level 6 (default user) outranks the client-id quota (level 7) and nothing; a user's
    # own quota (level 3) and a <user, client-id> one (level 1) outrank it.
    assert changed == {("User:bob", "app-a"), ("User:carol", "etl"), ("User:ANONYMOUS", "app-a")}
    limits = {
        e: (rows[0]["proposed_limit"], rows[0]["limit_entity"], rows[0]["proposed_user"])
        for e, rows in new.items()
    }
    assert limits == {
        ("User:alice", "app-a"): (50_000, "{user=alice}", "alice"),
        ("User:alice", "app-b"): (50_000, "{user=alice}", "alice"),  # one sensor for alice's two clients
        ("User:bob", "app-a"): (20_000, "{user=<default>}", "bob"),  # each user its own allowance
        ("User:carol", "etl"): (20_000, "{user=<default>}", "carol"),
        ("User:ANONYMOUS", "app-a"): (20_000, "{user=<default>}", "ANONYMOUS"),
        ("User:dave", "special"): (1e9, "{user=dave, client-id=special}", "dave"),
    }
    assert old[("User:bob", "app-a")][0]["proposed_limit"] is None
    assert old[("User:carol", "etl")][0]["limit_entity"] == "{client-id=etl}"
    throttle = {e: sum(r["predicted_throttle_ms"] for r in rows) for e, rows in new.items()}
    assert throttle[("User:dave", "special")] == 0
    assert throttle[("User:alice", "app-a")] > 0  # two clients at 50 kB/s on a 50 kB/s user quota
    for entity in changed:
        assert throttle[entity] > sum(r["predicted_throttle_ms"] for r in old[entity])

    # Entities ranked by how much their throttle time changes from the recording's, the
    # ones changing most first, on the page too, each with its plot.
    entities = sorted(pq.read_table(after / "entities").to_pylist(), key=lambda r: r["rank"])
    changes = [abs(r["throttle_ms_change"]) for r in entities]
    assert changes == sorted(changes, reverse=True) and changes[0] > 0
    assert (entities[-1]["principal"], entities[-1]["throttle_ms_change"]) == ("User:dave", 0)
    for r in entities:
        assert r["throttle_ms_change"] == throttle[r["principal"], r["client_id"]]  # recorded: 0
    page = (after / "index.html").read_text(encoding="utf-8")
    assert page.index("User:bob / app-a") < page.index("User:dave / special")
    assert "closed loop" in page and "{user=&lt;default&gt;}" in page
    for name in ("entity_01.png", "entity_02.png", "entity_03.png"):
        assert (after / name).stat().st_size > 5000
        assert f"src='{name}'" in page


@pytest.mark.slow
def test_what_if_of_no_requests_and_of_a_missing_path(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spark import cli

    (tmp_path / "metrics" / "broker=1").mkdir(parents=True)
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps({"entity": {"user": None}, "set": {"producer_byte_rate": 1000}}))
    argv = ["what-if", "--quotas", str(proposal), "--out", str(tmp_path / "out")]
    assert cli.main([*argv, "--metrics", str(tmp_path / "metrics")]) == 0
    assert "0 requests" in capsys.readouterr().err
    assert spark.read.parquet(str(tmp_path / "out" / "requests")).count() == 0
    assert "no entity" in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert cli.main([*argv, "--metrics", str(tmp_path / "missing")]) == 2
    assert "kafka-mock-report what-if:" in capsys.readouterr().err


# -- Spark: predictions against the real thing ----------------------------------------------

PREDICTED_TOTAL = 24 * MiB  # produced flat out: a 10 MiB first burst, then 14 s at 1 MiB/s
MESSAGE = 10_000


def produce_flat_out(library: str, bootstrap: str) -> None:
    """The workload: PREDICTED_TOTAL bytes of MESSAGE-byte values, as fast as the client goes."""
    payload = b"v" * MESSAGE
    count = PREDICTED_TOTAL // MESSAGE
    if library == "confluent-kafka":
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap, "client.id": "app", "linger.ms": 5})
        for _ in range(count):
            while True:
                try:
                    producer.produce("load", payload)
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        assert producer.flush(300) == 0
    else:
        from kafka import KafkaProducer

        sender = KafkaProducer(bootstrap_servers=bootstrap, client_id="app", linger_ms=5)
        for _ in range(count):
            sender.send("load", payload)
        sender.flush()
        sender.close()


def run_workload(library: str, metrics: Path, quota: float | None) -> None:
    from broker import MockCluster

    with MockCluster(
        brokers=1, config={**FAST, "metrics.dir": str(metrics), "metrics.roll.ms": "500"}
    ) as cluster:
        cluster.create_topic("load", partitions=3)
        if quota is not None:
            cluster.quotas.alter({"client-id": "app"}, set={"producer_byte_rate": quota})
        produce_flat_out(library, cluster.bootstrap_servers)


def produce_figures(rows: list[Any], ts: str, throttle: str) -> tuple[int, float]:
    """(total throttle ms, bytes/s of the producer) over the span from its first request to the
    end of its last throttle: when the quota lets it go on. Ending at the last request instead
    makes the figure depend on how the client batched its final bytes while muted, which the
    closed-loop replay keeps as recorded."""
    mine = [r for r in rows if r["api_key"] == 0 and r["client_id"] == "app"]
    start = min(r[ts].timestamp() for r in mine)
    end = max(r[ts].timestamp() + r[throttle] / 1000 for r in mine)
    return sum(r[throttle] for r in mine), sum(r["request_bytes"] for r in mine) / (end - start)


@pytest.mark.slow
@pytest.mark.parametrize("library", ["confluent-kafka", "kafka-python"])
def test_prediction_matches_the_workload_run_for_real_under_the_quota(
    spark: Any, tmp_path: Path, library: str
) -> None:
    from spark import what_if

    free, capped = tmp_path / "free", tmp_path / "capped"
    run_workload(library, free, None)
    run_workload(library, capped, MiB)
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps({"entity": {"client-id": "app"}, "set": {"producer_byte_rate": MiB}}))
    what_if(str(free), str(proposal), str(tmp_path / "out"), spark=spark, progress=lambda _: None)

    predicted = produce_figures(spark.read.parquet(str(tmp_path / "out" / "requests")).collect(),
                                "predicted_ts", "predicted_throttle_ms")  # fmt: skip
    real = produce_figures(spark.read.parquet(str(capped)).collect(), "ts", "throttle_time_ms")
    print(
        f"\n{library}: predicted throttle {predicted[0]} ms, {predicted[1] / MiB:.3f} MiB/s;"
        f" real {real[0]} ms, {real[1] / MiB:.3f} MiB/s;"
        f" throttle {real[0] / predicted[0] - 1:+.1%}, throughput {real[1] / predicted[1] - 1:+.1%}"
    )
    assert predicted[0] > 5000  # the quota binds
    assert abs(real[0] - predicted[0]) <= 0.15 * predicted[0]
    assert abs(real[1] - predicted[1]) <= 0.15 * predicted[1]
