"""FSx for Lustre over EFA on the EKS orchestrator's Trainium nodes: the launch template's user
data.

The FSx CSI driver mounts ``<dns>@tcp:/<mount>`` and sets up no LNet
(kubernetes-sigs/aws-fsx-csi-driver ``pkg/driver/node.go``), and the EKS AL2023 Neuron AMI has
no Lustre client (awslabs/amazon-eks-ami PR #2696, closed: "I don't think we should ship the
``lustre-client`` in the AMI at all"), so the host does both before the node joins:
:func:`lustre_efa_user_data` is a MIME multi-part document with one shell part
(``scripts/lustre_efa_boot.sh``) that carries ``node_scripts/lustre_efa.sh`` inline (without
its comment lines, gzip-compressed and base64-encoded, :func:`packed_script`), fetches its
helper ``node_scripts/lustre_efa.py`` from S3 (:class:`LustreEfaHelper`: both together do not
fit in the user data) and runs the script's ``csi-node`` command.

Facts, with their sources:

- "Amazon EC2 user data in launch templates that are used with managed node groups must be in
  the MIME multi-part archive format for Amazon Linux AMIs ... This is because your user data
  is merged with Amazon EKS user data required for nodes to join the cluster. Don't specify
  any commands in your user data that starts or modifies ``kubelet``." and "If a custom AMI ID
  is specified in a launch template, Amazon EKS doesn't merge user data" (EKS user guide,
  "Customize managed nodes with launch templates", "Amazon EC2 user data",
  awsdocs/amazon-eks-user-guide ``latest/ug/nodes/launch-templates.adoc`` @1fe584bb). The
  stack's launch template names no AMI (the node groups take ``AL2023_X86_64_NEURON``), so
  EKS appends its NodeConfig part to ours.
- Ordering on AL2023: ``nodeadm-config.service`` runs ``Before=cloud-init.service``;
  ``nodeadm-run.service`` (which starts kubelet) runs ``After=nodeadm-config.service
  cloud-final.service`` "in order to pickup changes the user may have applied via cloud-init
  scripts" (awslabs/amazon-eks-ami ``templates/al2023/runtime/rootfs/etc/systemd/system/``
  @81fec2e). cloud-init runs user data shell scripts in its final stage, so LNet is over EFA
  before kubelet starts and before any pod mounts the volume. ``nodeadm-run`` has no
  ``Requires=`` on ``cloud-final``: a failed part alone does not keep the node out of the
  cluster, so in mode ``required`` the part powers the node off before kubelet starts (its
  node group's Auto Scaling group replaces it; sources in ``scripts/lustre_efa_boot.sh``).
- "User data is limited to 16 KB, in raw form, before it is base64-encoded" (EC2 user guide,
  "Work with instance user data",
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html); EKS
  adds its own part to ours, so ours keeps under :data:`USER_DATA_BUDGET_BYTES` (the script,
  about 14 KB without its comments, is inlined compressed; with its helper inlined too the
  user data was about 15.5 KB, so the helper is fetched instead).
- The AWS CLI that fetches the helper (and publishes the metric) is on the EKS AL2023 AMIs:
  their build installs AWS CLI v2 into ``/bin`` (awslabs/amazon-eks-ami
  ``templates/al2023/provisioners/install-worker.sh`` @6aa0818, "awscli"; outside the isolated
  Regions, where it is the ``awscli`` package). ``sha256sum`` (coreutils) checks it; the same
  build checks kubelet's download with it.
- AL2023 Lustre client: ``sudo dnf install -y lustre-client`` (FSx for Lustre user guide,
  "Installing the Lustre client", Amazon Linux 2023).
"""

from __future__ import annotations

import base64
import email
import gzip
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from trn_ultracluster.config.fsx_efa import EfaMode
from trn_ultracluster.contracts.metrics import NODE_METRICS_NAMESPACE, NodeMetric
from trn_ultracluster.nag import acknowledge, bootstrap_assets_finding
from trn_ultracluster.orchestrators.nodes import (
    LUSTRE_EFA_CHECK_MIB,
    LUSTRE_EFA_HELPER,
    LUSTRE_EFA_SCRIPT,
    NODE_SCRIPTS,
)

__all__ = ["BOOT_PART", "BOUNDARY", "HELPER_OBJECTS", "USER_DATA_BUDGET_BYTES", "HelperSource", "LustreEfaHelper",
           "add_lustre_efa_user_data", "boot_script", "helper_sha256", "inline_script",
           "lustre_efa_user_data", "packed_script", "user_data_scripts"]

BOOT_PART = Path(__file__).resolve().parent / "scripts" / "lustre_efa_boot.sh"
"""The shell part's template (``@@NAME@@`` placeholders)."""
BOUNDARY = "==TRNULTRACLUSTER=="
"""The MIME boundary (no line of the shell part starts with it)."""
USER_DATA_BUDGET_BYTES = 12 * 1024
"""Our share of EC2's 16 KB of user data; the rest is left to the NodeConfig part EKS
appends (its size is not documented; it holds the cluster's endpoint, CA and flags)."""
_PLACEHOLDER = re.compile(r"@@([A-Z][A-Z0-9_]*)@@")
_PACKED = re.compile(r"<<'TRN_LUSTRE_EFA'[^\n]*\n(.*?)\nTRN_LUSTRE_EFA\n", re.S)


def inline_script(text: str) -> str:
    """``text`` (a bash script) without its comment-only lines, except the first line (the
    ``#!`` line): the same commands in fewer bytes."""
    lines = text.splitlines()
    kept = [lines[0], *(ln for ln in lines[1:] if not ln.lstrip().startswith("#"))]
    return "\n".join(kept) + "\n"


def packed_script() -> str:
    """``lustre_efa.sh`` as the shell part carries it: :func:`inline_script`, gzip-compressed
    (no timestamp: the same bytes at every synth) and base64-encoded in lines of 76
    characters; the part undoes it with ``base64 -d | gunzip``."""
    text = inline_script((NODE_SCRIPTS / LUSTRE_EFA_SCRIPT).read_text())
    packed = gzip.compress(text.encode(), compresslevel=9, mtime=0)
    return base64.encodebytes(packed).decode().rstrip("\n")


def helper_sha256() -> str:
    """The SHA-256 (hex) of ``lustre_efa.py``'s bytes: what the node checks its download
    against. A single-file asset is uploaded as the file is ("The asset source path points to a
    single file, which should be uploaded to Amazon S3": CDK API reference,
    ``FileAssetPackaging.FILE``; a directory would be zipped), so the object has these bytes."""
    return hashlib.sha256((NODE_SCRIPTS / LUSTRE_EFA_HELPER).read_bytes()).hexdigest()


@dataclass(frozen=True)
class HelperSource:
    """Where the EKS nodes fetch ``lustre_efa.py`` at boot, and what it must hash to.

    Attributes:
        url: ``s3://<bucket>/<key>`` of the object (may hold tokens).
        sha256: its SHA-256, hex (:func:`helper_sha256`).
    """

    url: str
    sha256: str


HELPER_OBJECTS = "*.py"
"""The bootstrap bucket's objects the EKS node role may read: single-file Python assets,
whose key is the asset's hash and ``.py`` (the default synthesizer's ``objectKey``, as the
synthesized ``*.assets.json`` shows)."""


class LustreEfaHelper(Construct):
    """``lustre_efa.py`` for the EKS Trainium nodes: an S3 asset of the one file (uploaded by
    the CDK CLI to the bootstrap bucket at deploy, no Lambda) and the policy ``policy`` that
    lets ``role`` read it: ``s3:GetObject``, all that ``aws s3 cp`` of one object needs ("To
    use HEAD, you must have the s3:GetObject permission", S3 API reference, HeadObject), on
    the bootstrap bucket's ``*.py`` objects (:data:`HELPER_OBJECTS`), not the whole bucket
    (``asset.grant_read`` would grant ``s3:GetObject*``, ``s3:List*`` and ``s3:GetBucket*`` on
    it, what the standalone nodes' assets get, acknowledged there). No KMS statement: the
    bootstrap bucket's own key (``cdk bootstrap``'s default) lets every principal of the
    account decrypt through S3 (key policy, ``kms:ViaService`` ``s3.<region>.amazonaws.com``
    and ``kms:CallerAccount``), as the AWS managed ``aws/s3`` key does (the pinned CDK CLI's
    ``lib/api/bootstrap/bootstrap-template.yaml``, bootstrap version 33); a bootstrap with an
    existing key of the user's (``--bootstrap-kms-key-id``) would need ``kms:Decrypt`` on it,
    as the standalone nodes' asset reads would. A policy of its own, so
    that the node groups can wait for it (as for ``NodeMetricsPolicy``): a node that boots
    before it exists cannot fetch the helper.

    Deploy, update and rollback: the asset's object key is its hash and the file's extension,
    the hash "based on the content of the source path" by default (CDK API reference,
    ``AssetHashType.SOURCE``), and :attr:`source` names it and the file's SHA-256, both in
    the user data. So a change of ``lustre_efa.py`` is a change of the launch template's user
    data: a new launch template version, and every node group on it rolls its nodes (as a
    change of the inlined ``lustre_efa.sh`` did already, and as ``config/fsx_efa.py``
    ``MODE_IN_LAUNCH_TEMPLATE`` says of the mode; how each group rolls: :mod:`.node_updates`).
    The policy names every version's object (``*.py``), not this version's key, and so does
    not change with the helper: a node launched from the previous template version while its
    node group waits for its update, or again during a rollback (if CloudFormation rolls the
    node groups back before the policy they depend on, the reverse of the update's order: not
    verified against a page), still fetches the previous object, which stays in the bootstrap
    bucket (the CDK CLI deletes unused assets only when told: ``cdk gc``, the pinned CLI's
    ``cdk gc --help``). A policy on this version's key alone would make those nodes fail their
    boot part (in mode ``required`` they power off), which could fail the rollback itself.

    Args:
        role: the EKS node role.

    Attributes:
        source: the object's ``s3://`` URL and the file's SHA-256.
        policy: the ``s3:GetObject`` policy attached to ``role``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, role: iam.IRole) -> None:
        super().__init__(scope, construct_id)
        asset = s3_assets.Asset(self, "Asset", path=str(NODE_SCRIPTS / LUSTRE_EFA_HELPER))
        self.policy = iam.Policy(self, "ReadPolicy", statements=[iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[asset.bucket.arn_for_objects(HELPER_OBJECTS)])])
        self.policy.attach_to_role(role)
        acknowledge(self.policy, bootstrap_assets_finding(Stack.of(self), HELPER_OBJECTS),
                    "The EKS nodes fetch lustre_efa.py, an S3 asset of this deploy, from the CDK "
                    "bootstrap bucket (read only): every version's object, so that nodes of the "
                    "previous launch template version still fetch theirs during an update or a "
                    "rollback.")
        self.source = HelperSource(url=asset.s3_object_url, sha256=helper_sha256())


def boot_script(mode: EfaMode, interfaces: int, *, cluster_name: str, region: str,
                helper: HelperSource, check_mib: int = LUSTRE_EFA_CHECK_MIB) -> str:
    """The shell part: ``scripts/lustre_efa_boot.sh`` with ``lustre_efa.sh`` inlined
    (:func:`packed_script`), where to fetch ``lustre_efa.py`` and its SHA-256, and the
    script's arguments filled in.

    Args:
        mode: ``preferred`` or ``required`` (``Foundation.fsx_efa_mode``).
        interfaces: EFA interfaces bound to LNet (``Foundation.fsx_efa_interfaces``).
        cluster_name: ``ClusterName`` of ``node_fsx_lustre_over_efa``: the EKS cluster's name,
            as Container Insights gives the cluster's other node metrics (may be a token).
        region: the stack's Region (may be a token).
        helper: where the node fetches ``lustre_efa.py`` (:attr:`LustreEfaHelper.source`).
        check_mib: MiB of direct I/O of the check.

    Raises:
        ValueError: ``mode`` is ``off`` (the launch template then gets no user data).
    """
    if mode == "off":
        raise ValueError("fsx.efa mode off: the EKS nodes get no Lustre over EFA user data")
    values = {"LUSTRE_EFA_GZ": packed_script(), "MODE": mode,
              "HELPER_URL": helper.url, "HELPER_SHA256": helper.sha256,
              "INTERFACES": str(interfaces), "CHECK_MIB": str(check_mib), "REGION": region,
              "NAMESPACE": NODE_METRICS_NAMESPACE, "METRIC": NodeMetric.LUSTRE_OVER_EFA,
              "CLUSTER": cluster_name}
    template = inline_script(BOOT_PART.read_text())
    assert set(_PLACEHOLDER.findall(template)) == set(values), "placeholders and values differ"
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def lustre_efa_user_data(mode: EfaMode, interfaces: int, *, cluster_name: str, region: str,
                         helper: HelperSource, check_mib: int = LUSTRE_EFA_CHECK_MIB) -> str:
    """The launch template's user data: a MIME multi-part document with the one shell part of
    :func:`boot_script` (the format of the EKS user guide's example; EKS appends its own
    NodeConfig part). Arguments as :func:`boot_script`."""
    part = boot_script(mode, interfaces, cluster_name=cluster_name, region=region,
                       helper=helper, check_mib=check_mib)
    return (f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{BOUNDARY}"\n\n'
            f'--{BOUNDARY}\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
            f"{part}\n--{BOUNDARY}--\n")


def add_lustre_efa_user_data(launch_template: ec2.CfnLaunchTemplate, mode: EfaMode,
                             interfaces: int, *, cluster_name: str, region: str,
                             helper: HelperSource) -> None:
    """Give ``launch_template`` (the stack's EFA launch template, used by the EKS managed node
    groups) :func:`lustre_efa_user_data`, base64-encoded as ``LaunchTemplateData.UserData``
    takes it. Nothing when ``mode`` is ``off``: the template stays as it was."""
    if mode == "off":
        return
    launch_template.add_property_override(
        "LaunchTemplateData.UserData",
        Fn.base64(lustre_efa_user_data(mode, interfaces, cluster_name=cluster_name,
                                       region=region, helper=helper)))


def user_data_scripts(user_data: str) -> dict[str, str]:
    """The scripts a node runs from :func:`lustre_efa_user_data` (or the same document
    decoded from a synthesized template), as text: ``{"lustre_efa_boot.sh": <the shell
    part>, "lustre_efa.sh": <the script it unpacks>}``; for reading what the nodes run (for
    example the AWS calls the node role must allow) without the compressed blob. Not the
    helper ``lustre_efa.py``, which the part fetches (:class:`LustreEfaHelper`)."""
    message = email.message_from_string(user_data)
    (part,) = message.get_payload()
    shell = part.get_payload()
    packed = _PACKED.search(shell)
    if packed is None:
        raise ValueError("the user data's shell part carries no lustre_efa.sh")
    script = gzip.decompress(base64.b64decode(packed.group(1))).decode()
    return {BOOT_PART.name: shell, LUSTRE_EFA_SCRIPT: script}
