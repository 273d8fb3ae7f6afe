"""Slurm accounting for the test cluster of ``conftest.py``: a MariaDB server and slurmdbd,
each with private files under the cluster's temporary directory, started as children of the
test process (no systemd), and the teams of :data:`TEAMS_CONFIG` set up by the lifecycle's
own ``slurm_teams.py``, as on a HyperPod controller.

- MariaDB (Debian 12: ``mariadb-server`` 10.11): ``mariadb-install-db`` into a private
  datadir, then ``mariadbd --no-defaults`` on a private socket and a free TCP port on
  127.0.0.1 (slurmdbd reaches its database by host and port only: slurmdbd.conf(5),
  ``StorageHost``, ``StoragePort``); root logs in over the socket (unix_socket
  authentication), slurmdbd as its own database user with a password generated here, as
  AWS's base-config lifecycle generates one on the controller;
- slurmdbd (Debian 12: ``slurmdbd`` 22.05.8) in the foreground (``-D``), reading
  ``slurmdbd.conf`` beside the cluster's ``slurm.conf`` ("The file will always be located in
  the same directory as the slurm.conf", slurmdbd.conf(5)), mode 0600 as that page asks of a
  file with a database password;
- the teams: :func:`teams_file` is the stack's own ``slurm_teams.json`` of
  :data:`TEAMS_CONFIG` (two pools like the cluster's partitions, two teams), for user root
  (the harness submits as root); ``slurm_teams.py install`` adds its ``slurm.conf`` settings
  before slurmctld starts and ``slurm_teams.py apply`` creates the QOS, accounts and
  associations once slurmctld has registered the cluster with slurmdbd.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from trn_ultracluster.config import parse_config
from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import LIFECYCLE_ASSETS
from trn_ultracluster.orchestrators.hyperpod_slurm.teams import (
    class_qos_names,
    slurm_teams_file,
    team_accounts,
)
from trn_ultracluster.contracts.teams import TeamsInfo, teams_info

TEAMS_SCRIPT = LIFECYCLE_ASSETS / "slurm_teams.py"
DATABASE, DB_USER = "slurm_acct_db", "slurm"
TEAMS_CONFIG: dict[str, Any] = {
    "orchestrator": "hyperpod-slurm",
    "pools": [
        {"name": "trn", "instance_type": "trn1.32xlarge",
         "nodes": {"min": 0, "desired": 2, "max": 2}},
        {"name": "cpu", "instance_type": "m7i.8xlarge",
         "nodes": {"min": 0, "desired": 1, "max": 1}},
    ],
    "teams": [
        {"name": "research", "quota": {"trn": {"nodes": 1}, "cpu": {"nodes": 1}},
         "priority": "experiment", "default": True},
        {"name": "platform", "quota": {"trn": {"nodes": 1}}, "borrow": False,
         "priority": "training"},
    ],
}
"""The configuration whose teams the cluster gets: pools ``trn`` (2 nodes) and ``cpu``
(1 node), the cluster's partitions; ``research`` (borrows and lends: up to 2 ``trn`` nodes,
1 ``cpu``) and ``platform`` (no borrowing: at most its 1 ``trn`` node, no ``cpu``); the
default classes ``training`` (100) above ``experiment`` (10), preemption ``lower-priority``."""


def _config():
    return parse_config(TEAMS_CONFIG).config  # raises on an error


def teams_file(user: str = "root") -> dict[str, Any]:
    """The stack's ``slurm_teams.json`` of :data:`TEAMS_CONFIG`, for ``user``."""
    c = _config()
    return slurm_teams_file(c.team_list, c.scheduling, c.hyperpod_worker_groups,
                            c.hyperpod_worker_counts, user=user)


def teams_output() -> TeamsInfo:
    """The stack output ``Teams`` of :data:`TEAMS_CONFIG` (what the job CLI reads)."""
    c = _config()
    return teams_info(c.team_list, c.scheduling.priority_classes, c.scheduling.preemption,
                      team_accounts(c.team_list), class_qos_names(c.scheduling))


def run_teams_script(command: str, teams: Path, env: dict[str, str], *args: str) -> str:
    """``slurm_teams.py <command>`` as the lifecycle runs it; its output.

    Raises:
        AssertionError: it failed (with its stderr).
    """
    done = subprocess.run([sys.executable, str(TEAMS_SCRIPT), "--teams", str(teams), *args,
                           command], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert done.returncode == 0, f"slurm_teams.py {command}: {done.stderr}{done.stdout}"
    return done.stdout


def port_open(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start_database(root: Path, daemons: Any, port: int, logs: dict[str, Path],
                   wait_until: Any) -> str:
    """Initialize and start a private MariaDB on 127.0.0.1:``port``, create slurmdbd's
    database and user; returns the user's password."""
    base = root / "mysql"
    base.mkdir(mode=0o700)
    datadir, sock = base / "data", base / "mysqld.sock"
    init = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={datadir}",
                           "--user=root", "--auth-root-authentication-method=socket",
                           "--skip-test-db"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert init.returncode == 0, init.stderr
    logs["mariadbd"] = root / "log" / "mariadbd.log"
    daemons.start("mariadbd", ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={datadir}",
                               f"--socket={sock}", f"--port={port}", "--bind-address=127.0.0.1",
                               "--user=root", f"--pid-file={base}/mariadbd.pid",
                               "--skip-name-resolve", "--innodb-buffer-pool-size=32M"],
                  logs["mariadbd"], dict(os.environ))
    wait_until(lambda: sock.exists() and port_open(port), 60, "mariadbd listening")
    # Letters and digits: slurmdbd.conf(5) forbids '#' in StoragePass.
    password = secrets.token_hex(16)
    sql = (f"CREATE DATABASE IF NOT EXISTS {DATABASE};\n"
           f"CREATE USER IF NOT EXISTS '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{password}';\n"
           f"GRANT ALL ON {DATABASE}.* TO '{DB_USER}'@'127.0.0.1';\n")
    done = subprocess.run(["mariadb", "--no-defaults", f"--socket={sock}", "-u", "root"],
                          input=sql, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return password


def slurmdbd_conf(root: Path, socket_path: Path, dbd_port: int, db_port: int,
                  password: str) -> str:
    """The test's ``slurmdbd.conf`` (slurmdbd.conf(5), Slurm 22.05)."""
    return f"""# tests/slurm: slurmdbd of the test cluster
AuthType=auth/munge
AuthInfo=socket={socket_path}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={dbd_port}
SlurmUser=root
LogFile={root}/log/slurmdbd.log
PidFile={root}/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser={DB_USER}
StoragePass={password}
StorageLoc={DATABASE}
"""


def start_slurmdbd(root: Path, conf: Path, daemons: Any, socket_path: Path, env: dict[str, str],
                   logs: dict[str, Path], wait_until: Any) -> int:
    """MariaDB and slurmdbd for the cluster of ``conf`` (its directory gets
    ``slurmdbd.conf``); returns slurmdbd's port (``AccountingStoragePort``)."""
    from tests.slurm.conftest import free_ports

    db_port, dbd_port = free_ports(2)
    password = start_database(root, daemons, db_port, logs, wait_until)
    dbd_conf = conf.parent / "slurmdbd.conf"
    dbd_conf.write_text(slurmdbd_conf(root, socket_path, dbd_port, db_port, password))
    dbd_conf.chmod(0o600)
    logs["slurmdbd"] = root / "log" / "slurmdbd.log"
    daemons.start("slurmdbd", ["/usr/sbin/slurmdbd", "-D"], root / "log" / "slurmdbd.out", env)
    wait_until(lambda: port_open(dbd_port), 60, "slurmdbd listening")
    return dbd_port


def registered(env: dict[str, str], cluster: str) -> bool:
    """Whether slurmdbd knows ``cluster`` (slurmctld adds it when it first connects)."""
    done = subprocess.run(["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster"],
                          capture_output=True, text=True, env=env, timeout=30, check=False)
    return done.returncode == 0 and cluster in done.stdout.split()


def write_teams(root: Path) -> Path:
    """:func:`teams_file` as the lifecycle bucket holds it."""
    path = root / "slurm_teams.json"
    path.write_text(json.dumps(teams_file(), indent=2))
    return path
