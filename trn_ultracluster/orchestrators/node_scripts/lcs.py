#!/usr/bin/env python3
"""Helpers of the TrnUltraCluster node scripts (standard library only).

The HyperPod lifecycle script (``on_init_complete.sh``), the standalone nodes' setup
(``node_setup.sh``) and the library both source (``fsx.sh``) call this module for everything
that reads JSON or needs Python:

- ``node-ip``: this node's address in the VPC;
- ``role ADDRESS``: the node's Slurm role (``controller``, ``login`` or ``compute``);
- ``group ADDRESS``: the name of the node's instance group;
- ``fsx-status``: the state of the stack's file system and whether it is EFA-enabled, from
  ``aws fsx describe-file-systems`` JSON on stdin;
- ``link-status ASSOCIATIONS TASKS``: the state of its data repository association and the
  association's metadata import, from two saved JSON answers;
- ``env-file [--set MEMBER=VALUE ...]``: the shell-sourceable ``/fsx/.trn-ultracluster/env``;
- ``env-get MEMBER [MEMBER ...]``: values of that environment, one line each (empty when
  absent; a value with a line break is an error);
- ``fsx-get KEY``: one value of the ``fsx`` section (JSON booleans as ``true``/``false``);
- ``fsx-efa``: the ``fsx.efa`` section as one line for ``read``: ``MODE INTERFACES CHECK_MIB
  NAMESPACE METRIC`` (``off 0 0 - -`` without it);
- ``get SECTION KEY``: one value of any section (the same way);
- ``log-events LOG_FILE``: the end of a log file as CloudWatch Logs ``PutLogEvents`` events
  (JSON on stdout);
- ``enroot-config-dir HOME UID GID``: where Enroot reads a user's ``.credentials``.

Inputs:

- ``trn_ultracluster.json`` (written by the stack next to this file,
  ``trn_ultracluster/orchestrators/nodes.py`` ``node_file`` and the orchestrator's own
  sections: HyperPod ``groups``, standalone ``node``)::

      {"groups": {"controller": str, "login": str | null, "workers": [str, ...]},
       "node": {...},
       "fsx": {"tag_key": str, "tag_value": str, "data_repository": bool,
               "efa": {"mode": "off" | "preferred" | "required", "interfaces": int,
                       "check_mib": int, "metric": {"namespace": str, "name": str}}},
       "names": {MEMBER: VARIABLE, ...},
       "env": {VARIABLE: value, ...}}

  ``names`` is the project's ``JobEnv`` contract (``trn_ultracluster/contracts/hyperpod.py``):
  the scripts name variables by its members (``FSX_MOUNT_POINT``), never by copies of the
  variable names.

- HyperPod's resource config (``$SAGEMAKER_RESOURCE_CONFIG_PATH``, default
  ``/opt/ml/config/resource_config.json``): ``InstanceGroups[].Name`` and
  ``InstanceGroups[].Instances[].CustomerIpAddress`` (the fields AWS's HyperPod base
  lifecycle scripts read, aws-samples/awsome-distributed-training
  ``1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/lifecycle_script.py``).

Errors exit with status 2 and one line on stderr naming the file and the problem.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

# typing only for the type checker; shlex, socket and pathlib imported by the commands that
# use them: a node script starts this module a few dozen times per run, most often for one
# value of trn_ultracluster.json, and these imports were a sixth of each start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

ENV_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
ROUTE_PROBE = ("10.254.254.254", 1)
"""A private address no packet is sent to: ``connect`` on a UDP socket only picks the
interface and source address the kernel would route towards the VPC, which is the node's
primary address even on a trn1 with many network interfaces (the same probe as
``get_ip_address`` in AWS's base-config ``lifecycle_script.py``)."""
IP_ATTEMPTS, IP_FIRST_DELAY_S = 7, 5
"""Attempts and first delay (doubling) of :func:`node_ip` (base-config: 7 and 5 s)."""
FSX_FAILED_STATES = {"FAILED", "MISCONFIGURED", "MISCONFIGURED_UNAVAILABLE", "DELETING"}
"""``FileSystem.Lifecycle`` values after which the file system will not become AVAILABLE
(botocore 1.44 ``fsx`` model, ``FileSystemLifecycle``: AVAILABLE, CREATING, FAILED,
DELETING, MISCONFIGURED, UPDATING, MISCONFIGURED_UNAVAILABLE)."""
ENROOT_CONF = "/etc/enroot/enroot.conf"
IMPORT_TASK = "IMPORT_METADATA_FROM_REPOSITORY"
TASK_RUNNING = {"PENDING", "EXECUTING", "CANCELING"}
MAX_BATCH_BYTES, EVENT_OVERHEAD_BYTES, MAX_BATCH_EVENTS = 1_048_576, 26, 10_000
"""CloudWatch Logs ``PutLogEvents`` batch limits: 1,048,576 bytes counted as the UTF-8
messages plus 26 bytes per event, and 10,000 events (botocore 1.44 ``logs`` model,
``PutLogEvents`` documentation)."""
"""``DataRepositoryTaskLifecycle`` values of a task not finished yet (botocore 1.44 ``fsx``
model: PENDING, EXECUTING, FAILED, SUCCEEDED, CANCELED, CANCELING)."""


class LifecycleError(Exception):
    """A lifecycle input is missing or malformed; the message says which and why."""


def load_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file.

    Raises:
        LifecycleError: the file is missing or not valid JSON.
    """
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except FileNotFoundError:
        raise LifecycleError(f"{path}: file not found") from None
    except json.JSONDecodeError as err:
        raise LifecycleError(f"{path}: not valid JSON ({err})") from None


def node_ip(probe: Callable[[], str] | None = None, sleep: Callable[[float], None] = time.sleep,
            attempts: int = IP_ATTEMPTS, first_delay_s: float = IP_FIRST_DELAY_S) -> str:
    """This node's address towards the VPC (see :data:`ROUTE_PROBE`).

    Retries while the network is not up yet (base-config retries the same way).

    Raises:
        LifecycleError: no route after ``attempts`` tries (base-config falls back to
            127.0.0.1, which no instance group holds; we say so instead).
    """
    probe = probe or _route_source_address
    delay = first_delay_s
    for attempt in range(1, attempts + 1):
        try:
            return probe()
        except OSError as err:
            if attempt == attempts:
                raise LifecycleError(f"no route towards the VPC after {attempts} attempts "
                                     f"({err})") from None
            sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")


def _route_source_address() -> str:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(ROUTE_PROBE)
        return str(sock.getsockname()[0])


def node_group(resource_config: dict[str, Any], address: str) -> str:
    """Name of the instance group of the node with ``address``.

    Args:
        resource_config: HyperPod's ``resource_config.json``.

    Raises:
        LifecycleError: no instance group holds ``address``.
    """
    for group in resource_config.get("InstanceGroups", []):
        if any(i.get("CustomerIpAddress") == address for i in group.get("Instances", [])):
            return str(group.get("Name"))
    raise LifecycleError(f"no instance group in the resource config holds address {address}")


def node_role(resource_config: dict[str, Any], groups: dict[str, Any], address: str) -> str:
    """Slurm role of the node with ``address``: ``controller``, ``login`` or ``compute``.

    Args:
        resource_config: HyperPod's ``resource_config.json``.
        groups: ``trn_ultracluster.json`` ``groups``.

    Raises:
        LifecycleError: no instance group holds ``address``.
    """
    name = node_group(resource_config, address)
    if name == groups.get("controller"):
        return "controller"
    if name == groups.get("login"):
        return "login"
    return "compute"


def file_system_status(described: dict[str, Any], tag_key: str, tag_value: str) -> str:
    """What the script should do about the stack's file system, from a
    ``DescribeFileSystems`` answer: ``"<verdict> <id> <Lifecycle> <DNSName> <MountName>
    <EfaEnabled>"``.

    The verdict is ``ready`` (``AVAILABLE``), ``failed`` (:data:`FSX_FAILED_STATES`) or
    ``wait``: ``CREATING``; ``UPDATING``, while which the file system "may be unavailable
    for a few minutes" (FSx for Lustre user guide, "Managing storage capacity",
    https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-storage-capacity.html);
    or no file system has the tag yet (CloudFormation creates it alongside the cluster).
    Unknown fields are ``-``. ``EfaEnabled`` is ``LustreConfiguration.EfaEnabled`` (botocore
    1.44 ``fsx`` model, ``LustreFileSystemConfiguration``: "whether Elastic Fabric Adapter
    (EFA) and GPUDirect Storage (GDS) support is enabled") as ``true`` or ``false``; a file
    system without the field is ``false`` (AWS's HyperPod lifecycle script observes that "if
    FSx is created without EFA, the field doesn't exist in the describe call":
    awslabs/awsome-distributed-ai ``1.architectures/5.sagemaker-hyperpod/LifecycleScripts/
    base-config/mount_fsx.sh`` @11e237a).

    ``DescribeFileSystems`` has no tag filter (botocore 1.44 ``fsx`` model:
    ``FileSystemIds``, ``MaxResults``, ``NextToken`` only), so the caller lists the
    account's file systems (the AWS CLI follows ``NextToken`` itself) and this filters on
    ``tag_key=tag_value``.

    Raises:
        LifecycleError: more than one file system has the tag.
    """
    found = [fs for fs in described.get("FileSystems", [])
             if {"Key": tag_key, "Value": tag_value} in fs.get("Tags", [])]
    if len(found) > 1:
        ids = ", ".join(fs.get("FileSystemId", "?") for fs in found)
        raise LifecycleError(f"{len(found)} file systems are tagged {tag_key}={tag_value}: {ids}")
    if not found:
        return "wait - NOT_CREATED - - -"
    fs = found[0]
    state = fs.get("Lifecycle") or "-"
    verdict = ("ready" if state == "AVAILABLE"
               else "failed" if state in FSX_FAILED_STATES else "wait")
    lustre = fs.get("LustreConfiguration") or {}
    fields = [fs.get("FileSystemId"), state, fs.get("DNSName"), lustre.get("MountName")]
    efa = "true" if lustre.get("EfaEnabled") is True else "false"
    return " ".join([verdict, *(f or "-" for f in fields), efa])


def link_status(associations: dict[str, Any], tasks: dict[str, Any]) -> str:
    """Whether the file system's data repository association is ready for files to be
    written: ``"<verdict> <detail>"`` from ``DescribeDataRepositoryAssociations`` and
    ``DescribeDataRepositoryTasks`` answers (both filtered on the file system).

    The stack creates the association with ``BatchImportMetaDataOnCreate``: "an import data
    repository task to import metadata should run after the data repository association is
    created" (FSx API reference, ``DataRepositoryAssociation``). Files a node writes before
    that import ends (home directories, the job environment) would meet the linked bucket's
    objects of the same names, e.g. those a previous stack exported, so the script waits for:

    - ``wait association-not-created`` / ``wait association-<Lifecycle>``;
    - ``failed association-FAILED``;
    - ``wait import-<Lifecycle>``: an import task is PENDING, EXECUTING or CANCELING;
    - ``ready import-<Lifecycle>``: the newest import task has ended (FAILED too: its
      report says which files, and the bucket's other objects are there);
    - ``no-import association-AVAILABLE``: no import task is listed yet (the caller waits
      a little for one to appear).
    """
    found = associations.get("Associations", [])
    if not found:
        return "wait association-not-created"
    state = found[0].get("Lifecycle") or "UNKNOWN"
    if state == "FAILED":
        return "failed association-FAILED"
    if state != "AVAILABLE":
        return f"wait association-{state}"
    imports = sorted((t for t in tasks.get("DataRepositoryTasks", []) if t.get("Type") == IMPORT_TASK),
                     key=lambda t: str(t.get("CreationTime", "")))
    if not imports:
        return "no-import association-AVAILABLE"
    last = imports[-1].get("Lifecycle") or "UNKNOWN"
    return f"{'wait' if last in TASK_RUNNING else 'ready'} import-{last}"


def variable(cluster: dict[str, Any], member: str) -> str:
    """The job-environment variable of the contract member ``member`` (``cluster["names"]``).

    Raises:
        LifecycleError: the lifecycle file has no such member.
    """
    names = cluster.get("names", {})
    if member not in names:
        raise LifecycleError(f"no job environment member {member!r} in the lifecycle file "
                             f"(known: {', '.join(sorted(names)) or 'none'})")
    return str(names[member])


def env_values(cluster: dict[str, Any], members: list[str]) -> str:
    """The job-environment values of ``members``, one line each in their order (an empty
    line for a variable the file does not set), for ``mapfile`` in a node script
    (``env_get`` in ``fsx.sh``).

    Raises:
        LifecycleError: a member is unknown, or its value has a line break (it would shift
            the lines after it).
    """
    env = cluster.get("env", {})
    lines = []
    for member in members:
        value = str(env.get(variable(cluster, member), ""))
        if "\n" in value or "\r" in value:
            raise LifecycleError(f"job environment member {member}: its value {value!r} "
                                 "has a line break")
        lines.append(f"{value}\n")
    return "".join(lines)


def env_file(cluster: dict[str, Any], extra: dict[str, str] | None = None) -> str:
    """Shell-sourceable ``export NAME='value'`` lines of ``cluster["env"]`` and ``extra``
    (member -> value; it wins), sorted by name.

    Raises:
        LifecycleError: a name is not an upper-case shell variable name, or an ``extra``
            member is unknown.
    """
    import shlex

    lines = ["# Written by the TrnUltraCluster lifecycle scripts; source it in job scripts."]
    values = {**cluster.get("env", {}),
              **{variable(cluster, member): value for member, value in (extra or {}).items()}}
    for name, value in sorted(values.items()):
        if not ENV_NAME_RE.match(name):
            raise LifecycleError(f"env name {name!r} is not an upper-case shell variable name")
        lines.append(f"export {name}={shlex.quote(str(value))}")
    return "\n".join(lines) + "\n"


def enroot_config_dir(home: str, uid: int, gid: int,
                      conf: str | os.PathLike[str] = ENROOT_CONF) -> str:
    """The directory where Enroot looks for a user's ``.credentials``.

    ``ENROOT_CONFIG_PATH`` from ``enroot.conf`` if it sets one, else Enroot's default
    ``${XDG_CONFIG_HOME}/enroot`` with ``XDG_CONFIG_HOME`` unset, i.e. ``$HOME/.config/enroot``
    (Enroot docs, ``doc/configuration.md``, runtime configuration table; the HyperPod
    base-config ``utils/enroot.conf`` sets ``${HOME}/enroot``). The expressions such files
    use are expanded for the user: ``$HOME``/``${HOME}``, ``${XDG_CONFIG_HOME}``,
    ``$(id -u)``, ``$(id -g)``.

    Raises:
        LifecycleError: the value holds another expression this function cannot expand.
    """
    from pathlib import Path

    value = "${XDG_CONFIG_HOME}/enroot"
    path = Path(conf)
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2 and parts[0] == "ENROOT_CONFIG_PATH":
                value = parts[1].strip()
    for text, replacement in (("${XDG_CONFIG_HOME}", f"{home}/.config"),
                              ("$XDG_CONFIG_HOME", f"{home}/.config"),
                              ("${HOME}", home), ("$HOME", home),
                              ("$(id -u)", str(uid)), ("$(id -g)", str(gid))):
        value = value.replace(text, replacement)
    if "$" in value or "`" in value or not value.startswith("/"):
        raise LifecycleError(f"{conf}: cannot expand ENROOT_CONFIG_PATH {value!r}")
    return value


def section_value(cluster: dict[str, Any], section: str, key: str) -> str:
    """One value of ``cluster[section]`` as the shell reads it: JSON booleans as
    ``true``/``false``, ``null`` and absent keys as the empty string."""
    value = cluster.get(section, {}).get(key)
    if isinstance(value, bool):
        return json.dumps(value)
    return "" if value is None else str(value)


EFA_MODES = ("off", "preferred", "required")
"""``fsx.efa.mode`` (``trn_ultracluster/config/fsx_efa.py``, ``EfaMode``)."""


def efa_settings(cluster: dict[str, Any]) -> str:
    """``fsx.efa`` of the lifecycle file as ``"MODE INTERFACES CHECK_MIB NAMESPACE METRIC"``
    (written by ``trn_ultracluster/orchestrators/nodes.py`` ``efa_node_settings``); a file
    without it (a stack from before fsx.efa) is ``"off 0 0 - -"``.

    Raises:
        LifecycleError: an unknown mode, or a mode other than ``off`` without a positive
            interface count and check size or without the metric's namespace and name.
    """
    efa = cluster.get("fsx", {}).get("efa") or {"mode": "off"}
    mode = efa.get("mode")
    if mode not in EFA_MODES:
        raise LifecycleError(f"fsx.efa.mode {mode!r} is not one of {', '.join(EFA_MODES)}")
    if mode == "off":
        return "off 0 0 - -"
    metric = efa.get("metric") or {}
    fields = [efa.get("interfaces"), efa.get("check_mib"), metric.get("namespace"),
              metric.get("name")]
    if not (isinstance(fields[0], int) and isinstance(fields[1], int) and fields[0] > 0
            and fields[1] > 0 and all(isinstance(f, str) and f and " " not in f
                                      for f in fields[2:])):
        raise LifecycleError(f"fsx.efa {efa!r} needs positive interfaces and check_mib and a "
                             "metric namespace and name without spaces")
    return " ".join(str(f) for f in [mode, *fields])


def log_events(text: str, timestamp_ms: int) -> list[dict[str, Any]]:
    """The end of a log as one ``PutLogEvents`` batch: one event per non-empty line, all at
    ``timestamp_ms`` (one time, so the batch is in order), the newest lines kept within
    :data:`MAX_BATCH_EVENTS` and :data:`MAX_BATCH_BYTES`. Returns ``[]`` for an empty log."""
    events: list[dict[str, Any]] = []
    size = 0
    for line in reversed([ln for ln in text.splitlines() if ln.strip()]):
        cost = len(line.encode("utf-8")) + EVENT_OVERHEAD_BYTES
        if len(events) == MAX_BATCH_EVENTS or size + cost > MAX_BATCH_BYTES:
            break
        events.append({"timestamp": timestamp_ms, "message": line})
        size += cost
    return events[::-1]


def _assignment(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name, value


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; see the module docstring for the commands."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resource-config", default="/opt/ml/config/resource_config.json")
    parser.add_argument("--cluster", default="trn_ultracluster.json")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("node-ip")
    for command in ("role", "group"):
        sub.add_parser(command).add_argument("address")
    sub.add_parser("fsx-status")
    link = sub.add_parser("link-status")
    link.add_argument("associations")
    link.add_argument("tasks")
    env = sub.add_parser("env-file")
    env.add_argument("--set", type=_assignment, action="append", default=[])
    env_get = sub.add_parser("env-get")
    env_get.add_argument("member", nargs="+")
    fsx_get = sub.add_parser("fsx-get")
    fsx_get.add_argument("key")
    sub.add_parser("fsx-efa")
    get = sub.add_parser("get")
    get.add_argument("section")
    get.add_argument("key")
    events = sub.add_parser("log-events")
    events.add_argument("log_file")
    enroot = sub.add_parser("enroot-config-dir")
    enroot.add_argument("home")
    enroot.add_argument("uid", type=int)
    enroot.add_argument("gid", type=int)
    enroot.add_argument("--conf", default=ENROOT_CONF)
    args = parser.parse_args(argv)
    try:
        if args.command == "node-ip":
            print(node_ip())
        elif args.command == "enroot-config-dir":
            print(enroot_config_dir(args.home, args.uid, args.gid, args.conf))
        elif args.command == "fsx-status":
            fsx = load_json(args.cluster).get("fsx", {})
            try:
                described = json.loads(sys.stdin.read())
            except json.JSONDecodeError:  # a cut or mixed answer: ask again
                print("wait - UNREADABLE_ANSWER - - -")
                return 0
            print(file_system_status(described, fsx.get("tag_key", ""), fsx.get("tag_value", "")))
        elif args.command == "link-status":
            print(link_status(load_json(args.associations), load_json(args.tasks)))
        elif args.command == "env-file":
            sys.stdout.write(env_file(load_json(args.cluster), dict(args.set)))
        elif args.command == "env-get":
            sys.stdout.write(env_values(load_json(args.cluster), args.member))
        elif args.command == "fsx-efa":
            print(efa_settings(load_json(args.cluster)))
        elif args.command in ("fsx-get", "get"):
            section = "fsx" if args.command == "fsx-get" else args.section
            print(section_value(load_json(args.cluster), section, args.key))
        elif args.command == "log-events":
            from pathlib import Path

            log = Path(args.log_file)
            text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
            print(json.dumps(log_events(text, int(time.time() * 1000))))
        elif args.command == "group":
            print(node_group(load_json(args.resource_config), args.address))
        else:
            groups = load_json(args.cluster).get("groups", {})
            print(node_role(load_json(args.resource_config), groups, args.address))
    except LifecycleError as err:
        print(f"lcs.py: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
