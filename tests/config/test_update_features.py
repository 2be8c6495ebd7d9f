"""UpdateFeatures (57) through kafka-python's admin client: transaction.version is
downgraded and upgraded again, ApiVersions reports the finalized level and a new epoch,
and FeatureControlManager's refusals come back with its messages."""

from __future__ import annotations

import socket

import pytest
from kafka import KafkaAdminClient
from kafka.errors import InvalidUpdateVersionError
from kafka.protocol.metadata import ApiVersionsRequest

from broker import MockCluster
from tests.support.wire import round_trip


def finalized(cluster: MockCluster) -> tuple[dict[str, int], int]:
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        answer = round_trip(
            sock, ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 1, "raw"
        )
    return {f.name: f.max_version_level for f in answer.finalized_features}, answer.finalized_features_epoch


def test_transaction_version_goes_down_and_up() -> None:
    with MockCluster(brokers=1) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            before, epoch = finalized(cluster)
            assert before == {"transaction.version": 2}
            with pytest.raises(
                InvalidUpdateVersionError, match="without setting the upgrade type to either safe"
            ):
                admin.update_features({"transaction.version": 1})  # a downgrade needs its type
            assert finalized(cluster) == (before, epoch)
            assert admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 1)}) == {
                "transaction.version": "OK"
            }
            lowered, lowered_epoch = finalized(cluster)
            assert (lowered, lowered_epoch > epoch) == ({"transaction.version": 1}, True)
            admin.update_features({"transaction.version": 2}, validate_only=True)
            assert finalized(cluster)[0] == {"transaction.version": 1}
            admin.update_features({"transaction.version": 2})
            assert finalized(cluster)[0] == {"transaction.version": 2}
            with pytest.raises(
                InvalidUpdateVersionError,
                match="Invalid update version 1 for feature share.version. Local controller 0 does not support",
            ):
                admin.update_features({"share.version": 1})
            with pytest.raises(InvalidUpdateVersionError, match="only supports versions 0-2"):
                admin.update_features({"transaction.version": 3})
        finally:
            admin.close()
