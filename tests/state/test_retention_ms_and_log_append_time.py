"""retention.ms and message.timestamp.type=LogAppendTime, through kafka-python.

retention.ms: UnifiedLog.deleteRetentionMsBreachedSegments with a batch as the unit
(checked at append and on config change). LogAppendTime: LogValidator's
setMaxTimestamp(LOG_APPEND_TIME, now) on each v2 batch, CRC recomputed.
"""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.record.default_records import DefaultRecordBatch

from broker import MockCluster
from broker.state.log import PartitionLog
from broker.state.records import split_batches
from tests.state.test_log import batch

HOUR = 3_600_000


def _consume(bootstrap: str, topic: str, count: int) -> list:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=5000
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)  # below the log start once retention ran: OFFSET_OUT_OF_RANGE, reset
    records = []
    for record in consumer:
        records.append(record)
        if len(records) == count:
            break
    beginning = consumer.beginning_offsets([tp])[tp]
    consumer.close()
    return [records, beginning]


def test_retention_ms_deletes_expired_batches(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("old", partitions=1, config={"retention.ms": "60000"})
    bootstrap = sync_cluster.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    now = int(time.time() * 1000)
    for i in range(3):
        producer.send("old", b"stale-%d" % i, partition=0, timestamp_ms=now - 2 * HOUR).get(timeout=10)
    producer.send("old", b"fresh", partition=0, timestamp_ms=now).get(timeout=10)
    producer.close()
    records, beginning = _consume(bootstrap, "old", 1)
    assert beginning == 3
    assert [(r.offset, r.value) for r in records] == [(3, b"fresh")]
    assert sync_cluster.state.topics["old"].partitions[0].log.log_start_offset == 3


def test_retention_ms_applied_on_config_change(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("later", partitions=1)
    producer = KafkaProducer(bootstrap_servers=sync_cluster.bootstrap_servers)
    old = int(time.time() * 1000) - 2 * HOUR
    for i in range(2):
        producer.send("later", b"v%d" % i, partition=0, timestamp_ms=old).get(timeout=10)
    producer.close()
    log = sync_cluster.state.topics["later"].partitions[0].log
    assert log.log_start_offset == 0
    sync_cluster.configs.apply_retention([])  # no-op
    topic = sync_cluster.state.topics["later"]
    topic.configs["retention.ms"] = "60000"
    sync_cluster.configs.apply_retention([topic])
    # every batch breached: Kafka deletes the active segment too (rolling an empty one)
    assert (log.log_start_offset, log.log_end_offset) == (2, 2)


def test_log_append_time(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("stamped", partitions=1, config={"message.timestamp.type": "LogAppendTime"})
    bootstrap = sync_cluster.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    before = int(time.time() * 1000)
    metadata = producer.send("stamped", b"x", partition=0, timestamp_ms=12345).get(timeout=10)
    after = int(time.time() * 1000)
    producer.close()
    # kafka-python reports the response's log_append_time_ms as the record's timestamp
    assert before <= metadata.timestamp <= after
    records, _ = _consume(bootstrap, "stamped", 1)
    assert records[0].timestamp == metadata.timestamp
    assert records[0].timestamp_type == 1  # LOG_APPEND_TIME


def test_create_time_unchanged(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("plain", partitions=1)
    producer = KafkaProducer(bootstrap_servers=sync_cluster.bootstrap_servers)
    metadata = producer.send("plain", b"x", partition=0, timestamp_ms=12345).get(timeout=10)
    producer.close()
    assert metadata.timestamp == 12345
    records, _ = _consume(sync_cluster.bootstrap_servers, "plain", 1)
    assert (records[0].timestamp, records[0].timestamp_type) == (12345, 0)


def test_log_append_time_rewrites_header_and_crc() -> None:
    log = PartitionLog()
    produced = batch(3)
    log.append(split_batches(produced), append_time_ms=999_999)
    served = log.read(0, 1 << 20)
    (info,) = split_batches(served)  # checks the recomputed CRC-32C
    assert info.max_timestamp == 999_999 and info.attributes & 0x08
    decoded = DefaultRecordBatch(bytearray(served))
    assert decoded.timestamp_type == 1 and decoded.max_timestamp == 999_999
    assert served[27:35] == produced[27:35]  # baseTimestamp untouched
    assert served[61:] == produced[61:]  # records untouched


def test_retention_ms_per_batch_stops_at_first_young_batch() -> None:
    log = PartitionLog(retention_ms=1000)
    log.append(split_batches(batch(2)))  # max timestamp 2000 (see test_log.batch)
    assert log.log_start_offset == 2  # expired at once against the wall clock
    log.retention_ms = -1
    log.append(split_batches(batch(1)))
    log.retention_ms = 1000
    assert log.enforce_retention_ms(2500) == 0  # 2500 - 2000 <= 1000
    assert log.enforce_retention_ms(3001) == 1
    assert (log.log_start_offset, log.log_end_offset) == (3, 3)


def test_retention_ms_is_checked_periodically_without_appends() -> None:
    """log.retention.check.interval.ms: batches age out of a partition nobody writes to."""
    config = {"group.initial.rebalance.delay.ms": "0", "log.retention.check.interval.ms": "100"}
    with MockCluster(config=config) as cluster:
        cluster.create_topic("ageing", partitions=1, config={"retention.ms": "1500"})
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=0)
        for i in range(2):
            producer.send("ageing", b"v%d" % i, partition=0).get(timeout=10)  # timestamped now
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers)
        tp = TopicPartition("ageing", 0)
        try:
            assert consumer.beginning_offsets([tp])[tp] == 0  # young enough to stay for now
            deadline = time.monotonic() + 15
            while consumer.beginning_offsets([tp])[tp] != 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert consumer.beginning_offsets([tp])[tp] == 2  # both batches aged out, unattended
        finally:
            consumer.close()
