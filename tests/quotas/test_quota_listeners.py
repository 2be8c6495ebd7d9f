"""Quota changes reach the enforcement side through QuotaListener, pushed, in order."""

from __future__ import annotations

from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest

from broker import MockCluster
from quotas.entity import QuotaEntity

Entry = AlterClientQuotasRequest.EntryData


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[QuotaEntity, str, float | None]] = []

    def quota_changed(self, entity: QuotaEntity, key: str, value: float | None) -> None:
        self.seen.append((entity, key, value))


def alter(admin: KafkaAdminClient, ops: list[tuple[str, float, bool]], validate_only: bool = False) -> None:
    request = AlterClientQuotasRequest(
        entries=[
            Entry(
                entity=[Entry.EntityData(entity_type="user", entity_name="alice")],
                ops=[Entry.OpData(key=k, value=v, remove=r) for k, v, r in ops],
            )
        ],
        validate_only=validate_only,
    )
    response = admin._manager.run(admin._manager.send, request)
    assert [e.error_code for e in response.entries] == [0]


def test_alterations_over_tcp_notify_listeners(sync_cluster: MockCluster) -> None:
    recorder = Recorder()
    sync_cluster.quotas.store.listeners.append(recorder)
    admin = KafkaAdminClient(bootstrap_servers=sync_cluster.bootstrap_servers)
    alice = QuotaEntity({"user": "alice"})
    alter(admin, [("producer_byte_rate", 1024.0, False)])
    alter(admin, [("producer_byte_rate", 1024.0, False)])  # unchanged: no notification
    alter(admin, [("request_percentage", 5.0, False)], validate_only=True)  # nothing applied
    alter(admin, [("producer_byte_rate", 0.0, True), ("consumer_byte_rate", 0.0, True)])  # unset key: no-op
    admin.close()
    assert recorder.seen == [(alice, "producer_byte_rate", 1024.0), (alice, "producer_byte_rate", None)]
