"""Quota groups (KIP-257's first scenario): several principals and client ids share
one allowance.

    quota.groups=analytics=User:alice,User:bob;etl=client-id:loader

A member's requests are measured on one sensor per group, tagged like a user named
after the group (`user=analytics`, `client-id=`), so the group shows up under that name
in metrics and in the request-metrics files. A group's limit per quota type comes from
`quota.group.<group>.<quota key>` (e.g. `quota.group.analytics.producer_byte_rate=1048576`),
else from the quotas configured for a user entity named after the group (as Kafka would
resolve them for such a user, defaults included). A principal's group wins over its
client id's. Everyone else is served exactly as by Kafka's DefaultQuotaCallback.
"""

from __future__ import annotations

from collections.abc import Mapping

from quotas.callback import (
    CLIENT_ID_TAG,
    USER_TAG,
    ClientQuotaType,
    DefaultQuotaCallback,
    KafkaPrincipal,
)

GROUPS_CONFIG = "quota.groups"
LIMIT_PREFIX = "quota.group."


def parse_groups(spec: str) -> dict[str, str]:
    """`group=member,member;group=member` -> {member: group}; a member is `User:name`
    (a principal) or `client-id:id`."""
    members: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in spec.split(";"))):
        group, sep, listed = item.partition("=")
        group = group.strip()
        if not sep or not group:
            raise ValueError(f"{GROUPS_CONFIG}: expected group=member,... in {item!r}")
        for member in filter(None, (m.strip() for m in listed.split(","))):
            kind, colon, name = member.partition(":")
            if not colon or not name or kind not in ("User", "client-id"):
                raise ValueError(
                    f"{GROUPS_CONFIG}: a member is User:<name> or client-id:<id>, not {member!r}"
                )
            if member in members and members[member] != group:
                raise ValueError(f"{GROUPS_CONFIG}: {member} is in both {members[member]} and {group}")
            members[member] = group
    return members


class QuotaGroupsCallback(DefaultQuotaCallback):
    def __init__(self) -> None:
        super().__init__()
        self.members: dict[str, str] = {}
        self.limits: dict[tuple[str, str], float] = {}  # (group, quota key) -> limit

    def configure(self, configs: Mapping[str, str]) -> None:
        self.members = parse_groups(configs.get(GROUPS_CONFIG, ""))
        groups = set(self.members.values())
        self.limits = {}
        for key, value in configs.items():
            if not key.startswith(LIMIT_PREFIX):
                continue
            group, _, quota_key = key[len(LIMIT_PREFIX) :].rpartition(".")
            if group not in groups or quota_key not in {t.quota_key for t in ClientQuotaType}:
                raise ValueError(
                    f"{key}: expected {LIMIT_PREFIX}<group>.<quota key> for a group in {GROUPS_CONFIG}"
                )
            self.limits[(group, quota_key)] = float(value)

    def group_of(self, principal: KafkaPrincipal, client_id: str) -> str | None:
        return self.members.get(str(principal)) or self.members.get(f"client-id:{client_id}")

    def quota_metric_tags(
        self, quota_type: ClientQuotaType, principal: KafkaPrincipal, client_id: str
    ) -> dict[str, str]:
        group = self.group_of(principal, client_id)
        if group is None:
            return super().quota_metric_tags(quota_type, principal, client_id)
        return {USER_TAG: group, CLIENT_ID_TAG: ""}

    def quota_limit(self, quota_type: ClientQuotaType, metric_tags: Mapping[str, str]) -> float | None:
        if not metric_tags.get(CLIENT_ID_TAG):
            configured = self.limits.get((metric_tags.get(USER_TAG, ""), quota_type.quota_key))
            if configured is not None:
                return configured
        return super().quota_limit(quota_type, metric_tags)
