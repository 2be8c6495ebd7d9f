"""The Go clients against the broker, at the versions tests/go/go.mod pins: franz-go
(kgo v1.22.3, kadm v1.20.0), IBM Sarama v1.61.1 and segmentio/kafka-go v0.4.51. Each test
runs one mode of tests/go/cmd/goclients and asserts on the JSON line it prints, and on
what the broker holds afterwards."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient

from broker import MockCluster
from tests.go.runner import run_go

MiB = 1_048_576
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    config = {
        "num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",  # one member per group: no point waiting
        # KIP-848 members hand partitions over on heartbeats: every second, not every 5.
        "group.consumer.heartbeat.interval.ms": "1000",
        "group.consumer.min.heartbeat.interval.ms": "1000",
    }
    with MockCluster(brokers=3, config=config) as cluster:
        yield cluster


def committed_offsets(cluster: MockCluster, group: str) -> dict[int, int]:
    """The group's committed offsets as kafka-python's admin client reads them back."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        committed = admin.list_group_offsets([group])[group]
    finally:
        admin.close()
    return {tp.partition: offset.offset for tp, offset in committed.items()}


def dense(result: dict[str, Any], count: int) -> None:
    """Every record came back once, under its key, in the order sent within its partition,
    at the offset its producer was told, spread over the topic's three partitions."""
    assert result["consumed"] == count
    assert result["matching"]
    assert result["in_order"]
    assert result["partitions"] == 3
    assert sum(last + 1 for last in result["last_offsets"].values()) == count


# -- franz-go kgo ------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kgo_idempotent_producer_with_every_codec(go_clients: Path, cluster: MockCluster, codec: str) -> None:
    topic = f"go-kgo-{codec}"
    cluster.create_topic(topic, partitions=3)
    result = run_go(go_clients, "kgo-produce-consume", cluster.bootstrap_servers, topic, codec, "200", "none")
    assert result["produced"] == 200
    assert result["producer_id"] >= 0  # kgo is idempotent by default: it asked for a producer id
    assert result["offsets_match"]
    dense(result, 200)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_kgo_group_consumer_commits_what_it_read(
    go_clients: Path, cluster: MockCluster, protocol: str
) -> None:
    """A group of the classic protocol (kgo's cooperative-sticky balancer) or of KIP-848's
    consumer protocol (ServerSideBalancer: the broker's range assignor) reads everything
    and commits; the broker holds the offsets and the group of that type."""
    topic = f"go-kgo-group-{protocol}"
    cluster.create_topic(topic, partitions=3)
    result = run_go(
        go_clients, "kgo-produce-consume", cluster.bootstrap_servers, topic, "zstd", "300", protocol
    )
    dense(result, 300)
    assert result["offsets_match"]
    group = result["group"]
    assert committed_offsets(cluster, group) == {
        int(partition): last + 1 for partition, last in result["last_offsets"].items()
    }
    described = cluster.describe_group(group)
    assert described is not None
    assert described["type"] == protocol
    assert described["members"] == []  # the client left when it closed


def test_kgo_sees_the_topics_configs(go_clients: Path, cluster: MockCluster) -> None:
    """max.message.bytes refuses a larger batch (MESSAGE_TOO_LARGE, which kgo does not
    retry); message.timestamp.type=LogAppendTime gives the fetched record the broker's
    time (timestamp type 1) instead of the one the producer set a day earlier."""
    result = run_go(go_clients, "kgo-topic-configs", cluster.bootstrap_servers)
    assert result == {
        "small": "",
        "large": "MESSAGE_TOO_LARGE",
        "fetched_timestamp_type": 1,
        "fetched_timestamp_is_the_brokers": True,
    }


def test_kgo_transactions_commit_abort_and_fence(go_clients: Path, cluster: MockCluster) -> None:
    """Ten records committed, five aborted, three left open when a second producer with the
    same transactional id fences the first (its open transaction is aborted) and commits
    two: read_committed sees exactly the committed records in order."""
    cluster.create_topic("go-kgo-tx", partitions=1)
    result = run_go(go_clients, "kgo-transactions", cluster.bootstrap_servers, "go-kgo-tx")
    assert result["read_committed"] == [f"committed-{i}" for i in range(10)] + ["second-0", "second-1"]
    assert result["read_uncommitted"] == 20
    # The fenced producer's next produce: Kafka answers an old epoch with
    # INVALID_PRODUCER_EPOCH since 2.7 (KIP-588), not PRODUCER_FENCED.
    assert result["fenced"] == "INVALID_PRODUCER_EPOCH"
    # 20 records and 4 markers (commit, abort, abort by the fence, commit): offsets 0-23.
    assert result["last_offset"] == 22
    (txn,) = [t for t in cluster.list_transactions() if t["transactional_id"] == "go-kgo-tx"]
    assert txn["state"] == "CompleteCommit"
    assert txn["producer_epoch"] >= 1  # bumped by the second producer's InitProducerId


def test_kgo_group_transact_session_copies_exactly_once(go_clients: Path, cluster: MockCluster) -> None:
    """GroupTransactSession: consume from one topic, produce to another and commit the
    group's offsets in the same transaction (AddOffsetsToTxn, TxnOffsetCommit)."""
    cluster.create_topic("go-eos-in", partitions=1)
    cluster.create_topic("go-eos-out", partitions=1)
    result = run_go(
        go_clients, "kgo-eos", cluster.bootstrap_servers, "go-eos-in", "go-eos-out", "go-eos-group", "20"
    )
    assert result["copied"] == 20
    assert result["committed"]
    assert result["output"] == [f"out-in-{i}" for i in range(20)]
    assert committed_offsets(cluster, "go-eos-group") == {0: 20}


def test_kgo_waits_out_the_throttle_the_broker_sent(go_clients: Path) -> None:
    """KIP-219: the broker answers a produce over quota at once with throttle_time_ms; kgo
    (Produce v6+) applies the throttle itself after the response, holding back the next
    request on that connection. Its OnBrokerThrottle hook reports exactly the throttle
    times the broker sent, and each next produce waited before it was written."""
    config = {"quota.window.num": 2, "quota.window.size.seconds": 1}
    with MockCluster(config=config) as cluster:
        cluster.create_topic("go-loaded")
        cluster.quotas.alter({"client-id": "go-loader"}, set={"producer_byte_rate": MiB})
        result = run_go(go_clients, "kgo-throttled", cluster.bootstrap_servers, "go-loaded", "30")
        sent = [
            r["throttle_time_ms"] for r in cluster.requests.list(api_key=0) if r["client_id"] == "go-loader"
        ]
    assert len(sent) == 30  # one produce request per 100 kB record
    assert max(sent) > 0  # 3 MB at 1 MiB/s
    assert result["throttles_ms"] == [t for t in sent if t > 0]
    assert all(result["after_response"])
    waits = result["write_waits_ms"]
    assert len(waits) == 30
    for throttle, wait in zip(sent, waits[1:], strict=False):
        # The throttle runs from when kgo read the response; the next request was queued a
        # moment later and waited out the rest.
        assert wait >= throttle // 2


def test_kgo_idempotent_producer_carries_on_when_a_leader_stops(go_clients: Path) -> None:
    """Half the records are produced; broker 1, leader of partition 1, stops; the rest go
    to partition 1's new leader. Every record is there exactly once, in order, at the
    offset the producer was told: no duplicate from a retry, no gap."""
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("go-failover", partitions=3, replication_factor=3)
        leaders = {p["partition"]: p["leader"] for p in cluster.describe()["topics"][0]["partitions"]}
        assert leaders[1] == 1
        process = subprocess.Popen(
            [str(go_clients), "kgo-failover", cluster.bootstrap_servers, "go-failover", "400"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None and process.stdin is not None
            assert json.loads(process.stdout.readline()) == {"phase": "half"}
            cluster.stop_broker(1)
            process.stdin.write("\n")
            process.stdin.flush()
            out, err = process.communicate(timeout=180)
        finally:
            process.kill()
            process.wait()
        assert process.returncode == 0, err[-4000:]
        moved = {p["partition"]: p["leader"] for p in cluster.describe()["topics"][0]["partitions"]}
    result = json.loads(out.strip().splitlines()[-1])
    assert moved[1] != 1
    assert result["produced"] == 400
    assert result["offsets_match"]
    dense(result, 400)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_kgo_group_splits_partitions_when_a_member_joins(
    go_clients: Path, cluster: MockCluster, protocol: str
) -> None:
    """The first member owns all six partitions; when a second joins, each ends with three
    (KIP-848: the broker's range assignor, revocation then assignment on heartbeats;
    classic: kgo's cooperative-sticky rebalance). Every record is read exactly once."""
    topic = f"go-rebalance-{protocol}"
    cluster.create_topic(topic, partitions=6)
    result = run_go(go_clients, "kgo-rebalance", cluster.bootstrap_servers, topic, protocol, "120")
    assert result["alone"] == [0, 1, 2, 3, 4, 5]
    first, second = result["together"]["a"], result["together"]["b"]
    assert len(first) == len(second) == 3
    assert sorted(first + second) == [0, 1, 2, 3, 4, 5]
    assert result["unique"] == 120
    assert result["consumed"] == 120  # no record read by both members
    group = f"go-rebalance-{protocol}-{topic}"
    assert sum(committed_offsets(cluster, group).values()) == 120
    described = cluster.describe_group(group)
    assert described is not None and described["type"] == protocol


def test_kgo_regex_subscription_resolved_by_the_broker(go_clients: Path, cluster: MockCluster) -> None:
    """KIP-848 with a regex (kgo's ConsumeRegex and ServerSideBalancer): the broker
    resolves ^go-rx-.* to the matching topics, picks up one created after the member
    joined (Kafka re-resolves at most every 10 s), and leaves other-go-rx alone."""
    result = run_go(go_clients, "kgo-regex", cluster.bootstrap_servers, "go-rx")
    assert result["read"] == ["go-rx-a", "go-rx-b", "go-rx-late"]
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        committed = admin.list_group_offsets(["go-regex-go-rx"])["go-regex-go-rx"]
    finally:
        admin.close()
    assert {(tp.topic, tp.partition): o.offset for tp, o in committed.items()} == {
        ("go-rx-a", 0): 1,
        ("go-rx-b", 0): 1,
        ("go-rx-late", 0): 1,
    }


# -- franz-go kadm -----------------------------------------------------------------------


def test_kadm_administers_the_cluster(go_clients: Path) -> None:
    config = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"}
    with MockCluster(brokers=3, config={**config, "num.partitions": "3"}) as cluster:
        result = run_go(go_clients, "kadm", cluster.bootstrap_servers)
        described = cluster.describe()
        quotas = cluster.quotas.describe()
        acls = cluster.acls.list()
        scram = {
            r.user: [(mechanism.name, iterations) for mechanism, iterations in r.credentials]
            for r in cluster.on_loop(lambda: cluster.credentials.describe(None))
        }
        transactions = cluster.list_transactions()
    assert result["cluster_id"] == described["cluster_id"]
    assert result["brokers"] == [0, 1, 2]
    assert result["controller"] in (0, 1, 2)
    assert result["broker_num_partitions"] == ["3", "STATIC_BROKER_CONFIG"]
    assert result["finalized_features"]["transaction.version"] == 2
    # Topics and partitions.
    assert result["duplicate_topic"] == "TOPIC_ALREADY_EXISTS"
    assert result["partitions"] == 4  # CreatePartitions added 2 to 2
    assert result["replicas"] == 3
    assert result["listed_after_delete"] is False
    assert "go-admin" not in {t["name"] for t in described["topics"]}
    # Configs: set at creation, then an incremental SET and DELETE.
    assert result["retention_ms"] == ["3600000", "DYNAMIC_TOPIC_CONFIG"]
    assert result["cleanup_policy"] == ["compact,delete", "DYNAMIC_TOPIC_CONFIG"]
    assert result["retention_ms_after_delete"] == ["604800000", "DEFAULT_CONFIG"]
    assert result["keyless_in_compacted"] == "INVALID_RECORD"
    # Records and offsets.
    assert result["end_offsets"] == {"0": 10, "1": 0, "2": 0, "3": 0}
    assert result["low_watermark"] == 4
    assert result["start_offsets"] == {"0": 4, "1": 0, "2": 0, "3": 0}
    assert result["active_producers"] == [result["producer_id"]]
    assert result["producer_last_sequence"] == 9
    # Group offsets.
    assert result["group_offset"] == 7
    assert result["group_offset_metadata"] == "seven"
    assert result["listed_group"]["GroupType"] == "classic"
    assert result["listed_group"]["State"] == "Empty"
    assert result["group_state"] == "Empty"
    assert result["offsets_after_delete"] == [0]  # OffsetDelete took partition 1's
    assert result["group_listed_after_delete"] is False
    # ACLs: what kadm described is what the broker held; one of the three deleted.
    assert result["acls"] == [
        "User:alice * ALLOW TOPIC:go-admin LITERAL DESCRIBE",
        "User:alice * ALLOW TOPIC:go-admin LITERAL READ",
        "User:mallory 10.0.0.1 DENY GROUP:go- PREFIXED READ",
    ]
    assert result["acls_matching_group"] == ["User:mallory 10.0.0.1 DENY GROUP:go- PREFIXED READ"]
    assert result["acls_deleted"] == 1
    assert sorted(
        f"{b.principal} {b.operation.name} {b.resource_type.name}:{b.resource_name} {b.pattern_type.name}"
        for b in acls
    ) == ["User:alice DESCRIBE TOPIC:go-admin LITERAL", "User:mallory READ GROUP:go- PREFIXED"]
    # Client quotas.
    assert result["quotas"] == [
        "{client-id=<default>} -> [controller_mutation_rate=10]",
        "{client-id=app, user=alice} -> [request_percentage=25.5]",
        "{user=alice} -> [consumer_byte_rate=2e+06 producer_byte_rate=1.048576e+06]",
    ]
    assert result["quotas_alice_strict"] == [
        "{user=alice} -> [consumer_byte_rate=2e+06 producer_byte_rate=1.048576e+06]"
    ]
    assert result["quota_refused"] == "INVALID_REQUEST: Quota producer_byte_rate must be greater than 0"
    assert {tuple(sorted(entity.kafka_items())): values for entity, values in quotas.items()} == {
        (("user", "alice"),): {"producer_byte_rate": 1048576.0},  # consumer_byte_rate removed
        (("client-id", "app"), ("user", "alice")): {"request_percentage": 25.5},
        (("client-id", None),): {"controller_mutation_rate": 10.0},
    }
    # SCRAM users.
    assert result["scram_twice"] == "DUPLICATE_RESOURCE"
    assert result["scram_users"] == {
        "alice": ["SCRAM-SHA-256=iterations=8192", "SCRAM-SHA-512=iterations=4096"],
        "bob": ["SCRAM-SHA-512=iterations=10000"],
    }
    assert result["scram_unknown_user"] == "RESOURCE_NOT_FOUND"
    assert scram == {
        "alice": [("SCRAM_SHA_256", 8192), ("SCRAM_SHA_512", 4096)],
        "bob": [("SCRAM_SHA_512", 10000)],
    }
    # Transactions: the open one as ListTransactions and DescribeTransactions saw it.
    assert result["transactions"] == [
        {
            "Coordinator": result["transactions"][0]["Coordinator"],
            "TxnID": "go-admin-tx",
            "ProducerID": result["transaction_producer_id"],
            "State": "Ongoing",
        }
    ]
    assert result["transaction_state"] == "Ongoing"
    assert result["transaction_partitions"] == {"go-admin": {"0": {}}}
    (txn,) = transactions
    assert txn["producer_id"] == result["transaction_producer_id"]
    assert txn["state"] == "CompleteAbort"  # aborted before the client closed


def test_a_scram_user_made_with_kadm_logs_in_with_kgo(go_clients: Path) -> None:
    """AlterUserScramCredentials from kadm, then a kgo client logs in with SCRAM-SHA-512
    over SASL_PLAINTEXT and produces as that user; a wrong password, and the same one
    once the credential is deleted, get SASL_AUTHENTICATION_FAILED."""
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    }
    with MockCluster(config=config) as cluster:
        cluster.create_topic("go-scram")
        result = run_go(
            go_clients,
            "kgo-scram",
            cluster.bootstrap_servers,
            cluster.bootstrap_for("SASL_PLAINTEXT"),
            "go-scram",
        )
        producers = {r["principal"] for r in cluster.requests.list(api_key=0)}
    assert result == {
        "logged_in": "",
        "wrong_password": "SASL_AUTHENTICATION_FAILED",
        "after_delete": "SASL_AUTHENTICATION_FAILED",
    }
    assert producers == {"User:dave"}


def test_kadm_reports_kafkas_refusals(go_clients: Path, cluster: MockCluster) -> None:
    result = run_go(go_clients, "kadm-errors", cluster.bootstrap_servers)
    assert result == {
        "fewer_partitions": "INVALID_PARTITIONS: The topic go-errors currently has 3 partition(s); "
        "2 would not be an increase.",
        "unknown_config": "INVALID_CONFIG: Unknown topic config name: no.such.config",
        "configs_of_missing_topic": "UNKNOWN_TOPIC_OR_PARTITION",
        "delete_records_beyond_end": "OFFSET_OUT_OF_RANGE",
        "delete_missing_topic": "UNKNOWN_TOPIC_OR_PARTITION",
        "delete_missing_group": "GROUP_ID_NOT_FOUND",
        "describe_missing_transaction": "TRANSACTIONAL_ID_NOT_FOUND",
        "elect_preferred_leader": "ELECTION_NOT_NEEDED",
        "quota_for_a_bad_ip": "INVALID_REQUEST: not an ip is not a valid IP or resolvable host.",
        "delegation_tokens_on_plaintext": "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
        "validated_topic_created": False,  # validateOnly
        # Five records one second apart: the first at or after 2.5 s is offset 3.
        "offset_after_time": 3,
        "max_timestamp": [4, 4000],
        "max_timestamp_empty_partition": -1,
        "end_of_epoch_0": 5,
    }


# -- IBM Sarama --------------------------------------------------------------------------


def test_sarama_producers_consumer_group_and_cluster_admin(go_clients: Path, cluster: MockCluster) -> None:
    cluster.create_topic("go-sarama", partitions=3)
    result = run_go(go_clients, "sarama", cluster.bootstrap_servers, "go-sarama", "200")
    assert result["sync_produced"] == result["async_produced"] == 100
    assert result["offsets_match"]
    dense(result, 200)
    ends = {partition: last + 1 for partition, last in result["last_offsets"].items()}
    assert result["committed"] == ends
    assert committed_offsets(cluster, result["group"]) == {int(p): offset for p, offset in ends.items()}
    admin = result["admin"]
    assert admin["brokers"] == [0, 1, 2]
    assert admin["duplicate_topic"] == "TOPIC_ALREADY_EXISTS"
    assert admin["partitions"] == {"go-sarama-admin": 3, "go-sarama": 3}
    assert admin["configs"] == {"retention.ms": ["3600000", "Topic"], "cleanup.policy": ["compact", "Topic"]}
    assert admin["quotas"] == ["client-id=sarama-app producer_byte_rate=1.048576e+06"]
    assert admin["quota_refused"] == "Invalid configuration key no_such_quota"
    assert admin["listed_after_delete"] is False
    held = {
        tuple(sorted(entity.kafka_items())): values for entity, values in cluster.quotas.describe().items()
    }
    assert held[(("client-id", "sarama-app"),)] == {"producer_byte_rate": 1048576.0}


# -- segmentio/kafka-go ------------------------------------------------------------------


def test_kafka_go_client_writer_and_group_reader(go_clients: Path, cluster: MockCluster) -> None:
    result = run_go(go_clients, "kafka-go", cluster.bootstrap_servers, "go-kafka-go", "200")
    assert result["created"] == ""
    assert result["duplicate"] == "TOPIC_ALREADY_EXISTS"
    assert result["bad_partitions"] == "INVALID_PARTITIONS"
    assert result["brokers"] == [0, 1, 2]
    assert result["replicas"] == [3, 3, 3]
    assert result["written"] == 200
    dense(result, 200)
    ends = {partition: last + 1 for partition, last in result["last_offsets"].items()}
    assert result["first_offsets"] == {"0": 0, "1": 0, "2": 0}
    assert result["end_offsets"] == ends
    assert result["committed"] == ends
    assert committed_offsets(cluster, result["group"]) == {int(p): offset for p, offset in ends.items()}
