"""The cluster's finalized features (KIP-584), as Kafka's FeatureControlManager keeps them:
what ApiVersions v3+ reports and UpdateFeatures changes. The mock supports
transaction.version 0-2, finalized at 2 as a new Kafka 4.x cluster has it, and
kraft.version 0-1, at 0 (a static quorum) until upgraded; it never goes down again."""

from __future__ import annotations

from collections.abc import Mapping

from protocol.errors import ErrorCode

SUPPORTED: dict[str, tuple[int, int]] = {"transaction.version": (0, 2), "kraft.version": (0, 1)}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


class FeatureControl:
    def __init__(self) -> None:
        self.finalized: dict[str, int] = {"transaction.version": 2}
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
        low, high = SUPPORTED.get(name, (0, 0))
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
        if name == "kraft.version" and upgrade_type != UPGRADE and level != current:
            return "Can't downgrade the version of this feature."
        return None
