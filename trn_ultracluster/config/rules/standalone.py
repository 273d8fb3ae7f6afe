"""Rules of the standalone orchestrator: the AMI's SSM parameter, the DLAMI's virtual
environment and the capacity an Auto Scaling group can launch into here."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    DOC_DEVICE_NAMES,
    DOC_NEURON_DLAMI,
    DOC_SSM_PARAMETER_NAMES,
    LINUX_PATH_RE,
    README_STANDALONE,
    ROOT_DEVICE_RE,
    SSM_PARAMETER_MAX_LEVELS,
    SSM_PARAMETER_NAME_CHARS,
    SSM_PARAMETER_NAME_RE,
)
from trn_ultracluster.config.model import ClusterConfig

__all__ = ["standalone"]


def standalone(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.orchestrator != "standalone":
        return
    sa = c.standalone
    name = sa.ami_ssm_parameter
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
