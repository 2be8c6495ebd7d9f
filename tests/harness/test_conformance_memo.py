"""The conformance tracker keeps, per connection, the client its requests are filed under;
a connection that names new client software (a second ApiVersions) or another client id
is filed anew from its next request, as when the client was looked up per request."""

from __future__ import annotations

import socket
from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from broker import MockCluster
from tests.conftest import FAST
from tests.support.wire import round_trip


def _client(report: dict[str, Any], name: str, version: str) -> dict[str, Any]:
    (found,) = [c for c in report["clients"] if (c["software_name"], c["software_version"]) == (name, version)]
    return found


def _requests(entry: dict[str, Any], api: str) -> int:
    return sum(a["requests"] for a in entry["apis"] if a["api"] == api)


def test_a_connection_refiled_when_its_software_or_client_id_changes() -> None:
    with MockCluster(config=FAST) as cluster:
        host, _, port = cluster.bootstrap_servers.rpartition(":")
        metadata = MetadataRequest[1](topics=[])
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            for correlation_id in range(3):  # before ApiVersions v3: filed by client id
                round_trip(sock, metadata, correlation_id, "early", version=1)
            hello = ApiVersionsRequest[3](client_software_name="one", client_software_version="1.0")
            round_trip(sock, hello, 10, "first", version=3)
            for correlation_id in range(20, 24):
                round_trip(sock, metadata, correlation_id, "first", version=1)
            round_trip(sock, metadata, 30, "second", version=1)  # another client id, same software
            again = ApiVersionsRequest[3](client_software_name="two", client_software_version="2.0")
            round_trip(sock, again, 40, "second", version=3)
            for correlation_id in range(50, 52):
                round_trip(sock, metadata, correlation_id, "second", version=1)
        report = cluster.conformance.report()
    unknown = [c for c in report["clients"] if c["software_name"] == "unknown"]
    assert [(c["client_ids"], _requests(c, "Metadata")) for c in unknown] == [(["early"], 3)]
    one = _client(report, "one", "1.0")
    assert one["client_ids"] == ["first", "second"]
    assert (_requests(one, "ApiVersions"), _requests(one, "Metadata")) == (1, 5)
    assert one["connections"] == 1
    two = _client(report, "two", "2.0")
    assert two["client_ids"] == ["second"]
    assert (_requests(two, "ApiVersions"), _requests(two, "Metadata")) == (1, 2)
