"""Kafka's per-API request metrics that this broker keeps: RequestMetrics
ThrottleTimeMs (responses, total and largest throttle time per API), an observer of
the request pipeline that every broker registers."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.pipeline import Observer


class ThrottleTimeStats(Observer):
    def __init__(self) -> None:
        # Per API key: [responses, total throttle ms, max throttle ms].
        self.by_api: dict[int, list[int]] = {}

    def request_done(self, ctx: RequestContext, response: Any) -> None:
        if ctx.disconnected or ctx.header is None:
            return  # not handled: closed by a fault, or refused before decoding
        stats = self.by_api.get(ctx.api_key)
        if stats is None:
            stats = self.by_api[ctx.api_key] = [0, 0, 0]
        stats[0] += 1
        if ctx.throttle_ms:
            stats[1] += ctx.throttle_ms
            stats[2] = max(stats[2], ctx.throttle_ms)
