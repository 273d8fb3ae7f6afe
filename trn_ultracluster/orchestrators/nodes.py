"""What the Trainium nodes of every orchestrator that boots its own nodes share: the node
scripts and the stack-generated file they read.

- :data:`NODE_SCRIPTS`: ``node_scripts/`` beside this module, shipped to every node as they
  are: ``lcs.py`` (reads the stack's ``trn_ultracluster.json``: the job environment, the FSx
  tag, the state of the file system and its S3 link) and ``fsx.sh`` (sourced: find the file
  system by its tag, wait for it and its link, mount it at ``/fsx``, write the job
  environment file). The HyperPod lifecycle script and the standalone nodes' setup both use
  them; ``lustre_efa.sh`` (run: FSx for Lustre over EFA, and its check) and its Python
  helper ``lustre_efa.py`` are used by every orchestrator's nodes, the EKS ones through their
  launch template's user data (which carries the script and fetches the helper from S3:
  :mod:`~trn_ultracluster.orchestrators.eks.lustre_efa`).
- :func:`job_environment`: what every node's job environment file
  (:data:`~trn_ultracluster.contracts.shared_storage.ENV_FILE`) holds, by
  :class:`~trn_ultracluster.contracts.hyperpod.JobEnv` name, plus the Neuron/EFA variables of
  :func:`~trn_ultracluster.contracts.neuron_env.neuron_environment`.
- :func:`node_file`: the common part of ``trn_ultracluster.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Fn, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from trn_ultracluster.config.fsx_efa import EfaMode
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.hyperpod import JobEnv
from trn_ultracluster.contracts.metrics import NODE_METRICS_NAMESPACE, NodeMetric
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.neuron_stack import compile_cache_dir
from trn_ultracluster.contracts.shared_storage import (
    FSX_MOUNT_PATH,
    FSX_STACK_TAG,
    fsx_path,
)
from trn_ultracluster.orchestrators.base import Foundation

__all__ = ["FSX_DESCRIBE_ACTIONS", "FSX_SCRIPT", "LCS_SCRIPT", "LUSTRE_EFA_CHECK_MIB",
           "LUSTRE_EFA_HELPER", "LUSTRE_EFA_SCRIPT", "LUSTRE_EFA_UNIT", "NODE_SCRIPTS",
           "efa_node_settings", "grant_fsx_describe", "job_environment", "node_file"]

NODE_SCRIPTS = Path(__file__).resolve().parent / "node_scripts"
"""The shared node scripts (uploaded as they are, beside each orchestrator's own)."""
LCS_SCRIPT = "lcs.py"
"""The Python helper of the node scripts (standard library only)."""
FSX_SCRIPT = "fsx.sh"
"""The sourced bash library of the FSx steps."""
LUSTRE_EFA_SCRIPT = "lustre_efa.sh"
"""FSx for Lustre over EFA on a node (run, not sourced): LNet over EFA, its boot unit, the
check that the traffic goes over EFA, the metric, and the watcher of Kubernetes nodes."""
LUSTRE_EFA_HELPER = "lustre_efa.py"
"""What ``lustre_efa.sh`` decides from the tools' output (standard library only, run with
``python3``): shipped wherever the script is, in the same directory, and installed with it."""
LUSTRE_EFA_UNIT = "trn-lustre-efa.service"
"""The systemd unit ``lustre_efa.sh install-unit`` writes: LNet over EFA at every boot,
before the remote mounts and kubelet (the fstab entry of an EFA mount names it). The one
source of the name: ``lustre_efa.sh`` (``UNIT``) and ``fsx.sh`` (``EFA_UNIT``) spell it once
each, and the tests check that both equal this."""
FSX_DESCRIBE_ACTIONS = ("fsx:DescribeFileSystems", "fsx:DescribeDataRepositoryAssociations",
                        "fsx:DescribeDataRepositoryTasks")
"""What ``fsx.sh`` calls: find the file system by its tag and wait for it, its data repository
association and the association's import. These actions have no resource-level permissions
(Service Authorization Reference, Amazon FSx: no resource type listed), so they can only be
granted on ``*``."""


def grant_fsx_describe(role: iam.IRole) -> None:
    """Let ``role`` (a node's) make the Describe calls of ``fsx.sh``
    (:data:`FSX_DESCRIBE_ACTIONS`, on ``*``; statement id ``FsxDescribe``)."""
    role.add_to_principal_policy(iam.PolicyStatement(
        sid="FsxDescribe", actions=list(FSX_DESCRIBE_ACTIONS), resources=["*"]))


def job_environment(scope: Construct, instance: InstanceSpec,
                    foundation: Foundation) -> dict[str, str]:
    """The job environment every orchestrator's nodes write: variable -> value (values may be
    tokens).

    Holds the Region, the instance type's NeuronCores, chips and EFA interfaces, the training
    image and its registry, the Neuron training stack and its compile cache, the ``/fsx``
    layout, the data bucket and the S3-linked path, and the Neuron/EFA variables. Orchestrators add their own (HyperPod: partitions, the Pyxis
    image name). The file system's id is not here: it would make the nodes wait for the file
    system in CloudFormation; the node scripts add ``JobEnv.FSX_FILE_SYSTEM_ID`` once they have
    found it by its tag.
    """
    image = foundation.training_image
    stack = image.props.neuron_stack
    data_path = foundation.data_repository_path
    env = {
        JobEnv.REGION: Stack.of(scope).region,
        JobEnv.INSTANCE_TYPE: instance.name,
        JobEnv.NEURON_CORES_PER_NODE: str(instance.logical_neuron_cores),
        JobEnv.NEURON_CHIPS_PER_NODE: str(instance.chips),
        JobEnv.EFA_INTERFACES_PER_NODE: str(instance.efa_interfaces),
        JobEnv.TRAINING_IMAGE_URI: image.image_uri,
        JobEnv.ECR_REGISTRY: Fn.select(0, Fn.split("/", image.repository.repository_uri)),
        JobEnv.FSX_MOUNT_POINT: FSX_MOUNT_PATH,
        JobEnv.DATA_BUCKET: foundation.data_bucket.bucket_name,
        JobEnv.DATA_PATH: fsx_path(data_path) if data_path else "",
        JobEnv.NEURON_CACHE_DIR: compile_cache_dir(stack),
        JobEnv.NEURON_STACK: stack,
    }
    return {**{k.value: v for k, v in env.items()}, **neuron_environment(instance, stack)}


LUSTRE_EFA_CHECK_MIB = 256
"""MiB of direct I/O with which a node checks that its Lustre traffic goes over EFA: the EFA
NIs' LNet message counters must rise by at least half as many (one bulk RPC per MiB) and by
more than the TCP NI's (the rule of AWS ParallelCluster's FSx-over-EFA test,
aws/aws-parallelcluster PR #7572: "Metadata RPCs and pings ride tcp by design")."""


def efa_node_settings(mode: EfaMode, interfaces: int) -> dict[str, Any]:
    """The ``fsx.efa`` part of ``trn_ultracluster.json`` (read by
    ``node_scripts/lustre_efa.sh``).

    Shape::

        {"mode": "off" | "preferred" | "required", "interfaces": int, "check_mib": int,
         "metric": {"namespace": str, "name": str}}

    Args:
        mode: :attr:`~trn_ultracluster.config.fsx_efa.FsxEfaPlan.mode`.
        interfaces: EFA interfaces each node binds to LNet
            (:attr:`~trn_ultracluster.config.fsx_efa.FsxEfaPlan.interfaces_per_client`).
    """
    return {"mode": mode, "interfaces": interfaces, "check_mib": LUSTRE_EFA_CHECK_MIB,
            "metric": {"namespace": NODE_METRICS_NAMESPACE,
                       "name": NodeMetric.LUSTRE_OVER_EFA}}


def node_file(env: dict[str, str], fsx_tag_value: str, data_repository: bool,
              efa: dict[str, Any] | None = None) -> dict[str, Any]:
    """The common part of ``trn_ultracluster.json``, what ``lcs.py`` reads on a node.

    Shape::

        {"fsx": {"tag_key": str, "tag_value": str, "data_repository": bool,
                 "efa": <efa_node_settings(...)>},
         "names": {JobEnv member: variable, ...},
         "env": {variable: value, ...}}

    ``efa`` defaults to mode ``off``. ``fsx`` finds the stack's file system (tagged with
    :data:`~trn_ultracluster.contracts.shared_storage.FSX_STACK_TAG`) and says whether it is
    linked to S3 (the scripts then wait for the link's metadata import before they write
    files); ``names`` is :class:`~trn_ultracluster.contracts.hyperpod.JobEnv`, which the scripts
    read instead of copies of the names; ``env`` is the job environment. Nothing in it refers to
    the file system itself, so the nodes, which wait for it, need not wait in CloudFormation.
    """
    return {
        "fsx": {"tag_key": FSX_STACK_TAG, "tag_value": fsx_tag_value,
                "data_repository": data_repository,
                "efa": efa if efa is not None else efa_node_settings("off", 0)},
        "names": {member.name: member.value for member in JobEnv},
        "env": env,
    }
