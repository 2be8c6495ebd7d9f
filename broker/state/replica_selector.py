"""KIP-392 replica selectors: which replica a consumer should fetch a partition from.

Pure logic over plain views (no sockets, asyncio or cluster state), so the choice can be
tested alone and the fetch handler pays for it only when `replica.selector.class` is set.
Mirrors Kafka's org.apache.kafka.common.replica package: `ClientMetadata`, `ReplicaView`,
`PartitionView`, `LeaderReplicaSelector`, `RackAwareReplicaSelector`, and the candidate
filter of ReplicaManager.findPreferredReadReplica.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

REPLICA_SELECTOR_CONFIG = "replica.selector.class"
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderReplicaSelector"
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
NO_PREFERRED_REPLICA = -1  # FetchResponse's preferred_read_replica when the leader should serve


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """What Kafka's DefaultClientMetadata tells a selector about the fetching client
    (Fetch v11+): its rack (`client.rack`), id, address, principal and listener."""

    rack_id: str
    client_id: str | None = None
    client_address: str = ""
    principal: str = ""
    listener_name: str = ""


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica as a selector sees it: its broker and rack, how far its log goes and
    how long since it was last caught up (0 for an in-sync replica of this mock, whose
    replicas share one log)."""

    node_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int = 0


@dataclass(frozen=True, slots=True)
class PartitionView:
    """The replicas a selector may choose from (the leader among them) and the leader."""

    replicas: tuple[ReplicaView, ...]
    leader: ReplicaView


class ReplicaSelector(Protocol):
    """Kafka's ReplicaSelector: the preferred replica for a client, or None."""

    def select(
        self, topic: str, partition: int, client: ClientMetadata, view: PartitionView
    ) -> ReplicaView | None: ...


def most_caught_up(replica: ReplicaView) -> tuple[int, int, int]:
    """ReplicaView.comparator as a sort key (greatest = preferred): the largest log end
    offset, then the shortest time since caught up, then the highest broker id."""
    return replica.log_end_offset, -replica.time_since_last_caught_up_ms, replica.node_id


class LeaderReplicaSelector:
    """Always the leader: the same as no selector, but named as Kafka names it."""

    def select(
        self, topic: str, partition: int, client: ClientMetadata, view: PartitionView
    ) -> ReplicaView | None:
        return view.leader


class RackAwareReplicaSelector:
    """A replica in the client's rack, the leader when it is there, else the most
    caught-up one; the leader when the client names no rack or no replica is in it."""

    def select(
        self, topic: str, partition: int, client: ClientMetadata, view: PartitionView
    ) -> ReplicaView | None:
        if not client.rack_id:
            return view.leader
        same_rack = [r for r in view.replicas if r.rack == client.rack_id]
        if not same_rack:
            return view.leader
        if view.leader in same_rack:
            return view.leader
        return max(same_rack, key=most_caught_up)


SELECTORS: dict[str, type[LeaderReplicaSelector] | type[RackAwareReplicaSelector]] = {
    LEADER_SELECTOR: LeaderReplicaSelector,
    RACK_AWARE_SELECTOR: RackAwareReplicaSelector,
}


def load_replica_selector(class_name: str) -> ReplicaSelector | None:
    """The selector `replica.selector.class` names; None when empty (Kafka's null: the
    leader serves every consumer). ValueError for any other class, so a broker with a
    selector it cannot run refuses to start instead of silently ignoring it."""
    name = class_name.strip()
    if not name:
        return None
    selector = SELECTORS.get(name)
    if selector is None:
        raise ValueError(
            f"{REPLICA_SELECTOR_CONFIG}={name}: only Kafka's {', '.join(sorted(SELECTORS))} are available"
        )
    return selector()


def preferred_read_replica(
    selector: ReplicaSelector,
    topic: str,
    partition: int,
    client: ClientMetadata,
    leader: ReplicaView,
    followers: Iterable[tuple[ReplicaView, int, bool]],
    fetch_offset: int,
) -> int:
    """ReplicaManager.findPreferredReadReplica on the leader: the followers that are in
    sync and hold `fetch_offset` ((view, log start offset, in sync) each), plus the leader,
    are offered to the selector; its choice is returned unless it is the leader
    (NO_PREFERRED_REPLICA then, as the leader's own id is never sent)."""
    candidates = [
        view
        for view, log_start, in_sync in followers
        if in_sync and view.log_end_offset >= fetch_offset and log_start <= fetch_offset
    ]
    candidates.append(leader)
    chosen = selector.select(topic, partition, client, PartitionView(tuple(candidates), leader))
    if chosen is None or chosen == leader:
        return NO_PREFERRED_REPLICA
    return chosen.node_id
