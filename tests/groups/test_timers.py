"""The coordinator's keyed timers: a key scheduled again replaces its timer, whether the
new deadline is later (moved lazily) or sooner, and the callback that runs is the last
one given."""

from __future__ import annotations

import asyncio

from broker.state.timers import Timers


async def test_a_timer_pushed_back_fires_once_at_its_last_deadline() -> None:
    timers = Timers()
    fired: list[float] = []
    loop = asyncio.get_running_loop()
    start = loop.time()
    timers.schedule(("heartbeat", "g", "m"), 50, lambda: fired.append(-1.0))
    for _ in range(5):  # heartbeats pushing the session timeout back
        await asyncio.sleep(0.03)
        timers.schedule(("heartbeat", "g", "m"), 50, lambda: fired.append(loop.time() - start))
    await asyncio.sleep(0.03)
    assert fired == [] and len(timers) == 1  # the first deadline (50 ms) has long passed
    await asyncio.sleep(0.1)
    assert len(fired) == 1 and fired[0] >= 0.2 and len(timers) == 0


async def test_a_sooner_deadline_replaces_the_timer_and_cancel_stops_it() -> None:
    timers = Timers()
    fired: list[object] = []
    timers.schedule(("join", "g"), 10_000, lambda: fired.append("late"))
    timers.schedule(("join", "g"), 20, lambda: fired.append("soon"))
    timers.schedule(("heartbeat", "g", "m"), 20, lambda: fired.append("cancelled"))
    timers.cancel(("heartbeat", "g", "m"))
    await asyncio.sleep(0.1)
    assert fired == ["soon"] and len(timers) == 0
