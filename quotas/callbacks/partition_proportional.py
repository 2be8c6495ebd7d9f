"""Partition-proportional quotas (KIP-257's second scenario): a quota is a total for the
whole cluster, and each broker enforces the share of it that matches the partitions it
leads.

A broker's limit for a produce or fetch quota is `quota x led / total`, where `total`
counts the partitions of the topics the user uses and `led` those this broker leads.
Which topics a user uses comes from `partition.quota.topics=alice=orders,payments;bob=logs`;
users not listed use every topic but the internal ones. Shares are recomputed on every
metadata change (topics created or deleted, partitions added, leaders moved). A broker
that leads none of the user's partitions sets no limit there: the user's produce and
fetch traffic goes to leaders. Request and controller-mutation quotas are applied as
Kafka's DefaultQuotaCallback applies them.
"""

from __future__ import annotations

from collections.abc import Mapping

from quotas.callback import USER_TAG, ClientQuotaType, Cluster, DefaultQuotaCallback

TOPICS_CONFIG = "partition.quota.topics"
SPLIT_TYPES = (ClientQuotaType.PRODUCE, ClientQuotaType.FETCH)


def parse_topics(spec: str) -> dict[str, frozenset[str]]:
    """`user=topic,topic;user=topic` -> {user: topics}."""
    found: dict[str, frozenset[str]] = {}
    for item in filter(None, (part.strip() for part in spec.split(";"))):
        user, sep, topics = item.partition("=")
        if not sep or not user.strip():
            raise ValueError(f"{TOPICS_CONFIG}: expected user=topic,... in {item!r}")
        found[user.strip()] = frozenset(t.strip() for t in topics.split(",") if t.strip())
    return found


class PartitionProportionalCallback(DefaultQuotaCallback):
    def __init__(self) -> None:
        super().__init__()
        self.node_id = -1
        self.topics_of: dict[str, frozenset[str]] = {}
        self.cluster: Cluster | None = None
        self._shares: dict[str, tuple[int, int]] = {}  # user -> (led here, total)

    def configure(self, configs: Mapping[str, str]) -> None:
        self.node_id = int(configs["node.id"])
        self.topics_of = parse_topics(configs.get(TOPICS_CONFIG, ""))

    def share(self, user: str) -> tuple[int, int]:
        """(partitions this broker leads, partitions in all) of the user's topics."""
        found = self._shares.get(user)
        if found is None:
            found = self._shares[user] = self._count(user)
        return found

    def _count(self, user: str) -> tuple[int, int]:
        if self.cluster is None:
            return 0, 0
        topics = self.topics_of.get(user)
        partitions = [
            p
            for p in self.cluster.partitions
            if (p.topic in topics if topics is not None else not p.topic.startswith("__"))
        ]
        led = sum(1 for p in partitions if p.leader is not None and p.leader.id == self.node_id)
        return led, len(partitions)

    def update_cluster_metadata(self, cluster: Cluster) -> bool:
        before = self._shares  # counted on the previous cluster
        self.cluster = cluster
        self._shares = {}
        return any(self.share(user) != counts for user, counts in before.items()) or not before

    def quota_limit(self, quota_type: ClientQuotaType, metric_tags: Mapping[str, str]) -> float | None:
        total_quota = super().quota_limit(quota_type, metric_tags)
        if total_quota is None or quota_type not in SPLIT_TYPES:
            return total_quota
        led, total = self.share(metric_tags.get(USER_TAG, ""))
        if total == 0:
            return total_quota  # no partitions yet: nothing to split
        if led == 0:
            return None
        return total_quota * led / total
