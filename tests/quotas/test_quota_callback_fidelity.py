"""KIP-257 fidelity: a custom callback is asked `quota_metric_tags` on every request, as
Kafka's ClientQuotaManager.getOrCreateQuotaSensors asks it, so tags that change without
`quota_reset_required` apply from the next request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka import KafkaProducer

from broker import MockCluster
from quotas.callback import ClientQuotaCallback, ClientQuotaType, KafkaPrincipal
from tests.conftest import FAST

HERE = "tests.quotas.test_quota_callback_fidelity"


class MovingTagsCallback(ClientQuotaCallback):
    """Every request measured under `{"lane": <lane>}`; the lane changes with no reset
    and no notification (a callback reading an external source, say)."""

    lane = "first"

    def quota_metric_tags(
        self, quota_type: ClientQuotaType, principal: KafkaPrincipal, client_id: str
    ) -> dict[str, str]:
        return {"lane": self.lane}

    def quota_limit(self, quota_type: ClientQuotaType, metric_tags: Mapping[str, str]) -> float | None:
        return None


def _produce(producer: KafkaProducer, topic: str) -> None:
    producer.send(topic, b"x" * 1000).get(timeout=10)


def _lanes(cluster: MockCluster) -> dict[str, float]:
    """Bytes/s measured per lane by broker 0's produce quota manager."""
    produce = cluster.brokers[0].quota_managers.produce
    found: dict[str, float] = {}

    def read() -> None:
        for key, sensors in produce.sensors.items():
            found[dict(key).get("lane", "")] = sensors.rate.measure(sensors.last_record_ms)

    cluster.on_loop(read)
    return found


def test_tags_changed_without_reset_apply_to_the_next_request() -> None:
    config = {**FAST, "client.quota.callback.class": f"{HERE}.MovingTagsCallback"}
    with MockCluster(config=config) as cluster:
        callback: Any = cluster.brokers[0].quota_managers.callback
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="mover", retries=0)
        try:
            _produce(producer, "lanes")
            assert set(_lanes(cluster)) == {"first"}
            callback.lane = "second"  # no quota_reset_required, no update_quota
            _produce(producer, "lanes")
            lanes = _lanes(cluster)
            assert "second" in lanes, f"the new tags were not asked for: {lanes}"
            assert lanes["second"] > 0
        finally:
            producer.close(timeout=5)
