"""An idle interceptor (the fault injector without rules) is left out of the pipeline's
chain, so a cluster without faults pays nothing for it; a rule puts it back at once, in
its place among the others, and the last rule going (removed, cleared or run out) takes
it out again."""

from __future__ import annotations

from typing import Any

from broker import MockCluster
from broker.context import RequestContext
from broker.pipeline import Handler, IdleInterceptor, RequestPipeline
from tests.conftest import FAST

HEARTBEAT = 12


class Tagging:
    """An always-engaged interceptor that notes the order it ran in."""

    def __init__(self, name: str, seen: list[str]) -> None:
        self.name, self.seen = name, seen

    def intercept(self, ctx: RequestContext, request: Any, call: Handler) -> Any:
        self.seen.append(self.name)
        return call(ctx, request)


class Switch(IdleInterceptor):
    def __init__(self, seen: list[str]) -> None:
        super().__init__()
        self.on = False
        self.seen = seen

    @property
    def engaged(self) -> bool:
        return self.on

    def set(self, on: bool) -> None:
        self.on = on
        self.engagement_changed()

    def intercept(self, ctx: RequestContext, request: Any, call: Handler) -> Any:
        self.seen.append("switch")
        return call(ctx, request)


def run_chain(pipeline: RequestPipeline) -> Any:
    ctx: Any = object()
    assert pipeline._intercept is not None
    return pipeline._intercept(ctx, "request", lambda c, r: ("handled", r))


def test_the_fault_injector_is_in_the_chain_only_while_it_has_rules() -> None:
    with MockCluster(config=FAST) as cluster:
        pipeline = cluster.brokers[0].pipeline
        assert pipeline.interceptors == (cluster.faults,)
        assert pipeline._intercept is None  # no rule: nothing runs per request
        fault = cluster.faults.add(HEARTBEAT, error_code=27)
        assert pipeline._intercept == cluster.faults.intercept
        cluster.faults.remove(fault.id)
        assert pipeline._intercept is None
        cluster.faults.add(HEARTBEAT, error_code=27)
        cluster.faults.throttle("someone", 100)
        cluster.faults.clear()
        assert pipeline._intercept is None
        cluster.faults.throttle("someone", 100, count=1)
        assert pipeline._intercept is not None


def test_a_rule_that_runs_out_takes_the_injector_out() -> None:
    with MockCluster(config=FAST) as cluster:
        pipeline = cluster.brokers[0].pipeline
        fault = cluster.faults.add(HEARTBEAT, error_code=27, count=1)
        cluster.on_loop(lambda: cluster.faults._fired(fault))
        assert cluster.faults.list() == []
        assert pipeline._intercept is None


def test_an_engaged_idle_interceptor_keeps_its_place_in_the_chain() -> None:
    with MockCluster(config={**FAST, "record.requests.max": "0"}) as cluster:
        seen: list[str] = []
        pipeline = RequestPipeline(cluster.brokers[0])
        switch = Switch(seen)
        pipeline.add_interceptor(Tagging("first", seen))
        pipeline.add_interceptor(switch)
        pipeline.add_interceptor(Tagging("last", seen))
        assert run_chain(pipeline) == ("handled", "request")
        assert seen == ["first", "last"]
        seen.clear()
        switch.set(True)
        assert run_chain(pipeline) == ("handled", "request")
        assert seen == ["first", "switch", "last"]
        seen.clear()
        switch.set(False)
        run_chain(pipeline)
        assert seen == ["first", "last"]
        # alone and engaged: called directly
        alone = RequestPipeline(cluster.brokers[0])
        switch.set(True)
        alone.add_interceptor(switch)
        assert alone._intercept == switch.intercept
        switch.set(False)
        assert alone._intercept is None


def test_a_dropped_pipeline_is_not_kept_alive_by_its_interceptor() -> None:
    import gc
    import weakref

    with MockCluster(config=FAST) as cluster:
        pipeline = RequestPipeline(cluster.brokers[0])
        switch = Switch([])
        pipeline.add_interceptor(switch)
        ref = weakref.ref(pipeline)
        del pipeline
        gc.collect()
        assert ref() is None
        switch.set(True)  # its listener is gone: nothing to call
        assert switch._listeners == []
