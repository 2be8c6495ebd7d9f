"""Which window each quota metric is measured over, and when `tokens` exists (issue 15,
item 7), read through `cluster.metrics()` after traffic from kafka-python.

Kafka registers `mutation-rate` (ControllerMutationQuotaManager.registerQuotaMetrics) and
`exempt-request-time` (ClientRequestQuotaManager's exempt sensor) as a Rate without a
MetricConfig, so they take the broker's default metric config: 2 samples of 30 s
(metrics.num.samples, metrics.sample.window.ms). A Rate's window is then padded to at
least one full 30 s window, and a sample lives until its last record is 60 s old, however
short the quota window is. `tokens` (the TokenBucket) is registered with the quota sensor,
over the controller quota window, whatever the limit: Long.MAX_VALUE when the client has
none (ClientQuotaManager.quotaLimit).

The clusters here use 2 x 1 s quota windows, so the quota window's samples would be gone
2 s after the traffic; the metrics are read again after 2.5 s.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from broker import MockCluster
from tests.quotas.test_quota_enforcement_wire import client_tags, high_watermark, metric, running

SHORT_WINDOWS = {"quota.window.num": "2", "controller.quota.window.num": "2"}  # 2 x 1 s each
QUOTA_SPAN_S = 2.5  # longer than 2 x 1 s: every sample of a quota-window Rate has expired
DEFAULT_WINDOW_S = 30.0  # a default-config Rate's window is never shorter (one padded sample)
LONG_MAX = float(2**63 - 1)  # Long.MAX_VALUE as a double


@contextmanager
def admin_as(cluster: MockCluster, client_id: str) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers, client_id=client_id, request_timeout_ms=10000
    )
    try:
        yield admin
    finally:
        admin.close()


def mutation_metrics(cluster: MockCluster, client_id: str) -> dict[str, float]:
    tags = client_tags(client_id)
    return {m.name: m.value for m in cluster.metrics() if m.group == "ControllerMutation" and m.tags == tags}


def test_mutation_rate_uses_the_default_metric_window() -> None:
    """5 partitions created: mutation-rate is 5 / (30 s + elapsed), not 5 / (1 s + elapsed),
    and is still there once the quota window has passed. tokens stays on the quota window:
    a burst of 2 x 1 s x 100 = 200, less the 5 taken."""
    with running(SHORT_WINDOWS) as cluster:
        cluster.quotas.alter({"client-id": "creator"}, set={"controller_mutation_rate": 100})
        with admin_as(cluster, "creator") as admin:
            admin.create_topics([NewTopic("five", num_partitions=5, replication_factor=1)])
        first = mutation_metrics(cluster, "creator")
        assert 5 / (DEFAULT_WINDOW_S + 60) < first["mutation-rate"] <= 5 / DEFAULT_WINDOW_S
        assert 195 <= first["tokens"] <= 200
        time.sleep(QUOTA_SPAN_S)
        later = mutation_metrics(cluster, "creator")
        # Same 5 over a window 2.5 s longer (the sample lives 60 s): lower, never gone.
        assert 0.5 < later["mutation-rate"] / first["mutation-rate"] < 1
        assert later["tokens"] == 200  # refilled to the burst


def test_exempt_request_time_uses_the_default_metric_window() -> None:
    """acks=0 produces (exempt from the request quota, which is enabled by another client
    id's quota) are counted in exempt-request-time over a 30 s window: 2.5 s later the
    value has only shrunk by the longer window, where a quota-window Rate would be 0."""
    with running(SHORT_WINDOWS) as cluster:
        cluster.create_topic("fire")
        cluster.quotas.alter({"client-id": "someone-else"}, set={"request_percentage": 50})
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="fire", acks=0)
        try:
            for i in range(50):
                producer.send("fire", b"v%d" % i)
            producer.flush()
        finally:
            producer.close()
        deadline = time.monotonic() + 10
        while high_watermark(cluster, "fire") < 50 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert high_watermark(cluster, "fire") == 50
        first = metric(cluster, "exempt-request-time", "Request", {})
        assert first > 0
        time.sleep(QUOTA_SPAN_S)
        later = metric(cluster, "exempt-request-time", "Request", {})
        # S / (30 + e1) then S / (30 + e2), e2 >= e1 + 2.5 s: between half and all of it.
        assert 0.5 < later / first < 1


def test_tokens_is_registered_with_the_sensor_whatever_the_limit() -> None:
    """With controller mutation quotas enabled (by another client id's quota), a client
    without one gets its sensor on its first mutation request, tokens included: the burst
    of a Long.MAX_VALUE rate (11 x 1 s x Long.MAX_VALUE; the 3 taken are lost in
    rounding). Before that request there is no sensor, so no tokens."""
    with MockCluster(brokers=1, config={"group.initial.rebalance.delay.ms": "0"}) as cluster:
        with admin_as(cluster, "unlimited") as admin:
            # Quotas off: nothing is measured, as Kafka's UNBOUNDED_CONTROLLER_MUTATION_QUOTA.
            admin.create_topics([NewTopic("before", num_partitions=3, replication_factor=1)])
            assert mutation_metrics(cluster, "unlimited") == {}
            cluster.quotas.alter({"client-id": "limited"}, set={"controller_mutation_rate": 1})
            assert mutation_metrics(cluster, "unlimited") == {}
            admin.create_topics([NewTopic("after", num_partitions=3, replication_factor=1)])
        found = mutation_metrics(cluster, "unlimited")
        assert found["tokens"] == 11 * 1.0 * LONG_MAX
        assert 0 < found["mutation-rate"] <= 3 / DEFAULT_WINDOW_S
