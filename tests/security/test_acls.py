"""The ACL APIs (CreateAcls, DescribeAcls, DeleteAcls) through confluent-kafka's and
kafka-python's admin clients, with Kafka's validation and filter semantics."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType
from kafka.errors import ClusterAuthorizationFailedError
from kafka.protocol.admin.acl import CreateAclsRequest, DescribeAclsRequest

from broker import MockCluster
from protocol.errors import ErrorCode
from tests.support.wire import round_trip

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANY = AclBindingFilter(
    ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
)


@pytest.fixture
def secured() -> Iterator[MockCluster]:
    """An authorizer, and the plaintext listener's anonymous principal as super user."""
    with MockCluster(config={"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"}) as cluster:
        yield cluster


def _binding(
    name: str,
    principal: str,
    operation: AclOperation,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
    permission: AclPermissionType = AclPermissionType.ALLOW,
    resource: ResourceType = ResourceType.TOPIC,
) -> AclBinding:
    return AclBinding(resource, name, pattern, principal, "*", operation, permission)


def _create(admin: AdminClient, *bindings: AclBinding) -> list[str | None]:
    results = []
    for future in admin.create_acls(list(bindings)).values():
        try:
            future.result(10)
            results.append(None)
        except KafkaException as exc:
            results.append(exc.args[0].str())
    return results


def test_create_describe_and_delete_with_filters(secured: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    orders = _binding("orders", "User:alice", AclOperation.READ)
    prefixed = _binding(
        "ord", "User:bob", AclOperation.WRITE, ResourcePatternType.PREFIXED, AclPermissionType.DENY
    )
    wildcard = _binding("*", "User:carol", AclOperation.DESCRIBE)
    group = _binding("readers", "User:alice", AclOperation.READ, resource=ResourceType.GROUP)
    assert _create(admin, orders, prefixed, wildcard, group) == [None] * 4
    assert _create(admin, orders) == [None]  # again: no error, no duplicate

    assert sorted(map(str, admin.describe_acls(ANY).result(10))) == sorted(
        map(str, [orders, prefixed, wildcard, group])
    )

    def described(name: str | None, pattern: ResourcePatternType, **entry: object) -> set[str]:
        flt = AclBindingFilter(
            ResourceType.TOPIC,
            name,
            pattern,
            entry.get("principal"),  # type: ignore[arg-type]
            None,
            entry.get("operation", AclOperation.ANY),  # type: ignore[arg-type]
            AclPermissionType.ANY,
        )
        return set(map(str, admin.describe_acls(flt).result(10)))

    assert described("orders", ResourcePatternType.LITERAL) == {str(orders)}
    assert described("ord", ResourcePatternType.PREFIXED) == {str(prefixed)}
    # MATCH: every binding that applies to a topic named "orders"
    assert described("orders", ResourcePatternType.MATCH) == {str(orders), str(prefixed), str(wildcard)}
    assert described(None, ResourcePatternType.ANY, principal="User:alice") == {str(orders)}
    assert described(None, ResourcePatternType.ANY, operation=AclOperation.WRITE) == {str(prefixed)}

    deleted = admin.delete_acls(
        [
            AclBindingFilter(
                ResourceType.TOPIC,
                None,
                ResourcePatternType.PREFIXED,
                None,
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        ]
    )
    assert [list(map(str, f.result(10))) for f in deleted.values()] == [[str(prefixed)]]
    assert sorted(map(str, admin.describe_acls(ANY).result(10))) == sorted(
        map(str, [orders, wildcard, group])
    )


def test_invalid_bindings_are_refused_with_kafkas_messages(secured: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    refused = _create(
        admin,
        _binding("not-the-cluster", "User:alice", AclOperation.ALTER, resource=ResourceType.BROKER),
        _binding("orders", "alice", AclOperation.READ),
    )
    assert refused == [
        "The only valid name for the CLUSTER resource is kafka-cluster",
        "Could not parse principal from `alice` (no colon is present separating the principal type "
        "from the principal name)",
    ]
    assert admin.describe_acls(ANY).result(10) == []


def test_kafka_python_admin_manages_acls(secured: MockCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=secured.bootstrap_servers)
    try:
        acl = ACL(
            principal="User:dave",
            host="*",
            operation=ACLOperation.READ,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(KpResourceType.TOPIC, "events", ACLResourcePatternType.LITERAL),
        )
        created = admin.create_acls([acl])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        any_topic = ACLFilter(
            principal=None,
            host="*",
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(KpResourceType.TOPIC, None, ACLResourcePatternType.ANY),
        )
        described, error = admin.describe_acls(any_topic)
        assert error is not None and error.errno == 0
        assert [(a.principal, a.resource_pattern.resource_name) for a in described] == [
            ("User:dave", "events")
        ]
        deleted = admin.delete_acls([any_topic])
        assert [len(matches) for _, matches, _ in deleted] == [1]
    finally:
        admin.close()


def test_acl_apis_need_an_authorizer_and_cluster_permission() -> None:
    with MockCluster() as cluster:  # no authorizer
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        assert _create(admin, _binding("t", "User:a", AclOperation.READ)) == ["No Authorizer is configured."]
    with MockCluster(config={"authorizer.class.name": STANDARD}) as cluster:  # anonymous is no super user
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        (refused,) = _create(admin, _binding("t", "User:a", AclOperation.READ))
        assert refused is not None and "authorization" in refused.lower()
        # librdkafka reports a refused DescribeAcls as an empty result; kafka-python raises
        kp_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            with pytest.raises(ClusterAuthorizationFailedError):
                kp_admin.describe_acls(
                    ACLFilter(
                        principal=None,
                        host="*",
                        operation=ACLOperation.ANY,
                        permission_type=ACLPermissionType.ANY,
                        resource_pattern=ResourcePatternFilter(
                            KpResourceType.ANY, None, ACLResourcePatternType.ANY
                        ),
                    )
                )
        finally:
            kp_admin.close()


def test_an_unknown_authorizer_class_is_refused() -> None:
    with pytest.raises(ValueError, match="authorizer.class.name"):
        MockCluster(config={"authorizer.class.name": "com.example.MyAuthorizer"})


def test_raw_creations_kafka_refuses_before_validating(secured: MockCluster) -> None:
    """UNKNOWN (0) anywhere: Kafka's parser refuses the request, the connection closes.
    ANY or MATCH: the binding cannot be built, every creation fails UNKNOWN_SERVER_ERROR.
    Otherwise validation in Kafka's order: INVALID_REQUEST with its message."""
    host, port = secured.bootstrap_servers.split(":")

    def create(*creations: tuple[int, str, int, str, str, int, int]) -> Any:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            try:
                return round_trip(sock, CreateAclsRequest[2](creations=list(creations)), 1, "raw")
            except (ConnectionError, OSError, ValueError, struct.error):
                return None

    topic, literal, prefixed, read, allow = 2, 3, 4, 3, 3
    assert create((0, "t", literal, "User:a", "*", read, allow)) is None  # closed unanswered
    refused = create(
        (2, "t", 1, "User:a", "*", read, allow), (topic, "u", literal, "User:a", "*", read, allow)
    )
    assert [(r.error_code, r.error_message) for r in refused.results] == [
        (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    ] * 2
    checked = create(
        (topic, "", prefixed, "User:a", "*", read, allow),
        (topic, "t", literal, "User:a", "*", 99, allow),
        (topic, "t", literal, "User:a", "*", read, allow),
        (topic, "t", literal, "User:a", "", read, allow),
    )
    assert [(r.error_code, r.error_message) for r in checked.results] == [
        (ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
        (ErrorCode.INVALID_REQUEST, "Invalid operation UNKNOWN"),
        (ErrorCode.NONE, ""),  # empty, not null, as Kafka's AclCreationResult
        (ErrorCode.INVALID_REQUEST, "Host pattern cannot be null or empty"),
    ]
    # a served DescribeAcls' message is empty too (DescribeAclsResponseData's default)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        described = round_trip(
            sock,
            DescribeAclsRequest[2](
                resource_type_filter=topic,
                resource_name_filter="t",
                pattern_type_filter=literal,
                principal_filter=None,
                host_filter=None,
                operation=1,
                permission_type=1,
            ),
            2,
            "raw",
        )
    assert (described.error_code, described.error_message, len(described.resources)) == (0, "", 1)
