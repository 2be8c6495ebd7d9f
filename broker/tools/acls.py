"""`kafka-acls`: the main forms of Kafka's kafka-acls.sh, over the wire (CreateAcls,
DescribeAcls, DeleteAcls), for this broker or a real Kafka.

    kafka-acls --bootstrap-server HOST:PORT --add --allow-principal User:alice \\
        --operation Read --operation Describe --topic orders
    kafka-acls --bootstrap-server HOST:PORT --list [--topic orders] [--principal User:alice]
    kafka-acls --bootstrap-server HOST:PORT --remove --allow-principal User:alice --topic orders

Resources: --topic, --group, --transactional-id (repeatable), --cluster;
--resource-pattern-type literal (default), prefixed, or for --list/--remove also any and
match; --allow-host/--deny-host (default *); --command-config for SASL client properties.
Output follows kafka-acls.sh ("Current ACLs for resource `ResourcePattern(...)`:").

Exit codes: 0 success, 1 refused by the broker or not reachable, 2 usage errors.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import kafka.errors
from kafka import KafkaAdminClient
from kafka.protocol.admin.acl import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

from broker.security.acls import CLUSTER_NAME, Operation, PatternType, Permission, ResourceType
from broker.tools.client_quotas import UsageError, load_command_config
from protocol.errors import ErrorCode, error_name

PROG = "kafka-acls"
Binding = tuple[ResourceType, str, PatternType, str, str, Operation, Permission]


def _operation(text: str) -> Operation:
    """kafka-acls.sh spells them Read, Write, IdempotentWrite, DescribeConfigs, All, ..."""
    name = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", text).replace("-", "_").upper()
    try:
        return Operation[name]
    except KeyError:
        raise UsageError(f"unknown operation {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="broker(s) to connect to"
    )
    parser.add_argument("--command-config", help="client properties (security.protocol, sasl.*)")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="create ACLs (CreateAcls)")
    action.add_argument("--remove", action="store_true", help="delete ACLs (DeleteAcls)")
    action.add_argument("--list", action="store_true", help="list ACLs (DescribeAcls)")
    parser.add_argument(
        "--allow-principal",
        action="append",
        default=[],
        help="principal allowed, e.g. User:alice (repeatable)",
    )
    parser.add_argument("--deny-principal", action="append", default=[], help="principal denied (repeatable)")
    parser.add_argument("--principal", action="append", default=[], help="--list: only these principals")
    parser.add_argument(
        "--allow-host", action="append", default=[], help="host of the allow entries (default: *)"
    )
    parser.add_argument(
        "--deny-host", action="append", default=[], help="host of the deny entries (default: *)"
    )
    parser.add_argument(
        "--operation",
        action="append",
        default=[],
        help="Read, Write, Describe, ... (repeatable; default: All)",
    )
    parser.add_argument("--topic", action="append", default=[], help="topic resource (repeatable)")
    parser.add_argument("--group", action="append", default=[], help="consumer group resource (repeatable)")
    parser.add_argument(
        "--transactional-id", action="append", default=[], help="transactional id resource (repeatable)"
    )
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument(
        "--resource-pattern-type",
        default=None,
        choices=["literal", "prefixed", "any", "match"],
        type=str.lower,
        help="literal (default) or prefixed; --list and --remove also any and match",
    )
    parser.add_argument("--force", action="store_true", help="accepted for compatibility: no prompt is shown")
    return parser


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    found = [(ResourceType.TOPIC, t) for t in args.topic]
    found += [(ResourceType.GROUP, g) for g in args.group]
    found += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        found.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return found


def _entries(args: argparse.Namespace) -> list[tuple[str, str, Operation, Permission]]:
    operations = [_operation(o) for o in args.operation] or [Operation.ALL]
    entries = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host or ["*"], Permission.ALLOW),
        (args.deny_principal, args.deny_host or ["*"], Permission.DENY),
    ):
        entries += [(p, h, op, permission) for p in principals for h in hosts for op in operations]
    return entries


def _pattern_text(resource_type: int, name: str, pattern: int) -> str:
    return (
        f"ResourcePattern(resourceType={ResourceType(resource_type).name}, name={name}, "
        f"patternType={PatternType(pattern).name})"
    )


def _entry_text(principal: str, host: str, operation: int, permission: int) -> str:
    return (
        f"(principal={principal}, host={host}, operation={Operation(operation).name}, "
        f"permissionType={Permission(permission).name})"
    )


class AclClient:
    def __init__(self, bootstrap: str, settings: dict[str, Any]) -> None:
        self._admin = KafkaAdminClient(bootstrap_servers=bootstrap, **settings)

    def send(self, request: Any) -> Any:
        manager = self._admin._manager
        return manager.run(manager.send, request)

    def describe(
        self, resource: tuple[ResourceType, str] | None, pattern: PatternType, principal: str | None
    ) -> Any:
        resource_type, name = resource if resource is not None else (ResourceType.ANY, None)
        response = self.send(
            DescribeAclsRequest(
                resource_type_filter=resource_type,
                resource_name_filter=name,
                pattern_type_filter=pattern,
                principal_filter=principal,
                host_filter=None,
                operation=Operation.ANY,
                permission_type=Permission.ANY,
            )
        )
        if response.error_code:
            raise BrokerRefusal(response.error_code, response.error_message)
        return response.resources

    def close(self) -> None:
        self._admin.close()


class BrokerRefusal(Exception):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(f"{error_name(code)}: {message or ErrorCode(code).name}")


def _print_current(
    client: AclClient,
    resource: tuple[ResourceType, str] | None,
    pattern: PatternType,
    principals: Sequence[str],
    out: TextIO,
) -> None:
    for principal in principals or [None]:  # type: ignore[list-item]
        for found in client.describe(resource, pattern, principal):
            print(
                f"Current ACLs for resource `{_pattern_text(found.resource_type, found.resource_name, found.pattern_type)}`: ",
                file=out,
            )
            for acl in found.acls:
                print(
                    f" \t{_entry_text(acl.principal, acl.host, acl.operation, acl.permission_type)} ",
                    file=out,
                )
            print(file=out)


def run(args: argparse.Namespace, client: AclClient, out: TextIO) -> int:
    resources = _resources(args)
    pattern = PatternType[(args.resource_pattern_type or "literal").upper()]  # kafka-acls.sh's default
    if args.list:
        for resource in resources or [None]:  # type: ignore[list-item]
            _print_current(client, resource, pattern if resource else PatternType.ANY, args.principal, out)
        return 0
    if not resources:
        raise UsageError(
            "--add and --remove need a resource: --topic, --group, --transactional-id or --cluster"
        )
    entries = _entries(args)
    if args.add:
        if not entries:
            raise UsageError("--add needs --allow-principal or --deny-principal")
        if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise UsageError("--add takes --resource-pattern-type literal or prefixed")
        for resource_type, name in resources:
            print(f"Adding ACLs for resource `{_pattern_text(resource_type, name, pattern)}`: ", file=out)
            for principal, host, op, permission in entries:
                print(f" \t{_entry_text(principal, host, op, permission)} ", file=out)
            print(file=out)
            response = client.send(
                CreateAclsRequest(
                    creations=[(resource_type, name, pattern, p, h, op, perm) for p, h, op, perm in entries]
                )
            )
            for result in response.results:
                if result.error_code:
                    raise BrokerRefusal(result.error_code, result.error_message)
            _print_current(client, (resource_type, name), pattern, [], out)
        return 0
    # without principals, every ACL of the resource goes
    wanted: list[tuple[str | None, str | None, Operation, Permission]] = list(entries) or [
        (None, None, Operation.ANY, Permission.ANY)
    ]
    filters = [
        (resource_type, name, pattern, principal, host, op, permission)
        for resource_type, name in resources
        for principal, host, op, permission in wanted
    ]
    response = client.send(DeleteAclsRequest(filters=filters))
    for result in response.filter_results:
        if result.error_code:
            raise BrokerRefusal(result.error_code, result.error_message)
    for resource in resources:
        _print_current(client, resource, pattern, [], out)
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = load_command_config(args.command_config) if args.command_config else {}
        client = AclClient(args.bootstrap_server, settings)
    except UsageError as exc:
        parser.print_usage(err)
        print(f"{PROG}: error: {exc}", file=err)
        return 2
    except kafka.errors.KafkaError as exc:
        print(f"{PROG}: cannot reach {args.bootstrap_server}: {exc}", file=err)
        return 1
    try:
        return run(args, client, out)
    except UsageError as exc:
        parser.print_usage(err)
        print(f"{PROG}: error: {exc}", file=err)
        return 2
    except (BrokerRefusal, kafka.errors.KafkaError) as exc:
        print(f"{PROG}: {exc}", file=err)
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
