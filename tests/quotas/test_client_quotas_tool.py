"""`kafka-client-quotas` end to end: the tool's `main()` in-process (and once as a subprocess)
against a running MockCluster, over kafka-python's network client."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from broker import MockCluster
from broker.security.authorizer import Authorizer
from broker.tools.client_quotas import client_settings, format_value, main, read_properties, split_list
from quotas.entity import QuotaEntity

REPO = Path(__file__).resolve().parents[2]
MUST_BE_POSITIVE = "Quota producer_byte_rate must be greater than 0"

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(sync_cluster: MockCluster, capsys: pytest.CaptureFixture[str]) -> Run:
    """Runs the tool against the cluster: (exit code, stdout, stderr)."""

    def invoke(*argv: str) -> tuple[int, str, str]:
        code = main(["--bootstrap-server", sync_cluster.bootstrap_servers, *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


def configure(cluster: MockCluster) -> None:
    """A little of everything: a user, its default client, defaults of both types, an ip."""
    q = cluster.quotas
    q.alter({"user": "alice"}, set={"producer_byte_rate": 1048576, "request_percentage": 0.1 + 0.2})
    q.alter({"user": "alice", "client-id": None}, set={"consumer_byte_rate": 4096})
    q.alter({"user": None}, set={"producer_byte_rate": 1024, "consumer_byte_rate": 2048})
    q.alter({"user": None, "client-id": "app"}, set={"consumer_byte_rate": 3000})
    q.alter({"client-id": None}, set={"producer_byte_rate": 512})
    q.alter({"client-id": "app"}, set={"request_percentage": 50})
    q.alter({"ip": None}, set={"connection_creation_rate": 10})
    q.alter({"ip": "10.0.0.1"}, set={"connection_creation_rate": 99})


# -- describe -------------------------------------------------------------------------------
def test_describe_names_text(sync_cluster: MockCluster, run: Run) -> None:
    configure(sync_cluster)
    code, out, err = run("--describe", "--names", "user=alice")
    assert (code, err) == (0, "")
    assert out == (
        "{user=alice}\n"
        "producer_byte_rate=1048576\n"
        "request_percentage=0.30000000000000004\n"
        "\n"
        "{user=alice, client-id=<default>}\n"
        "consumer_byte_rate=4096\n"
    )
    code, out, _ = run("--describe", "--names", "user=alice", "--strict")
    assert code == 0 and out.startswith("{user=alice}\n") and "client-id" not in out


def test_describe_everything_and_nothing(sync_cluster: MockCluster, run: Run) -> None:
    configure(sync_cluster)
    code, out, _ = run("--describe")
    assert code == 0
    headers = [line for line in out.splitlines() if line.startswith("{")]
    # Every entity, ip ones too, in a stable order: per type absent < default < names.
    assert headers == [
        "{ip=<default>}",
        "{ip=10.0.0.1}",
        "{client-id=<default>}",
        "{client-id=app}",
        "{user=<default>}",
        "{user=<default>, client-id=app}",
        "{user=alice}",
        "{user=alice, client-id=<default>}",
    ]
    assert run("--describe", "--strict") == (0, "", "")  # empty strict filter: nothing (as Kafka)
    assert run("--describe", "--names", "user=nobody") == (0, "", "")


def test_describe_defaults(sync_cluster: MockCluster, run: Run) -> None:
    configure(sync_cluster)
    code, out, _ = run("--describe", "--defaults", "user")
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith("{")] == [
        "{user=<default>}",
        "{user=<default>, client-id=app}",
    ]
    code, out, _ = run("--describe", "--names", "client-id=app", "--defaults", "user")
    assert out == "{user=<default>, client-id=app}\nconsumer_byte_rate=3000\n"
    code, out, _ = run("--describe", "--defaults", "user,client-id")
    assert code == 0 and out == ""


def test_describe_json(sync_cluster: MockCluster, run: Run) -> None:
    configure(sync_cluster)
    code, out, _ = run("--describe", "--names", "user=alice", "--output", "json")
    assert code == 0
    assert json.loads(out) == [
        {
            "entity": {"user": "alice"},
            "values": {"producer_byte_rate": 1048576, "request_percentage": 0.30000000000000004},
        },
        {"entity": {"user": "alice", "client-id": None}, "values": {"consumer_byte_rate": 4096}},
    ]
    assert '"producer_byte_rate": 1048576,' in out  # integral values stay integers
    assert json.loads(run("--describe", "--strict", "--output", "json")[1]) == []


def test_describe_literal_default_name_is_an_ordinary_name(sync_cluster: MockCluster, run: Run) -> None:
    sync_cluster.quotas.alter({"user": "<default>"}, set={"producer_byte_rate": 7})
    sync_cluster.quotas.alter({"user": None}, set={"producer_byte_rate": 8})
    code, out, _ = run("--describe", "--names", "user=<default>", "--output", "json")
    assert json.loads(out) == [{"entity": {"user": "<default>"}, "values": {"producer_byte_rate": 7}}]
    code, out, _ = run("--describe", "--defaults", "user", "--output", "json")
    assert json.loads(out) == [{"entity": {"user": None}, "values": {"producer_byte_rate": 8}}]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (
            "user=alice,ip=10.0.0.1",
            "INVALID_REQUEST: Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        ),
        ("group=g1", "UNSUPPORTED_VERSION: Unsupported entity type group"),
    ],
)
def test_describe_refused_by_broker(run: Run, names: str, expected: str) -> None:
    code, out, err = run("--describe", "--names", names)
    assert (code, out) == (1, "")
    assert expected in err


def test_cluster_authorization_failed(
    sync_cluster: MockCluster, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Authorizer, "authorize_cluster", lambda self, principal, operation, host="*": False)
    code, out, err = run("--describe")
    assert (code, out) == (1, "") and "CLUSTER_AUTHORIZATION_FAILED" in err  # null message: the description
    code, out, err = run("--alter", "--names", "user=alice", "--add", "producer_byte_rate=1")
    assert code == 1 and "{user=alice}: CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed." in err
    assert sync_cluster.quotas.describe() == {}


# -- resolve --------------------------------------------------------------------------------
def test_resolve_winner_and_overridden(sync_cluster: MockCluster, run: Run) -> None:
    configure(sync_cluster)
    code, out, err = run("--resolve", "--names", "user=alice,client-id=app")
    assert (code, err) == (0, "")
    assert out == (
        "consumer_byte_rate=4096 {user=alice, client-id=<default>}\n"  # level 2 beats 4 and 6
        "producer_byte_rate=1048576 {user=alice}\n"
        "request_percentage=0.30000000000000004 {user=alice}\n"  # level 3 beats (client-id=app), level 7
    )
    code, out, _ = run("--resolve", "--names", "user=alice,client-id=app", "--show-overridden")
    assert out == (
        "consumer_byte_rate=4096 {user=alice, client-id=<default>}\n"
        "*consumer_byte_rate=3000 {user=<default>, client-id=app}\n"
        "*consumer_byte_rate=2048 {user=<default>}\n"
        "producer_byte_rate=1048576 {user=alice}\n"
        "*producer_byte_rate=1024 {user=<default>}\n"
        "*producer_byte_rate=512 {client-id=<default>}\n"
        "request_percentage=0.30000000000000004 {user=alice}\n"
        "*request_percentage=50 {client-id=app}\n"
    )
    # bob has nothing of his own: the default user's entries win, per client id.
    code, out, _ = run("--resolve", "--names", "user=bob,client-id=other")
    assert out == ("consumer_byte_rate=2048 {user=<default>}\nproducer_byte_rate=1024 {user=<default>}\n")
    code, out, _ = run("--resolve", "--names", "user=bob,client-id=app")
    assert "consumer_byte_rate=3000 {user=<default>, client-id=app}\n" in out
    assert "request_percentage=50 {client-id=app}\n" in out


def test_resolve_without_user_is_anonymous(sync_cluster: MockCluster, run: Run) -> None:
    sync_cluster.quotas.alter({"client-id": "app"}, set={"producer_byte_rate": 100})
    assert run("--resolve", "--names", "client-id=app")[1] == "producer_byte_rate=100 {client-id=app}\n"
    sync_cluster.quotas.alter({"user": "ANONYMOUS"}, set={"producer_byte_rate": 200})
    code, out, _ = run("--resolve", "--names", "client-id=app", "--show-overridden")
    assert out == "producer_byte_rate=200 {user=ANONYMOUS}\n*producer_byte_rate=100 {client-id=app}\n"
    assert run("--resolve")[1] == "producer_byte_rate=200 {user=ANONYMOUS}\n"


def test_resolve_json_agrees_with_the_broker(sync_cluster: MockCluster, run: Run) -> None:
    configure(sync_cluster)
    for user, client_id in [
        ("alice", "app"),
        ("alice", "x"),
        ("bob", "app"),
        ("bob", "x"),
        ("ANONYMOUS", ""),
    ]:
        names = f"user={user}" + (f",client-id={client_id}" if client_id else "")
        code, out, _ = run("--resolve", "--names", names, "--output", "json")
        assert code == 0
        broker_view = sync_cluster.quotas.resolve(user, client_id)
        assert json.loads(out) == [
            {
                "key": r.key,
                "value": r.value,
                "entity": r.entity.to_json(),
                "overridden": [{"value": v, "entity": e.to_json()} for v, e in r.overridden],
            }
            for r in broker_view.values()
        ]


def test_resolve_ip(sync_cluster: MockCluster, run: Run) -> None:
    configure(sync_cluster)
    code, out, _ = run("--resolve", "--names", "ip=10.0.0.1", "--show-overridden")
    assert out == "connection_creation_rate=99 {ip=10.0.0.1}\n*connection_creation_rate=10 {ip=<default>}\n"
    assert run("--resolve", "--names", "ip=10.9.9.9")[1] == "connection_creation_rate=10 {ip=<default>}\n"


# -- alter ----------------------------------------------------------------------------------
def test_alter_add_update_delete(sync_cluster: MockCluster, run: Run) -> None:
    assert run(
        "--alter",
        "--names",
        "user=alice,client-id=app",
        "--add",
        "producer_byte_rate=1048576,consumer_byte_rate=2e6",
    ) == (0, "", "")
    assert sync_cluster.quotas.describe() == {
        QuotaEntity({"user": "alice", "client-id": "app"}): {
            "producer_byte_rate": 1048576.0,
            "consumer_byte_rate": 2e6,
        }
    }
    assert run(
        "--alter", "--names", "client-id=app", "--defaults", "user", "--add", "request_percentage=12.5"
    ) == (0, "", "")
    code, out, _ = run(
        "--alter",
        "--names",
        "user=alice,client-id=app",
        "--add",
        "consumer_byte_rate=300",
        "--delete",
        "producer_byte_rate",
    )
    assert (code, out) == (0, "")
    code, out, _ = run("--describe", "--names", "client-id=app")
    assert out == (
        "{user=<default>, client-id=app}\nrequest_percentage=12.5\n\n{user=alice, client-id=app}\nconsumer_byte_rate=300\n"
    )
    # Removing what is not set is a successful no-op; removing the last key drops the entity.
    assert (
        run(
            "--alter",
            "--names",
            "user=alice,client-id=app",
            "--delete",
            "producer_byte_rate,consumer_byte_rate",
        )[0]
        == 0
    )
    assert run("--describe", "--names", "user=alice")[1] == ""


def test_alter_validate_only_changes_nothing(sync_cluster: MockCluster, run: Run) -> None:
    sync_cluster.quotas.alter({"user": "alice"}, set={"producer_byte_rate": 100})
    before = sync_cluster.quotas.describe()
    argv = ["--alter", "--names", "user=alice", "--add", "producer_byte_rate=5000,consumer_byte_rate=6000"]
    assert run(*argv, "--validate-only") == (0, "", "")
    assert run(*argv[:3], "--delete", "producer_byte_rate", "--validate-only") == (0, "", "")
    assert sync_cluster.quotas.describe() == before
    # ...but it is validated exactly like the real thing.
    code, _, err = run(*argv[:3], "--add", "producer_byte_rate=1.5", "--validate-only")
    assert code == 1 and "INVALID_REQUEST: producer_byte_rate cannot be a fractional value." in err
    assert sync_cluster.quotas.describe() == before


def test_alter_refused(sync_cluster: MockCluster, run: Run) -> None:
    sync_cluster.quotas.alter({"user": "alice"}, set={"consumer_byte_rate": 100})
    before = sync_cluster.quotas.describe()
    code, out, err = run(
        "--alter", "--names", "user=alice", "--add", "consumer_byte_rate=200,producer_byte_rate=-1"
    )
    assert (code, out) == (1, "")
    assert "INVALID_REQUEST" in err and MUST_BE_POSITIVE in err and "{user=alice}" in err
    assert sync_cluster.quotas.describe() == before  # all or nothing per entity
    code, _, err = run("--alter", "--names", "ip=10.0.0.1", "--add", "producer_byte_rate=10")
    assert code == 1 and "INVALID_REQUEST: Invalid configuration key producer_byte_rate" in err
    code, _, err = run("--alter", "--names", "user=alice,ip=10.0.0.1", "--add", "connection_creation_rate=10")
    assert code == 1 and "IP entity shouldnot be combined with User or ClientId" in err
    # The same key set and removed in one entry is a duplicate for Kafka.
    code, _, err = run(
        "--alter", "--names", "user=alice", "--add", "consumer_byte_rate=5", "--delete", "consumer_byte_rate"
    )
    assert code == 1 and "Ignoring duplicate entity" in err
    assert sync_cluster.quotas.describe() == before


def test_alter_json(sync_cluster: MockCluster, run: Run) -> None:
    code, out, err = run(
        "--alter",
        "--names",
        "user=alice",
        "--defaults",
        "client-id",
        "--add",
        "producer_byte_rate=10",
        "--output",
        "json",
    )
    assert (code, err) == (0, "")
    assert json.loads(out) == {"entity": {"user": "alice", "client-id": None}, "error": None}
    code, out, err = run(
        "--alter", "--names", "user=alice", "--add", "producer_byte_rate=-1", "--output", "json"
    )
    assert code == 1 and MUST_BE_POSITIVE in err
    assert json.loads(out) == {
        "entity": {"user": "alice"},
        "error": {"code": 42, "name": "INVALID_REQUEST", "message": MUST_BE_POSITIVE},
    }


# -- the kafka-configs form -----------------------------------------------------------------
def test_kafka_configs_forms(sync_cluster: MockCluster, run: Run) -> None:
    pair = [
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
        "--entity-name",
        "app",
    ]
    assert run("--alter", *pair, "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048") == (
        0,
        "",
        "",
    )
    assert run(
        "--alter", "--entity-type", "users", "--entity-default", "--add-config", "producer_byte_rate=10"
    ) == (0, "", "")
    default_pair = [
        "--entity-type",
        "users",
        "--entity-default",
        "--entity-type",
        "clients",
        "--entity-name",
        "app",
    ]
    assert run("--alter", *default_pair, "--add-config", "request_percentage=20") == (0, "", "")
    assert (
        run(
            "--alter", "--entity-type", "clients", "--entity-default", "--add-config", "producer_byte_rate=5"
        )[0]
        == 0
    )

    # kafka-configs describes strictly: exactly the given entity.
    assert (
        run("--describe", *pair)[1]
        == "{user=alice, client-id=app}\nconsumer_byte_rate=2048\nproducer_byte_rate=1024\n"
    )
    assert (
        run("--describe", "--entity-type", "users", "--entity-default")[1]
        == "{user=<default>}\nproducer_byte_rate=10\n"
    )
    assert run("--describe", *default_pair)[1] == "{user=<default>, client-id=app}\nrequest_percentage=20\n"
    # A type without a name matches any name of that type.
    code, out, _ = run("--describe", "--entity-type", "users", "--entity-type", "clients")
    assert [line for line in out.splitlines() if line.startswith("{")] == [
        "{user=<default>, client-id=app}",
        "{user=alice, client-id=app}",
    ]
    assert run("--describe", "--entity-type", "clients")[1] == "{client-id=<default>}\nproducer_byte_rate=5\n"

    assert run("--alter", *pair, "--delete-config", "producer_byte_rate") == (0, "", "")
    assert run("--resolve", *pair)[1] == (
        "consumer_byte_rate=2048 {user=alice, client-id=app}\n"
        "producer_byte_rate=10 {user=<default>}\n"  # level 6 beats (client-id=<default>), level 8
        "request_percentage=20 {user=<default>, client-id=app}\n"
    )
    code, _, err = run(
        "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=0"
    )
    assert code == 1 and "Quota producer_byte_rate must be greater than 0" in err


# -- usage, settings, processes ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--describe", "--resolve"], "not allowed with argument"),
        (["--names", "user=alice"], "one of the arguments --describe --resolve --alter is required"),
        (["--alter", "--names", "user=alice"], "--alter needs --add and/or --delete"),
        (["--alter", "--add", "producer_byte_rate=1"], "--alter needs an entity"),
        (["--alter", "--names", "user=alice", "--add", "producer_byte_rate"], "--add expects key=value"),
        (["--alter", "--names", "user=alice", "--add", "producer_byte_rate=fast"], "must be a number"),
        (
            ["--alter", "--names", "user=alice", "--delete", "producer_byte_rate=1"],
            "--delete expects quota keys",
        ),
        (
            ["--alter", "--entity-type", "users", "--add", "producer_byte_rate=1"],
            "--entity-default for every",
        ),
        (["--resolve", "--defaults", "user"], "--resolve takes names"),
        (
            ["--describe", "--names", "user=alice", "--defaults", "user"],
            "entity type user given more than once",
        ),
        (["--describe", "--names", "alice"], "--names expects type=name pairs"),
        (["--describe", "--entity-name", "alice"], "more --entity-name/--entity-default than --entity-type"),
        (["--describe", "--entity-type", "topics"], "invalid choice"),
        (
            ["--describe", "--names", "user=a", "--entity-type", "users"],
            "use either --names/--defaults or --entity-type",
        ),
        (["--describe", "--show-overridden"], "--show-overridden cannot be used with --describe"),
        (["--resolve", "--validate-only"], "--validate-only cannot be used with --resolve"),
        (
            ["--alter", "--strict", "--names", "user=a", "--add", "producer_byte_rate=1"],
            "--strict cannot be used",
        ),
    ],
)
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Usage is checked before connecting: no broker needed.
    assert main(["--bootstrap-server", "127.0.0.1:1", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "ANONYMOUS" in out and "--entity-default" in out and "exit codes" in out


def test_command_config(sync_cluster: MockCluster, run: Run, tmp_path: Path) -> None:
    sync_cluster.quotas.alter({"user": "alice"}, set={"producer_byte_rate": 1})
    good = tmp_path / "client.properties"
    good.write_text(
        "# admin settings\nclient.id = quota-tool\nrequest.timeout.ms: 5000\nsecurity.protocol=plaintext\n"
    )
    assert run("--command-config", str(good), "--describe") == (0, "{user=alice}\nproducer_byte_rate=1\n", "")
    bad = tmp_path / "bad.properties"
    bad.write_text("client.id=x\ndefault.api.timeout.ms=1000\n")
    code, out, err = run("--command-config", str(bad), "--describe")
    assert (code, out) == (2, "") and "unknown client setting 'default.api.timeout.ms'" in err
    code, _, err = run("--command-config", str(tmp_path / "missing.properties"), "--describe")
    assert code == 2 and "cannot read --command-config" in err
    bad.write_text("request.timeout.ms=soon\n")
    code, _, err = run("--command-config", str(bad), "--describe")
    assert code == 2 and "invalid value for request.timeout.ms" in err


def test_properties_and_settings() -> None:
    text = (
        "! comment\n"
        "security.protocol SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="admin" password="s3cr=t";\n'
        "ssl.endpoint.identification.algorithm=\n"
        "client.id=caf\\u00e9\\:1\n"
    )
    properties = read_properties(text)
    assert properties["security.protocol"] == "SASL_SSL"
    assert properties["client.id"] == "café:1"
    assert client_settings(properties) == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "admin",
        "sasl_plain_password": "s3cr=t",
        "ssl_check_hostname": False,
        "client_id": "café:1",
    }
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username=u password="a\\"b";'
    assert client_settings({"sasl.jaas.config": jaas}) == {
        "sasl_plain_username": "u",
        "sasl_plain_password": 'a"b',
    }
    assert client_settings(
        {"sasl.plain.username": "u", "sasl.plain.password": "p", "api.version": "3.9"}
    ) == {
        "sasl_plain_username": "u",
        "sasl_plain_password": "p",
        "api_version": (3, 9),
    }


def test_value_and_list_formatting() -> None:
    assert [format_value(v) for v in (1048576.0, 0.1 + 0.2, 12.5, float("inf"))] == [
        "1048576",
        "0.30000000000000004",
        "12.5",
        "inf",
    ]
    assert split_list(r"user=CN=a\,O=b, client-id=x,") == ["user=CN=a,O=b", "client-id=x"]


def test_unreachable_broker(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    fast = tmp_path / "fast.properties"
    fast.write_text("bootstrap.timeout.ms=500\nreconnect.backoff.max.ms=100\n")
    assert main(["--bootstrap-server", f"127.0.0.1:{port}", "--command-config", str(fast), "--describe"]) == 1
    assert "cannot connect to 127.0.0.1:" in capsys.readouterr().err


def test_as_a_process(sync_cluster: MockCluster) -> None:
    sync_cluster.quotas.alter({"user": None}, set={"producer_byte_rate": 1024})
    base = [
        sys.executable,
        "-m",
        "broker.tools.client_quotas",
        "--bootstrap-server",
        sync_cluster.bootstrap_servers,
    ]

    def spawn(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *argv], cwd=REPO, capture_output=True, text=True, timeout=60)

    done = spawn("--alter", "--names", "user=alice", "--add", "producer_byte_rate=1048576")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    done = spawn("--resolve", "--names", "user=alice,client-id=app", "--show-overridden")
    assert (done.returncode, done.stderr) == (0, "")
    assert (
        done.stdout == "producer_byte_rate=1048576 {user=alice}\n*producer_byte_rate=1024 {user=<default>}\n"
    )
    done = spawn("--alter", "--names", "user=alice", "--add", "producer_byte_rate=-1")
    assert (done.returncode, done.stdout) == (1, "")
    assert "INVALID_REQUEST" in done.stderr and MUST_BE_POSITIVE in done.stderr
    done = spawn("--describe", "--output", "json")
    assert json.loads(done.stdout) == [
        {"entity": {"user": None}, "values": {"producer_byte_rate": 1024}},
        {"entity": {"user": "alice"}, "values": {"producer_byte_rate": 1048576}},
    ]
    assert spawn("--describe", "--bogus").returncode == 2

    script = Path(sys.executable).with_name("kafka-client-quotas")
    if not script.exists():
        pytest.skip("console script not installed (pip install -e .)")
    done = subprocess.run(
        [
            str(script),
            "--bootstrap-server",
            sync_cluster.bootstrap_servers,
            "--describe",
            "--defaults",
            "user",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "{user=<default>}\nproducer_byte_rate=1024\n")
