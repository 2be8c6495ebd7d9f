"""Transactions and the harness: fault rules on the transaction APIs, the HTTP control
plane's transaction listing, the conformance report and the request recorder."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from confluent_kafka import Producer

from broker import MockCluster
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.conftest import FAST
from tests.harness.test_admin_http import Api


@pytest.fixture
def kafka() -> Iterator[MockCluster]:
    with MockCluster(config={**FAST, "admin.port": "0"}) as cluster:
        yield cluster


@pytest.fixture
async def api(kafka: MockCluster) -> AsyncIterator[Api]:
    assert kafka.admin is not None
    async with aiohttp.ClientSession(
        base_url=f"http://127.0.0.1:{kafka.admin.port}", timeout=aiohttp.ClientTimeout(total=20)
    ) as session:
        yield Api(session)


def _commit_one(cluster: MockCluster, transactional_id: str) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("payments", b"paid")
    producer.commit_transaction(20)


async def test_an_injected_concurrent_transactions_is_retried(kafka: MockCluster, api: Api) -> None:
    kafka.create_topic("payments")
    fault = await api.post(
        "/v1/faults",
        {"api_key": ApiKey.END_TXN, "error_code": ErrorCode.CONCURRENT_TRANSACTIONS, "count": 1},
        status=201,
    )
    await asyncio.to_thread(_commit_one, kafka, "payer")
    assert (await api.get("/v1/faults")) == []  # fired once, then gone
    assert fault["count"] == 1
    listed = await api.get("/v1/transactions")
    assert [(t["transactional_id"], t["state"]) for t in listed["transactions"]] == [
        ("payer", "CompleteCommit")
    ]
    assert (await api.get("/v1/transactions?state=Ongoing"))["transactions"] == []
    described = await api.get("/v1/transactions/payer")
    assert described["producer_epoch"] == 0 and described["partitions"] == []
    await api.get("/v1/transactions/nobody", status=404)
    report = await api.get("/v1/conformance")
    seen = {entry["api"] for client in report["clients"] for entry in client["apis"]}
    assert {"EndTxn", "AddPartitionsToTxn", "InitProducerId"} <= seen
    errors = [e for client in report["clients"] for e in client["errors"] if e["api"] == "EndTxn"]
    assert [(e["error"], e["count"]) for e in errors] == [("CONCURRENT_TRANSACTIONS", 1)]


def test_python_api_lists_transactions(kafka: MockCluster) -> None:
    kafka.create_topic("payments")
    _commit_one(kafka, "python-payer")
    (txn,) = kafka.list_transactions()
    assert txn["transactional_id"] == "python-payer" and txn["state"] == "CompleteCommit"
