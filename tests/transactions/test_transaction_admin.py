"""The transaction admin APIs through kafka-python's admin client: DescribeTransactions,
ListTransactions, DescribeProducers, and aborting a hanging transaction with
WriteTxnMarkers (what `kafka-transactions.sh abort` does)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import AbortTransactionSpec
from kafka.errors import TransactionalIdNotFoundError

from broker import MockCluster


@pytest.fixture
def admin(sync_cluster3: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=sync_cluster3.bootstrap_servers)
    yield client
    client.close()


def _open_transaction(cluster: MockCluster, transactional_id: str, topic: str) -> Producer:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic, b"pending", partition=0)
    producer.flush(10)
    return producer


def test_describe_and_list_transactions(sync_cluster3: MockCluster, admin: KafkaAdminClient) -> None:
    sync_cluster3.create_topic("described", 2)
    open_one = _open_transaction(sync_cluster3, "open-one", "described")
    done = _open_transaction(sync_cluster3, "done-one", "described")
    done.commit_transaction(10)

    described = admin.describe_transactions(["open-one", "done-one"])
    assert described["open-one"].state.value == "Ongoing"
    assert described["open-one"].topic_partitions == {TopicPartition("described", 0)}
    assert described["open-one"].transaction_start_time_ms > 0
    assert described["done-one"].state.value == "CompleteCommit"
    assert described["done-one"].topic_partitions == set()
    with pytest.raises(TransactionalIdNotFoundError):
        admin.describe_transactions(["never-seen"])

    listed = [t for listings in admin.list_transactions().values() for t in listings]
    assert sorted((t.transactional_id, t.state.value) for t in listed) == [
        ("done-one", "CompleteCommit"),
        ("open-one", "Ongoing"),
    ]
    ongoing = [t for ls in admin.list_transactions(state_filters=["Ongoing"]).values() for t in ls]
    assert [t.transactional_id for t in ongoing] == ["open-one"]
    by_pattern = [
        t for ls in admin.list_transactions(transactional_id_pattern="done-.*").values() for t in ls
    ]
    assert [t.transactional_id for t in by_pattern] == ["done-one"]
    open_one.abort_transaction(10)


def test_describe_producers_and_abort_a_hanging_transaction(
    sync_cluster3: MockCluster, admin: KafkaAdminClient
) -> None:
    sync_cluster3.create_topic("hanging")
    _open_transaction(sync_cluster3, "hangs", "hanging")
    partition = TopicPartition("hanging", 0)
    state = admin.describe_producers([partition])[partition]
    (producer,) = state.active_producers
    assert producer.current_transaction_start_offset == 0
    assert producer.last_sequence == 0

    log = sync_cluster3.state.topics["hanging"].partitions[0].log
    assert log.last_stable_offset == 0  # read_committed readers are stuck here
    admin.abort_transaction(AbortTransactionSpec(partition, producer.producer_id, producer.producer_epoch))
    assert log.last_stable_offset == log.high_watermark == 2  # the record and the abort marker

    consumer = KafkaConsumer(
        bootstrap_servers=sync_cluster3.bootstrap_servers,
        isolation_level="read_committed",
        consumer_timeout_ms=1000,
    )
    consumer.assign([partition])
    consumer.seek_to_beginning()
    assert list(consumer) == []  # aborted
    assert consumer.position(partition) == 2  # and read past
    consumer.close()
    (after,) = admin.describe_producers([partition])[partition].active_producers
    assert after.current_transaction_start_offset == -1
