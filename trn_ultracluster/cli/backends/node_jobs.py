"""Jobs on standalone nodes: the scripts the job CLI runs on the nodes with SSM Run Command,
and how it reads their answers. No AWS calls here (:mod:`.standalone` sends them).

A job is a directory on the shared file system (:mod:`trn_ultracluster.contracts.standalone`):

- :func:`prepare_script` (first node) refuses a name already taken, then writes the job's
  script (:func:`job_script`) and ``job.json``;
- :func:`start_script` (every node of the job) checks the node is ready and starts
  ``job.sh RANK`` as a transient systemd service (``systemd-run --unit``, "Run programs in
  transient scope units or service units", systemd-run(1)): it keeps running after the SSM
  command returns, ``systemctl is-active`` answers for it and ``systemctl stop`` ends it. With
  ``--time`` the service has ``RuntimeMaxSec=`` (systemd.service(5): a service active longer
  is terminated and put into a failure state);
- :func:`status_script` (every node) prints one JSON line per job: the unit's state on that
  node and the exit statuses all nodes left in the job's directory; :func:`job_states` merges
  the nodes' answers;
- :func:`log_chunk_script` (first node) reads a node's log in pieces that fit the 24,000
  characters ``GetCommandInvocation`` returns (:data:`CHUNK_BYTES`);
- :func:`cancel_script` (every node) marks the job cancelled and stops its unit and container.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from trn_ultracluster.cli.backends.ssm import OUTPUT_LIMIT
from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.cli.launch import (
    RENDEZVOUS_PORT,
    TORCHRUN,
    env_file_lines,
    torchrun_command,
)
from trn_ultracluster.cli.node_script import NodeContext, node_script
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH, JOBS_DIR
from trn_ultracluster.contracts.standalone import (
    CANCELLED_FILE,
    JOB_SCRIPT,
    NODE_LOG,
    PROGRAM_DIR,
    READY_FILE,
    job_dir,
    job_unit,
    node_exit_file,
    node_log_file,
)

__all__ = ["CHUNK_BYTES", "JobStatus", "Runtime", "cancel_script", "job_script", "job_states",
           "log_chunk_script", "parse_log_chunk", "prepare_script", "start_script",
           "status_script"]

CHUNK_BYTES = 15000
"""Log bytes per Run Command: base64 makes 20,000 characters of them, under
:data:`~trn_ultracluster.cli.backends.ssm.OUTPUT_LIMIT` with room for the header line."""
assert CHUNK_BYTES * 4 // 3 + 100 < OUTPUT_LIMIT
META_FILE = "job.json"
"""The job's metadata in its directory: name, nodes, pool, instance type, submit time,
instances."""


@dataclass(frozen=True)
class Runtime:
    """How a node runs a job (the stack outputs ``StandaloneRuntime`` and
    ``StandaloneDlamiVenv``).

    Attributes:
        kind: ``container`` or ``dlami-venv``.
        venv: the DLAMI's virtual environment (``dlami-venv``).
        program_dir: where the node setup put the training program (``dlami-venv``).
    """

    kind: str
    venv: str | None = None
    program_dir: str = PROGRAM_DIR


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _container_lines(job: JobRequest, unit: str) -> str:
    """The host part of ``runtime: container``: log in to the image's ECR registry (the
    node's credentials expire, and ``--image`` may name another image), then ``docker run``
    the same script inside the image with every Neuron device (``--device=/dev/neuronN``, as
    the Neuron docs run training containers: "Dockerfile for Application Container",
    ``docker run --net=host --device=/dev/neuron0``), the EFA devices
    (``/dev/infiniband/uverbs*``) with unlimited locked memory (what EFA's libfabric needs
    for registered memory; our reading, not from an AWS page), ``/fsx``, the host network and
    ``--init`` so that a stop reaches torchrun."""
    image = shlex.quote(job.image)
    return f"""  IMAGE={image}
  REGISTRY="${{IMAGE%%/*}}"
  if [[ "${{REGISTRY}}" == *.dkr.ecr.*.amazonaws.com ]]; then
    aws ecr get-login-password --region "$(cut -d. -f4 <<< "${{REGISTRY}}")" \\
      | docker login --username AWS --password-stdin "${{REGISTRY}}" > /dev/null
  fi
  devices=()
  for device in /dev/neuron* /dev/infiniband/uverbs*; do
    if [[ -e "${{device}}" ]]; then devices+=(--device "${{device}}"); fi
  done
  docker run --rm --init --name {unit} --network host --ipc host --ulimit memlock=-1 \\
    --cap-add IPC_LOCK "${{devices[@]}}" -v {FSX_MOUNT_PATH}:{FSX_MOUNT_PATH} \\
    -e TRN_IN_RUNTIME=1 "${{IMAGE}}" bash "${{JOB_DIR}}/{JOB_SCRIPT}" "${{NODE_RANK}}" \\
    "${{MASTER_ADDR}}" &
  trap 'docker stop -t 30 {unit} > /dev/null 2>&1 || true' TERM
  wait $!
"""


def _venv_lines(runtime: Runtime) -> str:
    """The host part of ``runtime: dlami-venv``: the DLAMI's virtual environment and the
    training program on ``PYTHONPATH`` (its ``training/`` holds ``trn_train``). The program
    runs in the background so that a stop (SIGTERM from systemd) reaches this script's trap at
    once and the exit status is recorded."""
    return f"""  # shellcheck source=/dev/null
  source {runtime.venv}/bin/activate
  export PYTHONPATH="{runtime.program_dir}:{runtime.program_dir}/training${{PYTHONPATH:+:${{PYTHONPATH}}}}"
  TRN_IN_RUNTIME=1 bash "${{JOB_DIR}}/{JOB_SCRIPT}" "${{NODE_RANK}}" "${{MASTER_ADDR}}" &
  trap 'kill -TERM $! 2> /dev/null || true' TERM
  wait $!
"""


def job_script(job: JobRequest, spec: InstanceSpec, runtime: Runtime) -> str:
    """The job's script (bash; passes ``bash -n`` and shellcheck). Each node runs it as
    ``bash job.sh RANK MASTER_ADDR`` (the first node's address); it appends to ``node-RANK.log`` and writes ``node-RANK.exit`` when
    it ends, then runs itself again inside the runtime (:func:`_container_lines`,
    :func:`_venv_lines`), where it sources the stack's job environment file (the Neuron/EFA
    variables, the Neuron stack's compile cache on FSx), exports ``--env`` and runs
    the program: one ``torchrun`` per node, one process per logical NeuronCore, with a static
    rendezvous on ``MASTER_ADDR`` (the first node), port :data:`RENDEZVOUS_PORT`. The script
    is the same on every node and does not depend on which instances run it, so
    ``submit --dry-run`` prints exactly what the nodes run.

    ``spec`` is the instance type of the job's pool; a CPU type has no NeuronCores, so there
    ``torchrun`` needs ``--nproc-per-node`` (or the program runs once per node, ``--launcher
    none``).

    Raises:
        ValueError: an unknown runtime kind, ``dlami-venv`` without a virtual environment, or
            ``torchrun`` on a type without NeuronCores and without ``--nproc-per-node``.
    """
    name, unit = job.name, job_unit(job.name)
    if runtime.kind == "container":
        host = _container_lines(job, unit)
    elif runtime.kind == "dlami-venv" and runtime.venv:
        host = _venv_lines(runtime)
    else:
        raise ValueError(f"standalone runtime {runtime.kind!r} (virtual environment "
                         f"{runtime.venv!r}) is not one this job CLI knows: redeploy the stack")
    nproc = job.launch.nproc_per_node or spec.logical_neuron_cores
    if job.launch.launcher == TORCHRUN and nproc < 1:
        raise ValueError(f"{spec.name} has no NeuronCores to start one torchrun process on "
                         "each: give --nproc-per-node N, or run the program once per node with "
                         "--launcher none")
    torchrun = torchrun_command('"${NNODES}"', nproc, '"${NODE_RANK}"', '"${MASTER_ADDR}"',
                                '"${MASTER_PORT}"')
    node = NodeContext(rank='"${NODE_RANK}"', nnodes='"${NNODES}"',
                       master_addr='"${MASTER_ADDR}"', master_port='"${MASTER_PORT}"',
                       run_id=name, torchrun=torchrun)
    launcher = (f"{nproc} processes per node" if job.launch.launcher == "torchrun"
                else "one program per node")
    return f"""#!/bin/bash
# Generated by trn-ultracluster submit: job {name}, {job.nodes} x {spec.name},
# {launcher}, runtime {runtime.kind}. Each node runs
# `bash {JOB_SCRIPT} RANK MASTER_ADDR` as the systemd unit {unit}; torchrun's rendezvous is
# on the first node. Output: node-RANK.log beside this script; exit status: node-RANK.exit.
set -euo pipefail
JOB_DIR={job_dir(name)}
NODE_RANK="${{1:?usage: {JOB_SCRIPT} NODE_RANK MASTER_ADDR}}"
MASTER_ADDR="${{2:?usage: {JOB_SCRIPT} NODE_RANK MASTER_ADDR}}"
NNODES={job.nodes}
MASTER_PORT={RENDEZVOUS_PORT}
export NODE_RANK NNODES MASTER_ADDR MASTER_PORT

if [[ "${{TRN_IN_RUNTIME:-0}}" != 1 ]]; then
  exec >> "{node_log_file(name, '${NODE_RANK}')}" 2>&1
  trap 'echo $? > "{node_exit_file(name, '${NODE_RANK}')}"' EXIT
  echo "job {name}: node ${{NODE_RANK}} of ${{NNODES}} on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ), runtime {runtime.kind}, rendezvous ${{MASTER_ADDR}}:${{MASTER_PORT}}"
{host}  exit
fi

{env_file_lines()}{node_script(job, node)}"""


def prepare_script(name: str, script: str, meta: Mapping[str, object]) -> str:
    """Run on the first node: refuse a job name already used, else create the job's directory
    with its script and ``job.json``; prints ``prepared``."""
    directory = job_dir(name)
    return f"""set -euo pipefail
if [ -e {directory} ]; then
  echo "a job named {name} exists already ({directory}): choose another --name" >&2
  exit 3
fi
mkdir -p {directory}
echo {_b64(script)} | base64 -d > {directory}/{JOB_SCRIPT}
echo {_b64(json.dumps(dict(meta), sort_keys=True))} | base64 -d > {directory}/{META_FILE}
echo prepared
"""


def start_script(name: str, rank: int, master_addr: str, time_limit_s: int | None = None) -> str:
    """Run on the node of ``rank``: check the node finished its setup (:data:`READY_FILE`)
    and does not run the job yet, then start ``job.sh RANK MASTER_ADDR`` as the job's systemd
    unit; prints ``started``. Exit status 3 with the reason on stderr otherwise."""
    unit = job_unit(name)
    limit = f" --property=RuntimeMaxSec={time_limit_s}" if time_limit_s else ""
    return f"""set -euo pipefail
if [ ! -f {READY_FILE} ]; then
  echo "node $(hostname) is not ready: its setup is still running or failed (see {NODE_LOG})" >&2
  exit 3
fi
if systemctl is-active --quiet {unit}; then
  echo "{unit} already runs on node $(hostname)" >&2
  exit 3
fi
systemd-run --unit={unit} --collect --description="trn-ultracluster job {name}"{limit} \\
  /bin/bash {job_dir(name)}/{JOB_SCRIPT} {rank} {shlex.quote(master_addr)} > /dev/null 2>&1
echo started
"""


_STATUS_PROGRAM = """
import glob, json, os, subprocess, sys
jobs_dir, unit_prefix, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
names = wanted or sorted(d for d in os.listdir(jobs_dir)
                         if os.path.isfile(os.path.join(jobs_dir, d, "job.json"))) \\
    if os.path.isdir(jobs_dir) else []
for name in names:
    path = os.path.join(jobs_dir, name)
    if not os.path.isfile(os.path.join(path, "job.json")):
        print(json.dumps({"name": name, "found": False}))
        continue
    with open(os.path.join(path, "job.json")) as meta_file:
        meta = json.load(meta_file)
    # The unit first, then the exit files: the job's exit trap writes node-RANK.exit before
    # its unit ends, so a unit found inactive has left its file; read the other way round, a
    # job ending between the two reads was neither running nor ended (LOST).
    active = subprocess.run(["systemctl", "is-active", "--quiet", unit_prefix + name]).returncode == 0
    exits = {}
    for exit_file in glob.glob(os.path.join(path, "node-*.exit")):
        rank = os.path.basename(exit_file)[len("node-"):-len(".exit")]
        with open(exit_file) as f:
            text = f.read().strip()
        exits[rank] = int(text) if text.lstrip("-").isdigit() else -1
    print(json.dumps({"name": name, "found": True, "nodes": meta.get("nodes", 0),
                      "pool": meta.get("pool") or "",
                      "submitted": meta.get("submitted", ""), "exits": exits,
                      "code": meta.get("code_sha256") or "",
                      "cancelled": os.path.exists(os.path.join(path, "cancelled")),
                      "active": active}))
"""
"""What :func:`status_script` runs with the node's ``python3``: one JSON line per job."""


def status_script(name: str | None) -> str:
    """Run on every node: one JSON line per job (``name``, or every job under ``JOBS_DIR``):
    ``{"name", "found", "nodes", "pool", "submitted", "exits": {rank: status}, "cancelled",
    "active"}``, ``active`` being this node's unit and ``pool`` the job's pool (``""`` for a
    job submitted before pools)."""
    args = " ".join(shlex.quote(a) for a in (JOBS_DIR, job_unit(""), *([name] if name else [])))
    return f"python3 - {args} <<'TRN_STATUS_EOF'\n{_STATUS_PROGRAM.strip()}\nTRN_STATUS_EOF\n"


@dataclass
class JobStatus:
    """One job as every node sees it.

    Attributes:
        name, nodes, submitted: from ``job.json``.
        pool: the pool it runs on, from ``job.json`` (``""``: submitted before pools, on the
            main pool).
        code: the SHA-256 of the job's working directory snapshot, or "".
        exits: node rank -> exit status, of the nodes whose part ended.
        active_on: instances whose unit of the job runs.
        cancelled: ``cancel`` was called.
    """

    name: str
    nodes: int = 0
    submitted: str = ""
    code: str = ""
    exits: dict[str, int] = field(default_factory=dict)
    active_on: list[str] = field(default_factory=list)
    cancelled: bool = False
    pool: str = ""

    @property
    def state(self) -> str:
        """``RUNNING``, ``CANCELLING``, ``CANCELLED``, ``COMPLETED``, ``FAILED (...)`` or
        ``LOST (...)`` (no node runs it, and some nodes left no exit status: a node was
        replaced or stopped)."""
        if self.active_on:
            return "CANCELLING" if self.cancelled else "RUNNING"
        if self.cancelled:
            return "CANCELLED"
        failed = sorted((r, c) for r, c in self.exits.items() if c != 0)
        if failed:
            return "FAILED (" + ", ".join(f"node {r} exit {c}" for r, c in failed) + ")"
        if len(self.exits) >= self.nodes:
            return "COMPLETED"
        missing = sorted(set(map(str, range(self.nodes))) - set(self.exits))
        return f"LOST (node {', '.join(missing)} neither runs nor ended)"

    @property
    def ended(self) -> bool:
        """Whether the job has ended (nothing runs it any more)."""
        return not self.active_on


def job_states(answers: Mapping[str, str]) -> dict[str, JobStatus]:
    """Merge the nodes' :func:`status_script` answers (instance id -> stdout) into one
    :class:`JobStatus` per job found (jobs no node found are left out)."""
    jobs: dict[str, JobStatus] = {}
    for instance, text in answers.items():
        for line in text.splitlines():
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            if not row.get("found"):
                continue
            job = jobs.setdefault(row["name"], JobStatus(row["name"], int(row["nodes"]),
                                                         str(row["submitted"]),
                                                         str(row.get("code") or ""),
                                                         pool=str(row.get("pool") or "")))
            job.exits.update({str(k): int(v) for k, v in row["exits"].items()})
            job.cancelled = job.cancelled or bool(row["cancelled"])
            if row["active"]:
                job.active_on.append(instance)
    return jobs


def log_chunk_script(name: str, rank: int, offset: int | None, tail_lines: int | None) -> str:
    """Run on any node: the first line ``<size> <start>`` of node ``rank``'s log, then up to
    :data:`CHUNK_BYTES` of it from byte ``offset`` (or, with ``offset`` ``None``, from where
    its last ``tail_lines`` lines start, or from the beginning), base64-encoded. Exit status 3
    when the job has no such log. (``head`` then ``tail``: every command of the pipe reads its
    input to the end, so none dies of SIGPIPE under ``pipefail``.)"""
    log = shlex.quote(node_log_file(name, rank))
    if offset is not None:
        start = str(offset)
    elif tail_lines:
        start = f'$(( size - $(tail -n {tail_lines} {log} | wc -c) ))'
    else:
        start = "0"
    return f"""set -euo pipefail
if [ ! -f {log} ]; then
  echo "job {name} has no log of node {rank} ({log}): is the name right? (status lists the jobs)" >&2
  exit 3
fi
size=$(stat -c %s {log})
start={start}
echo "${{size}} ${{start}}"
head -c $(( start + {CHUNK_BYTES} )) {log} | tail -c +$(( start + 1 )) | base64 -w 0
echo
"""


def parse_log_chunk(text: str) -> tuple[int, int, bytes]:
    """``(size, start, data)`` of a :func:`log_chunk_script` answer.

    Raises:
        ValueError: not such an answer.
    """
    head, _, body = text.partition("\n")
    size, start = (int(v) for v in head.split())
    return size, start, base64.b64decode(body.strip())


def cancel_script(name: str) -> str:
    """Run on every node: mark the job cancelled, stop its unit (which stops torchrun or the
    container) and remove its container if one is left; prints ``cancelled``. Exit status 3
    when there is no such job."""
    unit, directory = shlex.quote(job_unit(name)), shlex.quote(job_dir(name))
    return f"""set -euo pipefail
if [ ! -d {directory} ]; then
  echo "there is no job named {name} ({directory}): status lists the jobs" >&2
  exit 3
fi
touch {directory}/{CANCELLED_FILE}
systemctl stop {unit} 2> /dev/null || true
if command -v docker > /dev/null 2>&1; then
  docker rm -f {unit} > /dev/null 2>&1 || true
fi
echo cancelled
"""
