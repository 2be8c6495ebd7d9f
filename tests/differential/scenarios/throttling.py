"""Throttling under client quotas: the throttle_time_ms sequence of fixed patterns, and the
muted connection after a throttled answer (KIP-219).

Every scenario sets one quota on its own client id with AlterClientQuotas (a setup step,
on both sides; DescribeClientQuotas settles until Kafka's broker has applied it), then
sends a fixed pattern with that client id, back to back:

- produce: Produce requests of ~1.1 kB under producer_byte_rate;
- fetch: Fetch requests of one ~1.1 kB batch under consumer_byte_rate (the throttled one
  is answered empty, its bytes un-recorded);
- request: Metadata requests under a request_percentage so small that every request is
  throttled for the whole (capped) window;
- create, delete, partitions: CreateTopics v7 / DeleteTopics v6 / CreatePartitions v3 of
  12 partitions, then 1 more, under controller_mutation_rate (strict: the first
  overdraws the bucket, the second gets THROTTLING_QUOTA_EXCEEDED).

Each pattern step is `throttle_timed`: its throttle_time_ms is compared as zero or not
exactly and as a value within the tolerance runner.throttle_tolerance_ms derives, and the
step after a throttled one reports `<held>`, whether its answer waited for that throttle
(the muted connection). The layout gives both sides the same quota windows: two samples
of 10 s for client and controller quotas, so that every pattern (< 10 s) sees Kafka's
padded window grow linearly with time (see throttle_tolerance_ms). Every scenario has its
own client id (fresh sensors) and starts with no quotas on either side (quotas.reset).

- connections: new connections from 127.0.0.2 under that address's
  connection_creation_rate; the throttled one is left unanswered and closed, and how
  long after it was opened is compared within the same tolerance plus Kafka's acceptor
  poll interval (runner.CLOSE_SLACK_MS).

- precedence: several producer_byte_rate quotas at once on different entity levels (KIP-55:
  user+client-id, user+default client-id, user, default user+client-id, default user+
  default client-id, default user, client-id, default client-id; the plain connections
  are User:ANONYMOUS; the layout's SASL listener gives User:alice). One level's quota clearly throttles a produce of ~1.1 kB (100 B/s:
  ~1 s), the others clearly do not (1e9 B/s), so whether and how much each client id's
  produce throttles shows which quota applies. The sensor of a quota on a user alone
  (or the default user) is that user's, shared by all its client ids, so only one
  scenario uses such a quota for each user.
"""

from __future__ import annotations

from typing import Any

from tests.differential.model import Scenario, Step
from tests.differential.scenarios.quotas import SETTLE, Entity, alter, describe
from tests.differential.scenarios.records import batch, create, fetch, produce

FAMILY = "throttling"
METADATA, CREATE, DELETE, PARTITIONS = 3, 19, 20, 37
WINDOWS = {
    "quota.window.num": "2",
    "quota.window.size.seconds": "10",
    "controller.quota.window.num": "2",
    "controller.quota.window.size.seconds": "10",
    "sasl.enabled.mechanisms": "PLAIN",  # a SASL listener: steps as user alice (runner.SASL_USERS)
}
SOURCE = "127.0.0.2"  # the local address of the connection-rate steps
VALUE = b"q" * 1000  # one record of 1000 bytes: a ~1.1 kB produce request or fetch answer


LOW, HIGH = 100.0, 1e9  # producer_byte_rate: one produce of ~1.1 kB throttles (~1 s) / not


def quotas(*levels: tuple[Entity, float | None]) -> list[Step]:
    """producer_byte_rate on each entity (None: removed), then waits until Kafka's broker
    lists the last one as set (or removed)."""
    steps = [alter(parts, {"producer_byte_rate": value}, compare=False) for parts, value in levels]
    last = levels[-1][0]
    exact = [(t, 1 if n is None else 0, n) for t, n in last]
    return [*steps, describe(exact, True, compare=False, settle=SETTLE)]


def send(topic: str, client_id: str, label: str, value: bytes = VALUE, user: str = "") -> Step:
    return produce(
        topic,
        batch([(None, value, 1_500_000_000_000)]),
        client_id=client_id,
        throttle_timed=True,
        label=label,
        user=user,
    )


def quota(client_id: str, key: str, value: float) -> list[Step]:
    """The quota on `client_id`, then waits until Kafka's broker lists it."""
    return [
        alter([("client-id", client_id)], {key: value}, compare=False),
        describe([("client-id", 0, client_id)], False, compare=False, settle=SETTLE),
    ]


def held(client_id: str, label: str = "Metadata-held", user: str = "") -> Step:
    """A request no quota of the scenario meters: its answer shows only the mute."""
    return Step(
        METADATA,
        12,
        {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
        client_id=client_id,
        throttle_timed=True,
        label=label,
        user=user,
    )


def new_topic(name: str, partitions: int) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []

    def scenario(name: str, *steps: Step) -> None:
        out.append(Scenario(f"throttling-{name}", FAMILY, steps, config=WINDOWS))

    # producer_byte_rate 500 B/s over a 10 s window: 4 requests (~4.4 kB) pass, the 5th
    # is throttled by ~1 s, the 6th (after the mute) by ~2 s.
    client = "throttle-produce"
    scenario(
        "produce",
        *quota(client, "producer_byte_rate", 500.0),
        *create("throttling-produce"),
        *(
            produce(
                "throttling-produce",
                batch([(None, VALUE, 1_500_000_000_000 + i)]),
                client_id=client,
                throttle_timed=True,
                label=f"Produce#{i}",
            )
            for i in range(6)
        ),
        held(client),
    )
    # consumer_byte_rate 300 B/s: two fetches of the batch pass, the third is throttled
    # (~1.5 s) and answered empty.
    client = "throttle-fetch"
    scenario(
        "fetch",
        *quota(client, "consumer_byte_rate", 300.0),
        *create("throttling-fetch"),
        produce("throttling-fetch", batch([(None, VALUE, 1_500_000_000_000)]), compare=False),
        *(
            fetch("throttling-fetch", 0, client_id=client, throttle_timed=True, label=f"Fetch#{i}")
            for i in range(3)
        ),
        held(client),
    )
    # request_percentage 1e-6 (% of one thread): any request's handling time exceeds it
    # many times over, so each throttle is capped at the window, 10 s.
    client = "throttle-request"
    scenario(
        "request",
        *quota(client, "request_percentage", 1e-6),
        held(client, "Metadata#0"),
        held(client, "Metadata#1"),
    )
    # controller_mutation_rate 0.5/s: a bucket of 2 x 10 s x 0.5 = 10 partitions. The
    # first topic of 12 partitions overdraws it (tokens -2: 4 s), the second is refused.
    client = "throttle-create"
    scenario(
        "create",
        *quota(client, "controller_mutation_rate", 0.5),
        Step(
            CREATE,
            7,
            {
                "topics": [new_topic("throttling-create-a", 12), new_topic("throttling-create-b", 1)],
                "timeout_ms": 5000,
                "validate_only": False,
            },
            client_id=client,
            throttle_timed=True,
        ),
        held(client),
    )
    # DeleteTopics: Kafka deletes a request's topics in the hash order of their ids, so
    # one request of a big and a small topic may overdraw on either; two requests do not
    # depend on it. The first overdraws the bucket (a strict quota reports a throttle only
    # with a refusal: 0), the second finds it exhausted (89, ~4 s).
    client = "throttle-delete"
    scenario(
        "delete",
        *quota(client, "controller_mutation_rate", 0.5),
        *create("throttling-delete-a", 12),
        *create("throttling-delete-b", 1),
        *(
            Step(
                DELETE,
                6,
                {"topics": [{"name": f"throttling-delete-{name}"}], "timeout_ms": 5000},
                client_id=client,
                throttle_timed=True,
                label=f"DeleteTopics-{name}",
            )
            for name in "ab"
        ),
        held(client),
    )
    client = "throttle-partitions"
    scenario(
        "partitions",
        *create("throttling-partitions-a", 1),
        *create("throttling-partitions-b", 1),
        *quota(client, "controller_mutation_rate", 0.5),
        Step(
            PARTITIONS,
            3,
            {
                "topics": [
                    {"name": "throttling-partitions-a", "count": 13, "assignments": None},
                    {"name": "throttling-partitions-b", "count": 2, "assignments": None},
                ],
                "timeout_ms": 5000,
                "validate_only": False,
            },
            client_id=client,
            throttle_timed=True,
        ),
        held(client),
    )
    # connection_creation_rate 1/s on 127.0.0.2 (an address only these steps connect
    # from), over a 10 s window: 10 new connections are answered, the 11th is recorded
    # at ~11/s, throttled by ~1 s, left unanswered and then closed.
    scenario(
        "connections",
        alter([("ip", SOURCE)], {"connection_creation_rate": 1.0}, compare=False),
        describe([("ip", 0, SOURCE)], False, compare=False, settle=SETTLE),
        *(
            Step(
                METADATA,
                12,
                {
                    "topics": [],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
                source_address=SOURCE,
                throttle_timed=True,
                label=f"Metadata#{i}",
            )
            for i in range(11)
        ),
    )
    # Precedence among client-id quotas: a named client id's quota over the default one,
    # which applies to every other client id.
    topic = "throttling-precedence"
    scenario(
        "precedence-client",
        *create(topic),
        *quotas(([("client-id", None)], LOW), ([("client-id", "prec-client-a")], HIGH)),
        send(topic, "prec-client-a", "Produce-named"),
        send(topic, "prec-client-b", "Produce-default"),
        held("prec-client-b"),
    )
    # A quota on one client id only: another client id has no quota and never throttles.
    scenario(
        "precedence-other-client",
        *create(topic),
        *quotas(([("client-id", "prec-other-a")], LOW),),
        send(topic, "prec-other-b", "Produce-other"),
        send(topic, "prec-other-a", "Produce-quota"),
        held("prec-other-a"),
    )
    # The default user's quota over a named client id's (user levels come first).
    scenario(
        "precedence-user-default",
        *create(topic),
        *quotas(([("client-id", "prec-user-a")], HIGH), ([("user", None)], LOW)),
        send(topic, "prec-user-a", "Produce-client"),
        held("prec-user-a"),
    )
    # A named user's quota over a client id's, and on that user only: the same client id
    # throttles as alice (SASL/PLAIN), not as ANONYMOUS. (No default user quota here: its
    # sensor, ANONYMOUS's, would carry these bytes into precedence-user-default.)
    scenario(
        "precedence-user",
        *create(topic),
        *quotas(([("client-id", "prec-named-user")], HIGH), ([("user", "alice")], LOW)),
        send(topic, "prec-named-user", "Produce-anonymous"),
        send(topic, "prec-named-user", "Produce-alice", user="alice"),
        held("prec-named-user", user="alice"),
    )
    # User ANONYMOUS with a named client id over ANONYMOUS with the default client id, over
    # a named client id: the second client id falls to ANONYMOUS's default client id.
    scenario(
        "precedence-user-client",
        *create(topic),
        *quotas(
            ([("client-id", "prec-uc-b")], HIGH),
            ([("user", "ANONYMOUS"), ("client-id", None)], LOW),
            ([("user", "ANONYMOUS"), ("client-id", "prec-uc-a")], HIGH),
        ),
        send(topic, "prec-uc-a", "Produce-user-client"),
        send(topic, "prec-uc-b", "Produce-user-default-client"),
        held("prec-uc-b"),
    )
    # The named client id's quota removed: the default client id's applies again, to the
    # same sensor, whose first small produce counts too: ~1.35 kB at 100 B/s, ~3.5 s.
    scenario(
        "precedence-removed",
        *create(topic),
        *quotas(([("client-id", None)], LOW), ([("client-id", "prec-removed")], HIGH)),
        send(topic, "prec-removed", "Produce-named", b"q" * 100),
        *quotas(([("client-id", "prec-removed")], None),),
        send(topic, "prec-removed", "Produce-default"),
        held("prec-removed"),
    )
    return out
