"""The API reference page (docs/reference/apis.md), rendered from the handler modules'
declarations (broker/handlers/spec.py): what ApiVersions advertises, when, how each API
is authorized, and what of Kafka's behaviour it leaves out. scripts/gen_reference.py
writes it; tests/docs/test_reference.py fails when it drifts from the code."""

from __future__ import annotations

from broker.handlers import HANDLERS
from broker.handlers.spec import ALWAYS, HandlerSpec
from protocol.api_keys import ApiKey

# Kafka 4.x APIs a client may send that this broker does not serve, and why.
CLIENT_APIS_NOT_SERVED = {
    ApiKey.SHARE_GROUP_HEARTBEAT: "share groups (KIP-932)",
    ApiKey.SHARE_GROUP_DESCRIBE: "share groups (KIP-932)",
    ApiKey.SHARE_FETCH: "share groups (KIP-932)",
    ApiKey.SHARE_ACKNOWLEDGE: "share groups (KIP-932)",
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: "share groups (KIP-932)",
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: "share groups (KIP-932)",
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: "share groups (KIP-932)",
}


def _anchor(spec: HandlerSpec) -> str:
    return spec.name.lower()


def _range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _versions(spec: HandlerSpec) -> str:
    """What ApiVersions advertises."""
    return _range(*spec.advertised)


def _served(spec: HandlerSpec) -> str | None:
    """The versions served, where fewer than those advertised (the others close the connection)."""
    if spec.advertised == (spec.min_version, spec.max_version):
        return None
    return _range(spec.min_version, spec.max_version)


def _error_shape(spec: HandlerSpec) -> str:
    parts = []
    for first, level in spec.error_response.by_version:
        what = (
            "the top-level error code"
            if level is None
            else f"each entry of `{'`/`'.join(level.request)}` answered in `{level.response}`"
        )
        parts.append(f"v{first}+: {what}" if len(spec.error_response.by_version) > 1 else what)
    if spec.error_response.top_level_only_from is not None:
        parts.append(f"v{spec.error_response.top_level_only_from}+: the top-level error code alone")
    return "; ".join(parts)


def _authorization(spec: HandlerSpec) -> str:
    authorization = spec.authorization
    where = (
        " (checked by the handler)"
        if authorization.by_handler
        else " (checked before the handler)"
        if authorization.check is not None
        else ""
    )
    return authorization.summary + where


def render_api_reference() -> str:
    served = sorted(HANDLERS.values(), key=lambda spec: spec.api_key)
    lines = [
        "<!-- Generated from broker/handlers by scripts/gen_reference.py: do not edit by hand; run scripts/gen_reference.py. -->",
        "",
        "# APIs",
        "",
        f"The broker serves {len(served)} API keys. ApiVersions advertises each with the versions",
        "below, which its handler module in `broker/handlers/` declares; an API that depends on",
        "the configuration is advertised only when enabled. A request for an API or version",
        "not advertised closes the connection, except ApiVersions, which answers an unknown",
        "version in v0 with UNSUPPORTED_VERSION (KIP-511).",
        "",
        "| Key | API | Versions | Served |",
        "|---:|---|---|---|",
    ]
    for spec in served:
        lines.append(
            f"| {spec.api_key} | [{spec.name}](#{_anchor(spec)}) | {_versions(spec)} | {spec.enabled.summary} |"
        )
    lines += [
        "",
        "## Not served",
        "",
        "Kafka 4.x APIs that clients send and this broker does not serve (the others it lacks",
        "are spoken only between Kafka's own brokers and controllers):",
        "",
        "| Key | API | Part of |",
        "|---:|---|---|",
    ]
    for key, what in sorted(CLIENT_APIS_NOT_SERVED.items()):
        if key in HANDLERS:  # served now: its section below says so
            continue
        name = "".join(word.capitalize() for word in key.name.split("_"))
        lines.append(f"| {int(key)} | {name} | {what} |")
    for spec in served:
        lines += [
            "",
            f"## {spec.name}",
            "",
            spec.summary,
            "",
            f"- **Key** {spec.api_key}, **versions** {_versions(spec)}, handler "
            f"`broker/handlers/{ApiKey(spec.api_key).name.lower()}.py`",
            f"- **Authorization**: {_authorization(spec)}",
            f"- **Error response**: {_error_shape(spec)}",
        ]
        served_versions = _served(spec)
        if served_versions is not None:
            lines.append(
                f"- **Versions served**: {served_versions}; the others advertised close the connection, as in Kafka"
            )
        if spec.enabled is not ALWAYS:
            lines.append(f"- **Served** {spec.enabled.summary}")
        if spec.not_implemented:
            lines.append("- **Not implemented**:")
            lines += [f"    - {note}" for note in spec.not_implemented]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_api_reference(), end="")
