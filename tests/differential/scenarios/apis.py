"""Generated from the handler table: every API the broker serves (under its default
config), at every version it advertises, with a minimal request that changes nothing or
names an unknown topic, group, member or transactional id; plus ApiVersions at each
version. One scenario per API and version, each on its own connection."""

from __future__ import annotations

import uuid
from typing import Any

from broker.config.broker_config import BrokerConfig
from broker.handlers import HANDLERS
from tests.differential.model import Scenario, Step
from tests.differential.runner import WARM_UP_GROUP, WARM_UP_TXN

FAMILY = "apis"
GROUP = WARM_UP_GROUP
TXN = WARM_UP_TXN
TOPIC = "differential-unknown-topic"

# Field values per API key over the schema's defaults (fields a version lacks are dropped).
MINIMAL: dict[int, dict[str, Any]] = {
    0: {"acks": -1, "timeout_ms": 1000, "topic_data": []},
    1: {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1048576,
        "session_epoch": -1,
        "topics": [],
        "forgotten_topics_data": [],
    },
    2: {"replica_id": -1, "topics": []},
    3: {"topics": [], "allow_auto_topic_creation": False},
    8: {"group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "", "topics": []},
    9: {"group_id": GROUP, "topics": [], "groups": [{"group_id": GROUP, "topics": []}]},
    10: {"key": GROUP, "key_type": 0, "coordinator_keys": [GROUP]},
    11: {"group_id": GROUP, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
         "member_id": "differential-unknown-member", "protocol_type": "consumer",
         "protocols": [{"name": "range", "metadata": b""}]},
    12: {"group_id": GROUP, "generation_id": 1, "member_id": "differential-unknown-member"},
    13: {"group_id": GROUP, "member_id": "differential-unknown-member",
         "members": [{"member_id": "differential-unknown-member"}]},
    14: {"group_id": GROUP, "generation_id": 1, "member_id": "differential-unknown-member",
         "protocol_type": "consumer", "protocol_name": "range", "assignments": []},
    15: {"groups": [GROUP]},
    16: {},
    17: {"mechanism": "PLAIN"},
    19: {"topics": [], "timeout_ms": 1000},
    20: {"topic_names": [], "topics": [], "timeout_ms": 1000},
    21: {"topics": [], "timeout_ms": 1000},
    22: {"transactional_id": None, "transaction_timeout_ms": 60000},
    23: {"replica_id": -1, "topics": []},
    24: {"v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": 1000,
         "v3_and_below_producer_epoch": 0, "v3_and_below_topics": [],
         "transactions": [{"transactional_id": TXN, "producer_id": 1000, "producer_epoch": 0,
                           "verify_only": False, "topics": []}]},
    25: {"transactional_id": TXN, "producer_id": 1000, "producer_epoch": 0, "group_id": GROUP},
    26: {"transactional_id": TXN, "producer_id": 1000, "producer_epoch": 0, "committed": False},
    27: {"markers": []},
    28: {"transactional_id": TXN, "group_id": GROUP, "producer_id": 1000, "producer_epoch": 0,
         "generation_id": -1, "member_id": "", "topics": []},
    29: {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
         "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1},
    30: {"creations": []},
    31: {"filters": []},
    32: {"resources": []},
    33: {"resources": []},
    34: {"dirs": []},
    35: {"topics": []},
    36: {"auth_bytes": b""},
    37: {"topics": [], "timeout_ms": 1000},
    38: {"renewers": [], "max_lifetime_ms": -1},
    39: {"hmac": b"differential", "renew_period_ms": -1},
    40: {"hmac": b"differential", "expiry_time_period_ms": -1},
    41: {"owners": []},
    42: {"groups_names": [GROUP]},
    43: {"election_type": 0, "topic_partitions": [], "timeout_ms": 1000},
    44: {"resources": []},
    45: {"timeout_ms": 1000, "topics": []},
    46: {"timeout_ms": 1000, "topics": None},
    47: {"group_id": GROUP, "topics": []},
    48: {"components": [], "strict": False},
    49: {"entries": []},
    50: {"users": []},
    51: {"deletions": [], "upsertions": []},
    55: {"topics": []},
    57: {"timeout_ms": 1000, "feature_updates": []},
    60: {"include_cluster_authorized_operations": False, "endpoint_type": 1},
    61: {"topics": []},
    64: {"broker_id": 99},
    65: {"transactional_ids": [TXN]},
    66: {"state_filters": [], "producer_id_filters": []},
    68: {"group_id": GROUP, "member_id": "differential-unknown-member", "member_epoch": 1},
    69: {"group_ids": [GROUP]},
    74: {"resource_types": []},
    75: {"topics": [{"name": TOPIC}], "response_partition_limit": 2000},
    80: {"cluster_id": None, "timeout_ms": 1000, "voter_id": 99, "voter_directory_id": uuid.UUID(int=1),
         "listeners": [], "ack_when_committed": True},
    81: {"cluster_id": None, "voter_id": 99, "voter_directory_id": uuid.UUID(int=1)},
    88: {"group_id": GROUP, "member_id": "differential-unknown-member", "member_epoch": 1},
    89: {"group_ids": [GROUP]},
    93: {"group_id": GROUP, "member_id": "differential-unknown-member", "topology_epoch": 1,
         "topology_description": {"subtopologies": [], "global_stores": []}},
}


def fields_for(api_key: int, version: int) -> dict[str, Any]:
    """MINIMAL's values for the fields `version` of the API has."""
    from messages.registry import request_class

    versioned = request_class(api_key)[version]
    present = {name for name, spec in versioned._struct.fields.items() if spec.for_version_q(version)}
    return {name: value for name, value in MINIMAL.get(api_key, {}).items() if name in present}


def api_versions_fields(version: int) -> dict[str, Any]:
    return {"client_software_name": "differential", "client_software_version": "1.0"} if version >= 3 else {}


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    config = BrokerConfig({})
    for api_key, spec in HANDLERS.items():
        if not spec.enabled.applies(config):
            continue
        for version in range(spec.min_version, spec.max_version + 1):
            fields = api_versions_fields(version) if api_key == 18 else fields_for(api_key, version)
            out.append(Scenario(f"apis-{spec.name}-v{version}", FAMILY, (Step(api_key, version, fields),)))
    return out
