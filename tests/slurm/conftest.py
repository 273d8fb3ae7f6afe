"""A real Slurm cluster of two nodes on this machine, for the HyperPod job path (``make test-slurm``).

What the session fixture :func:`slurm` sets up, and takes down again at the end:

- MUNGE: a private key (``mungekey -c``) and ``munged -F`` on a socket in a directory every
  user can traverse (munged's clients check it: not pytest's 0700 temporary directories);
- a private ``slurm.conf`` (``SLURM_CONF`` for the clients): ``SlurmUser=root``, state and
  spool under the temporary directory, process tracking without cgroups
  (``proctrack/linuxproc``, ``task/none``: none here), ``select/cons_tres``, a scheduler that
  looks every second or two, job completions also in a text file (``jobcomp/filetxt``,
  ``sacct -c``), ended jobs forgotten by slurmctld after 5 s
  (``MinJobAge``, default 300: the status test waits for it), and a short credential lifetime
  (``cred_expire``, which is also how long a requeued job waits before it starts again);
  batch jobs not requeued unless they ask (``JobRequeue=0``: the job script's ``--requeue``
  is what the requeue test relies on, whatever a cluster's default);
- Slurm accounting as on HyperPod, where MariaDB and slurmdbd run on the controller: a
  private MariaDB and slurmdbd (``accounting.py``), and the teams of
  ``accounting.TEAMS_CONFIG`` set up by the lifecycle's ``slurm_teams.py`` (``install``
  before slurmctld starts, ``apply`` once slurmctld has registered the cluster); root, who
  submits every job here, gets the default team ``research`` as default account, so the
  jobs of the tests without teams run in it (within its limits: 2 ``trn`` nodes, 1 ``cpu``);
- two partitions, as the stack gives a configuration with ``pools`` one per pool:
  :data:`PARTITION` (``trn``, the default, both nodes: the Trainium pool) and
  :data:`CPU_PARTITION` (``cpu``, ``node2`` only: a CPU pool of one node); a node may be in
  several partitions (slurm.conf man page, ``PartitionName``, ``Nodes``), as every HyperPod
  node is also in HyperPod's ``dev`` partition;
- ``slurmctld -D -i`` and one ``slurmd -D -N nodeN`` per node: Debian's build runs several
  node daemons on one host (each node its own port, ``NodeHostname=localhost``), so the two
  nodes are two ``slurmd`` processes here;
- ``/etc/hosts`` entries for ``node1`` and ``node2`` (``scontrol show hostnames`` gives node
  names, and the job script uses the first as torchrun's rendezvous host); the file is
  written back as it was at the start;
- ``/fsx``: a symbolic link to the temporary directory, since the job script's paths are the
  cluster's (``/fsx/.trn-ultracluster/env``, ``/fsx/.trn-ultracluster/jobs``); removed at the end.

Every daemon is a child started with :class:`subprocess.Popen`; teardown cancels the jobs,
waits for them to end, then stops each daemon by its process id (SIGTERM, SIGKILL after
15 s). Readiness is polled (``scontrol ping``, ``sinfo``), never slept for.

Without root, Slurm's binaries, or with an ``/fsx`` that is not this test's, the tests are
skipped; with ``TRN_REQUIRE_SLURM=1`` (``make test-slurm``, ``.ci/run``) they fail instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH

REPO = Path(__file__).resolve().parents[2]
SHIMS = Path(__file__).resolve().parent / "shims"
REQUIRE_ENV = "TRN_REQUIRE_SLURM"
NODES = ("node1", "node2")
PARTITION = "trn"
"""The default partition, of both nodes (the Trainium pool's)."""
CPU_PARTITION, CPU_NODES = "cpu", ("node2",)
"""The second partition and its one node (a CPU pool's)."""
PARTITIONS = (PARTITION, CPU_PARTITION)
CRED_EXPIRE_S = 10
"""Job credential lifetime. A requeued job starts again only after it (measured: about
``CRED_EXPIRE_S`` + 1 s), so it is short here; Slurm's default is 120 s (slurm.conf man page,
``AuthInfo``)."""
TEMP_PREFIX = "trn-slurm-"
HOSTS = Path("/etc/hosts")
HOSTS_MARK = "# trn-ultracluster tests/slurm"
DAEMON_BINARIES = ("/usr/sbin/munged", "/usr/sbin/mungekey", "/usr/sbin/slurmctld",
                   "/usr/sbin/slurmd", "/usr/sbin/slurmdbd", "/usr/sbin/mariadbd")
CLIENT_BINARIES = ("sbatch", "srun", "squeue", "sacct", "sacctmgr", "sshare", "scancel",
                   "scontrol", "sinfo", "mariadb", "mariadb-install-db")


def unavailable(reason: str) -> None:
    """Skip (a developer machine without Slurm) or, with ``TRN_REQUIRE_SLURM=1``, fail."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1: these tests must run, not skip)", pytrace=False)
    pytest.skip(reason)


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def wait_until(check: Callable[[], bool], timeout_s: float, what: str,
               details: Callable[[], str] = lambda: "") -> None:
    """Poll ``check`` every 0.2 s until it is true.

    Raises:
        AssertionError: still false after ``timeout_s`` (the message names ``what`` and
            ends with ``details()``, e.g. the daemons' logs).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if check():
                return
        except AssertionError as err:  # a daemon exited: say so with its logs
            raise AssertionError(f"{what}: {err}\n{details()}") from None
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s\n{details()}")
        time.sleep(0.2)


@dataclass
class LocalTransport:
    """The job CLI's controller transport for this machine: runs the controller script with
    ``bash`` here, as the SSM transports run it with ``bash`` on the HyperPod controller
    (:mod:`trn_ultracluster.cli.backends.ssm`), with ``SLURM_CONF`` pointing at the test cluster.
    As they do, a script that exits non-zero raises :class:`CliError` (CLUSTER)."""

    env: dict[str, str]
    cwd: Path

    def run(self, script: str) -> str:
        done = subprocess.run(["bash"], input=script, capture_output=True, text=True,
                              env=self.env, cwd=self.cwd, timeout=60, check=False)
        if done.returncode != 0:
            raise CliError(f"controller script failed ({done.returncode}): "
                           f"{done.stderr.strip()[-500:]}", "see the test cluster's logs",
                           ExitCode.CLUSTER)
        return done.stdout


@dataclass
class SlurmCluster:
    """The running test cluster.

    Attributes:
        root: its temporary directory (0755): MUNGE, Slurm state and logs, and what ``/fsx``
            points to.
        conf: its ``slurm.conf``.
        env: this process's environment plus ``SLURM_CONF`` (for Slurm's clients).
        logs: daemon name -> its log file.
    """

    root: Path
    conf: Path
    env: dict[str, str]
    logs: dict[str, Path] = field(default_factory=dict)

    def run(self, *argv: str) -> str:
        """A Slurm client command's standard output.

        Raises:
            AssertionError: it exited non-zero (with its stderr).
        """
        done = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=60,
                              check=False)
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr.strip()}"
        return done.stdout

    def transport(self) -> LocalTransport:
        """A job CLI transport to this cluster (scripts run in :attr:`root`)."""
        return LocalTransport(self.env, self.root)

    def log_tails(self, lines: int = 15) -> str:
        """The last lines of each daemon's log (for failure messages)."""
        out = []
        for name, path in self.logs.items():
            text = path.read_text(errors="replace").splitlines() if path.exists() else []
            out.append(f"--- {name} ({path})\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    def node_states(self) -> dict[str, str]:
        """Node name -> Slurm state (``sinfo -N``), e.g. ``{"node1": "idle"}``."""
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True,
                              text=True, env=self.env, timeout=30, check=False)
        pairs = (line.split() for line in done.stdout.splitlines())
        return {p[0]: p[1] for p in pairs if len(p) == 2}


class Daemons:
    """Child daemons started here and stopped by their process ids, last started first."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, argv: list[str], log: Path, env: dict[str, str]) -> None:
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append((name, proc))

    def check_alive(self) -> None:
        """Raises AssertionError naming a daemon that has exited."""
        for name, proc in self.procs:
            assert proc.poll() is None, f"{name} exited with {proc.returncode}"

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=15)


def slurm_conf(root: Path, socket_path: Path, ctld_port: int, node_ports: list[int],
               dbd_port: int) -> str:
    """The test cluster's ``slurm.conf`` (slurm.conf man page, Slurm 22.05), before
    ``slurm_teams.py install`` adds the teams' settings (accounting through the slurmdbd on
    ``dbd_port`` among them: this file says ``accounting_storage/none``, and the included
    file, last, wins)."""
    nodes = "\n".join(
        f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} "
        f"CPUs={os.cpu_count()} State=UNKNOWN" for name, port in zip(NODES, node_ports))
    return f"""# tests/slurm: two nodes on one host
ClusterName=trntest
SlurmctldHost={socket.gethostname().split('.')[0]}(127.0.0.1)
SlurmctldPort={ctld_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket_path},cred_expire={CRED_EXPIRE_S}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerParameters=bf_interval=1,sched_interval=2
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=5
JobRequeue=0
AccountingStorageType=accounting_storage/none
AccountingStorageHost=127.0.0.1
AccountingStoragePort={dbd_port}
AccountingStoragePass={socket_path}
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.txt
{nodes}
PartitionName={PARTITION} Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP
PartitionName={CPU_PARTITION} Nodes={",".join(CPU_NODES)} MaxTime=INFINITE State=UP
"""


@contextmanager
def fsx_link(target: Path) -> Iterator[None]:
    """``/fsx`` -> ``target`` while the context is open.

    A link into a ``trn-slurm-*`` temporary directory is one an interrupted run left: it is
    replaced. Any other ``/fsx`` (a real file system, a colleague's link) is left alone and
    the tests are skipped (failed with ``TRN_REQUIRE_SLURM=1``).
    """
    fsx = Path(FSX_MOUNT_PATH)
    if fsx.is_symlink() and os.readlink(fsx).startswith(
            os.path.join(tempfile.gettempdir(), TEMP_PREFIX)):
        fsx.unlink()
    if fsx.exists() or fsx.is_symlink():
        unavailable(f"{fsx} exists and is not this test's: the job script's paths are under "
                    f"{fsx}, so the test links it to a temporary directory; remove it or run "
                    "the test on another machine")
    fsx.symlink_to(target)
    try:
        yield
    finally:
        if fsx.is_symlink() and os.readlink(fsx) == str(target):
            fsx.unlink()


@contextmanager
def host_entries(names: tuple[str, ...]) -> Iterator[None]:
    """``127.0.0.1 <names>`` in ``/etc/hosts`` while the context is open.

    The file is rewritten in place (it may be a bind mount) and, at the end, gets back its
    content from the start, minus lines an interrupted run left (marked with
    :data:`HOSTS_MARK`).

    Raises:
        pytest.skip.Exception / pytest.fail.Exception: a name then resolves elsewhere (an
            earlier line, or no ``files`` in nsswitch).
    """
    original = HOSTS.read_bytes()
    restore = b"".join(line for line in original.splitlines(keepends=True)
                       if HOSTS_MARK.encode() not in line)
    base = restore if restore.endswith(b"\n") or not restore else restore + b"\n"
    HOSTS.write_bytes(base + f"127.0.0.1 {' '.join(names)} {HOSTS_MARK}\n".encode())
    try:
        for name in names:
            try:
                address = socket.gethostbyname(name)
            except OSError as err:
                address = str(err)
            if address != "127.0.0.1":
                unavailable(f"{name} resolves to {address}, not to 127.0.0.1 as {HOSTS} now says")
        yield
    finally:
        HOSTS.write_bytes(restore)


def check_prerequisites() -> None:
    """Skip/fail unless this machine can run the cluster."""
    if sys.platform != "linux" or os.geteuid() != 0:
        unavailable("the Slurm test runs its daemons as root on Linux (make test-slurm as root)")
    missing = [b for b in DAEMON_BINARIES if not os.access(b, os.X_OK)]
    missing += [b for b in CLIENT_BINARIES if shutil.which(b) is None]
    if missing:
        unavailable(f"Slurm/MUNGE not installed ({', '.join(missing)} missing): "
                    "apt-get install slurmctld slurmd slurm-client munge slurmdbd "
                    "mariadb-server (make test-slurm does)")


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    """The two-node test cluster (see the module docstring), for the whole session."""
    check_prerequisites()
    root = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
    root.chmod(0o755)  # munged's socket directory must be traversable; jobs read /fsx
    daemons = Daemons()
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        for sub in ("munge", "state", "spool", "run", "log", "fsx"):
            (root / sub).mkdir(mode=0o755)
        stack.enter_context(fsx_link(root / "fsx"))
        stack.enter_context(host_entries(NODES))
        socket_path = root / "munge" / "munge.socket"
        ctld_port, *node_ports = free_ports(1 + len(NODES))
        conf = root / "slurm.conf"
        env = {**os.environ, "SLURM_CONF": str(conf)}
        cluster = SlurmCluster(root, conf, env)
        cluster.logs = {"munged": root / "log" / "munged.out",  # -F: it logs to stderr
                        "slurmctld": root / "log" / "slurmctld.log",
                        **{f"slurmd {n}": root / "log" / f"slurmd-{n}.log" for n in NODES}}
        stack.callback(daemons.stop)

        key = root / "munge" / "munge.key"
        subprocess.run(["/usr/sbin/mungekey", "-c", "-k", str(key)], check=True, timeout=30)
        daemons.start("munged", ["/usr/sbin/munged", "-F", f"--socket={socket_path}",
                                 f"--key-file={key}", f"--pid-file={root}/run/munged.pid",
                                 f"--seed-file={root}/munge/munged.seed"],
                      cluster.logs["munged"], env)
        wait_until(socket_path.exists, 20, "munged socket", cluster.log_tails)
        dbd_port = accounting.start_slurmdbd(root, conf, daemons, socket_path, env,
                                             cluster.logs, wait_until)
        conf.write_text(slurm_conf(root, socket_path, ctld_port, node_ports, dbd_port))
        teams = accounting.write_teams(root)
        accounting.run_teams_script("install", teams, env, "--slurm-conf", str(conf))
        daemons.start("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(conf)],
                      root / "log" / "slurmctld.out", env)

        def controller_up() -> bool:
            daemons.check_alive()
            return subprocess.run(["scontrol", "ping"], capture_output=True, env=env,
                                  timeout=30, check=False).returncode == 0

        wait_until(controller_up, 30, "slurmctld answers scontrol ping", cluster.log_tails)
        wait_until(lambda: accounting.registered(env, "trntest"), 60,
                   "slurmctld registered with slurmdbd",
                   cluster.log_tails)
        accounting.run_teams_script("apply", teams, env)
        for node in NODES:
            daemons.start(f"slurmd {node}", ["/usr/sbin/slurmd", "-D", "-N", node, "-f", str(conf)],
                          root / "log" / f"slurmd-{node}.out", env)

        def nodes_idle() -> bool:
            daemons.check_alive()
            return cluster.node_states() == {n: "idle" for n in NODES}

        wait_until(nodes_idle, 30, "both nodes idle in sinfo", cluster.log_tails)
        stack.callback(cancel_all_jobs, cluster)
        yield cluster


def cancel_all_jobs(cluster: SlurmCluster) -> None:
    """Cancel what is still queued or running and wait until it has ended (its processes are
    Slurm's step daemons' children, which outlive slurmd)."""
    for partition in PARTITIONS:
        subprocess.run(["scancel", f"--partition={partition}"], env=cluster.env, timeout=30,
                       check=False)
    wait_until(lambda: not cluster.run("squeue", "-h", "-o", "%i").strip(), 60,
               "jobs ended after scancel", cluster.log_tails)


from tests.slurm import accounting  # noqa: E402
from tests.slurm.harness import cli, cluster_files  # noqa: E402,F401  (the jobs' fixtures)
