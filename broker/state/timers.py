"""The group coordinator's timers (Kafka's CoordinatorTimer): keyed loop callbacks, so that
scheduling a key again replaces its timer, and a group's timers can go all at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger("broker.groups")

Key = tuple[str, ...]  # (kind, group id, ...): the group id is always second


class Timers:
    """Not thread-safe: use on the cluster's event loop (it needs the running loop)."""

    def __init__(self) -> None:
        self._handles: dict[Key, asyncio.TimerHandle] = {}

    def schedule(self, key: Key, delay_ms: int, callback: Callable[[], None]) -> None:
        """Runs `callback` after `delay_ms`, replacing any timer of the same key."""
        self.cancel(key)

        def fire() -> None:
            self._handles.pop(key, None)
            try:
                callback()
            except Exception:  # a timer must never take the loop down
                log.exception("group timer %s failed", key)

        self._handles[key] = asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000.0, fire)

    def schedule_if_absent(self, key: Key, delay_ms: int, callback: Callable[[], None]) -> None:
        if key not in self._handles:
            self.schedule(key, delay_ms, callback)

    def cancel(self, key: Key) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_group(self, group_id: str) -> None:
        for key in [key for key in self._handles if key[1] == group_id]:
            self.cancel(key)

    def __len__(self) -> int:
        """How many timers are pending."""
        return len(self._handles)

    def close(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
