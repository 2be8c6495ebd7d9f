"""ACLs under StandardAuthorizer, on a layout with a SASL_PLAINTEXT listener (PLAIN users
admin, alice and bob: runner.SASL_USERS) next to the plain one, whose User:ANONYMOUS is a
super user like admin.

- ACL administration by the super user: CreateAcls (v1-v3) with valid and invalid resource
  types, pattern types, operations, permissions, principals and hosts, duplicates;
  DescribeAcls and DeleteAcls with valid and invalid filters.
- alice, with no ACL: every API the authorizer gates, on the scenario's own topic, group
  and transactional id (TOPIC_, GROUP_, CLUSTER_ and TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  or what Kafka filters out instead), then the same requests after the super user granted
  what they need (settled: Kafka's brokers apply new ACLs a moment after CreateAcls
  answers).

ACLs accumulate in the family's clusters (no reset): every resource is the scenario's own,
and the cluster-wide grants come last."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.differential.model import Scenario, Step

FAMILY = "acls"
CONFIG = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "sasl.enabled.mechanisms": "PLAIN",
}
SETTLE = 10.0  # Kafka brokers apply new ACLs a moment after CreateAcls answers
ADMIN, USER = "admin", "alice"

# resource types, pattern types, operations, permissions (Kafka's codes)
ANY, TOPIC, GROUP, CLUSTER, TXN_ID, TOKEN, USER_RESOURCE = 1, 2, 3, 4, 5, 6, 7
MATCH, LITERAL, PREFIXED = 2, 3, 4
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
DENY, ALLOW = 2, 3


def acl(
    resource_type: int,
    name: str,
    operation: int,
    principal: str = f"User:{USER}",
    pattern: int = LITERAL,
    permission: int = ALLOW,
    host: str = "*",
) -> dict[str, Any]:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


def acl_filter(
    resource_type: int = ANY,
    name: str | None = None,
    pattern: int = ANY,
    principal: str | None = None,
    operation: int = ANY,
    permission: int = ANY,
    host: str | None = None,
) -> dict[str, Any]:
    return {
        "resource_type_filter": resource_type,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": host,
        "operation": operation,
        "permission_type": permission,
    }


def create_acls(creations: list[dict[str, Any]], version: int = 3, **kw: Any) -> Step:
    kw.setdefault("user", ADMIN)
    return Step(30, version, {"creations": creations}, **kw)


def describe_acls(version: int = 3, **kw: Any) -> Step:
    user = kw.pop("user", ADMIN)
    settle = kw.pop("settle", SETTLE)
    label = kw.pop("label", "")
    return Step(29, version, acl_filter(**kw), user=user, settle=settle, label=label)


def delete_acls(filters: list[dict[str, Any]], version: int = 3, **kw: Any) -> Step:
    kw.setdefault("user", ADMIN)
    return Step(31, version, {"filters": filters}, **kw)


def create_topic(topic: str) -> list[Step]:
    """The topic, by the plain listener's super user, then settled (not compared)."""
    return [
        Step(
            19,
            7,
            {
                "topics": [
                    {
                        "name": topic,
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout_ms": 5000,
                "validate_only": False,
            },
            compare=False,
        ),
        Step(
            3,
            12,
            {
                "topics": [{"name": topic}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
            compare=False,
            settle=SETTLE,
        ),
        Step(
            2,
            9,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}],
                    }
                ],
            },
            compare=False,
            settle=SETTLE,
        ),
    ]


def records() -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, timestamp=1_500_000_000_000, key=b"k", value=b"v", headers=[])
    return bytes(builder.build())


# Each gated request as alice, given the scenario's topic, group and transactional id:
# (case, the request, the ACLs that grant it)
Case = tuple[str, Callable[[str, str, str], Step], Callable[[str, str, str], list[dict[str, Any]]]]


def cases() -> list[Case]:
    def step(key: int, version: int, fields: dict[str, Any]) -> Step:
        return Step(key, version, fields, user=USER)

    def create_new(topic: str) -> Step:
        """A validate-only CreateTopics of `<topic>-new` (TOPIC CREATE, or CLUSTER CREATE)."""
        new = {
            "name": topic + "-new",
            "num_partitions": 1,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
        }
        return step(19, 7, {"topics": [new], "timeout_ms": 5000, "validate_only": True})

    def commit_offset(group: str, topic: str) -> Step:
        """A simple consumer's OffsetCommit v8 of offset 0 on `topic`-0 for `group`."""
        partition = {
            "partition_index": 0,
            "committed_offset": 0,
            "committed_leader_epoch": -1,
            "committed_metadata": "",
        }
        fields = {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [partition]}],
        }
        return step(8, 8, fields)

    return [
        (
            "metadata",
            lambda t, g, x: step(
                3,
                12,
                {
                    "topics": [{"name": t}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": True,
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, DESCRIBE)],
        ),
        (
            "metadata-v8",
            lambda t, g, x: step(
                3,
                8,
                {
                    "topics": [{"name": t}],
                    "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": True,
                    "include_topic_authorized_operations": True,
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, READ)],
        ),
        (
            "metadata-auto-create",
            lambda t, g, x: step(
                3,
                12,
                {
                    "topics": [{"name": t + "-auto"}],
                    "allow_auto_topic_creation": True,
                    "include_topic_authorized_operations": True,
                },
            ),
            lambda t, g, x: [acl(TOPIC, t + "-auto", DESCRIBE)],
        ),
        (
            "create-topics",
            lambda t, g, x: create_new(t),
            lambda t, g, x: [acl(TOPIC, t + "-new", CREATE)],
        ),
        (
            "create-topics-describe-only",
            lambda t, g, x: create_new(t),
            lambda t, g, x: [acl(TOPIC, t + "-new", DESCRIBE_CONFIGS)],
        ),
        (
            "delete-topics",
            lambda t, g, x: step(20, 6, {"topics": [{"name": t}], "timeout_ms": 5000}),
            lambda t, g, x: [acl(TOPIC, t, DELETE)],
        ),
        (
            "create-partitions",
            lambda t, g, x: step(
                37,
                3,
                {
                    "topics": [{"name": t, "count": 2, "assignments": None}],
                    "timeout_ms": 5000,
                    "validate_only": True,
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, ALTER)],
        ),
        (
            "produce",
            lambda t, g, x: step(
                0,
                9,
                {
                    "transactional_id": None,
                    "acks": -1,
                    "timeout_ms": 5000,
                    "topic_data": [{"name": t, "partition_data": [{"index": 0, "records": records()}]}],
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, WRITE)],
        ),
        (
            "fetch",
            lambda t, g, x: step(
                1,
                12,
                {
                    "replica_id": -1,
                    "max_wait_ms": 0,
                    "min_bytes": 0,
                    "max_bytes": 1 << 20,
                    "isolation_level": 0,
                    "session_id": 0,
                    "session_epoch": -1,
                    "topics": [
                        {
                            "topic": t,
                            "partitions": [
                                {
                                    "partition": 0,
                                    "current_leader_epoch": -1,
                                    "fetch_offset": 0,
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
            ),
            lambda t, g, x: [acl(TOPIC, t, READ)],
        ),
        (
            "list-offsets",
            lambda t, g, x: step(
                2,
                9,
                {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [
                        {
                            "name": t,
                            "partitions": [
                                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                            ],
                        }
                    ],
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, DESCRIBE)],
        ),
        (
            "delete-records",
            lambda t, g, x: step(
                21,
                2,
                {
                    "topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": 0}]}],
                    "timeout_ms": 5000,
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, DELETE)],
        ),
        (
            "describe-producers",
            lambda t, g, x: step(61, 0, {"topics": [{"name": t, "partition_indexes": [0]}]}),
            lambda t, g, x: [acl(TOPIC, t, READ)],
        ),
        (
            "offset-for-leader-epoch",
            lambda t, g, x: step(
                23,
                4,
                {
                    "replica_id": -1,
                    "topics": [
                        {
                            "topic": t,
                            "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
                        }
                    ],
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, DESCRIBE)],
        ),
        (
            "find-coordinator-group",
            lambda t, g, x: step(10, 4, {"key_type": 0, "coordinator_keys": [g]}),
            lambda t, g, x: [acl(GROUP, g, DESCRIBE)],
        ),
        (
            "find-coordinator-txn",
            lambda t, g, x: step(10, 4, {"key_type": 1, "coordinator_keys": [x]}),
            lambda t, g, x: [acl(TXN_ID, x, DESCRIBE)],
        ),
        (
            "join-group",
            lambda t, g, x: step(
                11,
                9,
                {
                    "group_id": g,
                    "session_timeout_ms": 30000,
                    "rebalance_timeout_ms": 30000,
                    "member_id": "",
                    "group_instance_id": None,
                    "protocol_type": "consumer",
                    "protocols": [{"name": "range", "metadata": b""}],
                    "reason": None,
                },
            ),
            lambda t, g, x: [acl(GROUP, g, READ)],
        ),
        (
            "offset-commit",
            lambda t, g, x: commit_offset(g, t),
            lambda t, g, x: [acl(GROUP, g, READ), acl(TOPIC, t, READ)],
        ),
        (
            "offset-commit-group-only",
            lambda t, g, x: commit_offset(g, t),
            lambda t, g, x: [acl(GROUP, g, READ)],
        ),
        (
            "offset-fetch",
            lambda t, g, x: step(
                9,
                8,
                {
                    "groups": [{"group_id": g, "topics": [{"name": t, "partition_indexes": [0]}]}],
                    "require_stable": False,
                },
            ),
            lambda t, g, x: [acl(GROUP, g, DESCRIBE), acl(TOPIC, t, DESCRIBE)],
        ),
        (
            "describe-groups",
            lambda t, g, x: step(15, 5, {"groups": [g], "include_authorized_operations": True}),
            lambda t, g, x: [acl(GROUP, g, DESCRIBE)],
        ),
        (
            "delete-groups",
            lambda t, g, x: step(42, 2, {"groups_names": [g]}),
            lambda t, g, x: [acl(GROUP, g, DELETE)],
        ),
        (
            "describe-configs-topic",
            lambda t, g, x: step(
                32,
                4,
                {
                    "resources": [
                        {"resource_type": 2, "resource_name": t, "configuration_keys": ["retention.ms"]}
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, DESCRIBE_CONFIGS)],
        ),
        (
            "alter-configs-topic",
            lambda t, g, x: step(
                33,
                2,
                {
                    "resources": [
                        {
                            "resource_type": 2,
                            "resource_name": t,
                            "configs": [{"name": "retention.ms", "value": "3600000"}],
                        }
                    ],
                    "validate_only": True,
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, ALTER_CONFIGS)],
        ),
        (
            "incremental-alter-configs-topic",
            lambda t, g, x: step(
                44,
                1,
                {
                    "resources": [
                        {
                            "resource_type": 2,
                            "resource_name": t,
                            "configs": [{"name": "retention.ms", "config_operation": 0, "value": "3600000"}],
                        }
                    ],
                    "validate_only": True,
                },
            ),
            lambda t, g, x: [acl(TOPIC, t, ALTER_CONFIGS)],
        ),
        (
            "init-producer-id-txn",
            lambda t, g, x: step(
                22,
                4,
                {
                    "transactional_id": x,
                    "transaction_timeout_ms": 60000,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            ),
            lambda t, g, x: [acl(TXN_ID, x, WRITE)],
        ),
        (
            "describe-transactions",
            lambda t, g, x: step(65, 0, {"transactional_ids": [x]}),
            lambda t, g, x: [acl(TXN_ID, x, DESCRIBE)],
        ),
        (
            "list-transactions",
            lambda t, g, x: step(
                66, 1, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
            ),
            lambda t, g, x: [acl(TXN_ID, x, DESCRIBE)],
        ),
        (
            "list-groups",
            lambda t, g, x: step(16, 4, {"states_filter": []}),
            lambda t, g, x: [acl(GROUP, g, DESCRIBE)],
        ),
        (
            "describe-acls",
            lambda t, g, x: Step(29, 3, acl_filter(TOPIC, t), user=USER),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", DESCRIBE)],
        ),
        (
            "create-acls",
            lambda t, g, x: create_acls([acl(TOPIC, t + "-x", READ, "User:bob")], user=USER),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", ALTER)],
        ),
        (
            "delete-acls",
            lambda t, g, x: delete_acls([acl_filter(TOPIC, t + "-none")], user=USER),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", ALTER)],
        ),
        # cluster-wide grants last: they make the cluster cases after them authorized
        (
            "describe-cluster",
            lambda t, g, x: step(60, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1}),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", DESCRIBE)],
        ),
        (
            "describe-configs-broker",
            lambda t, g, x: step(
                32,
                4,
                {
                    "resources": [
                        {"resource_type": 4, "resource_name": "0", "configuration_keys": ["log.retention.ms"]}
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
            ),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS)],
        ),
        (
            "describe-client-quotas",
            lambda t, g, x: step(
                48,
                1,
                {"components": [{"entity_type": "user", "match_type": 1, "match": None}], "strict": False},
            ),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS)],
        ),
        (
            "alter-client-quotas",
            lambda t, g, x: step(
                49,
                1,
                {
                    "entries": [
                        {
                            "entity": [{"entity_type": "user", "entity_name": "carol"}],
                            "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
                        }
                    ],
                    "validate_only": True,
                },
            ),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", ALTER_CONFIGS)],
        ),
        (
            "alter-configs-broker",
            lambda t, g, x: step(
                33,
                2,
                {
                    "resources": [
                        {
                            "resource_type": 4,
                            "resource_name": "0",
                            "configs": [{"name": "log.cleaner.threads", "value": "2"}],
                        }
                    ],
                    "validate_only": True,
                },
            ),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", ALTER_CONFIGS)],
        ),
        (
            "describe-log-dirs",
            lambda t, g, x: step(35, 4, {"topics": [{"topic": t, "partitions": [0]}]}),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", DESCRIBE)],
        ),
        (
            "init-producer-id-idempotent",
            lambda t, g, x: step(
                22,
                4,
                {
                    "transactional_id": None,
                    "transaction_timeout_ms": 60000,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            ),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", IDEMPOTENT_WRITE)],
        ),
        (
            "describe-user-scram-credentials",
            lambda t, g, x: step(50, 0, {"users": [{"name": "bob"}]}),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", DESCRIBE)],
        ),
        (
            "elect-leaders",
            lambda t, g, x: step(
                43,
                2,
                {
                    "election_type": 0,
                    "topic_partitions": [{"topic": t, "partitions": [0]}],
                    "timeout_ms": 5000,
                },
            ),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", ALTER)],
        ),
        (
            "create-topics-cluster-grant",
            lambda t, g, x: create_new(t),
            lambda t, g, x: [acl(CLUSTER, "kafka-cluster", CREATE)],
        ),
    ]


def admin_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    valid = [
        ("topic-literal", acl(TOPIC, "acls-admin-t", READ)),
        ("topic-prefixed", acl(TOPIC, "acls-admin-p", WRITE, pattern=PREFIXED)),
        ("topic-wildcard", acl(TOPIC, "*", DESCRIBE, "User:bob")),
        ("topic-deny", acl(TOPIC, "acls-admin-d", ALL, permission=DENY)),
        ("group", acl(GROUP, "acls-admin-g", READ, host="127.0.0.1")),
        ("cluster", acl(CLUSTER, "kafka-cluster", IDEMPOTENT_WRITE, "User:bob")),
        ("transactional-id", acl(TXN_ID, "acls-admin-x", WRITE)),
        ("delegation-token", acl(TOKEN, "acls-admin-token", DESCRIBE)),
        ("user", acl(USER_RESOURCE, "User:bob", CREATE, "User:*")),
        ("principal-wildcard", acl(TOPIC, "acls-admin-w", READ, "User:*")),
        ("principal-group-type", acl(TOPIC, "acls-admin-gt", READ, "Group:ops")),
    ]
    invalid = [
        ("resource-unknown", acl(0, "acls-bad", READ)),
        ("resource-any", acl(ANY, "acls-bad", READ)),
        ("resource-out-of-range", acl(9, "acls-bad", READ)),
        ("pattern-unknown", acl(TOPIC, "acls-bad", READ, pattern=0)),
        ("pattern-any", acl(TOPIC, "acls-bad", READ, pattern=ANY)),
        ("pattern-match", acl(TOPIC, "acls-bad", READ, pattern=MATCH)),
        ("pattern-out-of-range", acl(TOPIC, "acls-bad", READ, pattern=9)),
        ("operation-unknown", acl(TOPIC, "acls-bad", 0)),
        ("operation-any", acl(TOPIC, "acls-bad", ANY)),
        ("operation-out-of-range", acl(TOPIC, "acls-bad", 42)),
        ("operation-wrong-for-resource", acl(TOPIC, "acls-bad", IDEMPOTENT_WRITE)),
        ("permission-unknown", acl(TOPIC, "acls-bad", READ, permission=0)),
        ("permission-any", acl(TOPIC, "acls-bad", READ, permission=ANY)),
        ("principal-no-type", acl(TOPIC, "acls-bad", READ, "alice")),
        ("principal-empty", acl(TOPIC, "acls-bad", READ, "")),
        ("host-empty", acl(TOPIC, "acls-bad", READ, host="")),
        ("name-empty", acl(TOPIC, "", READ)),
        ("cluster-wrong-name", acl(CLUSTER, "my-cluster", ALTER)),
        ("prefixed-wildcard", acl(TOPIC, "*", READ, pattern=PREFIXED)),
    ]
    for version in (1, 3):  # v2 (the first flexible one) encodes as v3 does
        for case, entry in valid:
            name = f"acls-admin-create-{case}-v{version}"
            out.append(
                Scenario(
                    name,
                    FAMILY,
                    (
                        create_acls([entry], version),
                        describe_acls(
                            version,
                            resource_type=entry["resource_type"],
                            name=entry["resource_name"],
                            pattern=entry["resource_pattern_type"],
                            principal=entry["principal"],
                        ),
                        delete_acls(
                            [
                                acl_filter(
                                    entry["resource_type"],
                                    entry["resource_name"],
                                    entry["resource_pattern_type"],
                                    entry["principal"],
                                )
                            ],
                            version,
                        ),
                        describe_acls(
                            version,
                            label="DescribeAcls-after",
                            resource_type=entry["resource_type"],
                            name=entry["resource_name"],
                            pattern=entry["resource_pattern_type"],
                            principal=entry["principal"],
                        ),
                    ),
                    config=CONFIG,
                )
            )
        for case, entry in invalid:
            out.append(
                Scenario(
                    f"acls-admin-create-{case}-v{version}",
                    FAMILY,
                    (create_acls([entry], version),),
                    config=CONFIG,
                )
            )
        out.append(
            Scenario(
                f"acls-admin-create-duplicate-v{version}",
                FAMILY,
                (
                    create_acls([acl(TOPIC, f"acls-admin-dup-v{version}", READ)] * 2, version),
                    create_acls(
                        [acl(TOPIC, f"acls-admin-dup-v{version}", READ)], version, label="CreateAcls-again"
                    ),
                    describe_acls(version, resource_type=TOPIC, name=f"acls-admin-dup-v{version}"),
                    delete_acls([acl_filter(TOPIC, f"acls-admin-dup-v{version}")], version),
                ),
                config=CONFIG,
            )
        )
        out.append(
            Scenario(
                f"acls-admin-create-mixed-v{version}",
                FAMILY,
                (
                    create_acls(
                        [
                            acl(TOPIC, f"acls-admin-mixed-v{version}", READ),
                            acl(0, "x", READ),
                            acl(TOPIC, "y", 0),
                        ],
                        version,
                    ),
                    describe_acls(version, resource_type=TOPIC, name=f"acls-admin-mixed-v{version}"),
                ),
                config=CONFIG,
            )
        )
        filters = [
            ("unknown-resource", acl_filter(0)),
            ("unknown-pattern", acl_filter(TOPIC, pattern=0)),
            ("unknown-operation", acl_filter(TOPIC, operation=0)),
            ("unknown-permission", acl_filter(TOPIC, permission=0)),
            ("out-of-range-resource", acl_filter(9)),
            ("match", acl_filter(TOPIC, "acls-admin-match-topic", MATCH)),
            ("nothing", acl_filter(GROUP, "acls-no-such-group", LITERAL)),
            ("principal", acl_filter(ANY, None, ANY, "User:nobody")),
        ]
        for case, spec in filters:
            out.append(
                Scenario(
                    f"acls-admin-describe-filter-{case}-v{version}",
                    FAMILY,
                    (Step(29, version, spec, user=ADMIN),),
                    config=CONFIG,
                )
            )
            out.append(
                Scenario(
                    f"acls-admin-delete-filter-{case}-v{version}",
                    FAMILY,
                    (delete_acls([spec], version),),
                    config=CONFIG,
                )
            )
    prefix = "acls-admin-match-topic"
    out.append(
        Scenario(
            "acls-admin-match-filter",
            FAMILY,
            (
                create_acls(
                    [
                        acl(TOPIC, prefix, READ),
                        acl(TOPIC, "acls-admin-match", WRITE, pattern=PREFIXED),
                        acl(TOPIC, "*", DESCRIBE, "User:bob"),
                    ],
                    compare=False,
                ),
                describe_acls(resource_type=TOPIC, name=prefix, pattern=MATCH),
                delete_acls([acl_filter(TOPIC, prefix, MATCH)], label="DeleteAcls-match"),
                describe_acls(resource_type=TOPIC, name=prefix, pattern=MATCH, label="DescribeAcls-after"),
            ),
            config=CONFIG,
        )
    )
    return out


def gated_scenarios() -> list[Scenario]:
    denied: list[Scenario] = []
    granted: list[Scenario] = []
    for case, request, grants in cases():
        for outcome in ("denied", "granted"):
            topic = f"acls-{outcome}-{case}"
            group, txn = f"{topic}-group", f"{topic}-txn"
            steps = [*create_topic(topic)]
            if outcome == "granted":
                steps.append(create_acls(grants(topic, group, txn), compare=False))
                gated = request(topic, group, txn)
                steps.append(Step(gated.api_key, gated.version, gated.fields, user=USER, settle=SETTLE))
            else:
                steps.append(request(topic, group, txn))
            (denied if outcome == "denied" else granted).append(
                Scenario(topic, FAMILY, tuple(steps), config=CONFIG)
            )
    return denied + granted


def scenarios() -> list[Scenario]:
    return admin_scenarios() + gated_scenarios()
