#!/usr/bin/env python3
"""A HyperPod Slurm node's pool (standard library only; beside ``lcs.py``, whose
``group ADDRESS`` names the node's instance group).

``on_init_complete.sh`` calls it on a worker node with its instance group:

- ``pool GROUP``: ``"<pool> <efa>"``: the group's pool and whether its type has an EFA
  device (``true``/``false``); ``"- true"`` for a group of the main pool (or of a cluster
  without pools), where the cluster's ``fsx.efa`` applies as before pools existed;
- ``env GROUP``: the node's own job environment file
  (``trn_ultracluster/contracts/hyperpod.py`` ``NODE_ENV_FILE``): what the pool's
  environment changes in the shared one (``env`` of ``trn_ultracluster.json``, the main
  pool's values, in ``/fsx/.trn-ultracluster/env``): an ``unset`` line for the variables the
  pool has not (a CPU pool has no ``FI_PROVIDER``), then ``export NAME='value'`` for every
  variable of the pool, sorted; only a comment for a group of the main pool.

Input: ``trn_ultracluster.json`` (``trn_ultracluster/orchestrators/hyperpod_slurm/
lifecycle.py`` ``lifecycle_file``), its ``env`` and its optional ``pools`` section::

    {"env": {VARIABLE: value, ...},
     "pools": {POOL: {"groups": [GROUP, ...], "efa": bool, "env": {VARIABLE: value, ...}}}}

Errors exit with status 2 and one line on stderr naming the file and the problem.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from lcs import ENV_NAME_RE, LifecycleError, load_json

MAIN = "-"
"""What ``pool`` prints for the main pool's name (the file does not name it)."""


def pool_of(cluster: dict[str, Any], group: str) -> tuple[str, dict[str, Any] | None]:
    """The pool of instance group ``group`` and its section, or ``(MAIN, None)`` when no
    ``pools`` entry lists the group (a group of the main pool).

    Raises:
        LifecycleError: ``pools`` is not a mapping of pools with ``groups``, ``efa`` and
            ``env``.
    """
    pools = cluster.get("pools", {})
    if not isinstance(pools, dict):
        raise LifecycleError("pools is not a mapping of pool names to pools")
    for name, pool in pools.items():
        if not (isinstance(pool, dict) and isinstance(pool.get("groups"), list)
                and isinstance(pool.get("efa"), bool) and isinstance(pool.get("env"), dict)):
            raise LifecycleError(f"pools.{name} needs groups (a list), efa (true or false) and "
                                 "env (a mapping)")
        if group in pool["groups"]:
            return str(name), pool
    return MAIN, None


def pool_line(cluster: dict[str, Any], group: str) -> str:
    """``"<pool> <efa>"`` of ``group`` (module docstring)."""
    name, pool = pool_of(cluster, group)
    return f"{name} {'true' if pool is None or pool['efa'] else 'false'}"


def node_env_file(cluster: dict[str, Any], group: str) -> str:
    """The node's own environment file of ``group`` (module docstring).

    Raises:
        LifecycleError: a variable name is not an upper-case shell variable name, or the
            ``pools`` section is malformed (:func:`pool_of`).
    """
    name, pool = pool_of(cluster, group)
    lines = ["# Written by the TrnUltraCluster lifecycle scripts; job scripts source it after "
             "the shared job environment."]
    if pool is None:
        lines.append("# This node is in the main pool: the shared environment is its own.")
        return "\n".join(lines) + "\n"
    lines.append(f"# This node is in pool {name}: its values of the job environment.")
    env = {str(k): str(v) for k, v in pool["env"].items()}
    shared = {str(k) for k in cluster.get("env", {})}
    for variable in [*env, *shared]:
        if not ENV_NAME_RE.match(variable):
            raise LifecycleError(f"env name {variable!r} is not an upper-case shell variable name")
    gone = sorted(shared - set(env))
    if gone:
        lines.append(f"unset {' '.join(gone)}")
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; see the module docstring for the commands."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", default="trn_ultracluster.json")
    parser.add_argument("command", choices=("pool", "env"))
    parser.add_argument("group", help="the node's instance group (lcs.py group ADDRESS)")
    args = parser.parse_args(argv)
    try:
        cluster = load_json(args.cluster)  # its errors name the file
        try:
            text = (pool_line(cluster, args.group) + "\n" if args.command == "pool"
                    else node_env_file(cluster, args.group))
        except LifecycleError as err:
            raise LifecycleError(f"{args.cluster}: {err}") from None
    except LifecycleError as err:
        print(f"pool_env.py: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
