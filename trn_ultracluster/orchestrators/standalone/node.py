"""How a standalone node boots: its IAM role and instance profile, the node scripts as S3
assets, the stack's ``trn_ultracluster.json`` and the user data that fetches them and runs
``node_setup.sh`` (``scripts/`` beside this module).

The scripts are S3 assets of the deploy (uploaded by the CDK CLI to the bootstrap bucket,
no Lambda): ``node_setup.sh``, the shared ``fsx.sh``, ``lcs.py``, ``lustre_efa.sh`` and
``lustre_efa.py`` (:data:`~trn_ultracluster.orchestrators.nodes.NODE_SCRIPTS`), the node metrics scripts
(:mod:`trn_ultracluster.node_metrics`, as on HyperPod Slurm nodes), and with ``runtime:
dlami-venv`` the training program, zipped with the training image's own file list
(``training/Dockerfile.dockerignore``).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from aws_cdk import IgnoreMode, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from trn_ultracluster.config import StandaloneConfig
from trn_ultracluster.config.facts import FSX_EFA_CLIENT_TYPES, STACK_RELEASES
from trn_ultracluster.config.fsx_efa import client_interfaces
from trn_ultracluster.constructs.training_image import REPO_ROOT, build_context_patterns
from trn_ultracluster.contracts.neuron_stack import NATIVE, XLA, NeuronStackName
from trn_ultracluster.contracts.standalone import (
    NODE_DIR,
    NODE_LOG,
    NODE_SETUP,
    PROGRAM_DIR,
    READY_FILE,
    USER_DATA,
)
from trn_ultracluster.nag import acknowledge, bootstrap_assets_finding, managed_policy_finding
from trn_ultracluster.node_metrics import SCRIPTS as NODE_METRICS_SCRIPTS
from trn_ultracluster.node_metrics import SETUP_SCRIPT as NODE_METRICS_SETUP
from trn_ultracluster.orchestrators.base import Foundation, PoolFoundation
from trn_ultracluster.orchestrators.nodes import (
    FSX_SCRIPT,
    LCS_SCRIPT,
    LUSTRE_EFA_HELPER,
    LUSTRE_EFA_SCRIPT,
    NODE_SCRIPTS,
    efa_node_settings,
    grant_fsx_describe,
    job_environment,
    node_file,
)

__all__ = ["NodeBoot", "SCRIPTS", "SSM_CORE_POLICY", "VENV_IMPORTS", "node_settings",
           "pool_efa_settings", "render_user_data", "venv_source"]

SCRIPTS = Path(__file__).resolve().parent / "scripts"
"""``user_data.sh`` (the template) and ``node_setup.sh``."""
SSM_CORE_POLICY = "AmazonSSMManagedInstanceCore"
"""The AWS managed policy that makes an instance a Systems Manager managed node, which is
all Session Manager and Run Command need of the instance (Systems Manager user guide,
"Step 2: Verify or add instance permissions for Session Manager",
https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-getting-started-instance-profile.html)."""
VENV_IMPORTS: dict[NeuronStackName, tuple[str, ...]] = {
    XLA: ("torch", "torch_xla", "torch_neuronx", "transformers", "tokenizers", "tqdm", "numpy",
          "yaml"),
    NATIVE: ("torch", "torch_neuronx", "transformers", "tokenizers", "tqdm", "numpy", "yaml"),
}
"""What ``trn_train`` imports on Neuron, by stack; ``runtime: dlami-venv`` checks them in the
DLAMI's environment. The training image's build checks the same modules
(``training/Dockerfile``, ``TRN_IMAGE_IMPORTS`` of each stage; the ``xla`` stage adds NxD
Training's, which jobs in a DLAMI venv do not use). The native stack has no ``torch_xla``."""
NODE_METRICS_EXPORTER = "neuron_metrics.py"
"""The exporter ``neuron_metrics.sh`` installs (``trn_ultracluster/node_metrics/scripts/``)."""
_PLACEHOLDER = re.compile(r"@@([A-Z_]+)@@")


def render_user_data(values: dict[str, str], template: str | None = None) -> str:
    """The user data: ``scripts/user_data.sh`` with every ``@@NAME@@`` replaced.

    Args:
        values: NAME -> text (may hold tokens; CloudFormation resolves them).
        template: the template text (default: the file).

    Raises:
        ValueError: a placeholder without a value, or a value without a placeholder.
    """
    text = template if template is not None else (SCRIPTS / USER_DATA).read_text()
    wanted = set(_PLACEHOLDER.findall(text))
    if wanted != set(values):
        raise ValueError(f"user data placeholders {sorted(wanted)} and values "
                         f"{sorted(values)} differ")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def node_settings(settings: StandaloneConfig, stack: NeuronStackName | None, ami_source: str,
                  log_group_name: str, metrics_cluster: str) -> dict[str, Any]:
    """The ``node`` section of the node's ``trn_ultracluster.json`` (``lcs.py get node KEY``):
    ``runtime``, ``venv`` (``settings`` resolved for the node's pool:
    :func:`~.ami.pool_settings`), ``imports`` (:data:`VENV_IMPORTS` of ``stack``, the pool's
    Neuron stack; none for a CPU pool, ``stack`` ``None``), ``program_dir``, ``ready_file``,
    ``log``, ``log_group`` (:mod:`trn_ultracluster.contracts.standalone` names the paths),
    ``metrics_cluster``, the ``ClusterName`` dimension of the node metrics, and for the setup's
    message when the venv is missing: ``ami_source`` (:attr:`~.ami.PoolAmi.source`) and
    ``venv_source`` (:func:`venv_source`; none for a CPU pool)."""
    return {
        "runtime": settings.runtime,
        "venv": settings.dlami_venv if settings.runtime == "dlami-venv" else None,
        "ami_source": ami_source,
        "venv_source": venv_source(stack) if stack is not None else "",
        "imports": ",".join(VENV_IMPORTS[stack]) if stack is not None else "",
        "program_dir": PROGRAM_DIR,
        "ready_file": READY_FILE,
        "log": NODE_LOG,
        "log_group": log_group_name,
        "metrics_cluster": metrics_cluster,
    }


def pool_efa_settings(foundation: Foundation, pool: PoolFoundation) -> dict[str, Any]:
    """The ``fsx.efa`` section of ``pool``'s nodes (:func:`efa_node_settings`): the main pool's
    is the stack's plan (``foundation.fsx_efa_mode`` and ``fsx_efa_interfaces``); another pool
    of a type that can be an EFA client of FSx for Lustre
    (:data:`~trn_ultracluster.config.facts.FSX_EFA_CLIENT_TYPES`: "Nitro v4 or newer instances
    with EFA, excluding the trn2 instance family") gets the same mode with its own interface
    count (:func:`~trn_ultracluster.config.fsx_efa.client_interfaces`); any other pool (a CPU
    pool, trn2, a type without EFA) mode ``off``: its nodes mount over TCP, as the nodes that
    are not workers do on HyperPod (``fsx.sh`` ``lustre_efa_off_for``)."""
    if pool.pool.index == 0:
        return efa_node_settings(foundation.fsx_efa_mode, foundation.fsx_efa_interfaces)
    if pool.pool.instance_type in FSX_EFA_CLIENT_TYPES:
        return efa_node_settings(foundation.fsx_efa_mode, client_interfaces(pool.pool.instance))
    return efa_node_settings("off", 0)


def venv_source(stack: NeuronStackName) -> str:
    """Which DLAMI has ``stack``'s default venv and how to boot it, in words with the
    configuration keys: ``xla``'s DLAMI is the default AMI, ``native``'s must be named (its
    default AMI is the Base DLAMI, :data:`~trn_ultracluster.config.facts.NATIVE_STACK`)."""
    release = STACK_RELEASES[stack]
    if release.base_dlami_parameter is not None:
        return (f"{release.venv} (the default standalone.dlami_venv of the {stack} stack) is in "
                f"the {release.dlami_name} DLAMI from Neuron SDK {release.sdk_release}, not in "
                f"the Neuron Base DLAMI; boot it by setting standalone.ami_id or "
                f"standalone.ami_ssm_parameter to it")
    return (f"{release.venv} (the default standalone.dlami_venv of the {stack} stack) is in the "
            f"{release.dlami_name} DLAMI of Neuron SDK {release.sdk_release} and in no later "
            f"DLAMI; boot it by unsetting standalone.ami_id and standalone.ami_ssm_parameter")


class NodeBoot(Construct):
    """Everything the nodes of every pool need to boot and set themselves up: one role,
    instance profile, log group and set of script assets for all pools, and each pool's user
    data (:meth:`user_data`).

    Args:
        foundation: the stack's foundation (every pool's training image, the file system's
            link, ``fsx.efa``).
        settings: the ``standalone`` section as the main pool uses it (its ``runtime``
            ``dlami-venv`` uploads the training program).
        fsx_tag_value: the value of the file system's stack tag (the nodes find it by it).
        metrics_cluster: the ``ClusterName`` dimension of the node metrics.

    Attributes:
        log_group: the nodes' setup logs (the stack's aspect encrypts it, sets its retention
            and keeps or deletes it with ``data_removal_policy``).
        role: the nodes' IAM role, every pool's: :data:`SSM_CORE_POLICY`, pull of every
            pool's training image, the FSx Describe calls of the setup, read and write of the
            data bucket, write of ``log_group``, read of the node script assets.
        instance_profile: the role's instance profile (named in every pool's launch template).
    """

    def __init__(self, scope: Construct, construct_id: str, *, foundation: Foundation,
                 settings: StandaloneConfig, fsx_tag_value: str, metrics_cluster: str) -> None:
        super().__init__(scope, construct_id)
        self._foundation = foundation
        self._fsx_tag_value, self._metrics_cluster = fsx_tag_value, metrics_cluster
        self.log_group = logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_MONTH)
        self.role = iam.Role(
            self, "Role", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description="TrnUltraCluster standalone Trainium nodes (Session Manager, FSx, ECR)",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(SSM_CORE_POLICY)])
        foundation.training_image.repository.grant_pull(self.role)
        grant_fsx_describe(self.role)
        foundation.data_bucket.grant_read_write(self.role)
        self.log_group.grant_write(self.role)
        # the other pools' images (another Neuron stack's), after the main pool's statements
        for image in {id(p.training_image): p.training_image for p in foundation.pools
                      if p.training_image is not foundation.training_image}.values():
            image.repository.grant_pull(self.role)
        self.instance_profile = iam.InstanceProfile(self, "InstanceProfile", role=self.role)

        self._urls = {name: self._asset(asset_id, path)
                      for name, asset_id, path in (
                          ("NODE_SETUP_URL", "NodeSetup", SCRIPTS / NODE_SETUP),
                          ("FSX_URL", "FsxScript", NODE_SCRIPTS / FSX_SCRIPT),
                          ("LCS_URL", "LcsScript", NODE_SCRIPTS / LCS_SCRIPT),
                          ("LUSTRE_EFA_URL", "LustreEfaScript",
                           NODE_SCRIPTS / LUSTRE_EFA_SCRIPT),
                          ("LUSTRE_EFA_HELPER_URL", "LustreEfaHelper",
                           NODE_SCRIPTS / LUSTRE_EFA_HELPER),
                          ("METRICS_SETUP_URL", "MetricsSetup",
                           NODE_METRICS_SCRIPTS / NODE_METRICS_SETUP),
                          ("METRICS_EXPORTER_URL", "MetricsExporter",
                           NODE_METRICS_SCRIPTS / NODE_METRICS_EXPORTER))}
        self._program_url = ""
        if settings.runtime == "dlami-venv":
            program = s3_assets.Asset(self, "Program", path=str(REPO_ROOT),
                                      exclude=build_context_patterns(),
                                      ignore_mode=IgnoreMode.DOCKER)
            program.grant_read(self.role)
            self._program_url = program.s3_object_url
        self._acknowledge(foundation)

    def user_data(self, pool: PoolFoundation, settings: StandaloneConfig, ami_source: str) -> str:
        """The user data of ``pool``'s nodes (tokens inside): its job environment (its
        instance type's NeuronCores and EFA interfaces, its training image: :func:`job_environment`),
        its ``fsx.efa`` section (:func:`pool_efa_settings`) and its ``node`` section
        (:func:`node_settings` of ``settings``, the section resolved for the pool, and
        ``ami_source``, where its AMI comes from). Its runtime ``dlami-venv`` fetches the
        training program, which the main pool's ``dlami-venv`` uploads (a Trainium pool's
        runtime is the main pool's: :func:`~.ami.pool_settings`)."""
        foundation = self._foundation
        env = job_environment(self, pool.pool.instance,
                              replace(foundation, training_image=pool.training_image))
        data = {
            **node_file(env, self._fsx_tag_value,
                        data_repository=foundation.data_repository_path is not None,
                        efa=pool_efa_settings(foundation, pool)),
            "node": node_settings(settings, pool.pool.neuron_stack, ami_source,
                                  self.log_group.log_group_name, self._metrics_cluster),
        }
        return render_user_data({
            **self._urls, "NODE_DIR": NODE_DIR, "REGION": Stack.of(self).region,
            "PROGRAM_URL": self._program_url if settings.runtime == "dlami-venv" else "",
            "CLUSTER_JSON": json.dumps(data, indent=1, sort_keys=True),
        })

    def _asset(self, construct_id: str, path: Path) -> str:
        asset = s3_assets.Asset(self, construct_id, path=str(path))
        asset.grant_read(self.role)
        return asset.s3_object_url

    def _acknowledge(self, foundation: Foundation) -> None:
        stack = Stack.of(self)
        acknowledge(self.role, managed_policy_finding(SSM_CORE_POLICY),
                    "AmazonSSMManagedInstanceCore is what AWS documents for Session Manager and "
                    "Run Command on an instance; the nodes have no SSH key and no inbound rule.")
        policy = self.role.node.find_child("DefaultPolicy")
        bucket_id = stack.get_logical_id(foundation.data_bucket.node.default_child)
        for finding, reason in {
            "AwsSolutions-IAM5[Resource::*]":
                "ecr:GetAuthorizationToken and fsx:DescribeFileSystems / "
                "DescribeDataRepositoryAssociations / DescribeDataRepositoryTasks have no "
                "resource-level permissions (Service Authorization Reference); all read only.",
            "AwsSolutions-IAM5[Action::s3:GetObject*]":
                "grant_read_write on the stack's data bucket and grant_read on the node script "
                "assets: CDK's grant wildcards.",
            "AwsSolutions-IAM5[Action::s3:GetBucket*]":
                "grant_read_write on the stack's data bucket and grant_read on the node script "
                "assets: CDK's grant wildcards.",
            "AwsSolutions-IAM5[Action::s3:List*]":
                "grant_read_write on the stack's data bucket and grant_read on the node script "
                "assets: CDK's grant wildcards.",
            "AwsSolutions-IAM5[Action::s3:DeleteObject*]":
                "Jobs on the nodes write and replace checkpoints and datasets in the stack's "
                "own data bucket (grant_read_write).",
            "AwsSolutions-IAM5[Action::s3:Abort*]":
                "Multipart uploads of large checkpoints to the stack's own data bucket "
                "(grant_read_write).",
            f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]":
                "Objects of the stack's own data bucket (datasets, checkpoints).",
            bootstrap_assets_finding(stack):
                "The nodes fetch their setup scripts, S3 assets of this deploy, from the CDK "
                "bootstrap bucket (read only, grant_read).",
        }.items():
            acknowledge(policy, finding, reason)
