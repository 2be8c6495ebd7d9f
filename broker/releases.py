"""The Apache Kafka releases the broker can present itself as, and the one it models.

The broker models one release, `MODELLED` (Kafka 4.4, the differential suite's
reference): its handlers serve 4.4's versions and a new cluster finalizes 4.4's features.
`kafka-mock-broker --kafka-version X.Y` (`MockCluster(kafka_version="X.Y")`, the pytest
plugin's `kafka_version` marker and `--kafka-version` option) makes it present an older
release instead, as franz-go's kfake caps its versions:

- ApiVersions advertises, for each API the broker serves, that release's range
  intersected with what the broker serves (each API's maximum capped at the release's);
  an API the release lacks is neither advertised nor served, and a version above the cap
  closes the connection as a version the broker does not serve does;
- a new cluster finalizes the features `kafka-storage format` gives that release and
  supports only the levels it knows (UpdateFeatures refuses the others): no
  eligible.leader.replicas.version before 4.1, so no cluster-level min.insync.replicas
  is written; no transaction.version or group.version in 3.9.

Each table is what a freshly formatted node of the release answers to ApiVersions
(v3's API ranges, and those the node's config left off; features: v3's finalized, v4's
supported), captured by
scripts/capture_apiversions.py into tests/differential/data/ (tests/test_releases.py
checks the tables against those files). What is not modelled for older releases (the
message formats v0/v1 and the versions Kafka 4.0 removed, KIP-896; behaviour that changed
between releases besides these tables) is on docs/explanation/differences.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

MODELLED = "4.4"  # the release the broker models (the differential suite's reference)


@dataclass(frozen=True, slots=True)
class Release:
    """One Kafka release as a new cluster of it presents itself."""

    name: str  # "X.Y", as --kafka-version takes it
    captured_from: str  # the patch release the tables come from: "4.4.0"
    apis: Mapping[int, tuple[int, int]]  # API key -> (min, max) ApiVersions advertises
    supported_features: Mapping[str, tuple[int, int]]  # in the order ApiVersions lists them
    finalized_features: Mapping[str, int]  # what `kafka-storage format` finalizes
    # APIs the captured node did not advertise because its config left them off
    # (KIP-714's, which need a metrics reporter for client telemetry: 3.7+)
    config_enabled_apis: Mapping[int, tuple[int, int]] = field(
        default_factory=lambda: MappingProxyType({71: (0, 0), 72: (0, 0)})
    )

    @property
    def modelled(self) -> bool:
        return self.name == MODELLED


def _apis(table: dict[int, tuple[int, int]]) -> Mapping[int, tuple[int, int]]:
    return MappingProxyType(table)


# ApiVersions v3's API ranges, captured from a freshly formatted combined-mode node.
_APIS_4_4 = {
    0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6),
    11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1),
    18: (0, 5), 19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5),
    25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 6), 29: (1, 3), 30: (1, 3), 31: (1, 3),
    32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3),
    39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 3), 43: (0, 2), 44: (0, 1), 45: (0, 1),
    46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
    57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
    69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
    80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1),
    88: (0, 1), 89: (0, 1), 90: (0, 1), 91: (0, 0), 92: (0, 0), 93: (0, 0), 94: (0, 0),
}  # fmt: skip
_APIS_4_0 = {
    0: (0, 12), 1: (4, 17), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6),
    11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1),
    18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5),
    25: (0, 4), 26: (0, 5), 27: (1, 1), 28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3),
    32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3),
    39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
    46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
    57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 1),
    69: (0, 1), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0),
}  # fmt: skip
_APIS_3_9 = {
    0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6),
    11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1),
    18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5),
    25: (0, 4), 26: (0, 4), 27: (0, 1), 28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3),
    32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 38: (0, 3),
    39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
    46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
    57: (0, 1), 60: (0, 1), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 0),
    69: (0, 0), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0),
}  # fmt: skip

RELEASES: Mapping[str, Release] = MappingProxyType(
    {
        "4.4": Release(
            name="4.4",
            captured_from="4.4.0",
            apis=_apis(_APIS_4_4),
            supported_features=MappingProxyType(
                {
                    "group.version": (0, 1),
                    "kraft.version": (0, 1),
                    "metadata.version": (7, 33),
                    "share.version": (0, 2),
                    "streams.version": (0, 1),
                    "transaction.version": (0, 2),
                    "eligible.leader.replicas.version": (0, 1),
                }
            ),
            finalized_features=MappingProxyType(
                {
                    "group.version": 1,
                    "streams.version": 1,
                    "transaction.version": 2,
                    "eligible.leader.replicas.version": 1,
                    "share.version": 2,
                    "metadata.version": 33,
                }
            ),
        ),
        "4.0": Release(
            name="4.0",
            captured_from="4.0.2",
            apis=_apis(_APIS_4_0),
            supported_features=MappingProxyType(
                {
                    "group.version": (0, 1),
                    "kraft.version": (0, 1),
                    "metadata.version": (7, 25),
                    "transaction.version": (0, 2),
                    "eligible.leader.replicas.version": (0, 1),
                }
            ),
            finalized_features=MappingProxyType(
                {"group.version": 1, "transaction.version": 2, "metadata.version": 25}
            ),
        ),
        "3.9": Release(
            name="3.9",
            captured_from="3.9.1",
            apis=_apis(_APIS_3_9),
            supported_features=MappingProxyType({"kraft.version": (0, 1), "metadata.version": (1, 21)}),
            finalized_features=MappingProxyType({"metadata.version": 21}),
        ),
    }
)

# What the broker serves of a release's features: all of them (a feature named here
# would be neither listed nor finalized).
NOT_SERVED_FEATURES: frozenset[str] = frozenset()


class UnknownRelease(ValueError):
    """A release the broker cannot present itself as."""


def release(name: str | None) -> Release:
    """The release named "X.Y" (a patch suffix such as "3.9.1" is accepted); None is the
    modelled one. UnknownRelease, naming the known ones, otherwise."""
    if name is None or name == "":
        return RELEASES[MODELLED]
    parts = name.strip().split(".")
    key = ".".join(parts[:2])
    found = RELEASES.get(key) if len(parts) in (2, 3) and all(p.isdigit() for p in parts) else None
    if found is None:
        known = ", ".join(sorted(RELEASES, key=lambda r: tuple(int(p) for p in r.split("."))))
        raise UnknownRelease(
            f"unknown Kafka version {name!r}: this broker can present itself as Kafka {known} "
            f"(it models {MODELLED})"
        )
    return found


def served_range(
    release: Release, api_key: int, served: tuple[int, int], advertised: tuple[int, int]
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(served, advertised) ranges of an API under `release`: the broker's own, each
    capped at the release's range; None when the release lacks the API or the ranges do
    not meet."""
    if release.modelled:
        return served, advertised
    ranges = release.apis.get(api_key) or release.config_enabled_apis.get(api_key)
    if ranges is None:
        return None
    low, high = ranges
    served_low, served_high = max(served[0], low), min(served[1], high)
    if served_low > served_high:
        return None
    return (served_low, served_high), (max(advertised[0], low), min(advertised[1], high))
