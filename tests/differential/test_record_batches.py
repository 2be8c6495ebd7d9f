"""The records family's normaliser and per-side values, without the reference: a fetch's
record bytes decode into batch headers and records, a broker's clock reads as
"<append time>" while a scenario's own timestamps stay, a trailing partial batch is its
size, and a Later field takes each side's own captured producer id."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder

from messages.registry import response_class
from tests.differential.model import Later, Step
from tests.differential.normalise import batches, normalise, tree
from tests.differential.scenarios.records import T0, batch, records


def test_a_batch_decodes_into_its_header_and_records() -> None:
    [decoded] = batches(batch(records(2), producer_id=7, epoch=1, sequence=4))
    records_of = decoded.pop("records")
    assert decoded == {
        "base_offset": 0,
        "last_offset_delta": 1,
        "partition_leader_epoch": 0,
        "attributes": 0,
        "producer_id": "<producer_id>",
        "producer_epoch": 1,
        "base_sequence": 4,
        "record_count": 2,
        "base_timestamp": T0,
        "max_timestamp": T0 + 1000,
        "crc_valid": True,
    }
    assert [(r["offset"], r["key"], r["value"], r["headers"]) for r in records_of] == [
        (0, "k0", "v0......", [["h", "x"]]),
        (1, "k1", "v1......", []),
    ]


def test_a_brokers_clock_is_append_time_and_a_partial_batch_its_size() -> None:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, timestamp=1_800_000_000_000, key=None, value=b"x", headers=[])
    late = bytes(builder.build())
    whole = batch(records(1))
    decoded = batches(whole + late + late[:20])
    assert decoded[1]["base_timestamp"] == decoded[1]["max_timestamp"] == "<append time>"
    assert decoded[1]["records"][0]["timestamp"] == "<append time>"
    assert decoded[2] == {"partial": 20}


def test_a_fetch_answer_compares_its_batches() -> None:
    Fetch = response_class(1)[12]
    Topic = Fetch.fields["responses"].data_class
    Partition = Topic.fields["partitions"].data_class
    answer = Fetch(
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            Topic(
                topic="t",
                partitions=[
                    Partition(
                        partition_index=0,
                        error_code=0,
                        high_watermark=2,
                        last_stable_offset=2,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=batch(records(2)),
                    )
                ],
            )
        ],
    )
    plain = normalise(tree(answer, 12))
    [decoded] = plain["responses"]["t"]["partitions"]["0"]["records"]
    assert decoded["record_count"] == 2 and decoded["base_timestamp"] == T0


def test_a_later_field_takes_each_sides_producer() -> None:
    step = Step(
        26,  # EndTxn
        3,
        {
            "transactional_id": "x",
            "producer_id": Later(lambda c: c["producer_id"], "<producer id>"),
            "producer_epoch": Later(lambda c: c["producer_epoch"], "<epoch>"),
            "committed": True,
        },
    )
    one = step.build({"producer_id": 11, "producer_epoch": 2})
    other = step.build({"producer_id": 4000, "producer_epoch": 0})
    assert (one.producer_id, one.producer_epoch, other.producer_id) == (11, 2, 4000)
    assert '"producer_id": "<producer id>"' in step.describe()
