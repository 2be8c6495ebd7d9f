"""The message schemas bundled in messages/schemas/ are the ones kafka-clients (the
version tests/java/pom.xml pins, Kafka 4.4's) encodes and decodes: for every bundled API
and version, each field's name, wire type, nullability and tag, nested structures
included, equal what kafka-clients' own generated classes say (mockbroker.SchemaDump)."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

from tests.java.runner import run_java

PRIMITIVES = {
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "uint16": "UINT16",
    "uuid": "UUID",
    "bool": "BOOLEAN",
    "float64": "FLOAT64",
}


def _load(name: str) -> dict[str, Any]:
    text = resources.files("messages.schemas").joinpath(name).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
    return loaded


def _in(spec: str | None, version: int) -> bool:
    if spec is None or spec == "none":
        return False
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    low, _, high = spec.partition("-")
    return int(low) <= version <= int(high or low)


def _type(kind: str, nullable: bool, flexible: bool) -> str:
    if kind in ("string", "bytes", "records"):
        base = {"string": "STRING", "bytes": "BYTES", "records": "RECORDS"}[kind]
        return ("COMPACT_" if flexible else "") + ("NULLABLE_" if nullable else "") + base
    return PRIMITIVES[kind]


def _lines(
    fields: list[dict[str, Any]], common: dict[str, Any], version: int, flexible: bool, indent: str
) -> list[str]:
    out: list[str] = []
    tagged = []
    for field in fields:
        if not _in(field.get("versions"), version):
            continue
        if _in(field.get("taggedVersions"), version):
            tagged.append(field)
            continue
        out += _field(field, common, version, flexible, indent)
    if flexible:
        out.append(indent + "_tagged_fields")
        for field in tagged:
            out.append(f"{indent}  tag {field['tag']} {_snake(field['name'])}")
            out += _nested(field, common, version, flexible, indent + "    ")
    return out


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _nested(
    field: dict[str, Any], common: dict[str, Any], version: int, flexible: bool, indent: str
) -> list[str]:
    kind = field["type"].removeprefix("[]")
    if not kind[0].isupper():
        return []
    return _lines(field.get("fields") or common[kind], common, version, flexible, indent)


def _field(
    field: dict[str, Any], common: dict[str, Any], version: int, flexible: bool, indent: str
) -> list[str]:
    kind, nullable = field["type"], _in(field.get("nullableVersions"), version)
    prefix = f"{indent}{_snake(field['name'])} : {'nullable ' if nullable else ''}"
    if kind.startswith("[]"):
        element = kind[2:]
        shown = "ARRAY" if element[0].isupper() else f"ARRAY<{_type(element, False, flexible)}>"
        return [prefix + shown, *_nested(field, common, version, flexible, indent + "  ")]
    if kind[0].isupper():
        return [prefix + "STRUCT", *_nested(field, common, version, flexible, indent + "  ")]
    return [prefix + _type(kind, nullable, flexible)]


def bundled() -> dict[int, dict[str, list[str]]]:
    """Every bundled API's lines, by "request vN"/"response vN", as SchemaDump prints them."""
    found: dict[int, dict[str, list[str]]] = {}
    for entry in sorted(resources.files("messages.schemas").iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(("Request.json", "Response.json")):
            continue
        schema = _load(entry.name)
        common = {c["name"]: c["fields"] for c in schema.get("commonStructs", [])}
        low, _, high = schema["validVersions"].partition("-")
        for version in range(int(low), int(high or low) + 1):
            flexible = _in(schema["flexibleVersions"], version)
            lines = _lines(schema["fields"], common, version, flexible, "")
            found.setdefault(schema["apiKey"], {})[f"{schema['type']} v{version}"] = lines
    return found


def test_the_bundled_schemas_are_kafka_clients_own(java_classpath: str) -> None:
    ours = bundled()
    theirs = run_java(java_classpath, *map(str, sorted(ours)), main="mockbroker.SchemaDump")
    for api_key, versions in ours.items():
        for version, lines in versions.items():
            assert lines == theirs[str(api_key)].get(version), (
                f"API {api_key} {version} differs from kafka-clients"
            )
