"""How the differential runner compares throttle_time_ms on `throttle_timed` steps, without
the reference: zero or not exactly, the value within the tolerance derived from both
sides' timings, and `<held>` for the answer after a throttled one (the muted connection)."""

from __future__ import annotations

from tests.differential.normalise import Close, close_throttles, differences
from tests.differential.runner import CLOSE_SLACK_MS, MUTE_SLACK_MS, Timing, throttle_tolerance_ms, timed


def test_close_values_compare_zero_exactly_and_the_rest_within_the_tolerance() -> None:
    assert Close(0, 50) == Close(0, 50)
    assert Close(0, 50) != Close(1, 50)  # throttled or not is never a matter of tolerance
    assert Close(1000, 20) == Close(1020, 20)
    assert Close(1000, 20) != Close(1021, 20)
    assert Close(1000, 5) == Close(1030, 30)  # either side's tolerance (the runner gives one)


def test_close_throttles_make_only_the_top_level_throttle_close() -> None:
    reference = {"throttle_time_ms": 1450, "responses": {"t": {"error_code": 0}}}
    mock = {"throttle_time_ms": 1430, "responses": {"t": {"error_code": 0}}}
    theirs, mine = close_throttles(reference, mock, 36)
    assert list(differences(theirs, mine)) == []
    theirs, mine = close_throttles(reference, mock, 10)
    [(path, ref_value, mock_value)] = differences(theirs, mine)
    assert (path, ref_value.value, mock_value.value) == ("throttle_time_ms", 1450, 1430)
    assert str(ref_value) == "1450 (±10)"
    marker = {"<closed>": "the broker closed the connection"}
    assert close_throttles(marker, mock, 10)[0] == marker  # markers are left alone


def test_tolerance_is_the_widest_gap_between_the_elapsed_intervals_plus_rounding() -> None:
    # Same interval on both sides: only the two Math.round can differ.
    assert throttle_tolerance_ms((100.0, 100.0), (100.0, 100.0)) == 1
    # The reference recorded between 90 and 130 ms after its anchor, the mock between 95
    # and 110: they can be 130 - 95 = 35 ms apart.
    assert throttle_tolerance_ms((90.0, 130.0), (95.0, 110.0)) == 36
    assert throttle_tolerance_ms((95.0, 110.0), (90.0, 130.0)) == 36
    assert throttle_tolerance_ms((0.0, 10.4), (0.0, 10.0)) == 12  # rounded up


def timing(sent: float, answered: float) -> Timing:
    return Timing(sent=sent, answered=answered)


def step(side: Timing, sent: float, answered: float) -> None:
    side.sent, side.answered = sent, answered


def test_timed_steps_measure_from_the_first_and_see_the_mute() -> None:
    reference, mock = timing(0.0, 10.0), timing(0.0, 12.0)
    # the anchor: throttled by ~1 s on both sides
    theirs, mine = timed({"throttle_time_ms": 1000}, {"throttle_time_ms": 990}, reference, mock)
    assert theirs["throttle_time_ms"] == mine["throttle_time_ms"]
    assert "<held>" not in theirs and "<held>" not in mine
    # next request sent at once; the reference held it for the throttle, the mock did not
    step(reference, 11.0, 1015.0)
    step(mock, 13.0, 20.0)
    theirs, mine = timed({"throttle_time_ms": 0}, {"throttle_time_ms": 0}, reference, mock)
    assert theirs["<held>"] is True and mine["<held>"] is False
    assert [p for p, _, _ in differences(theirs, mine)] == ["<held>"]
    # the held request counts as read when the mute ended (1010 - slack), not when sent
    assert reference.readable == 10.0 + 1000 - MUTE_SLACK_MS
    assert mock.readable == 13.0


def test_after_an_unthrottled_step_nothing_is_held() -> None:
    reference, mock = timing(0.0, 5.0), timing(0.0, 5.0)
    timed({"throttle_time_ms": 0}, {"throttle_time_ms": 0}, reference, mock)
    step(reference, 6.0, 9.0)
    step(mock, 6.0, 9.0)
    theirs, mine = timed({"throttle_time_ms": 0}, {"throttle_time_ms": 0}, reference, mock)
    assert "<held>" not in theirs and "<held>" not in mine
    # the second step was recorded 1 to 9 ms after the first on either side
    assert theirs["throttle_time_ms"].tolerance == throttle_tolerance_ms((1.0, 9.0), (1.0, 9.0)) == 9


def test_a_throttled_connection_is_compared_by_when_it_closed() -> None:
    """connection_creation_rate: the answer is the connection's closing; how long after it
    was opened is compared, its recording taken at the opening and Kafka's acceptor poll
    interval added to the tolerance."""
    reference, mock = timing(0.0, 5.0), timing(0.0, 5.0)
    timed({"throttle_time_ms": 0}, {"throttle_time_ms": 0}, reference, mock)  # the anchor
    step(reference, 100.0, 1100.0)
    step(mock, 100.0, 1050.0)
    closed = {"<closed>": "the broker closed the connection"}
    theirs, mine = timed(dict(closed), dict(closed), reference, mock)
    assert theirs == mine
    assert theirs["<closed after ms>"].value == 1000 and mine["<closed after ms>"].value == 950
    assert (
        theirs["<closed after ms>"].tolerance
        == throttle_tolerance_ms((95.0, 100.0), (95.0, 100.0)) + CLOSE_SLACK_MS
    )
    # answered on one side, closed on the other: a difference of the whole answer
    step(reference, 1200.0, 1205.0)
    step(mock, 1200.0, 2200.0)
    theirs, mine = timed({"throttle_time_ms": 0}, dict(closed), reference, mock)
    assert theirs != mine
