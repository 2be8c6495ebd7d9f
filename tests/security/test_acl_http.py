"""ACLs through the HTTP control plane: POST /v1/acls, GET /v1/acls?filter, DELETE."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest

from broker import MockCluster
from tests.harness.test_admin_http import Api

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture
def kafka() -> Iterator[MockCluster]:
    with MockCluster(config={"admin.port": "0", "authorizer.class.name": STANDARD}) as cluster:
        yield cluster


@pytest.fixture
async def api(kafka: MockCluster) -> AsyncIterator[Api]:
    assert kafka.admin is not None
    async with aiohttp.ClientSession(
        base_url=f"http://127.0.0.1:{kafka.admin.port}", timeout=aiohttp.ClientTimeout(total=20)
    ) as session:
        yield Api(session)


async def test_acls_over_http(kafka: MockCluster, api: Api) -> None:
    created = await api.post(
        "/v1/acls",
        {"principal": "User:alice", "operation": "READ", "resource_type": "TOPIC", "name": "orders"},
        status=201,
    )
    assert created == {
        "resource_type": "TOPIC",
        "name": "orders",
        "pattern": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission": "ALLOW",
    }
    await api.post(
        "/v1/acls",
        {
            "principal": "User:bob",
            "operation": "ALL",
            "resource_type": "GROUP",
            "name": "a",
            "pattern": "PREFIXED",
        },
        status=201,
    )
    refused = await api.post(
        "/v1/acls",
        {"principal": "alice", "operation": "READ", "resource_type": "TOPIC", "name": "x"},
        status=400,
    )
    assert refused["error_code"] == 42 and "Could not parse principal" in refused["message"]
    await api.post(
        "/v1/acls",
        {"principal": "User:a", "operation": "NOPE", "resource_type": "TOPIC", "name": "x"},
        status=400,
    )
    assert len((await api.get("/v1/acls"))["acls"]) == 2
    assert [a["principal"] for a in (await api.get("/v1/acls?resource_type=GROUP"))["acls"]] == ["User:bob"]
    deleted = await api.delete("/v1/acls?principal=User:alice")
    assert [a["name"] for a in deleted["deleted"]] == ["orders"]
    assert [b.principal for b in kafka.acls.list()] == ["User:bob"]
    await api.get("/v1/acls?colour=red", status=400)
