"""Standalone nodes: what the stack, the node setup script and the job CLI agree on.

Standard library only. Two groups of names:

- on each node (written by the user data and ``node_setup.sh``): where the node scripts and
  the stack's ``trn_ultracluster.json`` live, the setup log, the ready marker the job CLI
  checks before it starts a job, and where the training program goes with the DLAMI's
  virtual environment;
- on the shared file system (written by the job CLI's commands through SSM Run Command): one
  directory per job under :data:`~trn_ultracluster.contracts.shared_storage.JOBS_DIR` with the
  job's script, one log and one exit status per node, and a cancel marker. Every node sees
  the same files, so any node can answer ``status`` and ``logs``.

A job runs on each node as a transient systemd service (:func:`job_unit`), detached from the
SSM command that started it.
"""

from __future__ import annotations

from trn_ultracluster.contracts.shared_storage import JOBS_DIR

__all__ = [
    "CANCELLED_FILE",
    "CPU_RUNTIME",
    "JOB_SCRIPT",
    "NODE_DIR",
    "NODE_LOG",
    "NODE_SETUP",
    "PROGRAM_DIR",
    "READY_FILE",
    "RUNTIMES",
    "USER_DATA",
    "job_dir",
    "job_unit",
    "node_exit_file",
    "node_log_file",
]

RUNTIMES = ("container", "dlami-venv")
"""``standalone.runtime`` values: jobs in the training image, or in the DLAMI's Neuron virtual
environment."""
CPU_RUNTIME = "container"
"""How a CPU pool's nodes run jobs, whatever ``standalone.runtime`` says: in the training image
(the main pool's), which has the training program and its CPU dependencies; the DLAMIs' Neuron
virtual environments are on Neuron AMIs only, and a CPU node boots Amazon Linux 2023
(``orchestrators/standalone/ami.py``). The stack and the job CLI both read this."""
NODE_DIR = "/opt/trn-ultracluster/node"
"""On each node: the node scripts (``node_setup.sh``, ``fsx.sh``, ``lcs.py``) and the stack's
``trn_ultracluster.json``, fetched by the user data."""
USER_DATA = "user_data.sh"
"""The user data template (``orchestrators/standalone/scripts/``)."""
NODE_SETUP = "node_setup.sh"
"""The node setup script the user data runs."""
NODE_LOG = "/var/log/trn-ultracluster/node-setup.log"
"""The setup log on each node (also sent to the stack's log group)."""
READY_FILE = "/var/lib/trn-ultracluster/node-ready"
"""Written by ``node_setup.sh`` once the node can run jobs; the job CLI refuses to start a job
on a node without it."""
PROGRAM_DIR = "/opt/trn-ultracluster/program"
"""``runtime: dlami-venv``: the training program (``training/trn_train`` and
``trn_ultracluster/contracts``, the files the training image holds), on ``PYTHONPATH``."""
JOB_SCRIPT = "job.sh"
"""A job's script in its directory; each node runs it with its node rank."""
CANCELLED_FILE = "cancelled"
"""Written into a job's directory by ``cancel``."""
_UNIT_PREFIX = "trn-job-"


def job_dir(name: str) -> str:
    """The shared directory of job ``name``: ``/fsx/.trn-ultracluster/jobs/<name>``."""
    return f"{JOBS_DIR}/{name}"


def job_unit(name: str) -> str:
    """The systemd unit (and container) name of job ``name`` on every node:
    ``trn-job-<name>``."""
    return f"{_UNIT_PREFIX}{name}"


def node_log_file(name: str, rank: int | str) -> str:
    """The log of node ``rank`` of job ``name`` (``rank`` may be a shell expression)."""
    return f"{job_dir(name)}/node-{rank}.log"


def node_exit_file(name: str, rank: int | str) -> str:
    """The exit status of node ``rank`` of job ``name``, written when its part ends."""
    return f"{job_dir(name)}/node-{rank}.exit"
