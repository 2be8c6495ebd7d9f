"""A client that goes away while its change is being written to the state dir.

The connection's close cancels the request's task, but the SQLite write already handed
to the writer thread commits anyway. The store must then apply it in memory too (as
Kafka's controller applies a committed record whatever became of the client): otherwise
the running broker would enforce one thing and the same state dir, reopened, another.

Raw frames: dropping the connection at the moment the broker is inside the write is a
connection behaviour no client library exposes.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterUserScramCredentialsRequest,
    IncrementalAlterConfigsRequest,
)
from kafka.protocol.admin.acl import CreateAclsRequest

from broker import MockCluster
from broker.security.acls import Operation, PatternType, Permission, ResourceType
from broker.security.scram import ScramMechanism, salted_password
from tests.support.wire import encode_request, quota_alteration, round_trip

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SECURED = {"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"}
SHA256 = ScramMechanism.SCRAM_SHA_256


@dataclass
class Case:
    """One store: the request (two changes in one), where its storage is, and what the
    cluster holds of the request's changes (as a comparable value)."""

    request: Callable[[str], Any]
    storage: Callable[[MockCluster], Any]
    held: Callable[[MockCluster, str], object]
    applied: Callable[[str], object]


def _quotas(tag: str) -> Any:
    return AlterClientQuotasRequest[1](
        entries=[
            quota_alteration([("user", f"{tag}-a")], {"producer_byte_rate": 1000.0}),
            quota_alteration([("client-id", f"{tag}-b")], {"consumer_byte_rate": 2000.0}),
        ],
        validate_only=False,
    )


def _quotas_held(cluster: MockCluster, tag: str) -> object:
    return sorted(
        (sorted((k, str(v)) for k, v in entity.items()), sorted(values.items()))
        for entity, values in cluster.quotas.describe().items()
        if any(str(v).startswith(tag) for v in entity.values())
    )


def _quotas_applied(tag: str) -> object:
    return sorted(
        [
            ([("client-id", f"{tag}-b")], [("consumer_byte_rate", 2000.0)]),
            ([("user", f"{tag}-a")], [("producer_byte_rate", 1000.0)]),
        ]
    )


def _configs(tag: str) -> Any:
    return IncrementalAlterConfigsRequest[1](
        resources=[(4, "0", [(f"{tag}.a", 0, "1"), (f"{tag}.b", 0, "2")])], validate_only=False
    )


def _configs_held(cluster: MockCluster, tag: str) -> object:
    layer = cluster.configs.per_broker.get(0, {})
    return sorted((k, v) for k, v in layer.items() if k.startswith(tag))


def _scram(tag: str) -> Any:
    upsertions = []
    for user in (f"{tag}-a", f"{tag}-b"):
        salt = b"salt-" + user.encode()
        upsertions.append((user, SHA256.type_code, 4096, salt, salted_password(SHA256, "secret", salt, 4096)))
    return AlterUserScramCredentialsRequest[0](deletions=[], upsertions=upsertions)


def _scram_held(cluster: MockCluster, tag: str) -> object:
    return sorted(
        user for user in (f"{tag}-a", f"{tag}-b") if cluster.credentials.scram_credential(user, SHA256)
    )


def _acls(tag: str) -> Any:
    return CreateAclsRequest[1](
        creations=[
            (
                kind,
                f"{tag}-{suffix}",
                PatternType.LITERAL,
                f"User:{tag}",
                "*",
                Operation.READ,
                Permission.ALLOW,
            )
            for kind, suffix in ((ResourceType.TOPIC, "a"), (ResourceType.GROUP, "b"))
        ]
    )


def _acls_held(cluster: MockCluster, tag: str) -> object:
    return sorted(b.resource_name for b in cluster.acls.list() if b.principal == f"User:{tag}")


CASES = {
    "quotas": Case(_quotas, lambda c: c.quotas.storage, _quotas_held, _quotas_applied),
    "configs": Case(
        _configs, lambda c: c.configs.storage, _configs_held, lambda t: [(f"{t}.a", "1"), (f"{t}.b", "2")]
    ),
    "scram": Case(_scram, lambda c: c.credentials.storage, _scram_held, lambda t: [f"{t}-a", f"{t}-b"]),
    "acls": Case(_acls, lambda c: c.acls.storage, _acls_held, lambda t: [f"{t}-a", f"{t}-b"]),
}


def _wait(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.mark.parametrize("store", sorted(CASES))
def test_a_change_written_after_its_client_left_is_applied_too(tmp_path: Path, store: str) -> None:
    case = CASES[store]
    config = {**SECURED, "state.dir": str(tmp_path / "state")}
    with MockCluster(config=config) as cluster:
        storage = case.storage(cluster)
        entered, release = threading.Event(), threading.Event()
        write = storage.write

        def held_write(*changes: Any) -> None:
            entered.set()
            assert release.wait(30), "the test never released the write"
            write(*changes)

        storage.write = held_write
        host, port = cluster.bootstrap_servers.split(":")
        client = socket.create_connection((host, int(port)), timeout=10)
        client.sendall(encode_request(case.request("gone"), 1, "leaver"))
        assert entered.wait(20), "the change never reached the writer thread"
        client.close()  # the client leaves while its change is being written
        broker = cluster.brokers[0]
        _wait(lambda: cluster.on_loop(lambda: not broker.connections), "the broker to drop the connection")
        release.set()
        # Applied in memory once written, though nobody is left to answer.
        _wait(lambda: case.held(cluster, "gone") == case.applied("gone"), "the change in memory")
        storage.write = write
        # The store's lock is free: the next request is served.
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            response = round_trip(sock, case.request("next"), 2, "next")
            assert response.header.correlation_id == 2
        assert case.held(cluster, "next") == case.applied("next")
    with MockCluster(config=config) as reopened:  # and the file says the same
        assert case.held(reopened, "gone") == case.applied("gone")
        assert case.held(reopened, "next") == case.applied("next")
