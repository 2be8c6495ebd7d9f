"""The kafka-acls console tool against the broker: add, list, remove, as kafka-acls.sh."""

from __future__ import annotations

import io
import subprocess
import sys

from broker import MockCluster
from broker.tools.acls import main

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_add_list_remove() -> None:
    with MockCluster(config={"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"}) as cluster:
        bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
        code, out, _ = _run(
            *bootstrap,
            "--add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            "--operation",
            "IdempotentWrite",
            "--topic",
            "orders",
        )
        assert code == 0
        assert (
            "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`"
            in out
        )
        assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in out
        assert (
            _run(
                *bootstrap,
                "--add",
                "--deny-principal",
                "User:bob",
                "--group",
                "app-",
                "--resource-pattern-type",
                "prefixed",
            )[0]
            == 0
        )
        assert {(b.principal, b.operation.name) for b in cluster.acls.list()} == {
            ("User:alice", "READ"),
            ("User:alice", "IDEMPOTENT_WRITE"),
            ("User:bob", "ALL"),
        }
        code, out, _ = _run(*bootstrap, "--list")
        assert code == 0 and out.count("Current ACLs for resource") == 2
        code, out, _ = _run(*bootstrap, "--list", "--principal", "User:bob")
        assert "patternType=PREFIXED" in out and "User:alice" not in out
        assert _run(*bootstrap, "--remove", "--force", "--topic", "orders")[0] == 0
        assert [b.principal for b in cluster.acls.list()] == ["User:bob"]
        code, _, err = _run(*bootstrap, "--add", "--topic", "t")
        assert code == 2 and "--allow-principal" in err


def test_refused_without_an_authorizer_and_installed_as_a_script() -> None:
    with MockCluster() as cluster:
        code, _, err = _run("--bootstrap-server", cluster.bootstrap_servers, "--list")
        assert code == 1 and "SECURITY_DISABLED" in err
    done = subprocess.run(
        [sys.executable, "-m", "broker.tools.acls", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "--allow-principal" in done.stdout
