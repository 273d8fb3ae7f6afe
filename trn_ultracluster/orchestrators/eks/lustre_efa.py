"""FSx for Lustre over EFA on the EKS orchestrator's Trainium nodes: the launch template's user
data.

The FSx CSI driver mounts ``<dns>@tcp:/<mount>`` and sets up no LNet
(kubernetes-sigs/aws-fsx-csi-driver ``pkg/driver/node.go``), and the EKS AL2023 Neuron AMI has
no Lustre client (awslabs/amazon-eks-ami PR #2696, closed: "I don't think we should ship the
``lustre-client`` in the AMI at all"), so the host does both before the node joins:
:func:`lustre_efa_user_data` is a MIME multi-part document with one shell part
(``scripts/lustre_efa_boot.sh``) that carries ``node_scripts/lustre_efa.sh`` inline (without
its comment lines, gzip-compressed and base64-encoded, :func:`packed_script`) and runs its
``csi-node`` command.

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
  about 14 KB without its comments, is inlined compressed).
- AL2023 Lustre client: ``sudo dnf install -y lustre-client`` (FSx for Lustre user guide,
  "Installing the Lustre client", Amazon Linux 2023).
"""

from __future__ import annotations

import base64
import email
import gzip
import re
from pathlib import Path

from aws_cdk import Fn
from aws_cdk import aws_ec2 as ec2

from trn_ultracluster.config.fsx_efa import EfaMode
from trn_ultracluster.contracts.metrics import NODE_METRICS_NAMESPACE, NodeMetric
from trn_ultracluster.orchestrators.nodes import (
    LUSTRE_EFA_CHECK_MIB,
    LUSTRE_EFA_SCRIPT,
    NODE_SCRIPTS,
)

__all__ = ["BOOT_PART", "BOUNDARY", "USER_DATA_BUDGET_BYTES", "add_lustre_efa_user_data",
           "boot_script", "inline_script", "lustre_efa_user_data", "packed_script",
           "user_data_scripts"]

BOOT_PART = Path(__file__).resolve().parent / "scripts" / "lustre_efa_boot.sh"
"""The shell part's template (``@@NAME@@`` placeholders)."""
BOUNDARY = "==TRNULTRACLUSTER=="
"""The MIME boundary (no line of the shell part starts with it)."""
USER_DATA_BUDGET_BYTES = 12 * 1024
"""Our share of EC2's 16 KB of user data; the rest is left to the NodeConfig part EKS
appends (its size is not documented; it holds the cluster's endpoint, CA and flags)."""
_PLACEHOLDER = re.compile(r"@@([A-Z_]+)@@")
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


def boot_script(mode: EfaMode, interfaces: int, *, cluster_name: str, region: str,
                check_mib: int = LUSTRE_EFA_CHECK_MIB) -> str:
    """The shell part: ``scripts/lustre_efa_boot.sh`` with ``lustre_efa.sh`` inlined
    (:func:`packed_script`) and its arguments filled in.

    Args:
        mode: ``preferred`` or ``required`` (``Foundation.fsx_efa_mode``).
        interfaces: EFA interfaces bound to LNet (``Foundation.fsx_efa_interfaces``).
        cluster_name: ``ClusterName`` of ``node_fsx_lustre_over_efa``: the EKS cluster's name,
            as Container Insights gives the cluster's other node metrics (may be a token).
        region: the stack's Region (may be a token).
        check_mib: MiB of direct I/O of the check.

    Raises:
        ValueError: ``mode`` is ``off`` (the launch template then gets no user data).
    """
    if mode == "off":
        raise ValueError("fsx.efa mode off: the EKS nodes get no Lustre over EFA user data")
    values = {"LUSTRE_EFA_GZ": packed_script(), "MODE": mode,
              "INTERFACES": str(interfaces), "CHECK_MIB": str(check_mib), "REGION": region,
              "NAMESPACE": NODE_METRICS_NAMESPACE, "METRIC": NodeMetric.LUSTRE_OVER_EFA,
              "CLUSTER": cluster_name}
    template = inline_script(BOOT_PART.read_text())
    assert set(_PLACEHOLDER.findall(template)) == set(values), "placeholders and values differ"
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def lustre_efa_user_data(mode: EfaMode, interfaces: int, *, cluster_name: str, region: str,
                         check_mib: int = LUSTRE_EFA_CHECK_MIB) -> str:
    """The launch template's user data: a MIME multi-part document with the one shell part of
    :func:`boot_script` (the format of the EKS user guide's example; EKS appends its own
    NodeConfig part). Arguments as :func:`boot_script`."""
    part = boot_script(mode, interfaces, cluster_name=cluster_name, region=region,
                       check_mib=check_mib)
    return (f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{BOUNDARY}"\n\n'
            f'--{BOUNDARY}\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
            f"{part}\n--{BOUNDARY}--\n")


def add_lustre_efa_user_data(launch_template: ec2.CfnLaunchTemplate, mode: EfaMode,
                             interfaces: int, *, cluster_name: str, region: str) -> None:
    """Give ``launch_template`` (the stack's EFA launch template, used by the EKS managed node
    groups) :func:`lustre_efa_user_data`, base64-encoded as ``LaunchTemplateData.UserData``
    takes it. Nothing when ``mode`` is ``off``: the template stays as it was."""
    if mode == "off":
        return
    launch_template.add_property_override(
        "LaunchTemplateData.UserData",
        Fn.base64(lustre_efa_user_data(mode, interfaces, cluster_name=cluster_name,
                                       region=region)))


def user_data_scripts(user_data: str) -> dict[str, str]:
    """The scripts a node runs from :func:`lustre_efa_user_data` (or the same document
    decoded from a synthesized template), as text: ``{"lustre_efa_boot.sh": <the shell
    part>, "lustre_efa.sh": <the script it unpacks>}``; for reading what the nodes run (for
    example the AWS calls the node role must allow) without the compressed blob."""
    message = email.message_from_string(user_data)
    (part,) = message.get_payload()
    shell = part.get_payload()
    packed = _PACKED.search(shell)
    if packed is None:
        raise ValueError("the user data's shell part carries no lustre_efa.sh")
    script = gzip.decompress(base64.b64decode(packed.group(1))).decode()
    return {BOOT_PART.name: shell, LUSTRE_EFA_SCRIPT: script}
