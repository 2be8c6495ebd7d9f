"""Every scenario, by family: `all_scenarios()`; `RESETS` clears a family's state on one
side before each of its scenarios."""

from __future__ import annotations

from tests.differential.model import Scenario
from tests.differential.runner import Reset
from tests.differential.scenarios import (
    acls,
    apis,
    brokers,
    compaction,
    configs,
    groups,
    quotas,
    records,
    share,
    streams,
    throttling,
    topics,
)


def all_scenarios() -> list[Scenario]:
    found = [
        *apis.scenarios(),
        *topics.scenarios(),
        *quotas.scenarios(),
        *configs.scenarios(),
        *groups.scenarios(),
        *records.scenarios(),
        *acls.scenarios(),
        *throttling.scenarios(),
        *compaction.scenarios(),
        *brokers.scenarios(),
        *share.scenarios(),
        *streams.scenarios(),
    ]
    names = [s.name for s in found]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"scenario names used twice: {sorted(duplicates)}")
    return found


RESETS: dict[str, Reset] = {
    quotas.FAMILY: quotas.reset,
    configs.FAMILY: configs.reset,
    throttling.FAMILY: quotas.reset,
}
