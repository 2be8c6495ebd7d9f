"""Which invalid key AlterClientQuotas reports when an entity has several (issue 15, item 5).

Kafka's controller (ClientQuotaControlManager.alterClientQuotas) puts an entity's ops in
a `new HashMap<>(quotaAlteration.ops().size())` and alterClientQuotaEntity validates them
in that map's iteration order, returning at the first invalid one. So the reported key
is the first in HashMap order, for a table sized from the number of ops (removals
included), not the first in the request. Likewise the entity's components are a
`new HashMap<>(components)` (AlterClientQuotasRequest.entries()), which validateEntity
walks.

Sent with kafka-python's network client, as tests/quotas/test_quota_validation.py does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient

from broker import MockCluster
from quotas.java import hashmap_capacity, hashmap_order
from tests.quotas.test_quota_validation import (
    CBR,
    CCR,
    CMR,
    INVALID_REQUEST,
    PBR,
    RP,
    VALID,
    VALID_OPS,
    alter,
    entry,
    everything,
    key,
)


@pytest.fixture
def admin(sync_cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=sync_cluster.bootstrap_servers, request_timeout_ms=10000)
    yield client
    client.close()


def refused(
    admin: KafkaAdminClient, pairs: list[tuple[str, str | None]], ops: list[tuple[str, float, bool]]
) -> str | None:
    """Alters the entity next to a valid one; returns its error message (the valid one
    applies and the refused one changes nothing)."""
    results = alter(admin, [entry(pairs, ops), entry(VALID, VALID_OPS)])
    assert results[1] == (key(VALID), 0, None)
    assert results[0][:2] == (key(pairs), INVALID_REQUEST)
    assert everything(admin) == {key(VALID): {PBR: 4096.0}}
    return results[0][2]


def test_hashmap_tables_of_the_sizes_used_here() -> None:
    """java.util.HashMap(n) after n puts: tableSizeFor(n), doubled past 0.75 x capacity."""
    assert [hashmap_capacity(n, n) for n in range(1, 8)] == [2, 4, 4, 8, 8, 8, 16]
    assert hashmap_capacity(None, 12) == 16 and hashmap_capacity(None, 13) == 32
    # The orders the tests below rely on (bucket = spread(hashCode) & (capacity - 1)).
    assert hashmap_order([PBR, CBR], 4) == [CBR, PBR]  # buckets 3, 0
    assert hashmap_order([PBR, CBR], 16) == [PBR, CBR]  # buckets 11, 12
    assert hashmap_order([RP, CMR, CBR, PBR], 8) == [PBR, CBR, CMR, RP]  # 7, 6, 4, 3
    assert hashmap_order([RP, CMR, CBR, PBR], 16) == [RP, PBR, CBR, CMR]  # 7, 14, 12, 11


def test_two_invalid_keys_report_the_first_in_hashmap_order(admin: KafkaAdminClient) -> None:
    """[producer_byte_rate=0, consumer_byte_rate=0]: a 2-op map has 4 buckets, where the
    consumer key (bucket 0) comes before the producer key (bucket 3)."""
    message = refused(admin, [("user", "two")], [(PBR, 0.0, False), (CBR, 0.0, False)])
    assert message == f"Quota {CBR} must be greater than 0"


def test_four_invalid_keys_in_an_eight_bucket_table(admin: KafkaAdminClient) -> None:
    """Four ops outgrow HashMap(4) (threshold 3): 8 buckets, where producer_byte_rate is
    first; neither request order (request_percentage) nor a 16-bucket table
    (request_percentage) gives it."""
    ops = [(RP, 0.0, False), (CMR, 0.0, False), (CBR, 0.0, False), (PBR, 0.0, False)]
    assert refused(admin, [("client-id", "four")], ops) == f"Quota {PBR} must be greater than 0"


def test_removals_count_towards_the_table_size(admin: KafkaAdminClient) -> None:
    """The map is sized from every op, removals included: two removals before the same two
    invalid keys make an 8-bucket table, and the producer key comes first there (request
    order, or a table sized from the two set ops only, would give the consumer key)."""
    ops = [(RP, 0.0, True), (CMR, 0.0, True), (CBR, 0.0, False), (PBR, 0.0, False)]
    assert refused(admin, [("user", "removing")], ops) == f"Quota {PBR} must be greater than 0"


def test_different_errors_follow_the_same_order(admin: KafkaAdminClient) -> None:
    """On an ip entity, [producer_byte_rate (not an ip key), connection_creation_rate=0]:
    connection_creation_rate (bucket 0) is validated before producer_byte_rate (bucket 3)."""
    ops = [(PBR, 1.0, False), (CCR, 0.0, False)]
    assert refused(admin, [("ip", "10.1.2.3")], ops) == f"Quota {CCR} must be greater than 0"


def test_a_valid_key_first_in_request_order_does_not_hide_a_later_error(admin: KafkaAdminClient) -> None:
    """A fractional consumer_byte_rate after a valid producer_byte_rate: all or nothing."""
    ops = [(PBR, 1.0, False), (CBR, 1.5, False)]
    assert refused(admin, [("user", "frac")], ops) == f"{CBR} cannot be a fractional value."


def test_entity_components_in_the_order_of_their_own_hashmap(admin: KafkaAdminClient) -> None:
    """{ip="", client-id=""}: the entity map is HashMap(2), 4 buckets, client-id (0) before
    ip (3), so validateEntity reports the empty client-id (a 16-bucket table would put ip,
    bucket 7, before client-id, bucket 12)."""
    pairs: list[tuple[str, str | None]] = [("ip", ""), ("client-id", "")]
    assert refused(admin, pairs, [(CCR, 1.0, False)]) == "Empty client-id not supported"
