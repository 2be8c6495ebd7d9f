"""One module per API, each exposing `API_KEY`, optionally `VERSIONS`, and `handle`.

`handle(ctx, request)` returns the response, None (no response, e.g. acks=0), or a
coroutine resolving to either. The table below is what ApiVersions advertises: exactly
the APIs implemented, with the versions each module supports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    add_raft_voter,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_delegation_token,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_delegation_token,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    expire_delegation_token,
    fetch,
    find_coordinator,
    get_telemetry_subscriptions,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_config_resources,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    push_telemetry,
    remove_raft_voter,
    renew_delegation_token,
    sasl_authenticate,
    sasl_handshake,
    sync_group,
    txn_offset_commit,
    unregister_broker,
    update_features,
    write_txn_markers,
)
from messages.registry import schema_versions


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    handler: Callable[[Any, Any], Any]
    min_version: int
    max_version: int


def _spec(module: ModuleType) -> HandlerSpec:
    low, high = getattr(module, "VERSIONS", schema_versions(module.API_KEY))
    return HandlerSpec(module.handle, low, high)


HANDLERS: dict[int, HandlerSpec] = {
    module.API_KEY: _spec(module)
    for module in (
        produce,
        fetch,
        list_offsets,
        metadata,
        offset_commit,
        offset_fetch,
        find_coordinator,
        join_group,
        heartbeat,
        leave_group,
        sync_group,
        describe_groups,
        list_groups,
        sasl_handshake,
        api_versions,
        create_topics,
        delete_topics,
        init_producer_id,
        add_partitions_to_txn,
        add_offsets_to_txn,
        end_txn,
        txn_offset_commit,
        write_txn_markers,
        describe_acls,
        create_acls,
        delete_acls,
        describe_configs,
        alter_configs,
        sasl_authenticate,
        create_partitions,
        create_delegation_token,
        renew_delegation_token,
        expire_delegation_token,
        describe_delegation_token,
        delete_groups,
        incremental_alter_configs,
        describe_client_quotas,
        alter_client_quotas,
        describe_user_scram_credentials,
        alter_user_scram_credentials,
        describe_cluster,
        describe_producers,
        unregister_broker,
        describe_transactions,
        list_transactions,
        consumer_group_heartbeat,
        consumer_group_describe,
        offset_delete,
        delete_records,
        offset_for_leader_epoch,
        elect_leaders,
        describe_log_dirs,
        alter_partition_reassignments,
        list_partition_reassignments,
        describe_topic_partitions,
        describe_quorum,
        update_features,
        alter_replica_log_dirs,
        list_config_resources,
        get_telemetry_subscriptions,
        push_telemetry,
        add_raft_voter,
        remove_raft_voter,
    )
}
# KIP-848's APIs, served only while group.coordinator.rebalance.protocols includes
# "consumer" (Kafka's ApiVersionManager leaves them out otherwise).
CONSUMER_PROTOCOL_APIS = frozenset({consumer_group_heartbeat.API_KEY, consumer_group_describe.API_KEY})
# KIP-714's APIs, served only with telemetry.enabled (Kafka advertises them only when a
# metrics reporter receives client telemetry; clients start pushing when they see them).
TELEMETRY_APIS = frozenset({get_telemetry_subscriptions.API_KEY, push_telemetry.API_KEY})


def enabled_handlers(rebalance_protocols: str, telemetry: bool = False) -> dict[int, HandlerSpec]:
    """The handlers a broker serves and advertises, given its rebalance protocols and
    whether client telemetry is on."""
    protocols = {p.strip().lower() for p in rebalance_protocols.split(",")}
    hidden = (set() if "consumer" in protocols else CONSUMER_PROTOCOL_APIS) | (
        set() if telemetry else TELEMETRY_APIS
    )
    return {key: spec for key, spec in HANDLERS.items() if key not in hidden}
