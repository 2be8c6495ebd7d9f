"""The differential runner: the same scenarios against Apache Kafka and MockCluster.

For each layout (a scenario family, a broker count and a config) it starts one reference
(tests/differential/reference.py) and one MockCluster with the same server properties,
runs every scenario of the layout on fresh connections to both, normalises each answer
(tests/differential/normalise.py) and compares the trees field by field. A difference is
keyed `scenario/step/Api/vN/field.path`; tests/differential/explained.toml decides which
are explained, each by a section of docs/explanation/differences.md.

`python -m tests.differential.runner [-k WORDS] [--json FILE]` (scripts/differential)
prints every difference with its request and ends with the line
`differential: S scenarios, D differences, U unexplained`; it exits 0 only when U is 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import socket
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from itertools import groupby
from pathlib import Path
from typing import Any

from broker import MockCluster
from messages.registry import request_class, response_class
from tests.differential.model import Scenario, Step, jsonable, kept
from tests.differential.normalise import Close, close_throttles, differences, normalise, tree
from tests.differential.reference import KAFKA_VERSION, SHARED_CONFIG, ReferenceKafka
from tests.support.wire import encode_request, read_frame, round_trip

EXPLAINED = Path(__file__).resolve().parent / "explained.toml"
REPLY_TIMEOUT = 15.0
CLIENT_ID = "differential"
# The group and transactional id warm_up waits for; scenarios use these for unknown ones,
# so that their coordinators are loaded on the reference before any scenario asks.
WARM_UP_GROUP = "differential-unknown-group"
WARM_UP_TXN = "differential-unknown-txn"
# A layout whose config enables SASL (`sasl.enabled.mechanisms`) gets, on both sides, a
# SASL_PLAINTEXT listener next to the plain one, with these PLAIN users (password:
# "<user>-secret"); a step with `user` authenticates on it.
SASL_USERS = ("admin", "alice", "bob")
# A timed step after a throttled one counts as held (its connection muted, KIP-219) when
# its answer came at most this much before the previous throttle expired: both brokers
# wake their throttle timers a little early or late (Kafka's DelayQueue and poll timeouts
# have millisecond granularity, asyncio's timers the loop's), never by more than this.
MUTE_SLACK_MS = 20.0
# A connection throttled by connection_creation_rate is closed by the broker when its
# throttle has passed; Kafka's acceptor closes such sockets from its select loop, which
# wakes at least every 500 ms (SocketServer's Acceptor: nioSelector.select(500)), so the
# close may come that much later than the throttle on the reference.
CLOSE_SLACK_MS = 500


@dataclass(frozen=True)
class Explanation:
    key: str  # a pattern over difference keys: `*` any text, `{a,b}` alternatives
    anchor: str  # a section of docs/explanation/differences.md
    reason: str
    # when given, the values (as JSON) the difference must have on each side
    reference: str | None = None
    mock: str | None = None

    def covers(self, key: str, reference: Any, mock: Any) -> bool:
        if not pattern(self.key).match(key):
            return False
        return all(
            want is None or json.loads(want) == jsonable(got)
            for want, got in ((self.reference, reference), (self.mock, mock))
        )


def load_explained(path: Path = EXPLAINED) -> list[Explanation]:
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    return [
        Explanation(e["key"], e["anchor"], e["reason"], e.get("reference"), e.get("mock"))
        for e in data.get("difference", [])
    ]


def pattern(text: str) -> re.Pattern[str]:
    """An explained key as a regular expression: `*` is any text, `{a,b}` either
    alternative; everything else (brackets included) stands for itself."""
    out, depth = [], 0
    for char in text:
        if char == "*":
            out.append(".*")
        elif char == "{":
            depth += 1
            out.append("(?:")
        elif char == "}" and depth:
            depth -= 1
            out.append(")")
        elif char == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(char))
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def explain(
    key: str, explained: Sequence[Explanation], reference: Any = None, mock: Any = None
) -> Explanation | None:
    return next((e for e in explained if e.covers(key, reference, mock)), None)


@dataclass
class Difference:
    key: str
    scenario: str
    api: str
    version: int
    path: str
    request: str
    reference: Any
    mock: Any
    anchor: str | None = None
    reason: str | None = None


@dataclass
class StepResult:
    scenario: str
    family: str
    api: str
    version: int
    differences: int


@dataclass
class Report:
    reference: str = KAFKA_VERSION
    scenarios: int = 0
    steps: list[StepResult] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    start_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if d.anchor is None]

    def summary(self) -> str:
        return (
            f"differential: {self.scenarios} scenarios, {len(self.differences)} differences, "
            f"{len(self.unexplained)} unexplained"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "scenarios": self.scenarios,
            "start_seconds": self.start_seconds,
            "steps": [asdict(s) for s in self.steps],
            "differences": [jsonable(asdict(d)) for d in self.differences],
        }


@dataclass
class Timing:
    """One side's clock for its scenario's `throttle_timed` steps (monotonic ms)."""

    sent: float = 0.0  # the last step's request was sent
    answered: float = 0.0  # and its answer read
    # when the broker can first have read the last request: when it was sent, or, on a
    # connection seen to be muted (`<held>`), when the previous throttle expired
    readable: float = 0.0
    anchor: tuple[float, float] | None = None  # (readable, answered) of the first timed step
    previous: tuple[int, float] | None = None  # the last timed step's throttle, answered at

    def elapsed(self, accepted: bool = False) -> tuple[float, float]:
        """Bounds on the broker's own time from recording the anchor step to recording
        the last step: each happened between its request's being readable and its answer
        (`accepted`: the last step's recording is its connection's acceptance, taken to
        be when it was opened; lags are the caller's slack)."""
        readable, answered = self.anchor or (self.readable, self.answered)
        last = self.readable if accepted else self.answered
        return self.readable - answered, last - readable


def throttle_tolerance_ms(reference: tuple[float, float], mock: tuple[float, float]) -> int:
    """How far apart the two sides' throttle_time_ms may be for the same pattern.

    Both compute it as Kafka's ClientQuotaManager does, from the same bytes, partitions and
    quota. The throttling family's layout keeps Kafka's padded window linear: with two
    samples of 10 s and every pattern shorter than 10 s, the window is
    W = (samples - 1) x window + e, e being the time since the sensor's first record (the
    scenario's first timed step). So a rate quota's throttle is
    (S/W - Q)/Q x W = S/Q - W = C - e, and the mutation token bucket's,
    -tokens/rate = (used - burst)/rate - e = C - e, with the same C on both sides: the
    throttles differ by exactly the difference of the two e's, plus 1 ms for each side's
    Math.round. Each e lies in the interval `Timing.elapsed` measures around the requests
    (a request on a muted connection is read no earlier than the mute's end); the
    tolerance is the widest gap between the two intervals. Capped throttles (the
    request quota, at one window) are equal, within any tolerance."""
    (ref_low, ref_high), (mock_low, mock_high) = reference, mock
    return math.ceil(max(ref_high - mock_low, mock_high - ref_low, 0.0)) + 1


class Connections:
    """One side's connections for one scenario, one per broker, opened when first used."""

    def __init__(
        self,
        address: Callable[[int], tuple[str, int]],
        sasl_address: Callable[[int], tuple[str, int]] | None = None,
    ) -> None:
        self.address = address
        self.sasl_address = sasl_address
        self.open: dict[tuple[int, str], socket.socket] = {}
        self.correlation_id = 0
        # from earlier answers, for `Later` fields: the last InitProducerId's id and epoch
        self.captured: dict[str, Any] = {}
        self.timing = Timing()

    def connect(self, node: int, user: str, source: str = "") -> socket.socket:
        if source:
            return socket.create_connection(self.address(node), timeout=10, source_address=(source, 0))
        if not user:
            return socket.create_connection(self.address(node), timeout=10)
        if self.sasl_address is None:
            raise ConnectionError(f"no SASL listener in this layout for user {user}")
        sock = socket.create_connection(self.sasl_address(node), timeout=10)
        sock.settimeout(REPLY_TIMEOUT)
        self.correlation_id += 1
        shake = round_trip(sock, request_class(17)[1](mechanism="PLAIN"), self.correlation_id, CLIENT_ID)
        self.correlation_id += 1
        token = f"\0{user}\0{user}-secret".encode()
        auth = round_trip(sock, request_class(36)[2](auth_bytes=token), self.correlation_id, CLIENT_ID)
        if shake.error_code or auth.error_code:
            sock.close()
            raise ConnectionError(f"SASL/PLAIN as {user} failed: {shake.error_code}/{auth.error_code}")
        return sock

    def send(self, step: Step) -> Any:
        """The decoded answer, or a marker: {"<closed>": ...} when the connection closed."""
        request = step.build(self.captured)
        where = (step.node, f"@{step.source_address}" if step.source_address else step.user)
        if step.source_address:
            self.drop(where)  # a new connection each time
            self.timing.sent = time.monotonic() * 1000  # a connection is recorded when accepted
        try:
            sock = self.open.get(where)
            if sock is None:
                sock = self.open[where] = self.connect(step.node, step.user, step.source_address)
                sock.settimeout(REPLY_TIMEOUT)
            self.correlation_id += 1
            if not step.source_address:
                self.timing.sent = time.monotonic() * 1000
            sock.sendall(encode_request(request, self.correlation_id, step.client_id or CLIENT_ID))
            if step.api_key == 0 and step.fields.get("acks") == 0:
                return {"<no answer>": "acks=0 has none"}
            frame = read_frame(sock)
            self.timing.answered = time.monotonic() * 1000
        except TimeoutError:
            self.timing.answered = time.monotonic() * 1000
            self.drop(where)
            return {"<no answer>": f"none within {REPLY_TIMEOUT:.0f} s"}
        except (ConnectionError, OSError):
            self.timing.answered = time.monotonic() * 1000
            self.drop(where)
            return {"<closed>": "the broker closed the connection"}
        try:
            answer = response_class(step.api_key).decode(frame, version=step.version, header=True)
        except Exception as exc:  # noqa: BLE001 (an undecodable answer is a difference)
            return {"<undecodable>": f"{type(exc).__name__}: {frame[:64].hex()}"}
        if step.api_key == 22 and not answer.error_code:
            self.captured.update(producer_id=answer.producer_id, producer_epoch=answer.producer_epoch)
        for name, path in step.keep.items():
            self.captured[name] = kept(answer, path)
        return answer

    def answer_tree(self, step: Step) -> Any:
        answer = self.send(step)
        plain = answer if isinstance(answer, dict) else tree(answer, step.version)
        return normalise(plain, throttle_positive_only=step.throttle_positive_only)

    def drop(self, where: tuple[int, str]) -> None:
        sock = self.open.pop(where, None)
        if sock is not None:
            sock.close()

    def close(self) -> None:
        for where in list(self.open):
            self.drop(where)


@dataclass
class Pair:
    """The two clusters of one layout."""

    reference: ReferenceKafka
    mock: MockCluster

    def mock_address(self, node: int) -> tuple[str, int]:
        endpoint = self.mock.broker(node).advertised_endpoint(self.mock.brokers[0].listeners[0].listener)
        return endpoint.host, endpoint.port

    def mock_sasl_address(self, node: int) -> tuple[str, int]:
        endpoint = self.mock.broker(node).advertised_endpoint("SASL_PLAINTEXT")
        return endpoint.host, endpoint.port

    def sides(self) -> tuple[Connections, Connections]:
        if not self.reference.sasl_users:
            return Connections(self.reference.address), Connections(self.mock_address)
        return (
            Connections(self.reference.address, self.reference.sasl_address),
            Connections(self.mock_address, self.mock_sasl_address),
        )


@contextmanager
def layout(brokers: int, config: dict[str, str]) -> Iterator[Pair]:
    users = {user: f"{user}-secret" for user in SASL_USERS} if "sasl.enabled.mechanisms" in config else {}
    mock_config = {**SHARED_CONFIG, **config}
    with tempfile.TemporaryDirectory(prefix="differential-users-") as scratch:
        if users:
            users_file = Path(scratch) / "users.json"
            users_file.write_text(json.dumps(users))
            mock_config |= {
                "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.users.file": str(users_file),
            }
        with (
            ReferenceKafka(brokers, config, sasl_users=users) as reference,
            MockCluster(brokers, mock_config) as mock,
        ):
            pair = Pair(reference, mock)
            warm_up(pair)
            yield pair


def warm_up(pair: Pair) -> None:
    """Kafka creates __consumer_offsets and __transaction_state on the first FindCoordinator
    (COORDINATOR_NOT_AVAILABLE until they are ready), loads the coordinators' partitions
    after that (COORDINATOR_LOAD_IN_PROGRESS, or NOT_COORDINATOR) and fetches its first
    block of producer ids on the first InitProducerId (COORDINATOR_LOAD_IN_PROGRESS): both
    sides get that over with first, so that no scenario depends on being the first."""
    probes: list[tuple[Step, Callable[[Any], int]]] = [
        (
            Step(10, 4, {"key_type": key_type, "coordinator_keys": [WARM_UP_GROUP if key_type == 0 else WARM_UP_TXN]}),
            lambda a: int(a.coordinators[0].error_code),
        )
        for key_type in (0, 1)
    ]
    probes.append((Step(22, 5, {"transactional_id": None, "transaction_timeout_ms": 60000}), lambda a: int(a.error_code)))
    # an unknown transactional id's answer once its coordinator partition is loaded
    probes.append(
        (
            Step(26, 4, {"transactional_id": WARM_UP_TXN, "producer_id": 1000, "producer_epoch": 0, "committed": False}),
            lambda a: 0 if a.error_code not in (14, 15, 16) else int(a.error_code),
        )
    )
    # with several brokers, the transaction coordinator is one of them: a probe is
    # ready when any broker's answer is
    nodes = range(pair.reference.size)
    for step, error in probes:
        for side in pair.sides():
            deadline = time.monotonic() + 60
            while True:
                answers = [side.send(dataclasses.replace(step, node=node)) for node in nodes]
                side.close()
                ready = [a for a in answers if not isinstance(a, dict) and error(a) == 0]
                if ready:
                    break
                answer = answers[0]
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kafka not ready after 60 s: {step.describe()} answered {answer}")
                time.sleep(0.2)


Reset = Callable[[Connections], None]


def run_scenario(
    scenario: Scenario,
    pair: Pair,
    explained: Sequence[Explanation],
    report: Report,
    reset: Reset | None = None,
) -> None:
    reference, mock = pair.sides()
    try:
        if reset is not None:
            reset(reference)
            reset(mock)
        for index, step in enumerate(scenario.steps):
            if step.throttle_timed:  # both at once: neither side's wait is in the other's timings
                with ThreadPoolExecutor(2) as pool:
                    mine_later = pool.submit(mock.answer_tree, step)
                    theirs = reference.answer_tree(step)
                    mine = mine_later.result()
            else:
                mine = mock.answer_tree(step)
                theirs = reference.answer_tree(step)
            if step.until is not None:
                mine = poll_until(partial(mock.answer_tree, step), mine, step.until, step.settle)
                theirs = poll_until(partial(reference.answer_tree, step), theirs, step.until, step.settle)
            deadline = time.monotonic() + step.settle
            while (
                step.settle
                and step.until is None
                and time.monotonic() < deadline
                and unexplained(scenario, step, theirs, mine, explained)
            ):
                time.sleep(0.1)
                theirs = reference.answer_tree(step)
            if step.throttle_timed:
                theirs, mine = timed(theirs, mine, reference.timing, mock.timing)
            if not step.compare:
                continue
            name = step.name
            if sum(s.name == name for s in scenario.steps) > 1:
                name = f"{name}#{index}"
            found = 0
            if theirs != mine and (is_marker(theirs) or is_marker(mine)):
                found_here = [("<answer>", theirs, mine)]  # no answer, or none decodable, on one side
            else:
                found_here = list(differences(theirs, mine))
            for path, ref_value, mock_value in found_here:
                key = f"{scenario.name}/{name}/v{step.version}/{path}"
                why = explain(key, explained, ref_value, mock_value)
                report.differences.append(
                    Difference(
                        key,
                        scenario.name,
                        step.api,
                        step.version,
                        path,
                        step.describe(),
                        ref_value,
                        mock_value,
                        why.anchor if why else None,
                        why.reason if why else None,
                    )
                )
                found += 1
            report.steps.append(StepResult(scenario.name, scenario.family, step.api, step.version, found))
    finally:
        reference.close()
        mock.close()
    report.scenarios += 1


def run(
    scenarios: Iterable[Scenario],
    explained: Sequence[Explanation] | None = None,
    resets: dict[str, Reset] | None = None,
    out: Callable[[str], None] = print,
) -> Report:
    explained = load_explained() if explained is None else explained
    report = Report()
    ordered = sorted(scenarios, key=lambda s: (s.layout, s.name))
    for (family, brokers, config), group in groupby(ordered, key=lambda s: s.layout):
        with layout(brokers, dict(config)) as pair:
            report.start_seconds[f"{family}/{brokers}"] = round(pair.reference.start_seconds, 1)
            for scenario in group:
                before = len(report.differences)
                run_scenario(scenario, pair, explained, report, (resets or {}).get(family))
                for difference in report.differences[before:]:
                    out(render(difference))
    return report


def poll_until(
    ask: Callable[[], Any], first: Any, until: Callable[[Any], bool], seconds: float, pause: float = 0.1
) -> Any:
    """`first`, or the answer `ask` gives again (every `pause` seconds, for up to
    `seconds`) until `until` holds of it: the last answer either way, so a side that never
    gets there is compared as it stands."""
    answer = first
    deadline = time.monotonic() + seconds
    while not until(answer) and time.monotonic() < deadline:
        time.sleep(pause)
        answer = ask()
    return answer


def timed(theirs: Any, mine: Any, reference: Timing, mock: Timing) -> tuple[Any, Any]:
    """A `throttle_timed` step's answers: throttle_time_ms as `Close` values, within
    `throttle_tolerance_ms`; after a throttled timed step, `<held>` says whether the
    answer waited for that throttle to expire (the connection was muted)."""
    out = []
    for answer, timing in ((theirs, reference), (mine, mock)):
        timing.readable = timing.sent
        if isinstance(answer, dict) and timing.previous is not None and timing.previous[0] > 0:
            unmuted = timing.previous[1] + timing.previous[0] - MUTE_SLACK_MS
            held = timing.answered >= unmuted
            answer = {**answer, "<held>": held}
            if held:
                timing.readable = max(timing.sent, unmuted)
        if timing.anchor is None:
            timing.anchor = (timing.readable, timing.answered)
        throttle = answer.get("throttle_time_ms") if isinstance(answer, dict) else None
        timing.previous = (throttle, timing.answered) if isinstance(throttle, int) else None
        out.append(answer)
    tolerance = throttle_tolerance_ms(reference.elapsed(), mock.elapsed())
    closed_tolerance = throttle_tolerance_ms(reference.elapsed(True), mock.elapsed(True)) + CLOSE_SLACK_MS
    for index, timing in enumerate((reference, mock)):
        if isinstance(out[index], dict) and "<closed>" in out[index]:
            # a throttled connection: closed, unanswered, once its throttle has passed
            closed_after = round(timing.answered - timing.sent)
            out[index] = {**out[index], "<closed after ms>": Close(closed_after, closed_tolerance)}
    return close_throttles(out[0], out[1], tolerance)


def unexplained(scenario: Scenario, step: Step, theirs: Any, mine: Any, explained: Sequence[Explanation]) -> bool:
    """Whether the two answers differ other than as explained (a settling step is retried
    only then: an explained difference is no metadata still on its way)."""
    return any(
        explain(f"{scenario.name}/{step.name}/v{step.version}/{path}", explained, a, b) is None
        for path, a, b in differences(theirs, mine)
    )


def is_marker(answer: Any) -> bool:
    return isinstance(answer, dict) and any(k.startswith("<") for k in answer)


def render(d: Difference) -> str:
    verdict = f"explained: {d.anchor} ({d.reason})" if d.anchor else "UNEXPLAINED"
    return (
        f"DIFFERENCE {d.key}\n  request:   {d.request}\n"
        f"  reference: {json.dumps(jsonable(d.reference))}\n  mock:      {json.dumps(jsonable(d.mock))}\n"
        f"  {verdict}"
    )


def select(scenarios: Iterable[Scenario], words: Sequence[str]) -> list[Scenario]:
    """The scenarios whose name, family or one of whose APIs contains one of `words`."""
    if not words:
        return list(scenarios)
    lowered = [w.lower() for w in words]
    return [
        s
        for s in scenarios
        if any(w in s.name.lower() or w == s.family.lower() or any(w == a.lower() for a in s.apis) for w in lowered)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    from tests.differential.reference import ReferenceError
    from tests.differential.scenarios import RESETS, all_scenarios

    parser = argparse.ArgumentParser(prog="scripts/differential", description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", action="append", default=[], help="only scenarios whose name, family or API matches")
    parser.add_argument("--json", type=Path, help="write the report (every step and difference) to this file")
    parser.add_argument("--list", action="store_true", help="list the selected scenarios and exit")
    args = parser.parse_args(argv)
    chosen = select(all_scenarios(), args.k)
    if args.list:
        for scenario in chosen:
            print(f"{scenario.family:10} {scenario.name}  ({', '.join(sorted(scenario.apis))})")
        print(f"{len(chosen)} scenarios")
        return 0
    try:
        report = run(chosen, resets=RESETS)
    except ReferenceError as exc:
        print(f"differential: {exc}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=1, sort_keys=True) + "\n")
    print(report.summary())
    return 0 if not report.unexplained else 1


if __name__ == "__main__":
    sys.exit(main())
