"""The group coordinator's timers (Kafka's CoordinatorTimer): keyed loop callbacks, so that
scheduling a key again replaces its timer, and a group's timers can go all at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger("broker.groups")

Key = tuple[str, ...]  # (kind, group id, ...): the group id is always second


class _Timer:
    __slots__ = ("deadline", "callback", "handle")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self.callback = callback
        self.handle: asyncio.TimerHandle | None = None


class Timers:
    """Not thread-safe: use on the cluster's event loop (it needs the running loop).

    Scheduling a key again for later (a heartbeat pushing its session timeout back, the
    common case) only moves the deadline: the loop timer already set wakes at the old
    one and sleeps again for the rest, instead of a timer cancelled and created per
    request."""

    def __init__(self) -> None:
        self._timers: dict[Key, _Timer] = {}

    def schedule(self, key: Key, delay_ms: int, callback: Callable[[], None]) -> None:
        """Runs `callback` after `delay_ms`, replacing any timer of the same key."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(delay_ms, 0) / 1000.0
        timer = self._timers.get(key)
        if timer is not None and timer.deadline <= deadline:
            timer.deadline, timer.callback = deadline, callback
            return
        self.cancel(key)
        timer = self._timers[key] = _Timer(deadline, callback)
        timer.handle = loop.call_at(deadline, self._fire, key, timer)

    def _fire(self, key: Key, timer: _Timer) -> None:
        if self._timers.get(key) is not timer:
            return
        loop = asyncio.get_running_loop()
        if loop.time() < timer.deadline:  # pushed back since: sleep the rest
            timer.handle = loop.call_at(timer.deadline, self._fire, key, timer)
            return
        del self._timers[key]
        try:
            timer.callback()
        except Exception:  # a timer must never take the loop down
            log.exception("group timer %s failed", key)

    def schedule_if_absent(self, key: Key, delay_ms: int, callback: Callable[[], None]) -> None:
        if key not in self._timers:
            self.schedule(key, delay_ms, callback)

    def scheduled(self, key: Key) -> bool:
        return key in self._timers

    def cancel(self, key: Key) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None and timer.handle is not None:
            timer.handle.cancel()

    def cancel_group(self, group_id: str) -> None:
        for key in [key for key in self._timers if key[1] == group_id]:
            self.cancel(key)

    def __len__(self) -> int:
        """How many timers are pending."""
        return len(self._timers)

    def close(self) -> None:
        for timer in self._timers.values():
            if timer.handle is not None:
                timer.handle.cancel()
        self._timers.clear()
