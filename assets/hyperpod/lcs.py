#!/usr/bin/env python3
"""Helpers of the TrnUltraCluster HyperPod lifecycle scripts (standard library only).

``on_create.sh`` calls this module for everything that reads JSON:

- ``role``: which Slurm role this node has (``controller``, ``login`` or ``compute``), found
  by looking up the node's IP address in HyperPod's resource config;
- ``controller-ips``: the controller addresses, comma separated;
- ``get KEY``: one value of the provisioning parameters;
- ``env-file``: the shell-sourceable ``/fsx/.trn-ultracluster/env`` content;
- ``env-get NAME``: one value of that environment (empty when absent).

Inputs:

- ``provisioning_parameters.json`` (written by the stack next to this file): keys
  ``version``, ``workload_manager``, ``controller_group``, ``login_group``,
  ``worker_groups`` (``instance_group_name``, ``partition_name``), ``fsx_dns_name``,
  ``fsx_mountname`` — the format of the AWS HyperPod base lifecycle scripts
  (aws-samples/awsome-distributed-training,
  ``1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/provisioning_parameters.json``).
- HyperPod's resource config (``$SAGEMAKER_RESOURCE_CONFIG_PATH``, default
  ``/opt/ml/config/resource_config.json``): ``InstanceGroups[].Name`` and
  ``InstanceGroups[].Instances[].CustomerIpAddress`` (same source, ``lifecycle_script.py``).
- ``trn_ultracluster.json`` (written by the stack): ``{"env": {NAME: value}}``, the stack
  outputs that job scripts read.

Errors exit with status 2 and one line on stderr naming the file and the problem.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

ENV_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")


class LifecycleError(Exception):
    """A lifecycle input is missing or malformed; the message says which and why."""


def load_json(path: str | Path) -> Any:
    """Read a JSON file.

    Raises:
        LifecycleError: the file is missing or not valid JSON.
    """
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LifecycleError(f"{path}: file not found") from None
    except json.JSONDecodeError as err:
        raise LifecycleError(f"{path}: not valid JSON ({err})") from None


def group_addresses(resource_config: dict[str, Any], group_name: str) -> list[str]:
    """IP addresses of the instances of one instance group (empty if the group is absent)."""
    for group in resource_config.get("InstanceGroups", []):
        if group.get("Name") == group_name:
            return [i["CustomerIpAddress"] for i in group.get("Instances", [])
                    if i.get("CustomerIpAddress")]
    return []


def node_role(resource_config: dict[str, Any], params: dict[str, Any], address: str) -> str:
    """Slurm role of the node with ``address``: ``controller``, ``login`` or ``compute``.

    Raises:
        LifecycleError: no instance group holds ``address``.
    """
    for group in resource_config.get("InstanceGroups", []):
        if any(i.get("CustomerIpAddress") == address for i in group.get("Instances", [])):
            if group.get("Name") == params.get("controller_group"):
                return "controller"
            if group.get("Name") == params.get("login_group"):
                return "login"
            return "compute"
    raise LifecycleError(f"no instance group in the resource config holds address {address}")


def env_file(cluster: dict[str, Any]) -> str:
    """Shell-sourceable ``NAME='value'`` lines of ``cluster["env"]``, sorted by name.

    Raises:
        LifecycleError: a name is not an upper-case shell variable name.
    """
    lines = ["# Written by the TrnUltraCluster lifecycle scripts; source it in job scripts."]
    for name, value in sorted(cluster.get("env", {}).items()):
        if not ENV_NAME_RE.match(name):
            raise LifecycleError(f"env name {name!r} is not an upper-case shell variable name")
        lines.append(f"export {name}={shlex.quote(str(value))}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; see the module docstring for the commands."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="provisioning_parameters.json")
    parser.add_argument("--resource-config", default="/opt/ml/config/resource_config.json")
    parser.add_argument("--cluster", default="trn_ultracluster.json")
    sub = parser.add_subparsers(dest="command", required=True)
    role = sub.add_parser("role")
    role.add_argument("address")
    sub.add_parser("controller-ips")
    get = sub.add_parser("get")
    get.add_argument("key")
    sub.add_parser("env-file")
    env_get = sub.add_parser("env-get")
    env_get.add_argument("name")
    args = parser.parse_args(argv)
    try:
        if args.command == "env-file":
            sys.stdout.write(env_file(load_json(args.cluster)))
            return 0
        if args.command == "env-get":
            print(load_json(args.cluster).get("env", {}).get(args.name, ""))
            return 0
        params = load_json(args.params)
        if args.command == "get":
            if args.key not in params:
                raise LifecycleError(f"{args.params}: no key {args.key!r}")
            print(params[args.key])
        else:
            resources = load_json(args.resource_config)
            if args.command == "role":
                print(node_role(resources, params, args.address))
            else:
                ips = group_addresses(resources, params.get("controller_group", ""))
                if not ips:
                    raise LifecycleError(f"{args.resource_config}: controller group "
                                         f"{params.get('controller_group')!r} has no instances")
                print(",".join(ips))
    except LifecycleError as err:
        print(f"lcs.py: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
