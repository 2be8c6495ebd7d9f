"""StandardAuthorizer's decisions, on the pure authorizer (acls.py)."""

from __future__ import annotations

from broker.security.acls import (
    AclAuthorizer,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

TOPIC = ResourceType.TOPIC


def _acl(
    name: str,
    operation: Operation,
    principal: str = "User:alice",
    permission: Permission = Permission.ALLOW,
    pattern: PatternType = PatternType.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(TOPIC, name, pattern, principal, host, operation, permission)


def test_decisions() -> None:
    acls = AclAuthorizer(super_users=["User:root"])
    for binding in (
        _acl("orders", Operation.READ),
        _acl("ord", Operation.WRITE, pattern=PatternType.PREFIXED),
        _acl("*", Operation.DESCRIBE, principal="User:*"),
        _acl("orders", Operation.WRITE, principal="User:mallory", permission=Permission.DENY),
        _acl("ord", Operation.ALL, principal="User:mallory", pattern=PatternType.PREFIXED),
        _acl("payroll", Operation.ALTER_CONFIGS, host="10.0.0.1"),
    ):
        acls.add(binding)

    def may(principal: str, operation: Operation, name: str, host: str = "10.0.0.9") -> bool:
        return acls.authorize(principal, host, operation, TOPIC, name)

    assert may("User:alice", Operation.READ, "orders")
    assert may("User:alice", Operation.WRITE, "orders")  # prefixed "ord"
    assert may("User:alice", Operation.DESCRIBE, "orders")  # implied by READ
    assert not may("User:alice", Operation.DELETE, "orders")
    assert may("User:bob", Operation.DESCRIBE, "anything")  # the wildcard, for everyone
    assert not may("User:bob", Operation.READ, "orders")
    assert not may("User:mallory", Operation.WRITE, "orders")  # DENY beats the ALL allow
    assert may("User:mallory", Operation.READ, "orders")
    assert may("User:alice", Operation.DESCRIBE_CONFIGS, "payroll", host="10.0.0.1")  # implied
    assert not may("User:alice", Operation.DESCRIBE_CONFIGS, "payroll")  # another host
    assert may("User:root", Operation.DELETE, "payroll")  # a super user
    acls.remove(_acl("*", Operation.DESCRIBE, principal="User:*"))
    assert not may("User:bob", Operation.DESCRIBE, "unnamed")  # no ACL names it: refused


def test_allow_everyone_if_no_acl_found_means_no_binding_of_anyone() -> None:
    acls = AclAuthorizer(allow_if_no_acl=True)
    acls.add(_acl("named", Operation.READ, principal="User:someone-else"))
    assert acls.authorize("User:alice", "h", Operation.READ, TOPIC, "unnamed")
    assert not acls.authorize("User:alice", "h", Operation.READ, TOPIC, "named")  # named, not for alice
