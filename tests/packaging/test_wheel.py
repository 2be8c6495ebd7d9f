"""The package as a user gets it: the wheel is built from a copy of the checkout
(`python -m build --wheel`, as the README says), installed with no extras into a fresh
virtualenv (with pytest, versions from constraints.txt), and used there: its files, its
version, the README's pytest quick start under `-W error`, and the one-line message of
every feature whose extra is missing.

Everything runs in the fresh virtualenv from a directory outside the checkout, so the
checkout's own packages cannot stand in for the installed ones.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("broker", "protocol", "messages", "quotas", "spark")
DEVELOPMENT_MODULES = ("fuzzing.py", "process.py", "wire.py", "clients.py")
# Not part of a checkout a user builds from: environments, caches and build output at the
# top, and caches anywhere.
TOP_IGNORED = {
    ".git",
    ".venv",
    "build",
    "dist",
    "site",
    "state",
    "metrics",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
}
ANYWHERE_IGNORED = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", "node_modules"
)


def _ignored(directory: str, names: list[str]) -> set[str]:
    top = TOP_IGNORED.intersection(names) if Path(directory) == ROOT else set()
    return top | ANYWHERE_IGNORED(directory, names)


OPTIONAL = ("pyarrow", "aiohttp", "prometheus_client", "opentelemetry", "google.protobuf", "pyspark")


@dataclass
class Installed:
    wheel: Path
    python: Path  # the fresh virtualenv's interpreter
    bin: Path
    work: Path  # an empty directory outside the checkout, the cwd of every run

    def run(
        self, args: Sequence[str | os.PathLike[str]], timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in args],
            cwd=self.work,
            env=_clean_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _clean_env() -> dict[str, str]:
    """This process's environment without what would point Python or pytest elsewhere."""
    drop = ("PYTHONPATH", "PYTHONHOME", "PYTHONWARNINGS", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTEST_ADDOPTS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _check(result: subprocess.CompletedProcess[str], what: str) -> str:
    assert result.returncode == 0, f"{what} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("packaging")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=_ignored, symlinks=True)
    dist = base / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        env=_clean_env(),
    )
    _check(build, "python -m build --wheel")
    wheels = sorted(dist.glob("kafka_mock_broker-*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    _check(
        subprocess.run(
            [sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300
        ),
        "python -m venv",
    )
    work = base / "work"
    work.mkdir()
    env = Installed(wheels[0], venv / "bin" / "python", venv / "bin", work)
    _check(
        env.run(
            [env.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "-c", ROOT / "constraints.txt", env.wheel, "pytest"],
            timeout=900,
        ),
        "pip install <wheel> pytest",
    )  # fmt: skip
    return env


def _wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode()


def test_the_wheel_holds_the_packages_their_data_and_the_license(installed: Installed) -> None:
    names = _wheel_names(installed.wheel)
    top = {name.split("/", 1)[0] for name in names}
    [dist_info] = [t for t in top if t.endswith(".dist-info")]
    assert top == {*PACKAGES, dist_info}, "only the five packages and the metadata are installed"
    for notice in ("LICENSE", "NOTICE"):
        found = [n for n in names if n.startswith(dist_info + "/") and n.rsplit("/", 1)[-1] == notice]
        assert found, f"{notice} is not in {dist_info}"
        with zipfile.ZipFile(installed.wheel) as archive:
            assert archive.read(found[0]) == (ROOT / notice).read_bytes()
    for package in PACKAGES:
        assert f"{package}/py.typed" in names
    schemas = {Path(n).name for n in names if n.startswith("messages/schemas/") and n.endswith(".json")}
    assert schemas == {p.name for p in (ROOT / "messages" / "schemas").glob("*.json")}
    assert schemas, "Kafka's bundled message definitions are data the broker needs"
    development = [
        n for n in names if n.startswith("broker/harness/") and n.rsplit("/", 1)[-1] in DEVELOPMENT_MODULES
    ]
    assert not development, f"development-only modules in the wheel: {development}"


def test_one_version_from_the_metadata_to_broker_version(installed: Installed) -> None:
    [version] = re.findall(r"^Version: (.+)$", _metadata(installed.wheel), re.M)
    code = (
        "import importlib.metadata, json, broker; "
        "print(json.dumps([broker.__version__, importlib.metadata.version('kafka-mock-broker'), broker.__file__]))"
    )
    seen, distribution, location = json.loads(_check(installed.run([installed.python, "-c", code]), "import"))
    assert seen == distribution == version
    assert Path(location).is_relative_to(installed.python.parent.parent), (
        "the installed package, not the checkout"
    )


def test_the_base_install_has_no_optional_dependency(installed: Installed) -> None:
    code = (
        "import importlib.util, json; "
        f"print(json.dumps([m for m in {OPTIONAL!r} if importlib.util.find_spec(m.split('.')[0]) is not None]))"
    )
    assert json.loads(_check(installed.run([installed.python, "-c", code]), "find_spec")) == []


def _readme_quick_start() -> str:
    """The first python block under the README's `## Quick start` heading."""
    readme = (ROOT / "README.md").read_text()
    section = re.search(r"^## Quick start\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    assert section, "README.md has no '## Quick start' section"
    block = re.search(r"^```python\n(.*?)^```", section.group(1), re.M | re.S)
    assert block, "README.md's quick start has no ```python block"
    return block.group(1)


def test_the_readme_quick_start_passes_without_a_warning(installed: Installed) -> None:
    quick_start = installed.work / "quickstart"
    quick_start.mkdir()
    (quick_start / "test_quickstart.py").write_text(_readme_quick_start())
    result = installed.run(
        [installed.python, "-m", "pytest", "-W", "error", "-p", "no:cacheprovider", "-rA", quick_start],
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.search(r"\b[1-9]\d* passed\b", output), output
    assert "Warning" not in output, output


# The command line (the console script, and `python -m broker`) and the Python API, each
# asked for a feature whose extra is not installed: one line naming the extra, exit 2.
MISSING = [
    ("http", ["kafka-mock-broker", "--port", "0", "--admin-port", "0"]),
    ("metrics", ["kafka-mock-broker", "--port", "0", "--metrics-dir", "metrics"]),
    ("telemetry", ["-m", "broker", "--port", "0", "--override", "telemetry.enabled=true"]),
    ("spark", ["kafka-mock-report", "--metrics", "metrics", "--out", "report"]),
    ("spark", ["kafka-mock-report", "what-if", "--metrics", "m", "--quotas", "q.json", "--out", "o"]),
]


@pytest.mark.parametrize(("extra", "command"), MISSING, ids=[" ".join(c[:2]) + f"-{e}" for e, c in MISSING])
def test_a_missing_extra_is_one_line_naming_it(installed: Installed, extra: str, command: list[str]) -> None:
    program = (
        [installed.python, *command] if command[0] == "-m" else [installed.bin / command[0], *command[1:]]
    )
    result = installed.run(program, timeout=60)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"needs the '{extra}' extra: pip install 'kafka-mock-broker[{extra}]'" in lines[0]


def test_the_python_api_raises_missing_extra(installed: Installed) -> None:
    code = """
import json
from broker import MissingExtra, MockCluster
seen = []
for config in ({"admin.port": 0}, {"metrics.dir": "m"}, {"telemetry.enabled": "true"}):
    try:
        MockCluster(config=config)
    except MissingExtra as exc:
        seen.append([exc.extra, str(exc)])
try:
    import broker.harness.admin_http
except MissingExtra as exc:
    seen.append([exc.extra, str(exc)])
print(json.dumps(seen))
"""
    seen = json.loads(_check(installed.run([installed.python, "-c", code]), "MissingExtra"))
    assert [extra for extra, _ in seen] == ["http", "metrics", "telemetry", "http"]
    for extra, message in seen:
        assert message.endswith(f"needs the '{extra}' extra: pip install 'kafka-mock-broker[{extra}]'")
