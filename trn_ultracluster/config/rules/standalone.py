"""Rules of the standalone orchestrator: the AMI (its id or SSM parameter), the DLAMI's virtual
environment and the capacity an Auto Scaling group can launch into here."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    AMI_ID_RE,
    DOC_DEVICE_NAMES,
    DOC_NEURON_DLAMI,
    DOC_RESOURCE_IDS,
    DOC_SSM_PARAMETER_NAMES,
    LINUX_PATH_RE,
    NEURON_DLAMI_LATEST_PARAMETER,
    README_STANDALONE,
    ROOT_DEVICE_RE,
    SSM_PARAMETER_MAX_LEVELS,
    SSM_PARAMETER_NAME_CHARS,
    SSM_PARAMETER_NAME_RE,
    XLA_STACK,
)
from trn_ultracluster.config.model import ClusterConfig

__all__ = ["standalone"]


def standalone(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.orchestrator != "standalone":
        return
    sa = c.standalone
    if sa.ami_id is not None and not AMI_ID_RE.match(sa.ami_id):
        yield ConfigIssue("standalone.ami_id", sa.ami_id,
                          "must be 'ami-' followed by 8 or 17 hex digits", DOC_RESOURCE_IDS)
    if sa.ami_ssm_parameter is not None:
        if sa.ami_id is not None:
            yield ConfigIssue("standalone.ami_ssm_parameter", sa.ami_ssm_parameter,
                              "must be null when standalone.ami_id is set (one AMI source)",
                              README_STANDALONE)
        yield from _ssm_parameter_name(sa.ami_ssm_parameter)
        if (sa.ami_ssm_parameter == NEURON_DLAMI_LATEST_PARAMETER and sa.runtime == "dlami-venv"
                and sa.dlami_venv == XLA_STACK.venv):
            yield ConfigIssue(
                "standalone.ami_ssm_parameter", sa.ami_ssm_parameter,
                f"should be null (the SDK {XLA_STACK.sdk_release} DLAMI) with "
                f"standalone.dlami_venv {sa.dlami_venv!r}: no PyTorch 2.9 DLAMI is published "
                f"from SDK 2.32, so 'latest' is a 2.31 one, and 2.31 dropped this NxD Training "
                f"environment (Neuron DLAMI release notes 2.31.0, 2.32.0); the node setup "
                f"would fail",
                DOC_NEURON_DLAMI, severity="warning")
    if sa.runtime == "dlami-venv" and not LINUX_PATH_RE.match(sa.dlami_venv):
        yield ConfigIssue("standalone.dlami_venv", sa.dlami_venv,
                          "must be an absolute path of letters, digits and '_.+-' like "
                          "'/opt/aws_neuronx_venv_pytorch_2_9_nxd_training'", DOC_NEURON_DLAMI)
    if not ROOT_DEVICE_RE.match(sa.root_device_name):
        yield ConfigIssue("standalone.root_device_name", sa.root_device_name,
                          "must be a device name like '/dev/sda1' or '/dev/xvda'",
                          DOC_DEVICE_NAMES)
    if c.capacity.type == "capacity-block":
        yield ConfigIssue(
            "capacity.type", c.capacity.type,
            "must be 'on-demand' or 'capacity-reservation' with orchestrator 'standalone': "
            "this project does not launch an Auto Scaling group into a Capacity Block",
            README_STANDALONE)


def _ssm_parameter_name(name: str) -> Iterator[ConfigIssue]:
    if len(name) > SSM_PARAMETER_NAME_CHARS or not SSM_PARAMETER_NAME_RE.match(name):
        yield ConfigIssue(
            "standalone.ami_ssm_parameter", name,
            f"must be an SSM parameter name like '/aws/service/neuron/dlami/pytorch-2.9/"
            f"ubuntu-24.04/latest/image_id': a leading '/', levels of letters, digits and "
            f"'_.-' separated by single '/', at most {SSM_PARAMETER_NAME_CHARS} characters",
            DOC_SSM_PARAMETER_NAMES)
    elif name.count("/") > SSM_PARAMETER_MAX_LEVELS:
        yield ConfigIssue("standalone.ami_ssm_parameter", name,
                          f"must have at most {SSM_PARAMETER_MAX_LEVELS} levels",
                          DOC_SSM_PARAMETER_NAMES)
