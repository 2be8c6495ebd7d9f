"""Java's share consumer (KafkaShareConsumer, KIP-932, kafka-clients as tests/java/pom.xml
pins) against the broker: a group of three shares 10,000 records with every one delivered;
released records come back with their delivery count raised, rejected ones never do, a
record released at the delivery count limit is archived, and records whose acquisition
lock expired go to another member; the Admin client lists, alters and deletes a
share group's offsets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from broker import MockCluster
from tests.java.runner import assert_java_sent, run_java

SHARE = "mockbroker.ShareGroups"


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    config = {
        "num.partitions": "3",
        "record.requests.max": 200_000,
        # short locks and a low delivery limit, so expiry and archival happen within a test
        "group.share.record.lock.duration.ms": "2000",
        "group.share.delivery.count.limit": "3",
    }
    with MockCluster(brokers=3, config=config) as cluster:
        yield cluster


def test_a_share_group_of_three_consumes_every_record(java_classpath: str, cluster: MockCluster) -> None:
    cluster.create_topic("shared", partitions=3)
    result = run_java(
        java_classpath, "consume", cluster.bootstrap_servers, "shared", "three", "3", "10000", main=SHARE
    )
    assert result["distinct"] == 10_000  # every record delivered
    assert result["duplicates"] == 0  # and, all accepted, none twice
    assert len(result["per_member"]) == 3 and all(read > 0 for read in result["per_member"])
    assert result["described"] == {"epochs_match": True, "members": 3, "state": "Stable"}
    assert result["state_after_close"] == "Empty"
    assert_java_sent(cluster, "share-consume")


def test_released_records_come_back_with_a_higher_delivery_count(
    java_classpath: str, cluster: MockCluster
) -> None:
    cluster.create_topic("released", partitions=1)
    result = run_java(
        java_classpath, "release", cluster.bootstrap_servers, "released", "g-release", main=SHARE
    )
    assert result["delivery_counts"] == {f"v{i}": [1, 2, 3] for i in range(5)}


def test_a_rejected_record_is_not_delivered_again(java_classpath: str, cluster: MockCluster) -> None:
    cluster.create_topic("rejected", partitions=1)
    result = run_java(java_classpath, "reject", cluster.bootstrap_servers, "rejected", "g-reject", main=SHARE)
    assert result["delivery_counts"] == {"v0": [1], "v1": [1], "v2": [1]}


def test_a_record_released_at_the_delivery_limit_is_archived(
    java_classpath: str, cluster: MockCluster
) -> None:
    cluster.create_topic("poison", partitions=1)
    result = run_java(java_classpath, "poison", cluster.bootstrap_servers, "poison", "g-poison", main=SHARE)
    assert result["delivery_counts"] == {"v0": [1, 2, 3]}  # group.share.delivery.count.limit=3


def test_records_whose_lock_expired_go_to_another_member(java_classpath: str, cluster: MockCluster) -> None:
    cluster.create_topic("expiring", partitions=1)
    result = run_java(
        java_classpath, "lock-expiry", cluster.bootstrap_servers, "expiring", "g-expiry", main=SHARE
    )
    assert result["first"] == {f"v{i}": [1] for i in range(3)}
    assert result["second"] == {f"v{i}": [2] for i in range(3)}


def test_admin_lists_alters_and_deletes_share_group_offsets(
    java_classpath: str, cluster: MockCluster
) -> None:
    cluster.create_topic("offsets", partitions=1)
    result = run_java(
        java_classpath, "offsets", cluster.bootstrap_servers, "offsets", "g-offsets", main=SHARE
    )
    assert result["accepted"] == [0, 1, 2, 3, 4, 5]
    # offsets change only while the group has no members: Kafka's GroupNotEmptyException
    assert result["alter_active"] == {
        "error": "GroupNotEmptyException",
        "message": "The group is not empty. Failed altering group offsets for the following partitions: [offsets-0]",
    }
    assert result["delete_active"] == {
        "error": "GroupNotEmptyException",
        "message": "The group is not empty.",
    }
    # accepted up to 5, the rest released: the group starts at 6, four records behind
    assert result["after_close"] == {"offsets-0": {"lag": 4, "leader_epoch": 0, "start": 6}}
    assert result["after_alter"] == {"offsets-0": {"lag": 8, "leader_epoch": 0, "start": 2}}
    # a new member starts where the offsets were altered to
    assert result["consumed_after_alter"] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert result["after_consume"] == {"offsets-0": {"lag": 0, "leader_epoch": 0, "start": 10}}
    assert result["after_delete"] == {}
    assert_java_sent(cluster, "share-offsets")
