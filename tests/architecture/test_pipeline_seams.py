"""The request pipeline's seams as extension points, through a real client: an
observer sees every finished request, an interceptor stands between the pipeline and
the handler, a gate refuses before decoding; and a broker without a harness runs no
harness code per request."""

from __future__ import annotations

from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import KafkaError

from broker import MockCluster
from broker.context import RequestContext
from broker.harness.conformance import ConformanceTracker
from broker.pipeline import CloseConnection, Handler, Observer, PipelineConnection, RequestPipeline
from broker.request_metrics import ThrottleTimeStats
from tests.conftest import FAST

PRODUCE, METADATA = 0, 3


class Seen(Observer):
    def __init__(self) -> None:
        self.done: list[tuple[int, bool]] = []

    def request_done(self, ctx: RequestContext, response: Any) -> None:
        self.done.append((ctx.api_key, response is None))


class NoMetadataFor:
    """An interceptor: Metadata requests from one client id close the connection."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.passed = 0

    def intercept(self, ctx: RequestContext, request: Any, call: Handler) -> Any:
        if ctx.api_key == METADATA and ctx.client_id == self.client_id:
            raise CloseConnection("no metadata for you")
        self.passed += 1
        return call(ctx, request)


def metadata_never_comes(cluster: MockCluster, client_id: str) -> None:
    """A producer whose Metadata requests are refused cannot bootstrap: it gives up."""
    with pytest.raises(KafkaError):
        producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers,
            client_id=client_id,
            bootstrap_timeout_ms=1500,
            max_block_ms=1500,
        )
        try:
            producer.send("seams", b"never")
        finally:
            producer.close(timeout=5)


def test_an_observer_sees_each_request_a_real_client_sends() -> None:
    with MockCluster(config=FAST) as cluster:
        seen = Seen()
        cluster.brokers[0].pipeline.add_observer(seen)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=0)
        producer.send("seams", b"one").get(timeout=10)
        producer.flush(10)
        producer.close()
    assert (PRODUCE, True) in seen.done  # acks=0: no response, still observed
    assert any(key == METADATA and not unanswered for key, unanswered in seen.done)


def test_interceptors_chain_in_order_and_may_close_the_connection() -> None:
    with MockCluster(config=FAST) as cluster:
        first, second = NoMetadataFor("blocked"), NoMetadataFor("nobody")
        pipeline = cluster.brokers[0].pipeline
        pipeline.add_interceptor(first)
        pipeline.add_interceptor(second)
        seen = Seen()
        pipeline.add_observer(seen)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="fine")
        admin.list_topics()
        admin.close()
        assert first.passed > 0 and second.passed == first.passed
        metadata_never_comes(cluster, "blocked")
        assert second.passed == first.passed  # the first closed it: the second never saw it
    assert (METADATA, True) in seen.done  # the closed request is observed, unanswered


def test_a_gate_refuses_before_decoding() -> None:
    refused: list[int] = []

    def only_api_versions(connection: PipelineConnection, api_key: int) -> None:
        if api_key != 18:
            refused.append(api_key)
            raise CloseConnection(f"API key {api_key} refused by the gate")

    with MockCluster(config=FAST) as cluster:
        cluster.brokers[0].pipeline.add_gate(only_api_versions)
        metadata_never_comes(cluster, "gated")
    assert refused and METADATA in refused


def test_what_runs_per_request_is_only_what_is_registered() -> None:
    """A pipeline with nothing registered runs nothing per seam; MockCluster plugs in the
    harness it is configured for (no recording ring with record.requests.max=0)."""
    with MockCluster(config={**FAST, "record.requests.max": "0"}) as cluster:
        broker = cluster.brokers[0]
        empty = RequestPipeline(broker)
        assert (empty.gates, empty._intercept, empty._done, empty._oddity, empty._throttled) == (
            (),
            None,
            (),
            (),
            (),
        )
        pipeline = broker.pipeline
        assert pipeline.gates == ()  # no SASL listener
        assert pipeline.interceptors == (cluster.faults,)
        assert [type(o) for o in pipeline.observers] == [ThrottleTimeStats, ConformanceTracker]
