"""The KRaft quorum of `__cluster_metadata` as the mock models it (DescribeQuorum,
AddRaftVoter, RemoveRaftVoter). Every mock broker stands for a combined broker and
controller node. While kraft.version is 0 the quorum is static, as a cluster configured
with controller.quorum.voters: one voter, the controller (the lowest live registered
broker). Finalizing kraft.version 1 (UpdateFeatures) makes it dynamic (KIP-853): the
voter set starts as that controller and changes only through AddRaftVoter and
RemoveRaftVoter; the leader is the lowest running voter."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from protocol.uuids import uuid_string

KRAFT_VERSION = "kraft.version"
Endpoints = Mapping[str, tuple[str, int]]  # listener name -> (host, port)


def directory_id(cluster_id: str, node_id: int) -> uuid.UUID:
    """A stable metadata log directory id per node (Kafka's is random, kept in meta.properties)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-mock-broker:{cluster_id}:{node_id}")


def replica_key(node_id: int, directory: uuid.UUID) -> str:
    """ReplicaKey.toString, as Kafka's error messages show a voter."""
    shown = "Optional.empty" if directory.int == 0 else f"Optional[{uuid_string(directory)}]"
    return f"ReplicaKey(id={node_id}, directoryId={shown})"


@dataclass(frozen=True, slots=True)
class Voter:
    node_id: int
    directory: uuid.UUID
    endpoints: dict[str, tuple[str, int]]

    @property
    def key(self) -> str:
        return replica_key(self.node_id, self.directory)


class Quorum:
    """The voter set: None while static (kraft.version 0), else the VotersRecord's voters."""

    def __init__(self, cluster_id: str) -> None:
        self.cluster_id = cluster_id
        self.voters: dict[int, Voter] | None = None

    @property
    def dynamic(self) -> bool:
        return self.voters is not None

    def make_dynamic(self, leader: int, endpoints: Endpoints) -> None:
        """kraft.version 1: the static voter becomes the first VotersRecord."""
        if self.voters is None:
            self.voters = (
                {leader: Voter(leader, directory_id(self.cluster_id, leader), dict(endpoints))}
                if leader >= 0
                else {}
            )

    def leader(self, controller: int, running: Collection[int], current: int) -> int:
        """The leader: the static controller; once dynamic, the `current` leader while it
        runs and votes (a voter change elects no one), else the lowest running voter, as
        a resigning or lost leader is replaced (-1: no voter runs)."""
        if self.voters is None:
            return controller
        if current in self.voters and current in running:
            return current
        return min((v for v in self.voters if v in running), default=-1)

    def voter_keys(self) -> str:
        """VoterSet.voterKeys() as Kafka prints the set."""
        voters = self.voters or {}
        return "[" + ", ".join(voters[v].key for v in sorted(voters)) + "]"
