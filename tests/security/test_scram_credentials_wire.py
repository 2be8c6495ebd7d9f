"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51) over TCP.

kafka-python's KafkaAdminClient and confluent-kafka's AdminClient (librdkafka) drive the
two APIs; requests the admin clients refuse to build (unknown mechanisms, repeated
users, empty salted passwords) go through kafka-python's own request structs. Codes and
messages are Kafka's (ScramControlManager, ScramImage.describe, the requests'
getErrorResponse). Persistence: a fresh MockCluster on the same state dir.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from confluent_kafka.admin import ScramMechanism as CkMechanism
from kafka import KafkaAdminClient
from kafka.admin import UserScramCredentialDeletion as KpDeletion
from kafka.admin import UserScramCredentialUpsertion as KpUpsertion
from kafka.protocol.admin import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest

from broker import MockCluster
from broker.security.credentials import CredentialError
from broker.security.sasl import create_sasl_server
from broker.security.scram import SaslAuthenticationError, ScramMechanism
from tests.conftest import FAST
from tests.security.test_scram import Client

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
Deletion = AlterUserScramCredentialsRequest.ScramCredentialDeletion
Upsertion = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
UserName = DescribeUserScramCredentialsRequest.UserName
FILE_USERS = {"alice": "alice-secret", "bob": "bob-secret"}
MECHANISM_NAMES = {m.type_code: m.mechanism_name for m in ScramMechanism}


def users_file(directory: Path, users: dict[str, str]) -> Path:
    path = directory / "users.json"
    path.write_text(json.dumps(users))
    return path


def cluster_config(tmp_path: Path, state: bool = True) -> dict[str, str]:
    config = {**FAST, "sasl.users.file": str(tmp_path / "users.json")}
    if state:
        config["state.dir"] = str(tmp_path / "state")
    return config


@pytest.fixture
def scram_cluster(tmp_path: Path) -> Iterator[MockCluster]:
    users_file(tmp_path, FILE_USERS)
    with MockCluster(config=cluster_config(tmp_path)) as cluster:
        yield cluster


@pytest.fixture
def admin(scram_cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=scram_cluster.bootstrap_servers, request_timeout_ms=10000)
    yield client
    client.close()


def send(admin: KafkaAdminClient, request: Any) -> Any:
    return admin._manager.run(admin._manager.send, request)


def upsertion(user: str, mechanism: int, password: str = "pw", iterations: int = 4096) -> Any:
    salt = b"salt-" + user.encode()
    hash_name = "sha512" if mechanism == 2 else "sha256"
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, max(iterations, 1))
    return Upsertion(name=user, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=salted)


def results(response: Any) -> list[tuple[str, int, str | None]]:
    return [(r.user, r.error_code, r.error_message) for r in response.results]


def described(admin: KafkaAdminClient, users: list[str] | None = None) -> dict[str, Any]:
    """kafka-python's view: user -> {(mechanism name, iterations)} or the error message."""
    return {
        user: info["error"]
        or {(MECHANISM_NAMES[c["mechanism"]], c["iterations"]) for c in info["credential_infos"]}
        for user, info in admin.describe_user_scram_credentials(users).items()
    }


def authenticates(cluster: MockCluster, mechanism: ScramMechanism, user: str, password: str) -> bool:
    """A full SCRAM exchange against the cluster's store with the independent test client."""

    def run() -> bool:
        server = create_sasl_server(mechanism.mechanism_name, cluster.credentials)
        client = Client(mechanism.hash_name, user, password, "wireNonce")
        try:
            return server.evaluate(client.final(server.evaluate(client.first()))) == client.server_signature()
        except SaslAuthenticationError:
            return False  # refused; anything else is a failure of the test, not a refusal

    return cluster.on_loop(run)


BOTH_4096 = {("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 4096)}


# ------------------------------------------------------------------------ kafka-python


def test_file_users_have_both_mechanisms(admin: KafkaAdminClient) -> None:
    assert described(admin) == {"alice": BOTH_4096, "bob": BOTH_4096}


def test_upsert_describe_delete(scram_cluster: MockCluster, admin: KafkaAdminClient) -> None:
    outcome = admin.alter_user_scram_credentials(
        [
            KpUpsertion("carol", "SCRAM-SHA-512", "carol-pw", iterations=8192),
            KpDeletion("bob", "SCRAM-SHA-256"),
        ]
    )
    assert outcome == {"carol": None, "bob": None}
    assert described(admin, ["carol", "bob"]) == {
        "carol": {("SCRAM-SHA-512", 8192)},
        "bob": {("SCRAM-SHA-512", 4096)},
    }
    assert authenticates(scram_cluster, SHA512, "carol", "carol-pw")
    assert not authenticates(scram_cluster, SHA512, "carol", "wrong")
    assert not authenticates(scram_cluster, SHA256, "carol", "carol-pw")
    assert not authenticates(scram_cluster, SHA256, "bob", "bob-secret")

    assert admin.alter_user_scram_credentials([KpDeletion("carol", "SCRAM-SHA-512")]) == {"carol": None}
    assert described(admin, ["carol"]) == {
        "carol": "Attempt to describe a user credential that does not exist: carol"
    }
    assert described(admin) == {"alice": BOTH_4096, "bob": {("SCRAM-SHA-512", 4096)}}


def test_alter_errors_and_result_order(scram_cluster: MockCluster, admin: KafkaAdminClient) -> None:
    """ScramControlManager.alterCredentials: successful deletions, then successful
    upsertions, then the errors; a user named twice is dropped whole."""
    request = AlterUserScramCredentialsRequest(
        deletions=[
            Deletion(name="", mechanism=1),
            Deletion(name="dave", mechanism=0),
            Deletion(name="erin", mechanism=1),
            Deletion(name="alice", mechanism=1),
            Deletion(name="bob", mechanism=1),
        ],
        upsertions=[
            upsertion("frank", 3),
            upsertion("gina", 1, iterations=4095),
            upsertion("hank", 2, iterations=16385),
            upsertion("ivy", 2, iterations=16384),
            upsertion("alice", 2),
            upsertion("jack", 1),
            upsertion("jack", 2),
            Upsertion(name="kim", mechanism=1, iterations=4096, salt=b"s", salted_password=b""),
        ],
    )
    assert results(send(admin, request)) == [
        ("bob", 0, None),
        ("ivy", 0, None),
        ("", 93, "Username must not be empty"),
        ("dave", 33, "Unknown SCRAM mechanism"),
        ("erin", 91, "Attempt to delete a user credential that does not exist"),
        ("frank", 33, "Unknown SCRAM mechanism"),
        ("gina", 93, "Too few iterations"),
        ("hank", 93, "Too many iterations"),
        ("alice", 92, "A user credential cannot be altered twice in the same request"),
        ("jack", 92, "A user credential cannot be altered twice in the same request"),
        ("kim", -1, None),  # Kafka's HMAC refuses the empty key: UNKNOWN_SERVER_ERROR
    ]
    assert described(admin) == {
        "alice": BOTH_4096,
        "bob": {("SCRAM-SHA-512", 4096)},
        "ivy": {("SCRAM-SHA-512", 16384)},
    }


def test_describe_errors_and_describe_all(admin: KafkaAdminClient) -> None:
    response = send(
        admin,
        DescribeUserScramCredentialsRequest(users=[UserName(name=n) for n in ["alice", "zoe", "alice"]]),
    )
    assert response.error_code == 0 and response.error_message == ""  # Kafka's "" on success
    assert [(r.user, r.error_code, r.error_message, len(r.credential_infos)) for r in response.results] == [
        (
            "alice",
            92,
            "Cannot describe SCRAM credentials for the same user twice in a single request: alice",
            0,
        ),
        ("zoe", 91, "Attempt to describe a user credential that does not exist: zoe", 0),
    ]
    for users in (None, []):
        everyone = send(admin, DescribeUserScramCredentialsRequest(users=users))
        assert [
            (r.user, r.error_code, [(c.mechanism, c.iterations) for c in r.credential_infos])
            for r in everyone.results
        ] == [
            ("alice", 0, [(1, 4096), (2, 4096)]),
            ("bob", 0, [(1, 4096), (2, 4096)]),
        ]


def test_cluster_authorization_failures(
    scram_cluster: MockCluster, admin: KafkaAdminClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The requests' getErrorResponse shapes: describe has the top-level error and one
    nameless result per requested user; alter one result per distinct user, sorted.
    ApiError.fromThrowable drops the default message, so none is sent."""
    asked: list[str] = []

    def refuse(principal: Any, operation: str, host: str = "*") -> bool:
        asked.append(operation)
        return False

    monkeypatch.setattr(scram_cluster.authorizer, "authorize_cluster", refuse)
    response = send(
        admin, DescribeUserScramCredentialsRequest(users=[UserName(name="bob"), UserName(name="alice")])
    )
    assert (response.error_code, response.error_message) == (31, None)
    assert [(r.user, r.error_code, r.error_message) for r in response.results] == [
        ("", 31, None),
        ("", 31, None),
    ]
    assert send(admin, DescribeUserScramCredentialsRequest(users=None)).results == []
    alter = AlterUserScramCredentialsRequest(
        deletions=[Deletion(name="bob", mechanism=1), Deletion(name="alice", mechanism=1)],
        upsertions=[upsertion("bob", 2), upsertion("carol", 1)],
    )
    assert results(send(admin, alter)) == [("alice", 31, None), ("bob", 31, None), ("carol", 31, None)]
    assert asked == ["DESCRIBE", "DESCRIBE", "ALTER"]
    monkeypatch.undo()
    assert described(admin) == {"alice": BOTH_4096, "bob": BOTH_4096}


# ---------------------------------------------------------------------- confluent-kafka


def test_confluent_kafka_admin(scram_cluster: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": scram_cluster.bootstrap_servers})
    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                "lee", ScramCredentialInfo(CkMechanism.SCRAM_SHA_256, 10000), b"lee-pw", b"salt"
            ),
            UserScramCredentialDeletion("alice", CkMechanism.SCRAM_SHA_512),
            UserScramCredentialDeletion("nobody", CkMechanism.SCRAM_SHA_256),
            UserScramCredentialUpsertion("weak", ScramCredentialInfo(CkMechanism.SCRAM_SHA_512, 100), b"x"),
        ]
    )
    assert futures["lee"].result(timeout=10) is None
    assert futures["alice"].result(timeout=10) is None
    for user, code in (("nobody", 91), ("weak", 93)):
        with pytest.raises(KafkaException) as raised:
            futures[user].result(timeout=10)
        assert raised.value.args[0].code() == code, user
    assert authenticates(scram_cluster, SHA256, "lee", "lee-pw")

    per_user = admin.describe_user_scram_credentials(["lee", "alice"])
    lee, alice = per_user["lee"].result(timeout=10), per_user["alice"].result(timeout=10)
    assert [(c.mechanism, c.iterations) for c in lee.scram_credential_infos] == [
        (CkMechanism.SCRAM_SHA_256, 10000)
    ]
    assert [(c.mechanism, c.iterations) for c in alice.scram_credential_infos] == [
        (CkMechanism.SCRAM_SHA_256, 4096)
    ]
    with pytest.raises(KafkaException) as missing:
        admin.describe_user_scram_credentials(["ghost"])["ghost"].result(timeout=10)
    assert missing.value.args[0].code() == 91

    everyone = admin.describe_user_scram_credentials().result(timeout=10)
    assert sorted(everyone) == ["alice", "bob", "lee"]
    assert sorted((c.mechanism.name, c.iterations) for c in everyone["bob"].scram_credential_infos) == [
        ("SCRAM_SHA_256", 4096),
        ("SCRAM_SHA_512", 4096),
    ]


# ----------------------------------------------------------------- persistence, Python API


def test_changes_survive_a_restart_and_override_the_file(tmp_path: Path) -> None:
    users_file(tmp_path, FILE_USERS)
    with MockCluster(config=cluster_config(tmp_path)) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        assert admin.alter_user_scram_credentials(
            [
                KpUpsertion("carol", "SCRAM-SHA-256", "carol-pw", iterations=5000),
                KpDeletion("alice", "SCRAM-SHA-256"),  # a file user: the deletion must stick
                KpUpsertion("bob", "SCRAM-SHA-512", "bob-api-pw"),
            ]
        ) == {"carol": None, "alice": None, "bob": None}
        admin.close()
    assert (tmp_path / "state" / "credentials.sqlite").exists()

    # The file changes too: passwords never altered through the API follow it.
    users_file(tmp_path, {"alice": "alice-new", "bob": "bob-new"})
    with MockCluster(config=cluster_config(tmp_path)) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        assert described(admin) == {
            "alice": {("SCRAM-SHA-512", 4096)},
            "bob": BOTH_4096,
            "carol": {("SCRAM-SHA-256", 5000)},
        }
        admin.close()
        assert authenticates(cluster, SHA256, "carol", "carol-pw")
        assert not authenticates(cluster, SHA256, "alice", "alice-new")
        assert authenticates(cluster, SHA512, "alice", "alice-new")
        assert authenticates(cluster, SHA256, "bob", "bob-new")
        assert authenticates(cluster, SHA512, "bob", "bob-api-pw")
        assert not authenticates(cluster, SHA512, "bob", "bob-new")
        assert cluster.credentials.check_plain("alice", "alice-new")  # PLAIN reads the file only


def test_without_a_state_dir_nothing_is_kept(tmp_path: Path) -> None:
    users_file(tmp_path, FILE_USERS)
    for _ in range(2):
        with MockCluster(config=cluster_config(tmp_path, state=False)) as cluster:
            assert cluster.credentials.describe(None)[0].credentials == ((SHA256, 4096), (SHA512, 4096))
            cluster.credentials.delete_user("alice")
            assert [r.user for r in cluster.credentials.describe(None)] == ["bob"]
    assert not (tmp_path / "state").exists()


def test_python_api(tmp_path: Path) -> None:
    users_file(tmp_path, FILE_USERS)
    with MockCluster(config=cluster_config(tmp_path)) as cluster:
        cluster.credentials.upsert_user("zed", "zed-pw", iterations=8192)
        cluster.credentials.upsert_user("yan", "yan-pw", mechanisms=[SHA512])
        with pytest.raises(CredentialError) as too_few:
            cluster.credentials.upsert_user("xia", "pw", iterations=1000)
        assert (too_few.value.code, too_few.value.message) == (93, "Too few iterations")
        with pytest.raises(CredentialError) as missing:
            cluster.credentials.delete_user("yan")  # no SCRAM-SHA-256: nothing is deleted
        assert missing.value.code == 91
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        assert described(admin, ["zed", "yan"]) == {
            "zed": {("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 8192)},
            "yan": {("SCRAM-SHA-512", 4096)},
        }
        admin.close()
        assert authenticates(cluster, SHA256, "zed", "zed-pw") and authenticates(
            cluster, SHA512, "yan", "yan-pw"
        )
        cluster.credentials.delete_user("zed")
    with MockCluster(config=cluster_config(tmp_path)) as reopened:
        assert [r.user for r in reopened.credentials.describe(None)] == ["alice", "bob", "yan"]


async def test_python_api_on_the_loop(tmp_path: Path) -> None:
    users_file(tmp_path, {})
    async with MockCluster(config=cluster_config(tmp_path)) as cluster:
        await cluster.credentials.upsert_user_async("amy", "amy-pw", mechanisms=[SHA256])
        assert cluster.credentials.scram_credential("amy", SHA256) is not None
        with pytest.raises(RuntimeError, match="await"):
            cluster.credentials.upsert_user("amy", "again")
        await cluster.credentials.delete_user_async("amy", [SHA256])
        assert cluster.credentials.describe(["amy"])[0].error_code == 91
