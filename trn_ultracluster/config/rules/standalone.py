"""Rules of the standalone orchestrator: the AMI (its id or SSM parameter), the DLAMI's virtual
environment (and the AMI that has it, by Neuron stack) and the capacity an Auto Scaling group
can launch into here."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    AMI_ID_RE,
    DOC_DEVICE_NAMES,
    DOC_NEURON_DLAMI,
    DOC_RESOURCE_IDS,
    DOC_SSM_PARAMETER_NAMES,
    DOC_STANDALONE,
    LINUX_PATH_RE,
    NATIVE_STACK,
    NEURON_DLAMI_LATEST_PARAMETER,
    ROOT_DEVICE_RE,
    SSM_PARAMETER_MAX_LEVELS,
    SSM_PARAMETER_NAME_CHARS,
    SSM_PARAMETER_NAME_RE,
    XLA_STACK,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.config.rules.pool_keys import capacity_key
from trn_ultracluster.contracts.catalog import CATALOG
from trn_ultracluster.contracts.neuron_stack import NATIVE

__all__ = ["standalone"]


def standalone(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.orchestrator != "standalone":
        return
    sa = c.standalone
    # The Neuron stack follows each Trainium pool's family; an unknown type has none
    # (compute.instance_type_known / pools.pool_types report it), nor has a CPU pool.
    stacks = list(dict.fromkeys(p.neuron_stack for p in c.node_pools
                                if p.instance_type in CATALOG))
    venvs = [sa.resolved(stack).dlami_venv for stack in stacks] or [sa.dlami_venv]
    if sa.ami_id is not None and not AMI_ID_RE.match(sa.ami_id):
        yield ConfigIssue("standalone.ami_id", sa.ami_id,
                          "must be 'ami-' followed by 8 or 17 hex digits", DOC_RESOURCE_IDS)
    if sa.ami_ssm_parameter is not None:
        if sa.ami_id is not None:
            yield ConfigIssue("standalone.ami_ssm_parameter", sa.ami_ssm_parameter,
                              "must be null when standalone.ami_id is set (one AMI source)",
                              DOC_STANDALONE)
        yield from _ssm_parameter_name(sa.ami_ssm_parameter)
        venv = XLA_STACK.venv
        if (sa.ami_ssm_parameter == NEURON_DLAMI_LATEST_PARAMETER and sa.runtime == "dlami-venv"
                and venv in venvs):
            yield ConfigIssue(
                "standalone.ami_ssm_parameter", sa.ami_ssm_parameter,
                f"should be null (the SDK {XLA_STACK.sdk_release} DLAMI) with "
                f"standalone.dlami_venv {venv!r}: no PyTorch 2.9 DLAMI is published "
                f"from SDK 2.32, so 'latest' is a 2.31 one, and 2.31 dropped this NxD Training "
                f"environment (Neuron DLAMI release notes 2.31.0, 2.32.0); the node setup "
                f"would fail",
                DOC_NEURON_DLAMI, severity="warning")
    if sa.runtime == "dlami-venv" and sa.dlami_venv is not None and not LINUX_PATH_RE.match(
            sa.dlami_venv):
        yield ConfigIssue("standalone.dlami_venv", sa.dlami_venv,
                          "must be an absolute path of letters, digits and '_.+-' like "
                          "'/opt/aws_neuronx_venv_pytorch_2_9_nxd_training'", DOC_NEURON_DLAMI)
    if (sa.runtime == "dlami-venv" and sa.ami_id is None and sa.ami_ssm_parameter is None
            and NATIVE in stacks):
        native = [p.name for p in c.node_pools if p.neuron_stack == NATIVE]
        yield from _native_venv_needs_its_dlami(
            f" (pool{'s' if len(native) > 1 else ''} {', '.join(native)})" if c.pools else "")
    if not ROOT_DEVICE_RE.match(sa.root_device_name):
        yield ConfigIssue("standalone.root_device_name", sa.root_device_name,
                          "must be a device name like '/dev/sda1' or '/dev/xvda'",
                          DOC_DEVICE_NAMES)
    fields = dict.fromkeys(capacity_key(c, p, "type") for p in c.node_pools
                           if p.capacity.type == "capacity-block")
    for field in fields:
        yield ConfigIssue(
            field, "capacity-block",
            "must be 'on-demand' or 'capacity-reservation' with orchestrator 'standalone': "
            "this project does not launch an Auto Scaling group into a Capacity Block",
            DOC_STANDALONE)


def _native_venv_needs_its_dlami(pools: str = "") -> Iterator[ConfigIssue]:
    """``runtime: dlami-venv`` on the native stack needs the torch-neuronx DLAMI named: the
    nodes' default AMI there is the Neuron Base DLAMI (``NATIVE_STACK.base_dlami_parameter``),
    which has the driver and EFA but no framework environment, and the torch-neuronx DLAMI's
    AMI name and SSM parameter are not in the Neuron docs read (NATIVE_STACK.sources
    ``dlami_name``; the DLAMI guide's "SSM Parameter Prefix" table at v2.32.0 predates it).
    ``get-parameters-by-path --recursive`` lists every parameter below a path (botocore's SSM
    model, GetParametersByPath ``Recursive``: "Retrieve all parameters within a
    hierarchy"). ``pools``: which pools run the native stack, for the message ("" without
    ``pools``)."""
    yield ConfigIssue(
        "standalone.runtime", "dlami-venv",
        f"must be 'container' on the native stack{pools} unless standalone.ami_id or "
        f"standalone.ami_ssm_parameter names the \"{NATIVE_STACK.dlami_name}\" DLAMI (Neuron "
        f"SDK {NATIVE_STACK.sdk_release}), which has {NATIVE_STACK.venv}: without them the "
        f"nodes boot the Neuron Base DLAMI ({NATIVE_STACK.base_dlami_parameter}), which has "
        f"no TorchNeuron environment. The torch-neuronx DLAMI's SSM parameter is not in the "
        f"Neuron docs as of SDK {NATIVE_STACK.sdk_release}; find it with `aws ssm "
        f"get-parameters-by-path --path /aws/service/neuron/dlami --recursive`",
        DOC_NEURON_DLAMI)


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
