"""The standalone nodes' AMIs and settings, per node pool (:class:`PoolAmis`,
:func:`pool_settings`).

- Trainium pools boot ``standalone.ami_id`` or ``standalone.ami_ssm_parameter`` when one is
  set, else the default AMI of the pool's Neuron stack (:func:`image_id`): on ``xla`` the
  Neuron DLAMI of the training image's SDK release, found at deploy time
  (:class:`.dlami.DlamiLookup`); on ``native`` the newest Neuron Base DLAMI by its public SSM
  parameter. Pools of one Neuron stack share one AMI.
- CPU pools boot the newest Amazon Linux 2023 AMI by its public SSM parameter
  (:data:`CPU_AMI_PARAMETER`, resolved by CloudFormation at each deploy, like the Base
  DLAMI's), whatever the ``standalone`` AMI settings say (they name Neuron AMIs), and run
  every job in the training image (:data:`~trn_ultracluster.contracts.standalone.CPU_RUNTIME`).

Why not the Neuron DLAMI on a CPU type: the Neuron DLAMIs are made "for running machine
learning workloads on AWS Inferentia and Trainium instances", and each DLAMI's table in the
Neuron DLAMI User Guide lists the Neuron instance types it supports
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/dlami/index.html); a CPU type is
not one of them, and the AMI's Neuron driver, runtime and tools would have no device. What a
CPU node needs of its AMI is what ``node_setup.sh`` uses: the AWS CLI, ``python3``, the SSM
agent, the Lustre client and Docker; Amazon Linux 2023 installs the last two from its own
repositories (``node_setup.sh``): ``dnf install -y lustre-client`` (FSx for Lustre user
guide, "Installing the Lustre client", Amazon Linux 2023) and ``dnf install -y docker``
("AL2023 includes these packages [containerd, docker, ecs-init] in the core repositories",
Amazon Linux 2023 user guide, "Using AL2023 based Amazon ECS AMIs to host containerized
workloads", https://docs.aws.amazon.com/linux/al2023/ug/ecs.html). That the standard AL2023
AMI has the AWS CLI v2, ``python3`` (3.9; the node scripts are tested with it) and the SSM
agent is not verified here.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_ssm as ssm
from constructs import Construct

from trn_ultracluster.config import StandaloneConfig
from trn_ultracluster.config.facts import STACK_RELEASES, NeuronStack
from trn_ultracluster.config.model import Pool
from trn_ultracluster.config.model.pools import id_suffix
from trn_ultracluster.contracts.neuron_stack import NeuronStackName
from trn_ultracluster.contracts.standalone import CPU_RUNTIME
from trn_ultracluster.orchestrators.standalone.dlami import DlamiLookup

__all__ = ["CPU_AMI_PARAMETER", "CPU_ROOT_DEVICE", "PoolAmi", "PoolAmis", "ami_source",
           "image_id", "pool_settings"]

CPU_AMI_PARAMETER = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
"""The public SSM parameter of the newest Amazon Linux 2023 AMI (standard edition, default
kernel, x86_64: every type of the CPU catalog is an Intel x86_64 type). The Amazon Linux 2023
user guide, "AL2023 on Amazon EC2" (https://docs.aws.amazon.com/linux/al2023/ug/ec2.html),
lists the parameters under ``/aws/service/ami-amazon-linux-latest/`` (not read on the page
here); this is the name aws-cdk-lib's ``AmazonLinux2023ImageSsmParameter.ssm_parameter_name()``
gives for those options, which the tests check."""
CPU_ROOT_DEVICE = "/dev/xvda"
"""Root device of the Amazon Linux 2023 AMIs, which the launch template's root volume
resizes: EC2 reserves ``/dev/sda1`` and ``/dev/xvda`` for root volumes (EC2 user guide,
"Device names for volumes on Amazon EC2 instances") and Amazon Linux uses ``/dev/xvda``
(``standalone.root_device_name``'s documentation). Not verified with DescribeImages (no AWS
account here)."""


@dataclass(frozen=True)
class PoolAmi:
    """What one pool's launch template boots.

    Attributes:
        image_id: the AMI id (a token when CloudFormation resolves it).
        root_device_name: the AMI's root device (the root volume's mapping).
        source: where it comes from, in words with its configuration key (the node setup's
            message when the DLAMI's virtual environment is missing).
    """

    image_id: str
    root_device_name: str
    source: str


def pool_settings(section: StandaloneConfig, pool: Pool) -> StandaloneConfig:
    """The ``standalone`` section as ``pool``'s nodes use it.

    A Trainium pool's: ``section`` with ``dlami_venv`` filled in for the pool's Neuron stack
    (:meth:`StandaloneConfig.resolved`). A CPU pool's: runtime
    :data:`~trn_ultracluster.contracts.standalone.CPU_RUNTIME`, root device
    :data:`CPU_ROOT_DEVICE`, and no AMI setting or venv (its AMI is :data:`CPU_AMI_PARAMETER`'s).
    """
    stack = pool.neuron_stack
    if stack is None:
        return StandaloneConfig(runtime=CPU_RUNTIME, root_device_name=CPU_ROOT_DEVICE)
    return section.resolved(stack)


def image_id(scope: Construct, settings: StandaloneConfig, release: NeuronStack,
             lookup_id: str = "Dlami") -> str:
    """A Trainium node's AMI id: ``standalone.ami_id`` as given; or a CloudFormation parameter
    of type ``AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>`` whose default is
    ``standalone.ami_ssm_parameter``, resolved at each deploy; or (neither set) the default
    AMI of the Neuron stack's ``release``: its ``base_dlami_parameter`` in such a parameter
    when it has one (the native stack: the torch-neuronx DLAMI's name and SSM parameter are
    not verified, :data:`~trn_ultracluster.config.facts.NATIVE_STACK`), else its SDK
    release's DLAMI (:data:`~trn_ultracluster.config.facts.XLA_STACK`; a
    :class:`~.dlami.DlamiLookup` named ``lookup_id``)."""
    if settings.ami_id is not None:
        return settings.ami_id
    parameter = settings.ami_ssm_parameter or release.base_dlami_parameter
    if parameter is not None:
        return ssm.StringParameter.value_for_typed_string_parameter_v2(
            scope, parameter, ssm.ParameterValueType.AWS_EC2_IMAGE_ID)
    return DlamiLookup(scope, lookup_id, stack=release).image_id


def ami_source(settings: StandaloneConfig, stack: NeuronStackName) -> str:
    """Where a Trainium node's AMI comes from, in words with its configuration key; the
    default is ``stack``'s (:func:`image_id`)."""
    if settings.ami_id is not None:
        return f"standalone.ami_id {settings.ami_id}"
    if settings.ami_ssm_parameter is not None:
        return f"standalone.ami_ssm_parameter {settings.ami_ssm_parameter}"
    release = STACK_RELEASES[stack]
    if release.base_dlami_parameter is not None:
        return (f"the default of the {stack} stack: the newest Neuron Base DLAMI (SSM parameter "
                f"{release.base_dlami_parameter}), standalone.ami_id and "
                f"standalone.ami_ssm_parameter unset")
    return (f"the default of the {stack} stack: the {release.dlami_name} DLAMI of Neuron SDK "
            f"{release.sdk_release}, standalone.ami_id and standalone.ami_ssm_parameter unset")


class PoolAmis:
    """Each pool's AMI, made once per Neuron stack (and once for every CPU pool) in ``scope``.

    Args:
        scope: where the AMI lookups and SSM parameters go.
        section: the ``standalone`` section (its AMI settings and root device).
        main_stack: the main pool's Neuron stack: its DLAMI lookup keeps the construct id
            ``Dlami``; another stack's is ``Dlami<Stack>`` (``DlamiXla``).
    """

    def __init__(self, scope: Construct, section: StandaloneConfig,
                 main_stack: NeuronStackName) -> None:
        self._scope, self._section, self._main_stack = scope, section, main_stack
        self._made: dict[str, PoolAmi] = {}

    def of(self, pool: Pool) -> PoolAmi:
        """``pool``'s AMI (the same object for every pool of one kind)."""
        stack = pool.neuron_stack
        key = stack or "cpu"
        if key not in self._made:
            self._made[key] = self._cpu() if stack is None else self._trainium(stack)
        return self._made[key]

    def _trainium(self, stack: NeuronStackName) -> PoolAmi:
        lookup_id = "Dlami" + ("" if stack == self._main_stack else id_suffix(stack))
        return PoolAmi(image_id(self._scope, self._section, STACK_RELEASES[stack], lookup_id),
                       self._section.root_device_name, ami_source(self._section, stack))

    def _cpu(self) -> PoolAmi:
        image = ssm.StringParameter.value_for_typed_string_parameter_v2(
            self._scope, CPU_AMI_PARAMETER, ssm.ParameterValueType.AWS_EC2_IMAGE_ID)
        return PoolAmi(image, CPU_ROOT_DEVICE,
                       f"the CPU pools' AMI: the newest Amazon Linux 2023 AMI (SSM parameter "
                       f"{CPU_AMI_PARAMETER})")
