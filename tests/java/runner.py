"""Runs a class of the Java test project (tests/java/src/main/java/mockbroker) and returns
the one line of JSON it prints last."""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker import MockCluster


def run_java(
    classpath: str, *args: str, main: str = "mockbroker.JavaClients", timeout: float = 300
) -> dict[str, Any]:
    done = subprocess.run(
        ["java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp", classpath, main, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# What each Java scenario must send (its recorded requests include these APIs). Together
# they are every API the broker serves but NOT_SENT_BY_JAVA: test_java_api_coverage.py.
JAVA_SENDS: dict[str, frozenset[str]] = {
    "produce-consume": frozenset(
        {"ApiVersions", "Metadata", "InitProducerId", "Produce", "FindCoordinator", "ListOffsets", "Fetch"}
        | {"ConsumerGroupHeartbeat", "OffsetCommit", "OffsetFetch"}
    ),
    "rebalance-classic": frozenset(
        {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetForLeaderEpoch"}
    ),
    "quotas": frozenset({"DescribeClientQuotas", "AlterClientQuotas"}),
    "admin": frozenset(
        {"CreateTopics", "CreatePartitions", "DescribeTopicPartitions", "DescribeConfigs"}
        | {"IncrementalAlterConfigs", "DeleteRecords", "DeleteGroups", "DeleteTopics", "DescribeCluster"}
        | {"DescribeLogDirs", "DescribeQuorum"}
    ),
    "admin-cluster": frozenset(
        {"AlterPartitionReassignments", "ListPartitionReassignments", "ElectLeaders", "AlterReplicaLogDirs"}
        | {"UpdateFeatures", "AddRaftVoter", "RemoveRaftVoter", "UnregisterBroker", "ListGroups"}
        | {"DescribeGroups", "ConsumerGroupDescribe", "OffsetDelete", "ListConfigResources"}
    ),
    "admin-transactions": frozenset(
        {"ListTransactions", "DescribeTransactions", "DescribeProducers", "WriteTxnMarkers", "EndTxn"}
    ),
    "admin-secure": frozenset(
        {"SaslHandshake", "SaslAuthenticate", "AlterUserScramCredentials", "DescribeUserScramCredentials"}
        | {"CreateAcls", "DescribeAcls", "DeleteAcls", "CreateDelegationToken", "DescribeDelegationToken"}
        | {"RenewDelegationToken", "ExpireDelegationToken"}
    ),
    "read-process-write-v1": frozenset({"AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit"}),
    "telemetry": frozenset({"GetTelemetrySubscriptions", "PushTelemetry"}),
    "share-consume": frozenset({"ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge"}),
    "share-offsets": frozenset(
        {"DescribeShareGroupOffsets", "AlterShareGroupOffsets", "DeleteShareGroupOffsets"}
    ),
    "streams-admin": frozenset({"StreamsGroupHeartbeat", "StreamsGroupDescribe"}),
}

NOT_SENT_BY_JAVA = {
    "AlterConfigs": "kafka-clients 4.0 removed Admin.alterConfigs; kafka-python's admin client sends it",
    "StreamsGroupTopologyDescriptionUpdate": (
        "Kafka Streams sends it when a heartbeat asks for the topology's description, which a broker "
        "without a topology description plugin (Kafka's default, and this one) never does; raw frames send it"
    ),
}


def assert_java_sent(cluster: MockCluster, scenario: str) -> None:
    """The cluster (with `record.requests.max` large enough) recorded every API the scenario
    stands for in JAVA_SENDS."""
    missing = JAVA_SENDS[scenario] - {r["api"] for r in cluster.requests.list()}
    assert not missing, f"the Java client sent no {sorted(missing)} in {scenario}"
