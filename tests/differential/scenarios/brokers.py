"""Three brokers, each in its own rack (`broker.rack` per broker on both sides): what each
broker says of itself and of the others. DescribeConfigs sent to broker N for broker N
answers that broker's own `node.id` and `broker.rack` (fetch from follower depends on a
client finding its broker's rack); the cluster-level `min.insync.replicas` that eligible
leader replicas write shows on every broker; Metadata and DescribeCluster list every
broker with its rack, whichever broker is asked."""

from __future__ import annotations

from tests.differential.model import Scenario, Step
from tests.differential.scenarios.configs import BROKER, describe

FAMILY = "brokers"
BROKERS = 3
CONFIG = {"broker.rack": "rack-0,rack-1,rack-2"}
OWN_KEYS = ["node.id", "broker.rack", "min.insync.replicas"]


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for node in range(BROKERS):
        steps = [
            describe([(BROKER, str(node), OWN_KEYS)], node=node, label=f"DescribeConfigs-own-{node}"),
            describe(
                [(BROKER, str(node), OWN_KEYS)],
                synonyms=True,
                node=node,
                label=f"DescribeConfigs-synonyms-{node}",
            ),
            Step(
                3, 12, {"topics": [], "allow_auto_topic_creation": False}, node=node, label=f"Metadata-{node}"
            ),
            Step(
                60,
                1,
                {"include_cluster_authorized_operations": False, "endpoint_type": 1},
                node=node,
                label=f"DescribeCluster-{node}",
            ),
        ]
        out.append(Scenario(f"brokers-asked-{node}", FAMILY, tuple(steps), brokers=BROKERS, config=CONFIG))
    # a broker asked about another broker's config: Kafka answers only for itself and
    # the cluster default (""), INVALID_REQUEST "Unexpected broker id, ..." otherwise
    other = [describe([(BROKER, "1", OWN_KEYS)], node=0, label="DescribeConfigs-other")]
    out.append(Scenario("brokers-asked-for-another", FAMILY, tuple(other), brokers=BROKERS, config=CONFIG))
    return out
