"""The cluster's finalized features (KIP-584), as Kafka's FeatureControlManager keeps them:
what ApiVersions v3+ reports and UpdateFeatures changes.

A new cluster finalizes what `kafka-storage format` gives a Kafka 4.4 cluster
(Feature.PRODUCTION_FEATURES at their default levels, checked against Kafka 4.4's
ApiVersions; an older release's with --kafka-version, broker/releases.py), except the
features of what this broker does not serve: share.version (share groups) and
streams.version (streams groups) are neither supported nor finalized, so no client is
told to use them. metadata.version is at 4.4's level and cannot go down, as in
Kafka; group.version 0 turns KIP-848's ConsumerGroupHeartbeat off (UNSUPPORTED_VERSION);
eligible.leader.replicas.version 1 keeps a cluster-level min.insync.replicas (the config
store's ELR rules); transaction.version and kraft.version as before. kraft.version stays 0
(a static quorum) until upgraded and never goes down again."""

from __future__ import annotations

from collections.abc import Mapping

from broker.releases import NOT_SERVED_FEATURES, Release, release
from protocol.errors import ErrorCode

GROUP_VERSION = "group.version"
METADATA_VERSION = "metadata.version"
ELR_VERSION = "eligible.leader.replicas.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"
_MODELLED = release(None)
LATEST_METADATA_VERSION = _MODELLED.finalized_features[METADATA_VERSION]  # 4.4-IV0


def supported(of: Release) -> dict[str, tuple[int, int]]:
    """The features a release supports, as ApiVersions lists them (in its order), but
    those of what the broker does not serve."""
    return {name: levels for name, levels in of.supported_features.items() if name not in NOT_SERVED_FEATURES}


def bootstrap(of: Release) -> dict[str, int]:
    """What `kafka-storage format` finalizes for a new cluster of the release (in the
    order ApiVersions lists them), but the features of what the broker does not serve."""
    return {name: level for name, level in of.finalized_features.items() if name not in NOT_SERVED_FEATURES}


# The modelled release's (Kafka 4.4's)
SUPPORTED: dict[str, tuple[int, int]] = supported(_MODELLED)
BOOTSTRAP: dict[str, int] = bootstrap(_MODELLED)
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


class FeatureControl:
    def __init__(self, of: Release = _MODELLED) -> None:
        """A new cluster of the release `of` (the modelled one unless --kafka-version)."""
        self.release = of
        self.supported = supported(of)
        self.finalized: dict[str, int] = bootstrap(of)
        self.epoch = 1  # Kafka's is the metadata offset of the last feature record

    def update(
        self, updates: Mapping[str, tuple[int, int]], controller: int, validate_only: bool, offset: int
    ) -> tuple[int, str | None]:
        """updates: feature -> (new level, upgrade type). All or nothing: the first refusal
        is the answer (FeatureControlManager.updateFeatures)."""
        for name, (level, upgrade_type) in updates.items():
            reason = self._refusal(name, level, upgrade_type, controller)
            if reason is not None:
                return (
                    ErrorCode.INVALID_UPDATE_VERSION,
                    f"Invalid update version {level} for feature {name}. {reason}",
                )
            current = self.finalized.get(name, 0)
            if name == METADATA_VERSION and level < current:
                # FeatureControlManager.updateMetadataVersion: no downgrade in Kafka 4.x
                why = (
                    "Refusing to perform the requested downgrade because it might delete metadata information."
                    if upgrade_type == SAFE_DOWNGRADE
                    else "Unsafe metadata downgrade is not supported in this version."
                )
                return (
                    ErrorCode.INVALID_UPDATE_VERSION,
                    "The update failed for all features since the following feature had an error: "
                    f"Unsupported metadata.version downgrade from {current} to {level}. {why}",
                )
        if not validate_only and updates:
            for name, (level, _) in updates.items():
                if level == 0:
                    self.finalized.pop(name, None)
                else:
                    self.finalized[name] = level
            self.epoch = max(self.epoch + 1, offset)
        return ErrorCode.NONE, None

    def _refusal(self, name: str, level: int, upgrade_type: int, controller: int) -> str | None:
        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return "The controller does not support the given upgrade type."
        current = self.finalized.get(name, 0)
        if level < 0:
            return "A feature version cannot be less than 0."
        low, high = self.supported.get(name, (0, 0))
        if not low <= level <= high:
            if high == 0:
                return f"Local controller {controller} does not support this feature."
            return f"Local controller {controller} only supports versions {low}-{high}"
        if level < current and upgrade_type == UPGRADE:
            return (
                "Can't downgrade the version of this feature without setting the upgrade type to either safe or "
                "unsafe downgrade."
            )
        if level > current and upgrade_type != UPGRADE:
            return "Can't downgrade to a newer version."
        if name == METADATA_VERSION and level < current:
            return None  # refused by metadata_version_refusal, with its own message
        if name == "kraft.version" and upgrade_type != UPGRADE and level != current:
            return "Can't downgrade the version of this feature."
        return None
