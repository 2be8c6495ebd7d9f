"""What a consumer reads back: Produce (v3-v12, acks 0/1/-1) of record batches built with
kafka-python's builder, then Fetch (read_uncommitted and read_committed), ListOffsets
(earliest, latest, max timestamp, by timestamp) and DeleteRecords, compared after decoding
each fetched batch (tests/differential/normalise.py `batches`: offsets, producer id and
epoch, sequence, attributes, timestamps, records).

Idempotent producers (InitProducerId, then sequences: in order, duplicate, out of order,
an epoch bumped and an old one fenced) and transactions (AddPartitionsToTxn, EndTxn abort
and commit, the markers' offsets and the aborted ranges of a read_committed fetch) put
each side's own producer id into its requests (model.Later). Invalid batches (bad CRC,
magic 0/1/3, empty, truncated), unknown topics and partitions, and batches above
max.message.bytes are refused. LogAppendTime is compared as "the broker's clock" on both
sides (normalise.CLIENT_TIME_LIMIT), CreateTime timestamps exactly.

Not here: compaction results. Kafka's cleaner runs on its own schedule (a segment rolls
on the next append after segment.ms, the cleaner thread wakes every
log.cleaner.backoff.ms, a dirty ratio is estimated from segment sizes), so when keys are
overwritten in a fetch depends on timing no request can wait for; a settle loop could
only compare "eventually" on Kafka with "at once" on the mock.

Every topic is the scenario's own, so scenarios share the family's clusters freely."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.differential.model import Later, Scenario, Step

FAMILY = "records"
PRODUCE, FETCH, LIST_OFFSETS, METADATA, CREATE = 0, 1, 2, 3, 19
DELETE_RECORDS, INIT_PID, ADD_PARTITIONS, END_TXN, DELETE_TOPICS = 21, 22, 24, 26, 20
SETTLE = 5.0
MARKERS_SETTLE = 10.0  # Kafka writes transaction markers after EndTxn answers
T0 = 1_500_000_000_000  # the records' CreateTime (2017: below normalise.CLIENT_TIME_LIMIT)
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
# The records' timestamps are years old: without these, Kafka's retention check (which
# rolls even the active segment once all of it is past retention.ms) deletes them, and
# the first batch stamped with the broker's clock (a transaction marker) rolls a new
# segment (its timestamp is more than segment.ms after the segment's first), so that one
# fetch, which reads one segment, stops before it.
KEEP = {"retention.ms": "-1", "segment.ms": str(100 * 365 * 86_400_000)}

Record = tuple[bytes | None, bytes | None, int]  # key, value, timestamp


def records(count: int, start: int = 0, size: int = 8, keyed: bool = True) -> list[Record]:
    return [
        (
            (f"k{(start + i) % 3}".encode() if keyed else None),
            f"v{start + i}".encode().ljust(size, b"."),
            T0 + (start + i) * 1000,
        )
        for i in range(count)
    ]


def batch(
    items: Sequence[Record],
    producer_id: int = -1,
    epoch: int = -1,
    sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        batch_size=1 << 20,
    )
    for index, (key, value, timestamp) in enumerate(items):
        builder.append(
            index, timestamp=timestamp, key=key, value=value, headers=[("h", b"x")] if index == 0 else []
        )
    return bytes(builder.build())


def producer_batch(
    items: Sequence[Record], sequence: int, epoch_delta: int = 0, transactional: bool = False
) -> Later:
    """A batch of the connection's last InitProducerId's producer."""
    return Later(
        lambda c: batch(items, c["producer_id"], c["producer_epoch"] + epoch_delta, sequence, transactional),
        f"<batch of {len(items)}, producer, epoch+{epoch_delta}, sequence {sequence}>",
    )


def produce(
    topic: str,
    data: Any,
    version: int = 9,
    acks: int = -1,
    partition: int = 0,
    transactional_id: str | None = None,
    **kw: Any,
) -> Step:
    return Step(
        PRODUCE,
        version,
        {
            "transactional_id": transactional_id,
            "acks": acks,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": data}]}],
        },
        **kw,
    )


def fetch(
    topic: str,
    offset: int = 0,
    version: int = 12,
    isolation: int = READ_UNCOMMITTED,
    partition: int = 0,
    **kw: Any,
) -> Step:
    return Step(
        FETCH,
        version,
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": isolation,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
        **kw,
    )


def list_offsets(
    topic: str, timestamp: int, version: int = 9, isolation: int = READ_UNCOMMITTED, **kw: Any
) -> Step:
    fields: dict[str, Any] = {
        "replica_id": -1,
        "isolation_level": isolation,
        "topics": [
            {
                "name": topic,
                "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}],
            }
        ],
    }
    if version >= 10:
        fields["timeout_ms"] = 5000
    return Step(LIST_OFFSETS, version, fields, **kw)


def create(topic: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> list[Step]:
    """The topic, then waits until Kafka's broker leads its partitions (not compared)."""
    return [
        Step(
            CREATE,
            7,
            {
                "topics": [
                    {
                        "name": topic,
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in {**KEEP, **(configs or {})}.items()],
                    }
                ],
                "timeout_ms": 5000,
                "validate_only": False,
            },
            compare=False,
        ),
        Step(
            METADATA,
            12,
            {
                "topics": [{"name": topic}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
            compare=False,
            settle=SETTLE,
        ),
        list_offsets(topic, -1, compare=False, settle=SETTLE, label="ListOffsets-ready"),
    ]


def drop(topic: str) -> Step:
    return Step(DELETE_TOPICS, 6, {"topics": [{"name": topic}], "timeout_ms": 5000}, compare=False)


def read_back(topic: str, isolation: int = READ_UNCOMMITTED, settle: float = 0.0) -> list[Step]:
    """What a consumer sees: every batch from offset 0 (Fetch v4 and v12), and the
    earliest, latest and max-timestamp offsets."""
    suffix = "-committed" if isolation == READ_COMMITTED else ""
    return [
        fetch(topic, 0, 12, isolation, label=f"Fetch-v12{suffix}", settle=settle),
        fetch(topic, 0, 4, isolation, label=f"Fetch-v4{suffix}", settle=settle),
        list_offsets(topic, -2, 9, isolation, label=f"ListOffsets-earliest{suffix}", settle=settle),
        list_offsets(topic, -1, 9, isolation, label=f"ListOffsets-latest{suffix}", settle=settle),
        list_offsets(topic, -3, 9, isolation, label=f"ListOffsets-max-timestamp{suffix}", settle=settle),
    ]


def init_producer(transactional_id: str | None = None) -> Step:
    return Step(
        INIT_PID, 4, {"transactional_id": transactional_id, "transaction_timeout_ms": 60000}, compare=False
    )


def add_partitions(transactional_id: str, topic: str, compare: bool = True) -> Step:
    """AddPartitionsToTxn v3 of `topic`-0, with the producer id and epoch this side's
    InitProducerId answered."""
    fields = {
        "v3_and_below_transactional_id": transactional_id,
        "v3_and_below_producer_id": Later(lambda c: c["producer_id"], "<producer id>"),
        "v3_and_below_producer_epoch": Later(lambda c: c["producer_epoch"], "<epoch>"),
        "v3_and_below_topics": [{"name": topic, "partitions": [0]}],
    }
    return Step(ADD_PARTITIONS, 3, fields, compare=compare)


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []

    def add(name: str, steps: list[Step]) -> None:
        out.append(Scenario(f"records-{name}", FAMILY, tuple(steps)))

    # plain produce, every acks, several versions, read back
    for version in (3, 7, 8, 9, 12):
        for acks in (0, 1, -1):
            topic = f"records-produce-v{version}-acks{acks}"
            add(
                f"produce-v{version}-acks{acks}",
                [
                    *create(topic),
                    produce(topic, batch(records(3)), version, acks, label="Produce-first"),
                    produce(topic, batch(records(2, 3)), version, acks, label="Produce-second"),
                    *read_back(topic),
                    fetch(topic, 3, label="Fetch-from-3"),
                    fetch(topic, 4, label="Fetch-mid-batch"),
                    fetch(topic, 5, label="Fetch-at-end"),
                    fetch(topic, 9, label="Fetch-beyond"),
                    drop(topic),
                ],
            )
    # timestamps
    for kind in ("CreateTime", "LogAppendTime"):
        topic = f"records-timestamps-{kind}"
        add(
            f"timestamps-{kind}",
            [
                *create(topic, configs={"message.timestamp.type": kind}),
                produce(topic, batch(records(3)), label="Produce-first"),
                produce(topic, batch(records(1, 3)), label="Produce-second"),
                *read_back(topic),
                *(
                    list_offsets(topic, ts, version, label=f"ListOffsets-at-{label}-v{version}")
                    for ts, label in (
                        (T0 - 1, "before"),
                        (T0, "first"),
                        (T0 + 1500, "between"),
                        (T0 + 9000, "after"),
                    )
                    for version in (1, 7)
                ),
                drop(topic),
            ],
        )
    for version in (1, 4, 7, 8, 10, 11):
        topic = f"records-list-offsets-v{version}"
        add(
            f"list-offsets-v{version}",
            [
                *create(topic),
                produce(topic, batch(records(4))),
                *(
                    list_offsets(topic, ts, version, label=f"ListOffsets-{label}")
                    for ts, label in (
                        (-1, "latest"),
                        (-2, "earliest"),
                        (-3, "max-timestamp"),
                        (-4, "earliest-local"),
                        (-5, "latest-tiered"),
                        (-6, "earliest-pending-upload"),
                        (-7, "unknown-special"),
                        (T0 + 2000, "by-timestamp"),
                    )
                ),
                drop(topic),
            ],
        )
    # producing to what does not exist, or too much
    for version in (3, 9, 12):
        add(
            f"produce-unknown-topic-v{version}",
            [produce("records-no-such-topic", batch(records(1)), version)],
        )
        topic = f"records-unknown-partition-v{version}"
        add(
            f"produce-unknown-partition-v{version}",
            [
                *create(topic),
                produce(topic, batch(records(1)), version, partition=3),
                fetch(topic, 0, partition=3),
                drop(topic),
            ],
        )
        topic = f"records-too-large-v{version}"
        add(
            f"produce-too-large-v{version}",
            [
                *create(topic, configs={"max.message.bytes": "200"}),
                produce(topic, batch(records(1, size=100)), version, label="Produce-fits"),
                produce(topic, batch(records(4, 1, size=100)), version, label="Produce-too-large"),
                fetch(topic),
                drop(topic),
            ],
        )
    # malformed batches
    good = batch(records(2))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    invalid: dict[str, bytes | None] = {
        "bad-crc": bytes(bad_crc),
        "magic-0": good[:16] + b"\x00" + good[17:],
        "magic-1": good[:16] + b"\x01" + good[17:],
        "magic-3": good[:16] + b"\x03" + good[17:],
        "empty": b"",
        "truncated": good[:-5],
        "header-only": good[:61],
        "length-too-long": good[:8] + (len(good) + 50).to_bytes(4, "big") + good[12:],
        "trailing-garbage": good + b"\x00\x01\x02",
        "base-offset-7": (7).to_bytes(8, "big") + good[8:],
        "count-mismatch": good[:57] + (5).to_bytes(4, "big") + good[61:],
    }
    for case, data in invalid.items():
        for version in (3, 9):
            topic = f"records-invalid-{case}-v{version}"
            add(
                f"invalid-{case}-v{version}",
                [
                    *create(topic),
                    produce(topic, data, version),
                    fetch(topic),
                    list_offsets(topic, -1),
                    drop(topic),
                ],
            )
    topic = "records-compact-keyless"
    add(
        "compact-keyless",
        [
            *create(topic, configs={"cleanup.policy": "compact"}),
            produce(topic, batch(records(2, keyed=False)), label="Produce-keyless"),
            produce(topic, batch(records(2)), label="Produce-keyed"),
            fetch(topic),
            drop(topic),
        ],
    )
    # idempotent producer: sequences and epochs
    for version in (3, 9, 12):
        topic = f"records-idempotent-v{version}"
        add(
            f"idempotent-v{version}",
            [
                *create(topic),
                init_producer(),
                produce(topic, producer_batch(records(2), 0), version, label="Produce-seq0"),
                produce(topic, producer_batch(records(2), 0), version, label="Produce-duplicate"),
                produce(topic, producer_batch(records(1, 2), 2), version, label="Produce-seq2"),
                produce(topic, producer_batch(records(1, 3), 5), version, label="Produce-out-of-order"),
                produce(topic, producer_batch(records(1, 3), 1), version, label="Produce-old-sequence"),
                produce(topic, producer_batch(records(1, 3), 5, 1), version, label="Produce-new-epoch-seq5"),
                produce(topic, producer_batch(records(1, 3), 0, 1), version, label="Produce-new-epoch"),
                produce(topic, producer_batch(records(1, 4), 3), version, label="Produce-fenced-epoch"),
                *read_back(topic),
                # where the two differ (explained): last, so that no offset above depends on it
                produce(
                    topic,
                    batch(records(1, 5), 987654321, 0, 4),
                    version,
                    label="Produce-unknown-producer-seq4",
                ),
                produce(
                    topic,
                    batch(records(1, 5), 987654321, 0, 0),
                    version,
                    label="Produce-unknown-producer-seq0",
                ),
                produce(topic, batch(records(1, 6), 987654322, 0, -1), version, label="Produce-no-sequence"),
                drop(topic),
            ],
        )
    # transactions: markers, the last stable offset, aborted ranges
    for outcome in ("abort", "commit"):
        for end_version in (3, 4):
            topic = f"records-txn-{outcome}-v{end_version}"
            txn = f"{topic}-txn"
            add(
                f"txn-{outcome}-endtxn-v{end_version}",
                [
                    *create(topic),
                    produce(topic, batch(records(1)), label="Produce-before"),
                    init_producer(txn),
                    add_partitions(txn, topic),
                    produce(
                        topic,
                        producer_batch(records(2, 1), 0, transactional=True),
                        transactional_id=txn,
                        label="Produce-txn",
                    ),
                    produce(topic, batch(records(1, 4)), label="Produce-other"),
                    *read_back(topic, READ_COMMITTED),
                    fetch(topic, 0, label="Fetch-open"),
                    Step(
                        END_TXN,
                        end_version,
                        {
                            "transactional_id": txn,
                            "producer_id": Later(lambda c: c["producer_id"], "<producer id>"),
                            "producer_epoch": Later(lambda c: c["producer_epoch"], "<epoch>"),
                            "committed": outcome == "commit",
                        },
                    ),
                    fetch(topic, 0, label="Fetch-ended", settle=MARKERS_SETTLE),
                    *(
                        Step(s.api_key, s.version, s.fields, label=f"{s.name}-ended", settle=MARKERS_SETTLE)
                        for s in read_back(topic, READ_COMMITTED)
                    ),
                    produce(topic, batch(records(1, 5)), label="Produce-after"),
                    fetch(topic, 0, 11, READ_COMMITTED, label="Fetch-v11-committed-after"),
                    drop(topic),
                ],
            )
    # DeleteRecords, then where a consumer starts
    for version in (0, 1, 2):
        topic = f"records-delete-v{version}"

        def delete(
            offset: int, label: str, partition: int = 0, topic: str = topic, version: int = version
        ) -> Step:
            return Step(
                DELETE_RECORDS,
                version,
                {
                    "topics": [
                        {"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}
                    ],
                    "timeout_ms": 5000,
                },
                label=label,
            )

        add(
            f"delete-records-v{version}",
            [
                *create(topic),
                produce(topic, batch(records(3))),
                produce(topic, batch(records(3, 3)), label="Produce-second"),
                delete(2, "DeleteRecords-mid-batch"),
                *read_back(topic),
                fetch(topic, 1, label="Fetch-before-start"),
                fetch(topic, 3, label="Fetch-from-3"),
                delete(1, "DeleteRecords-backwards"),
                delete(9, "DeleteRecords-beyond"),
                delete(-1, "DeleteRecords-to-end"),
                delete(-7, "DeleteRecords-negative"),
                delete(0, "DeleteRecords-unknown-partition", partition=4),
                list_offsets(topic, -2, label="ListOffsets-earliest-after"),
                fetch(topic, 6, label="Fetch-at-end"),
                drop(topic),
            ],
        )
    # a transactional producer's batch without the transactional flag, in a transaction
    topic, txn = "records-txn-plain-batch", "records-txn-plain-batch-txn"
    add(
        "txn-plain-batch",
        [
            *create(topic),
            init_producer(txn),
            add_partitions(txn, topic, compare=False),
            produce(topic, producer_batch(records(1), 0), transactional_id=txn, label="Produce-plain-batch"),
            drop(topic),
        ],
    )
    return out
