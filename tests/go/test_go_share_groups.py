"""franz-go's share consumer (kgo v1.22.3, KIP-932) against the broker: three members of a
share group read every record once; records released with Record.Ack come back with their
delivery count raised, rejected ones never do, and one released at the delivery count
limit is archived; records whose acquisition lock expired go to another member. Each test
runs one mode of tests/go/cmd/goclients and asserts on the JSON line it prints, and on the
requests the broker recorded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker import MockCluster
from tests.go.runner import run_go

SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE, SHARE_FETCH, SHARE_ACKNOWLEDGE = 76, 77, 78, 79
INCREMENTAL_ALTER_CONFIGS, DESCRIBE_SHARE_GROUP_OFFSETS = 44, 90


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    config = {
        "num.partitions": "3",
        "record.requests.max": 200_000,
        # short locks, so that expiry happens within a test (a group's own value could not
        # go under 15 s; the broker default can)
        "group.share.record.lock.duration.ms": "3000",
        # a low delivery limit, so archival happens within a test
        "group.share.delivery.count.limit": "3",
    }
    with MockCluster(brokers=3, config=config) as cluster:
        yield cluster


def sent(cluster: MockCluster, client_prefix: str) -> set[int]:
    """The API keys of the requests the clients whose id starts with client_prefix sent."""
    return {r["api_key"] for r in cluster.requests.list() if (r["client_id"] or "").startswith(client_prefix)}


def final_acknowledges(cluster: MockCluster, client_prefix: str) -> dict[str, Any]:
    """By client id, the recorded ShareAcknowledge that closed its share session (epoch -1)."""
    return {
        r["client_id"]: r
        for r in cluster.requests.list(api_key=SHARE_ACKNOWLEDGE)
        if (r["client_id"] or "").startswith(client_prefix) and r["request"]["share_session_epoch"] == -1
    }


def test_three_franz_go_share_consumers_read_every_record_once(
    go_clients: Path, cluster: MockCluster
) -> None:
    cluster.create_topic("go-shared", partitions=3)
    result = run_go(
        go_clients, "kgo-share-consume", cluster.bootstrap_servers, "go-shared", "go-share-three", "3", "3000"
    )
    assert result["distinct"] == 3000  # every record delivered
    assert result["duplicates"] == 0  # and, each accepted, none twice
    assert result["matching"]
    assert result["max_delivery_count"] == 1
    assert len(result["per_member"]) == 3 and all(read > 0 for read in result["per_member"])
    assert result["described"] == {"state": "Stable", "members": 3, "epochs_match": True, "assigned": 3}
    assert result["state_after_close"] == "Empty"
    # all accepted: each share partition starts past its last record, nothing left to read
    offsets = result["offsets_after_close"]
    assert sorted(offsets) == ["go-shared-0", "go-shared-1", "go-shared-2"]
    assert all(o["lag"] == 0 for o in offsets.values())
    assert sum(o["start"] for o in offsets.values()) == 3000
    assert {SHARE_GROUP_HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE} <= sent(cluster, "go-share-")
    # each member closed its share session on leaving
    assert sorted(final_acknowledges(cluster, "go-share-")) == ["go-share-0", "go-share-1", "go-share-2"]
    assert {INCREMENTAL_ALTER_CONFIGS, SHARE_GROUP_DESCRIBE, DESCRIBE_SHARE_GROUP_OFFSETS} <= sent(
        cluster, "kgo"
    )


def test_released_rejected_and_archived_records(go_clients: Path, cluster: MockCluster) -> None:
    """Record.Ack: a record released once comes back with delivery count 2; a rejected one
    never comes back; one released every time is archived at the delivery count limit (3)."""
    cluster.create_topic("go-share-acks", partitions=1)
    result = run_go(go_clients, "kgo-share-acks", cluster.bootstrap_servers, "go-share-acks", "go-share-acks")
    assert result["delivery_counts"] == {
        "v0": [1, 2],
        "v1": [1, 2],
        "v2": [1],
        "v3": [1],
        "v4": [1],
        "v5": [1, 2, 3],
    }
    assert result["ack_errors"] == []
    # accepted, rejected or archived: the group is done with all six
    assert result["offsets_after_close"] == {"go-share-acks-0": {"start": 6, "lag": 0}}


def test_records_whose_lock_expired_go_to_another_member(go_clients: Path, cluster: MockCluster) -> None:
    cluster.create_topic("go-share-expiring", partitions=1)
    result = run_go(
        go_clients,
        "kgo-share-lock-expiry",
        cluster.bootstrap_servers,
        "go-share-expiring",
        "go-share-expiry",
    )
    assert result["first"] == {f"v{i}": [1] for i in range(3)}
    assert result["second"] == {f"v{i}": [2] for i in range(3)}
    # The holder closes after the taker accepted them: it releases offsets 0-2, now before
    # the share-partition start offset, which Kafka skips without an error.
    closing = final_acknowledges(cluster, "go-share-holder")["go-share-holder"]
    (topic,) = closing["request"]["topics"]
    assert topic["partitions"][0]["acknowledgement_batches"] == [
        {"first_offset": 0, "last_offset": 2, "acknowledge_types": [2]}
    ]
    assert [p["error_code"] for t in closing["response"]["responses"] for p in t["partitions"]] == [0]
