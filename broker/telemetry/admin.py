"""`cluster.client_metrics`: KIP-714 subscriptions from Python (and the HTTP control
plane), through the same config store, checks and messages as AlterConfigs on a
CLIENT_METRICS resource, plus what the brokers' client instances hold and pushed."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

from broker.config.dynamic import Alteration, ConfigError, ConfigOp, DynamicConfigStore
from broker.state.cluster import ClusterState
from broker.telemetry.manager import ClientMetricsManager, TelemetryPush
from broker.telemetry.subscriptions import CLIENT_METRICS, INTERVAL_MS, MATCH, METRICS


class ClientMetricsAdmin:
    def __init__(
        self,
        configs: DynamicConfigStore,
        cluster: ClusterState,
        managers: Callable[[], Iterable[ClientMetricsManager]],
        run: Callable[[Coroutine[Any, Any, Any]], Any],
        on_loop: Callable[[Callable[[], Any]], Any],
    ) -> None:
        self._configs = configs
        self._cluster = cluster
        self._managers = managers
        self._run = run  # runs a coroutine on the cluster's loop, for synchronous callers
        self._on_loop = on_loop  # reads the loop's state from any thread

    async def set_async(
        self,
        name: str,
        metrics: Sequence[str] | str = (),
        interval_ms: int | None = None,
        match: Mapping[str, str] | None = None,
    ) -> None:
        """Creates or replaces subscription `name`, e.g. `set_async("all", ["*"],
        interval_ms=1000, match={"client_id": "app-.*"})`; raises ConfigError as Kafka
        refuses it (an interval outside 100..3600000 ms, an unknown match key, a bad regex)."""
        listed = metrics if isinstance(metrics, str) else ",".join(metrics)
        ops = [ConfigOp(METRICS, value=listed)]
        if interval_ms is not None:
            ops.append(ConfigOp(INTERVAL_MS, value=str(interval_ms)))
        if match:
            ops.append(ConfigOp(MATCH, value=",".join(f"{key}={value}" for key, value in match.items())))
        await self._alter(Alteration(CLIENT_METRICS, name, ops, incremental=False))

    def set(
        self,
        name: str,
        metrics: Sequence[str] | str = (),
        interval_ms: int | None = None,
        match: Mapping[str, str] | None = None,
    ) -> None:
        """`set_async` for synchronous callers of a thread-backed cluster."""
        self._run(self.set_async(name, metrics, interval_ms, match))

    async def delete_async(self, name: str) -> None:
        """Removes subscription `name` (no error when there is none, as in Kafka)."""
        await self._alter(Alteration(CLIENT_METRICS, name, [], incremental=False))

    def delete(self, name: str) -> None:
        self._run(self.delete_async(name))

    async def _alter(self, alteration: Alteration) -> None:
        [error] = await self._configs.alter_resources([alteration])
        if error is not None:
            raise error

    def subscriptions(self) -> dict[str, dict[str, str]]:
        """Every subscription's configs as set."""
        configs = self._cluster.client_metrics.configs
        return self._on_loop(lambda: {name: dict(values) for name, values in configs.items()})

    def instances(self) -> list[Mapping[str, object]]:
        """The client instances the brokers know (a client talks to one broker)."""
        return self._on_loop(lambda: [i for manager in self._managers() for i in manager.describe()])

    def pushes(self) -> list[TelemetryPush]:
        """The latest accepted pushes (up to 1,000 per broker), decoded, oldest first."""
        found = self._on_loop(lambda: [push for manager in self._managers() for push in manager.recent])
        return sorted(found, key=lambda push: push.received_ms)


__all__ = ["ClientMetricsAdmin", "ConfigError"]
