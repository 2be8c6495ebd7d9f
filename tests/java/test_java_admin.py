"""The Java Admin client (org.apache.kafka:kafka-clients, tests/java/pom.xml) over the admin
APIs beyond topics, configs, records and client quotas (test_java_clients.py): reassignments,
elections, log dirs, features, the KRaft voters, groups of both protocols, transactions and
producers, SCRAM users, ACLs and delegation tokens over SASL_SSL. Each answer is what Apache
Kafka gives the Java client for the same call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from broker import MockCluster
from tests.certs import make_certificates
from tests.java.runner import assert_java_sent, run_java


def admin_apis(classpath: str, *args: str) -> dict[str, Any]:
    return run_java(classpath, *args, main="mockbroker.AdminApis")


def test_reassignments_elections_log_dirs_features_voters_and_groups(java_classpath: str) -> None:
    with MockCluster(brokers=3, config={"record.requests.max": 100_000}) as cluster:
        result = admin_apis(java_classpath, "cluster", cluster.bootstrap_servers)
        assert_java_sent(cluster, "admin-cluster")
    assert result == {
        "reassigned_replicas": [1, 2],
        "leader_after_reassignment": 1,  # the old leader left: the first new replica in the ISR leads
        "leader_before_election": 1,  # a reassignment keeping the leader keeps it
        "election": "ok",
        "leader_after_election": 2,
        "election_again": "ElectionNotNeededException",
        "unknown_reassignment": "UnknownTopicOrPartitionException",
        "log_dir_same": "ok",
        "log_dir_unknown": "LogDirNotFoundException",
        "replica_log_dir_matches": True,
        "transaction_version_downgraded": 1,
        "unsafe_upgrade_refused": "InvalidUpdateVersionException",
        "transaction_version": 2,
        "remove_voter_static_quorum": "UnsupportedVersionException",
        "add_existing_voter": "DuplicateVoterException",
        "remove_unknown_voter": "VoterNotFoundException",
        "remove_last_voter": "VoterNotFoundException",
        "unregister_unknown_broker": "BrokerIdNotRegisteredException",
        "listed_groups": {"g-classic": "CLASSIC/STABLE", "g-consumer": "CONSUMER/STABLE"},
        "described_consumer": {"assigned": 2, "members": 1, "state": "STABLE", "type": "CONSUMER"},
        "described_classic": {"assigned": 2, "members": 1, "state": "STABLE", "type": "CLASSIC"},
        "offset_delete_subscribed": "GroupSubscribedToTopicException",
        "classic_after_removal": {"assigned": 0, "members": 0, "state": "EMPTY", "type": "CLASSIC"},
        "offset_delete_empty": "ok",
        "offsets_after_delete": 0,
        "group_session_timeout": "50000/DYNAMIC_GROUP_CONFIG",
        "group_config_resources": ["g-consumer"],
    }


def test_transactions_and_producers(java_classpath: str) -> None:
    """A hanging transaction, as `kafka-transactions.sh find-hanging`/`abort` handle one: the
    Admin client lists, describes and aborts it; fences and force-terminates producers."""
    with MockCluster(config={"record.requests.max": 100_000}) as cluster:
        cluster.create_topic("held", partitions=1)
        result = admin_apis(java_classpath, "transactions", cluster.bootstrap_servers, "held")
        assert_java_sent(cluster, "admin-transactions")
    assert result == {
        "listed": {"hanging-tx": "ONGOING"},
        "listed_ongoing": 1,
        "listed_committed": 0,
        "described_state": "ONGOING",
        "described_partitions": ["held-0"],
        "described_unknown": "TransactionalIdNotFoundException",
        "producer_matches": True,
        "transaction_start_offset": 0,
        "read_committed_while_open": [0, 0],  # the last stable offset holds at the open transaction
        "start_offset_after_abort": -1,
        "read_committed_after_abort": [0, 4],  # three aborted records and the marker
        "commit_after_fence": "ProducerFencedException",
        "fence_unknown": "ok",  # InitProducerId makes the transactional id known, as in Kafka
        # The coordinator aborted the open transaction, then bumped the epoch: Empty again.
        "terminated_state": "EMPTY",
        # The fence's abort marker (4), the terminated record (5) and its abort marker (6).
        "read_committed_after_terminate": [0, 7],
    }


def test_scram_users_acls_and_delegation_tokens_over_sasl_ssl(java_classpath: str, tmp_path: Path) -> None:
    certs = make_certificates(tmp_path / "certs")
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"admin": "admin-secret", "dave": "dave-secret"}))
    config = {
        "listeners": "SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.users.file": str(users),
        "ssl.certfile": certs.server.certfile,
        "ssl.keyfile": certs.server.keyfile,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "delegation.token.secret.key": "token-secret",
        "record.requests.max": "100000",
    }
    with MockCluster(config=config) as cluster:
        result = admin_apis(java_classpath, "secure", cluster.bootstrap_for("SASL_SSL"), certs.cafile)
        principals = {r["principal"] for r in cluster.requests.list(api_key=0)}
        assert_java_sent(cluster, "admin-secure")
    assert result == {
        "carol_credentials": ["SCRAM-SHA-256/8192"],
        "describe_unknown_user": "ResourceNotFoundException",
        "carol_before_acl": "TopicAuthorizationException",
        "dave_before_acl": "TopicAuthorizationException",
        "carol_with_acl": "ok",
        "dave_with_acl": "ok",  # PLAIN, allowed by a PREFIXED pattern
        "acls_described": 2,
        "acls_deleted": 1,
        "carol_after_delete": "TopicAuthorizationException",
        "acls_left": 1,
        "carol_login_after_deletion": "SaslAuthenticationException",
        "token_owner": "User:admin",
        "tokens_described": 1,
        "token_login": "ok",
        "renewed_within_hour": True,
        "tokens_after_expiry": 0,
        "token_login_after_expiry": "SaslAuthenticationException",
    }
    assert {"User:carol", "User:dave"} <= principals
