"""ACLs and the authorizer, with Kafka's StandardAuthorizer semantics.

Pure data and decisions (no I/O): bindings, the filters the ACL APIs and admin clients
use, and `AclAuthorizer.authorize`. DENY beats ALLOW; super users may do anything;
READ, WRITE, DELETE and ALTER imply DESCRIBE and ALTER_CONFIGS implies DESCRIBE_CONFIGS
(for ALLOW bindings only, as Kafka); a resource is matched by literal bindings of its
name, the literal wildcard `*`, and prefixed bindings of any prefix of its name; a
principal by its own name or `User:*`, a host by its address or `*`. A resource no
binding names is allowed only with `allow.everyone.if.no.acl.found`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# StandardAuthorizerData: the ALLOW operations that also grant these.
_IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset(
        {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}),
}


class InvalidAcl(ValueError):
    """A binding or filter Kafka refuses (INVALID_REQUEST with this message)."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def validate(self) -> None:
        """AclApis' checks, then AclControlManager.validateNewAcl, in Kafka's order (an
        out-of-range code reads as UNKNOWN)."""
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl("The only valid name for the CLUSTER resource is kafka-cluster")
        if not self.resource_name:
            raise InvalidAcl("Invalid empty resource name")
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidAcl(f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (Operation.UNKNOWN, Operation.ANY):
            raise InvalidAcl(f"Invalid operation {self.operation.name}")
        if self.permission not in (Permission.DENY, Permission.ALLOW):
            raise InvalidAcl(f"Invalid permissionType {self.permission.name}")
        if ":" not in self.principal:
            raise InvalidAcl(
                f"Could not parse principal from `{self.principal}` "
                "(no colon is present separating the principal type from the principal name)"
            )
        if not self.host:
            raise InvalidAcl("Host pattern cannot be null or empty")


@dataclass(frozen=True, slots=True)
class AclFilter:
    """AclBindingFilter: None and ANY match everything; MATCH matches the bindings that
    would apply to a resource of that name (literal, wildcard, prefixed)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    def validate(self) -> None:
        """AclControlManager.validateFilter (DeleteAcls): a filter with an UNKNOWN part (an
        out-of-range code) cannot be used."""
        if self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN:
            raise InvalidAcl("Unknown patternFilter.")
        if self.operation == Operation.UNKNOWN or self.permission == Permission.UNKNOWN:
            raise InvalidAcl("Unknown entryFilter.")

    def matches(self, binding: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != binding.resource_type:
            return False
        if not self._matches_pattern(binding):
            return False
        if self.principal is not None and self.principal != binding.principal:
            return False
        if self.host is not None and self.host != binding.host:
            return False
        if self.operation != Operation.ANY and self.operation != binding.operation:
            return False
        return self.permission == Permission.ANY or self.permission == binding.permission

    def _matches_pattern(self, binding: AclBinding) -> bool:
        name = self.resource_name
        if self.pattern_type == PatternType.MATCH:
            if name is None:
                return True
            if binding.pattern_type == PatternType.LITERAL:
                return binding.resource_name in (name, WILDCARD)
            return binding.pattern_type == PatternType.PREFIXED and name.startswith(binding.resource_name)
        if self.pattern_type != PatternType.ANY and self.pattern_type != binding.pattern_type:
            return False
        return name is None or name == binding.resource_name


# Decisions remembered at most (then forgotten all at once): resource names come from
# clients, so the memo must not grow without bound.
MAX_REMEMBERED_DECISIONS = 65536
Decision = tuple[str, str, Operation, ResourceType, str]


class AclAuthorizer:
    """StandardAuthorizer over an in-memory set of bindings, indexed by resource type and
    then by literal name and by prefix, so a decision costs lookups along the resource's
    name, not a walk over every binding.

    Decisions are remembered per (principal, host, operation, resource): a request asks
    the same few questions again and again (a producer's topics), and a remembered answer
    is one dict lookup instead of the prefix walk (with 1,000 ACLs set it took a quarter of
    a small produce request's cost). Any change to the bindings, the super users or
    `allow.everyone.if.no.acl.found` forgets them all, so the next request is decided anew.
    """

    def __init__(self, super_users: Iterable[str] = (), allow_if_no_acl: bool = False) -> None:
        self._decisions: dict[Decision, bool] = {}
        self._super_users = frozenset(super_users)
        self._allow_if_no_acl = allow_if_no_acl
        self.bindings: dict[ResourceType, set[AclBinding]] = {}
        self._literal: dict[tuple[ResourceType, str], set[AclBinding]] = {}
        self._prefixed: dict[tuple[ResourceType, str], set[AclBinding]] = {}

    @property
    def super_users(self) -> frozenset[str]:
        return self._super_users

    @super_users.setter
    def super_users(self, users: Iterable[str]) -> None:
        self._super_users = frozenset(users)
        self._decisions.clear()

    @property
    def allow_if_no_acl(self) -> bool:
        return self._allow_if_no_acl

    @allow_if_no_acl.setter
    def allow_if_no_acl(self, allow: bool) -> None:
        self._allow_if_no_acl = allow
        self._decisions.clear()

    def _index(self, binding: AclBinding) -> dict[tuple[ResourceType, str], set[AclBinding]]:
        return self._literal if binding.pattern_type == PatternType.LITERAL else self._prefixed

    def add(self, binding: AclBinding) -> None:
        self._decisions.clear()
        self.bindings.setdefault(binding.resource_type, set()).add(binding)
        self._index(binding).setdefault((binding.resource_type, binding.resource_name), set()).add(binding)

    def remove(self, binding: AclBinding) -> None:
        self._decisions.clear()
        self.bindings.get(binding.resource_type, set()).discard(binding)
        key = (binding.resource_type, binding.resource_name)
        found = self._index(binding).get(key)
        if found is not None:
            found.discard(binding)
            if not found:
                del self._index(binding)[key]

    def all(self) -> list[AclBinding]:
        return sorted(
            (b for found in self.bindings.values() for b in found),
            key=lambda b: (
                b.resource_type,
                b.resource_name,
                b.pattern_type,
                b.principal,
                b.host,
                b.operation,
            ),
        )

    def matching(self, acl_filter: AclFilter) -> list[AclBinding]:
        return [b for b in self.all() if acl_filter.matches(b)]

    def allows_some(
        self, principal: str, host: str, operation: Operation, resource_type: ResourceType
    ) -> bool:
        """authorizeByResourceType, simplified: an ALLOW binding grants `operation` on some
        resource of the type (DENY bindings on other names are not weighed)."""
        if principal in self.super_users:
            return True
        found = self.bindings.get(resource_type, ())
        if not found:
            return self.allow_if_no_acl
        allowed_by = _IMPLIED_BY.get(operation, frozenset({operation}))
        return any(
            b.permission == Permission.ALLOW
            and b.principal in (principal, WILDCARD_PRINCIPAL)
            and b.host in (host, WILDCARD)
            and (b.operation == Operation.ALL or b.operation in allowed_by)
            for b in found
        )

    def _applicable(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """The bindings naming this resource: literal, the `*` wildcard, every prefix."""
        found: list[AclBinding] = []
        literal, prefixed = self._literal, self._prefixed
        for key in ((resource_type, name), (resource_type, WILDCARD)):
            found.extend(literal.get(key, ()))
        if prefixed:
            for end in range(1, len(name) + 1):
                found.extend(prefixed.get((resource_type, name[:end]), ()))
        return found

    def authorize(
        self, principal: str, host: str, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        key = (principal, host, operation, resource_type, name)
        found = self._decisions.get(key)
        if found is None:
            found = self.decide(principal, host, operation, resource_type, name)
            if len(self._decisions) >= MAX_REMEMBERED_DECISIONS:
                self._decisions.clear()
            self._decisions[key] = found
        return found

    def decide(
        self, principal: str, host: str, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        """StandardAuthorizer's decision, worked out from the bindings (never remembered)."""
        if principal in self._super_users:
            return True
        applicable = self._applicable(resource_type, name)
        if not applicable:
            return self._allow_if_no_acl
        allowed_by = _IMPLIED_BY.get(operation, frozenset({operation}))
        allowed = False
        for binding in applicable:
            if binding.principal not in (principal, WILDCARD_PRINCIPAL) or binding.host not in (
                host,
                WILDCARD,
            ):
                continue
            if binding.permission == Permission.DENY:
                if binding.operation in (operation, Operation.ALL):
                    return False
            elif binding.operation == Operation.ALL or binding.operation in allowed_by:
                allowed = True
        return allowed
