"""DescribeConfigs, IncrementalAlterConfigs and AlterConfigs at every version served, on
every resource type (BROKER per broker and as the cluster default, BROKER_LOGGER, TOPIC,
GROUP, CLIENT_METRICS) with valid and invalid input: unknown, empty and illegal names and
keys, duplicate resources and keys, values of the wrong type or out of range, read-only
keys, list operations (APPEND, SUBTRACT) on list and non-list configs, validate-only; each
change followed by DescribeConfigs (settled: Kafka's broker applies the controller's config
records a moment after the answer). Topics are the scenario's own and deleted at its end;
`reset` removes the dynamic broker configs the family sets, so scenarios are independent."""

from __future__ import annotations

from typing import Any

from messages.registry import request_class
from tests.differential.model import Scenario, Step
from tests.differential.scenarios.topics import create, create_step, delete, metadata

FAMILY = "configs"
DESCRIBE, ALTER, INCREMENTAL = 32, 33, 44
SETTLE = 2.0
TOPIC, BROKER, LOGGER, METRICS, GROUP = 2, 4, 8, 16, 32
SET, REMOVE, APPEND, SUBTRACT = 0, 1, 2, 3
BROKER_KEYS = ("message.max.bytes", "log.retention.ms", "log.cleaner.threads", "background.threads")
GROUP_KEYS = ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms")
TOPIC_KEYS = ["retention.ms", "cleanup.policy", "min.insync.replicas", "segment.bytes", "max.message.bytes"]


def fit(api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` without those `version` of the request lacks (recursively)."""

    def trim(cls: Any, values: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in values.items():
            spec = cls._struct.fields.get(name)
            if spec is None or not spec.for_version_q(version):
                continue
            if spec.is_struct_array() and value is not None:
                value = [trim(spec.data_class, item) for item in value]
            out[name] = value
        return out

    return trim(request_class(api_key)[version], fields)


def describe(
    resources: list[tuple[int, str, list[str] | None]],
    version: int = 4,
    synonyms: bool = False,
    documentation: bool = False,
    **kw: Any,
) -> Step:
    fields = {
        "resources": [
            {"resource_type": t, "resource_name": n, "configuration_keys": k} for t, n, k in resources
        ],
        "include_synonyms": synonyms,
        "include_documentation": documentation,
    }
    return Step(DESCRIBE, version, fit(DESCRIBE, version, fields), **kw)


def incremental(
    resources: list[tuple[int, str, list[tuple[str, int, str | None]]]],
    version: int = 1,
    validate_only: bool = False,
    **kw: Any,
) -> Step:
    fields = {
        "resources": [
            {
                "resource_type": t,
                "resource_name": n,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
            }
            for t, n, ops in resources
        ],
        "validate_only": validate_only,
    }
    return Step(INCREMENTAL, version, fields, **kw)


def legacy(
    resources: list[tuple[int, str, dict[str, str | None]]],
    version: int = 2,
    validate_only: bool = False,
    **kw: Any,
) -> Step:
    fields = {
        "resources": [
            {
                "resource_type": t,
                "resource_name": n,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
            for t, n, configs in resources
        ],
        "validate_only": validate_only,
    }
    return Step(ALTER, version, fields, **kw)


def reset(side: Any) -> None:
    """Removes the dynamic broker configs (this broker's and the cluster default) and the
    client metrics subscription and group configs the family sets, on one side."""
    for name in ("0", ""):
        side.send(incremental([(BROKER, name, [(k, REMOVE, None) for k in BROKER_KEYS])]))
    side.send(
        incremental(
            [
                (METRICS, "configs-subscription", [(k, REMOVE, None) for k in ("interval.ms", "metrics")]),
                (GROUP, "configs-group", [(k, REMOVE, None) for k in GROUP_KEYS]),
            ]
        )
    )
    side.close()


def with_topic(name: str, steps: list[Step], configs: dict[str, str] | None = None) -> Scenario:
    """A scenario creating topic `name` first (not compared), running `steps`, deleting it."""
    return Scenario(
        name,
        FAMILY,
        (
            create_step(7, [create(name, configs=configs or {})], compare=False),
            metadata([name], settle=SETTLE, compare=False),
            *steps,
            delete([name], compare=False),
        ),
    )


def describe_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    broker_keys = ["message.max.bytes", "num.io.threads", "log.retention.hours", "no.such.config"]
    # (case, resources given the scenario's topic name, whether the topic is created)
    cases: list[tuple[str, Any, bool]] = [
        ("broker-keys", lambda t: [(BROKER, "0", broker_keys)], False),
        ("broker-default-keys", lambda t: [(BROKER, "", ["message.max.bytes"])], False),
        ("broker-unknown-id", lambda t: [(BROKER, "7", None)], False),
        ("broker-bad-id", lambda t: [(BROKER, "zero", None)], False),
        ("broker-logger-unknown-broker", lambda t: [(LOGGER, "7", None)], False),
        ("topic-keys", lambda t: [(TOPIC, t, [*TOPIC_KEYS, "no.such.config"])], True),
        ("topic-all", lambda t: [(TOPIC, t, None)], True),
        ("topic-unknown", lambda t: [(TOPIC, t, None)], False),
        ("topic-empty", lambda t: [(TOPIC, "", None)], False),
        ("topic-illegal", lambda t: [(TOPIC, t + " x", None)], False),
        ("topic-overlong", lambda t: [(TOPIC, "x" * 250, None)], False),
        ("topic-duplicate", lambda t: [(TOPIC, t, ["retention.ms"]), (TOPIC, t, ["cleanup.policy"])], True),
        (
            "topic-and-broker",
            lambda t: [(TOPIC, t, ["retention.ms"]), (BROKER, "0", ["message.max.bytes"])],
            True,
        ),
        ("group", lambda t: [(GROUP, t, None)], False),
        ("group-empty", lambda t: [(GROUP, "", None)], False),
        ("client-metrics-unknown", lambda t: [(METRICS, t, None)], False),
        ("client-metrics-empty", lambda t: [(METRICS, "", None)], False),
        ("unknown-type", lambda t: [(0, t, None)], False),
        ("no-resources", lambda t: [], False),
    ]
    for case, resources, creates in cases:
        for version in range(1, 5):
            for synonyms, documentation in ((False, False), (True, version >= 3)):
                if creates and synonyms != (version in (1, 4)):
                    continue  # a topic of its own is slow to make: v1 and v4 with synonyms, v2-3 plain
                flags = "-synonyms" if synonyms else ""
                name = f"configs-describe-{case}-v{version}{flags}"
                step = describe(resources(name), version, synonyms, documentation)
                if creates:
                    out.append(with_topic(name, [step]))
                else:
                    out.append(Scenario(name, FAMILY, (step,)))
    # the broker logger (Kafka's log4j loggers: compared by key, the root logger only)
    for version in range(1, 5):
        out.append(
            Scenario(
                f"configs-describe-broker-logger-v{version}",
                FAMILY,
                (describe([(LOGGER, "0", ["root"])], version),),
            )
        )
    return out


Ops = list[tuple[str, int, str | None]]

# (case, ops on the scenario's topic, the topic's configs at creation)
TOPIC_OPS: list[tuple[str, Ops, dict[str, str]]] = [
    ("set", [("retention.ms", SET, "3600000")], {}),
    ("set-two", [("retention.ms", SET, "3600000"), ("cleanup.policy", SET, "compact")], {}),
    ("set-bad-number", [("retention.ms", SET, "soon")], {}),
    ("set-out-of-range", [("min.insync.replicas", SET, "0")], {}),
    ("set-segment-too-small", [("segment.bytes", SET, "1")], {}),
    ("set-bad-policy", [("cleanup.policy", SET, "shred")], {}),
    ("set-unknown-key", [("no.such.config", SET, "1")], {}),
    ("set-null", [("retention.ms", SET, None)], {}),
    ("set-empty-key", [("", SET, "1")], {}),
    ("set-broker-key", [("message.max.bytes", SET, "2000000")], {}),
    ("set-twice", [("retention.ms", SET, "1000"), ("retention.ms", SET, "2000")], {}),
    ("delete", [("retention.ms", REMOVE, None)], {"retention.ms": "3600000"}),
    ("delete-unset", [("retention.ms", REMOVE, None)], {}),
    ("delete-unknown-key", [("no.such.config", REMOVE, None)], {}),
    ("append", [("cleanup.policy", APPEND, "compact")], {}),
    ("append-present", [("cleanup.policy", APPEND, "delete")], {}),
    ("append-bad", [("cleanup.policy", APPEND, "shred")], {}),
    ("append-non-list", [("retention.ms", APPEND, "1")], {}),
    ("subtract", [("cleanup.policy", SUBTRACT, "compact")], {"cleanup.policy": "compact,delete"}),
    ("subtract-absent", [("cleanup.policy", SUBTRACT, "compact")], {}),
    ("subtract-all", [("cleanup.policy", SUBTRACT, "delete")], {}),
    ("subtract-non-list", [("retention.ms", SUBTRACT, "1")], {}),
    ("unknown-operation", [("retention.ms", 7, "1")], {}),
]

VALIDATED = {"set", "set-bad-number", "set-unknown-key", "delete", "append", "subtract", "unknown-operation"}

# (case, resources) on other resource types; BROKER changes are undone by `reset`
OTHER_OPS: list[tuple[str, list[tuple[int, str, Ops]]]] = [
    ("broker-set", [(BROKER, "0", [("message.max.bytes", SET, "2000000")])]),
    ("broker-default-set", [(BROKER, "", [("message.max.bytes", SET, "2000000")])]),
    ("broker-set-retention", [(BROKER, "0", [("log.retention.ms", SET, "7200000")])]),
    ("broker-set-threads", [(BROKER, "0", [("background.threads", SET, "5")])]),
    ("broker-set-threads-out-of-range", [(BROKER, "0", [("background.threads", SET, "0")])]),
    ("broker-set-cleaner-threads", [(BROKER, "", [("log.cleaner.threads", SET, "2")])]),
    ("broker-set-bad-number", [(BROKER, "0", [("message.max.bytes", SET, "big")])]),
    ("broker-set-read-only", [(BROKER, "0", [("process.roles", SET, "broker")])]),
    ("broker-set-read-only-node-id", [(BROKER, "0", [("node.id", SET, "3")])]),
    ("broker-set-unknown-key", [(BROKER, "0", [("no.such.config", SET, "1")])]),
    ("broker-default-set-unknown-key", [(BROKER, "", [("no.such.config", SET, "1")])]),
    ("broker-set-topic-key", [(BROKER, "0", [("retention.ms", SET, "1000")])]),
    ("broker-delete", [(BROKER, "0", [("message.max.bytes", REMOVE, None)])]),
    ("broker-append-non-list", [(BROKER, "0", [("message.max.bytes", APPEND, "1")])]),
    ("broker-unknown-id", [(BROKER, "7", [("message.max.bytes", SET, "2000000")])]),
    ("broker-bad-id", [(BROKER, "zero", [("message.max.bytes", SET, "2000000")])]),
    ("broker-unknown-operation", [(BROKER, "0", [("message.max.bytes", 7, "1")])]),
    ("group-unknown-operation", [(GROUP, "configs-group", [("consumer.session.timeout.ms", 7, "50000")])]),
    ("broker-duplicate", [(BROKER, "0", [("message.max.bytes", SET, "2000000")])] * 2),
    ("logger-set", [(LOGGER, "0", [("kafka.server.KafkaApis", SET, "DEBUG")])]),
    ("logger-set-bad-level", [(LOGGER, "0", [("kafka.server.KafkaApis", SET, "LOUD")])]),
    ("logger-append", [(LOGGER, "0", [("kafka.server.KafkaApis", APPEND, "DEBUG")])]),
    ("logger-unknown-broker", [(LOGGER, "7", [("kafka.server.KafkaApis", SET, "DEBUG")])]),
    ("group-set", [(GROUP, "configs-group", [("consumer.session.timeout.ms", SET, "50000")])]),
    ("group-set-too-low", [(GROUP, "configs-group", [("consumer.session.timeout.ms", SET, "10")])]),
    (
        "group-set-heartbeat-too-high",
        [(GROUP, "configs-group", [("consumer.heartbeat.interval.ms", SET, "100000")])],
    ),
    ("group-set-bad-number", [(GROUP, "configs-group", [("consumer.heartbeat.interval.ms", SET, "often")])]),
    ("group-set-unknown-key", [(GROUP, "configs-group", [("no.such.config", SET, "1")])]),
    ("group-empty-name", [(GROUP, "", [("consumer.session.timeout.ms", SET, "50000")])]),
    ("group-set-share-lock-too-low", [(GROUP, "configs-group", [("share.record.lock.duration.ms", SET, "1000")])]),
    ("group-set-streams-session-too-low", [(GROUP, "configs-group", [("streams.session.timeout.ms", SET, "1000")])]),
    ("group-set-streams-standby-too-many", [(GROUP, "configs-group", [("streams.num.standby.replicas", SET, "5")])]),
    (
        "group-set-streams-task-offsets-too-often",
        [(GROUP, "configs-group", [("streams.task.offset.interval.ms", SET, "1000")])],
    ),
    ("group-set-streams-warmups-too-many", [(GROUP, "configs-group", [("streams.num.warmup.replicas", SET, "50")])]),
    ("group-set-streams-lag-negative", [(GROUP, "configs-group", [("streams.acceptable.recovery.lag", SET, "-1")])]),
    (
        "group-set-streams-assignment-interval-too-long",
        [(GROUP, "configs-group", [("streams.assignment.interval.ms", SET, "20000")])],
    ),
    (
        "metrics-set",
        [(METRICS, "configs-subscription", [("interval.ms", SET, "60000"), ("metrics", SET, "a,b")])],
    ),
    ("metrics-set-bad-interval", [(METRICS, "configs-subscription", [("interval.ms", SET, "1")])]),
    ("metrics-set-unknown-key", [(METRICS, "configs-subscription", [("no.such.config", SET, "1")])]),
    ("metrics-empty-name", [(METRICS, "", [("interval.ms", SET, "60000")])]),
    ("unknown-type", [(0, "x", [("retention.ms", SET, "1")])]),
    ("topic-unknown", [(TOPIC, "configs-no-such-topic", [("retention.ms", SET, "1")])]),
    ("topic-empty-name", [(TOPIC, "", [("retention.ms", SET, "1")])]),
]


def after(resources: list[tuple[int, str, Any]]) -> Step | None:
    """DescribeConfigs of what the alteration touched (broker loggers and unknown types
    aside), settled; None when there is nothing to describe."""
    wanted: list[tuple[int, str, list[str] | None]] = []
    for resource_type, name, ops in resources:
        if resource_type not in (TOPIC, BROKER, GROUP, METRICS) or (resource_type, name) in {
            (t, n) for t, n, _ in wanted
        }:
            continue
        keys = sorted({k for k, *_ in ops} if not isinstance(ops, dict) else set(ops)) or None
        wanted.append((resource_type, name, keys))
    return describe(wanted, label="DescribeConfigs-after", settle=SETTLE) if wanted else None


def alter_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    # every version; validate-only at the newest (the same code path at each version)
    for version, validate_only in ((0, False), (1, False), (1, True)):
        suffix = f"-v{version}{'-validate' if validate_only else ''}"
        for case, ops, configs in TOPIC_OPS:
            if validate_only and case not in VALIDATED:
                continue  # validate-only takes one path whatever the operation: a sample
            name = f"configs-incremental-topic-{case}{suffix}"
            resources = [(TOPIC, name, ops)]
            steps = [incremental(resources, version, validate_only)]
            check = after(resources)
            steps += [check] if check else []
            out.append(with_topic(name, steps, configs))
        name = f"configs-incremental-topic-duplicate{suffix}"
        resources = [(TOPIC, name, [("retention.ms", SET, "1000")])] * 2
        out.append(
            with_topic(
                name, [incremental(resources, version, validate_only), *filter(None, [after(resources)])]
            )
        )
        for case, resources in OTHER_OPS:
            steps = [incremental(resources, version, validate_only)]
            check = after(resources)
            steps += [check] if check else []
            out.append(Scenario(f"configs-incremental-{case}{suffix}", FAMILY, tuple(steps)))
    # set, then delete, on this broker and the cluster default: what is left to describe
    for node in ("0", ""):
        which = "broker" if node else "broker-default"
        out.append(
            Scenario(
                f"configs-incremental-{which}-set-then-delete",
                FAMILY,
                (
                    incremental([(BROKER, node, [("message.max.bytes", SET, "2000000")])], label="set"),
                    describe(
                        [(BROKER, node, ["message.max.bytes"])],
                        synonyms=True,
                        label="described",
                        settle=SETTLE,
                    ),
                    incremental([(BROKER, node, [("message.max.bytes", REMOVE, None)])], label="delete"),
                    describe(
                        [(BROKER, node, ["message.max.bytes"])], synonyms=True, label="after", settle=SETTLE
                    ),
                ),
            )
        )
    return out


LEGACY_TOPIC: list[tuple[str, dict[str, str | None], dict[str, str]]] = [
    ("set", {"retention.ms": "3600000"}, {}),
    ("set-replaces-others", {"retention.ms": "3600000"}, {"cleanup.policy": "compact"}),
    ("set-none", {}, {"retention.ms": "3600000"}),
    ("set-bad-number", {"retention.ms": "soon"}, {}),
    ("set-out-of-range", {"min.insync.replicas": "0"}, {}),
    ("set-bad-policy", {"cleanup.policy": "shred"}, {}),
    ("set-list", {"cleanup.policy": "compact,delete"}, {}),
    ("set-unknown-key", {"no.such.config": "1"}, {}),
    ("set-null", {"retention.ms": None}, {}),
    ("set-broker-key", {"message.max.bytes": "2000000"}, {}),
]

LEGACY_OTHER: list[tuple[str, list[tuple[int, str, dict[str, str | None]]]]] = [
    ("broker-set", [(BROKER, "0", {"message.max.bytes": "2000000"})]),
    ("broker-default-set", [(BROKER, "", {"message.max.bytes": "2000000"})]),
    ("broker-set-bad-number", [(BROKER, "0", {"message.max.bytes": "big"})]),
    ("broker-set-read-only", [(BROKER, "0", {"process.roles": "broker"})]),
    ("broker-set-unknown-key", [(BROKER, "0", {"no.such.config": "1"})]),
    ("broker-unknown-id", [(BROKER, "7", {"message.max.bytes": "2000000"})]),
    ("logger-set", [(LOGGER, "0", {"kafka.server.KafkaApis": "DEBUG"})]),
    ("group-set", [(GROUP, "configs-group", {"consumer.session.timeout.ms": "50000"})]),
    ("metrics-set", [(METRICS, "configs-subscription", {"interval.ms": "60000"})]),
    ("topic-unknown", [(TOPIC, "configs-no-such-topic", {"retention.ms": "1"})]),
    ("topic-empty-name", [(TOPIC, "", {"retention.ms": "1"})]),
    ("unknown-type", [(0, "x", {"retention.ms": "1"})]),
]


def legacy_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for version, validate_only in ((0, False), (1, False), (2, False), (2, True)):
        suffix = f"-v{version}{'-validate' if validate_only else ''}"
        for case, configs, initial in LEGACY_TOPIC if version != 1 else ():  # v1: as v0 and v2
            name = f"configs-alter-topic-{case}{suffix}"
            resources = [(TOPIC, name, configs)]
            keys = sorted({*configs, *initial, "retention.ms"})
            steps = [
                legacy(resources, version, validate_only),
                describe([(TOPIC, name, keys)], label="DescribeConfigs-after", settle=SETTLE),
            ]
            out.append(with_topic(name, steps, initial))
        if version == 2 and not validate_only:  # Kafka never answers: once (15 s)
            name = f"configs-alter-topic-duplicate{suffix}"
            duplicate: list[tuple[int, str, dict[str, str | None]]] = [
                (TOPIC, name, {"retention.ms": "1000"})
            ] * 2
            out.append(with_topic(name, [legacy(duplicate, version, validate_only)]))
        for case, resources in LEGACY_OTHER:
            steps = [legacy(resources, version, validate_only)]
            check = after(resources)
            steps += [check] if check else []
            out.append(Scenario(f"configs-alter-{case}{suffix}", FAMILY, tuple(steps)))
    return out


def scenarios() -> list[Scenario]:
    return [*describe_scenarios(), *alter_scenarios(), *legacy_scenarios()]
