"""Asks a freshly formatted Apache Kafka node of a given release for its ApiVersions (v3
for the APIs and finalized features, v4 for every supported feature) and writes what it
answers to tests/differential/data/apiversions-kafka-VERSION.json.

    .venv/bin/python scripts/capture_apiversions.py 3.9.1 4.0.2 4.4.0

Each release's jars come from Maven Central (tests/reference/pom.xml with that
kafka.version, built under ~/.cache/kafka-mock-broker/reference-VERSION)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from messages.registry import request_class  # noqa: E402
from tests.differential import reference  # noqa: E402
from tests.support.wire import round_trip  # noqa: E402

CACHE = Path.home() / ".cache" / "kafka-mock-broker"
DATA = ROOT / "tests" / "differential" / "data"


def release_classpath(version: str) -> str:
    project = CACHE / f"reference-{version}"
    project.mkdir(parents=True, exist_ok=True)
    pom = (ROOT / "tests" / "reference" / "pom.xml").read_text()
    start = pom.index("<kafka.version>") + len("<kafka.version>")
    (project / "pom.xml").write_text(pom[:start] + version + pom[pom.index("</kafka.version>") :])
    subprocess.run(["mvn", "-q", "-B", "package"], cwd=project, check=True, timeout=900)
    return f"{project / 'target' / 'lib'}/*"


def capture(version: str) -> dict[str, object]:
    classpath = release_classpath(version)
    reference.classpath = lambda: classpath  # this release's jars instead of the pinned one
    with reference.ReferenceKafka() as kafka, socket.create_connection(kafka.address(0)) as sock:
        request = request_class(18)[3](client_software_name="capture", client_software_version="1")
        answer = round_trip(sock, request, 1, "capture")
        # v4 (Kafka 3.9+) lists every supported feature; v3 leaves out those whose minimum is 0
        request = request_class(18)[4](client_software_name="capture", client_software_version="1")
        features = round_trip(sock, request, 2, "capture")
    return {
        "kafka_version": version,
        "captured_with": "ApiVersions v3 to a freshly formatted single combined-mode node"
        f" (tests/differential/reference.py, kafka_2.13 {version})",
        "apis": {str(api.api_key): [api.min_version, api.max_version] for api in answer.api_keys},
        "finalized_features": {
            f.name: [f.min_version_level, f.max_version_level] for f in answer.finalized_features
        },
        "supported_features": {f.name: [f.min_version, f.max_version] for f in features.supported_features},
    }


def write(found: dict[str, object]) -> Path:
    apis: dict[str, list[int]] = found["apis"]  # type: ignore[assignment]
    lines = [
        "{",
        f' "kafka_version": {json.dumps(found["kafka_version"])},',
        f' "captured_with": {json.dumps(found["captured_with"])},',
        ' "apis": {',
        ",\n".join(f'  "{key}": {json.dumps(apis[key])}' for key in sorted(apis, key=int)),
        " },",
        f' "finalized_features": {json.dumps(found["finalized_features"])},',
        f' "supported_features": {json.dumps(found["supported_features"])}',
        "}",
    ]
    path = DATA / f"apiversions-kafka-{found['kafka_version']}.json"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(versions: list[str]) -> int:
    for version in versions:
        print(write(capture(version)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
