"""HyperPod Slurm: the instance groups, partitions, lifecycle files and job environment the
stack, the configuration rules, the lifecycle scripts and the job CLI agree on.

Sources: SageMaker developer guide, "SageMaker HyperPod references", section "SageMaker
HyperPod Slurm configuration"
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["ALL_NODES_PARTITION", "CONTROLLER_GROUP", "JobEnv", "LIFECYCLE_FILE",
           "LIFECYCLE_PREFIX", "LOGIN_GROUP", "NODE_ENV_FILE", "ON_INIT_COMPLETE",
           "SLURM_TEAMS_FILE", "SLURM_TEAMS_SCRIPT", "SLURM_TEAMS_STEPS", "SLURM_USER",
           "part_group_name"]

CONTROLLER_GROUP = "controller"
"""Instance group of the Slurm controller (``SlurmConfig.NodeType: Controller``; exactly one
group has that type)."""
LOGIN_GROUP = "login"
"""Instance group of the optional login node (``NodeType: Login``; at most one group)."""
ALL_NODES_PARTITION = "dev"
"""HyperPod adds every node to its own ``dev`` partition besides the group's partition ("All
nodes are automatically added to the universal dev partition"), so no group may use it."""
LIFECYCLE_PREFIX = "lifecycle"
"""Key prefix of the lifecycle files in the lifecycle bucket (the stack output
``HyperPodLifecycleBucketName``): every file of the lifecycle scripts is at
``<prefix>/<name>``."""
LIFECYCLE_FILE = "trn_ultracluster.json"
"""The stack's generated input of the lifecycle scripts, next to them in the lifecycle bucket:
``{"groups": ..., "fsx": ..., "names": {member: variable}, "env": {variable: value}}``."""
NODE_ENV_FILE = "/etc/trn-ultracluster/pool.env"
"""The node's own job environment on a Slurm worker (its local disk, not FSx): what its
pool's environment changes in the shared ``shared_storage.ENV_FILE`` (the main pool's),
``export`` and ``unset`` lines that the lifecycle script writes from the lifecycle file's
``pools`` section; nothing but a comment on the main pool's nodes. Job scripts source it
after the shared file. ``scripts/on_init_complete.sh`` spells the path once
(``NODE_ENV_FILE``); the tests check that both agree."""
SLURM_USER = "ubuntu"
"""The HyperPod Slurm clusters' default user: jobs run as this user (the job CLI's SSM
transports run their scripts as it), and the teams' Slurm associations are its. Source:
aws-samples/awsome-distributed-training ``1.architectures/5.sagemaker-hyperpod/easy-ssh.sh``
(https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/5.sagemaker-hyperpod/easy-ssh.sh),
which logs in to the controller as ``User ubuntu``, opens sessions with the
``SSM-SessionManagerRunShellAsUbuntu`` document and keeps keys in ``/fsx/ubuntu/.ssh``."""
SLURM_TEAMS_FILE = "slurm_teams.json"
"""The stack's teams, next to :data:`LIFECYCLE_FILE` only when the configuration has
``teams``: the controller's lifecycle script gives it to ``scripts/slurm_teams.py`` (Slurm
accounts, associations and QOS); ``on_init_complete.sh`` spells the name once
(``TEAMS_JSON``)."""
SLURM_TEAMS_SCRIPT = "slurm_teams.py"
"""The lifecycle script that makes Slurm enforce the teams (``install``, ``apply``); uploaded
beside :data:`SLURM_TEAMS_FILE`, only with ``teams``."""
SLURM_TEAMS_STEPS = "slurm_teams.sh"
"""The shell steps that run :data:`SLURM_TEAMS_SCRIPT` on the controller (wait for slurmdbd,
``install``, restart slurmctld when that changed something, ``apply``: ``setup_slurm_teams``);
sourced by ``on_init_complete.sh`` and by the script of ``trn-ultracluster teams --apply``;
uploaded only with ``teams``."""
ON_INIT_COMPLETE = "on_init_complete.sh"
"""The lifecycle script HyperPod runs on every new or replaced node after its AMI-based
configuration (``LifeCycleConfig.OnInitComplete``)."""


def part_group_name(worker_group: str, part: int) -> str:
    """The instance group name of part ``part`` (0 first) of a worker group: a worker group
    larger than one instance group or one compute subnet holds becomes several instance
    groups (:attr:`trn_ultracluster.config.ClusterConfig.hyperpod_worker_parts`). The first
    keeps the worker group's name, so a deployed cluster keeps its group; the next are
    ``<name>-2``, ``<name>-3``, ... (instance group names: ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``,
    1-63 characters, botocore ``ClusterInstanceGroupName``; the configuration rules check the
    length)."""
    return worker_group if part == 0 else f"{worker_group}-{part + 1}"


class JobEnv(str, Enum):
    """The variables of the job environment file (``shared_storage.ENV_FILE``) that the
    lifecycle script writes on every node and every Slurm job sources. The lifecycle scripts
    and the job CLI's sbatch scripts use these names; the stack writes the mapping into
    :data:`LIFECYCLE_FILE` (``names``), which the scripts read."""

    REGION = "TRN_REGION"
    CLUSTER_NAME = "TRN_CLUSTER_NAME"
    INSTANCE_TYPE = "TRN_INSTANCE_TYPE"
    NEURON_CORES_PER_NODE = "TRN_NEURON_CORES_PER_NODE"
    NEURON_CHIPS_PER_NODE = "TRN_NEURON_CHIPS_PER_NODE"
    EFA_INTERFACES_PER_NODE = "TRN_EFA_INTERFACES_PER_NODE"
    WORKER_NODES = "TRN_WORKER_NODES"
    PARTITIONS = "TRN_PARTITIONS"
    """The worker groups' partitions, comma separated, in order."""
    DEFAULT_PARTITION = "TRN_DEFAULT_PARTITION"
    TRAINING_IMAGE_URI = "TRN_TRAINING_IMAGE_URI"
    ECR_REGISTRY = "TRN_ECR_REGISTRY"
    CONTAINER_IMAGE = "TRN_CONTAINER_IMAGE"
    """The training image in Pyxis form, ``<registry>#<repository>:<tag>``."""
    FSX_MOUNT_POINT = "TRN_FSX_MOUNT_POINT"
    FSX_FILE_SYSTEM_ID = "TRN_FSX_FILE_SYSTEM_ID"
    """Added by the lifecycle script once it has found the file system (not known to the
    lifecycle file: the cluster does not wait for the file system)."""
    DATA_BUCKET = "TRN_DATA_BUCKET"
    DATA_PATH = "TRN_DATA_PATH"
    NEURON_CACHE_DIR = "TRN_NEURON_CACHE_DIR"
    NEURON_STACK = "TRN_NEURON_STACK"
    """``xla`` or ``native``: the training program's ``--backend`` on this cluster."""

    def __str__(self) -> str:
        return self.value
