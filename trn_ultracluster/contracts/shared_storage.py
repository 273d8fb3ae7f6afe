"""Where things live on the shared FSx for Lustre file system, on every orchestrator.

One definition for the EKS runtime (PersistentVolume mount), the HyperPod lifecycle scripts
(they read these values from the stack-generated ``trn_ultracluster.json``), the job CLI
and the training program in the container (this module is standard library only and is
copied into the image with the catalog). A compile cache shared by every node and job is
what lets ``neuron_parallel_compile`` precompile once and every run reuse the graphs
(Neuron docs, "Neuron Persistent Cache",
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-features/neuron-caching.html).
"""

from __future__ import annotations

__all__ = [
    "CODE_DIR",
    "ENV_FILE",
    "FSX_MOUNT_PATH",
    "FSX_STACK_TAG",
    "JOBS_DIR",
    "JOB_RECORD_FILE",
    "NEURON_COMPILE_CACHE_DIR",
    "PIP_DIR",
    "RUNS_DIR",
    "STATE_DIR",
    "fsx_path",
]

FSX_MOUNT_PATH = "/fsx"
"""Mount point of the FSx for Lustre file system on nodes and in training containers."""
FSX_STACK_TAG = "trn-ultracluster:stack-id"
"""Tag key of the stack's FSx file system; the value is the stack's id (ARN), unique per
stack instance even when a stack name is reused. Node scripts that run while CloudFormation
may still be creating the file system (HyperPod's lifecycle script) find it by this tag."""
NEURON_COMPILE_CACHE_DIR = f"{FSX_MOUNT_PATH}/neuron-compile-cache"
"""Neuron compiler cache (``NEURON_CC_FLAGS=--cache_dir=...``)."""
STATE_DIR = f"{FSX_MOUNT_PATH}/.trn-ultracluster"
"""Files the stack's lifecycle scripts and the job CLI share."""
ENV_FILE = f"{STATE_DIR}/env"
"""Shell-sourceable environment of the stack's outputs (HyperPod)."""
JOBS_DIR = f"{STATE_DIR}/jobs"
"""Jobs the CLI submits: HyperPod sbatch scripts and their logs; standalone, one directory per
job (:mod:`trn_ultracluster.contracts.standalone`)."""
CODE_DIR = f"{STATE_DIR}/code"
"""Working directory snapshots of ``submit``, unpacked once per content hash:
``<CODE_DIR>/<sha256>`` is a job's current directory on every node."""
PIP_DIR = f"{STATE_DIR}/pip"
"""Packages of ``submit --requirements``, installed once per requirements file and image:
``<PIP_DIR>/<key>`` (a ``pip install --prefix``)."""
JOB_RECORD_FILE = "trn-job.json"
"""What ran (program, arguments, snapshot hash, image, node count, times), written by the
first node into the job's output directory."""
RUNS_DIR = "runs"
"""Directory, under the part of the file system linked to S3, of the job CLI's default
output directories (checkpoints, metrics): ``/fsx/runs/<job>`` with the default link."""


def fsx_path(repository_path: str, *parts: str) -> str:
    """A path on the mounted file system under its S3-linked part.

    Args:
        repository_path: the data repository association's file system path (stack output
            ``FsxDataRepositoryPath``): ``/`` (the whole file system) or e.g. ``/s3``.
        parts: relative parts below it.

    Returns:
        e.g. ``fsx_path("/", "datasets/x")`` -> ``/fsx/datasets/x``,
        ``fsx_path("/s3", "datasets/x")`` -> ``/fsx/s3/datasets/x``.
    """
    segments = [FSX_MOUNT_PATH, repository_path.strip("/"), *(p.strip("/") for p in parts)]
    return "/".join(s for s in segments if s)
