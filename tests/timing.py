"""Slack for tests that assert a broker waited at least some time.

The broker's event loop (uvloop, libuv) keeps timers in whole milliseconds and measures a
delay from the loop's cached time, taken when the loop last woke, not when the callback
that set the timer ran. So a timer can fire up to a millisecond or two before its time by
the test's own clock (a close at 0.2997 s against a 0.3 s delay was seen in CI).
"""

TIMER_SLACK_S = 0.01
