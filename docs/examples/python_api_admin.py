"""The calls a test makes on a MockCluster besides producing: quotas, users, configs,
faults, brokers and leaders, ACLs, what clients did."""

from __future__ import annotations

from broker import MockCluster
from broker.quota_admin import ANY
from quotas.validation import QuotaError


def main() -> dict:
    config = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}
    seen: dict = {}
    with MockCluster(brokers=3, config=config) as cluster:
        cluster.create_topic("orders", partitions=3, replication_factor=3)

        # Quotas: the same code path as AlterClientQuotas. None is the default entity.
        cluster.quotas.alter({"user": "alice"}, set={"producer_byte_rate": 1_048_576})
        cluster.quotas.alter({"user": None, "client-id": None}, set={"request_percentage": 50})
        seen["described"] = cluster.quotas.describe(user=ANY)  # {QuotaEntity: {key: value}}
        seen["alice"] = cluster.quotas.resolve(user="alice", client_id="app")["producer_byte_rate"].value
        try:
            cluster.quotas.alter({"user": "bob"}, set={"producer_byte_rate": -1})
        except QuotaError as refused:  # Kafka's code and message
            seen["refused"] = (refused.code, refused.message)
        cluster.quotas.alter({"user": "alice"}, remove=["producer_byte_rate"])

        # Users and dynamic configs.
        cluster.credentials.upsert_user("carol", "carol-secret")  # SCRAM-SHA-256 and -512
        seen["sasl_bootstrap"] = cluster.bootstrap_for("SASL_PLAINTEXT")
        cluster.configs.alter(None, set={"auto.create.topics.enable": "false"})  # None: cluster-wide
        seen["auto_create"] = cluster.configs.describe(0)["auto.create.topics.enable"]

        # Faults, brokers and leaders.
        fault = cluster.faults.add(api_key=0, error_code=6, count=2)  # NOT_LEADER_OR_FOLLOWER
        seen["faults"] = [f.id for f in cluster.faults.list()]
        cluster.faults.remove(fault.id)
        cluster.stop_broker(1)
        seen["up"] = [b["up"] for b in cluster.describe()["brokers"]]
        cluster.start_broker(1)
        seen["leader"] = cluster.move_leader("orders", 0, 2).leader

        # Metrics with Kafka's names, and what clients did (nothing yet here).
        seen["metrics"] = len(cluster.metrics())
        seen["recorded"] = cluster.requests.list(limit=10)
        seen["report"] = cluster.conformance.report()
    return seen


if __name__ == "__main__":
    print(main())
