"""The runner's `Step.until` polling (runner.poll_until) and the compaction family's
shape predicates, without the reference."""

from __future__ import annotations

from collections.abc import Iterator

from messages.registry import response_class
from tests.differential.normalise import normalise, tree
from tests.differential.runner import poll_until
from tests.differential.scenarios import all_scenarios
from tests.differential.scenarios.compaction import offsets_in, offsets_of
from tests.differential.scenarios.records import batch


def answers(*values: int) -> Iterator[int]:
    yield from values


def test_poll_until_asks_again_until_the_predicate_holds() -> None:
    later = answers(2, 3, 4)
    asked: list[int] = []

    def ask() -> int:
        asked.append(next(later))
        return asked[-1]

    assert poll_until(ask, 1, lambda a: a >= 3, seconds=10, pause=0) == 3
    assert asked == [2, 3]


def test_poll_until_keeps_a_first_answer_that_already_holds() -> None:
    def ask() -> int:
        raise AssertionError("not asked again")

    assert poll_until(ask, 5, lambda a: a == 5, seconds=10, pause=0) == 5


def test_poll_until_gives_the_last_answer_when_time_runs_out() -> None:
    count = iter(range(1, 1000))
    assert poll_until(lambda: next(count), 0, lambda a: False, seconds=0.05, pause=0.01) > 0


def fetched(*batches: list[int]) -> dict[str, object]:
    return {
        "responses": [
            {
                "partitions": [
                    {"records": [{"records": [{"offset": o} for o in offsets]} for offsets in batches]}
                ]
            }
        ]
    }


def test_compacted_shapes_are_read_from_a_normalised_fetch() -> None:
    Fetch = response_class(1)[12]
    Topic = Fetch.fields["responses"].data_class
    Partition = Topic.fields["partitions"].data_class
    data = batch([(b"k", b"v", 0), (b"k", None, 1)])
    partition = Partition(partition_index=0, error_code=0, high_watermark=2, records=data)
    answer = Fetch(
        throttle_time_ms=0, error_code=0, session_id=0, responses=[Topic(topic="t", partitions=[partition])]
    )
    assert offsets_of(normalise(tree(answer, 12))) == [0, 1]


def test_compacted_shapes_are_read_from_the_fetched_batches() -> None:
    assert offsets_of(fetched([2], [3, 4])) == [2, 3, 4]
    assert offsets_of({"<closed>": "the broker closed the connection"}) is None
    done = offsets_in([2, 3, 4], [2, 3, 4, 5])
    assert done(fetched([2], [3, 4])) and done(fetched([2], [3, 4], [5]))
    assert not done(fetched([0, 1, 2], [3, 4]))


def test_every_polled_step_has_time_to_settle() -> None:
    polled = [step for s in all_scenarios() for step in s.steps if step.until is not None]
    assert polled and all(step.settle > 0 for step in polled)
