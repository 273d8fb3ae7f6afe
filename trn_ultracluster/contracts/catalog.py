"""Trainium instance catalog: the one place that holds per-instance-type facts.

Everything that depends on an instance type (the EFA launch template, the Kubernetes
resource requests, the Slurm scripts, the training program's MFU) reads this module.
It imports only the standard library, so the training container can ship it without
the CDK.

Sources (each fact below names one of these keys):

- ``ec2-accel``: Amazon EC2 instance types, accelerated computing specifications,
  https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (network cards, EFA,
  bandwidth, vCPU, memory), matching ``aws ec2 describe-instance-types``.
- ``ec2-efa``: EC2 user guide, "Maximize network bandwidth on accelerated instance types",
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
- ``neuron-trn1``: Neuron docs, Trn1/Trn1n architecture,
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn1-arch.html
- ``neuron-trn2``: Neuron docs, Trn2 architecture,
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn2-arch.html
- ``neuron-trainium``, ``neuron-trainium2``: Neuron docs, Trainium / Trainium2 chip pages,
  .../arch/neuron-hardware/trainium.html and .../trainium2.html (peak BF16 TFLOPS).
- ``botocore-sagemaker``: botocore ``data/sagemaker/2017-07-24/service-2.json``,
  shape ``ClusterInstanceType`` (HyperPod ``ml.`` names).
- ``offerings-2026-08``: ``aws ec2 describe-instance-type-offerings --location-type
  availability-zone-id`` as the maintainers recorded it in 2026-08 (not re-run here: there
  is no AWS account on the build machines).
- ``offerings-moto``: the DescribeInstanceTypeOfferings snapshot in getmoto/moto
  (``moto/ec2/resources/instance_type_offerings/availability-zone-id/*.json``), undated;
  used only where the 2026-08 record has no entry (trn1.2xlarge). It does not list
  trn1.32xlarge in use1-az4, which the 2026-08 record does.
- ``karpenter-vpclimits``: aws/karpenter-provider-aws ``zz_generated.vpclimits.go``
  (network cards and interfaces per card, generated from DescribeInstanceTypes).

AZ IDs are only a hint: ``preflight`` re-checks offerings live in the user's account.

Not verified: trn1.2xlarge bandwidth (the Neuron trn1-arch table says "up to 25" Gbps, the
EC2 product page as last read "up to 12.5"); the network-card count of trn2.48xlarge /
trn2u.48xlarge (16, as the maintainers recorded it; no primary source found); AZ IDs of
trn2u.48xlarge (none recorded).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = [
    "CATALOG",
    "InstanceSpec",
    "UnknownInstanceTypeError",
    "get_instance",
]


class UnknownInstanceTypeError(ValueError):
    """Raised by :func:`get_instance` for an instance type the catalog does not hold."""


@dataclass(frozen=True)
class InstanceSpec:
    """Facts about one Trainium instance type.

    Attributes:
        name: EC2 instance type, e.g. ``"trn1.32xlarge"``.
        chips: Trainium chips per instance.
        neuron_cores: physical NeuronCores per instance.
        neuron_core_version: ``"v2"`` (Trainium) or ``"v3"`` (Trainium2).
        logical_neuron_core_config: default LNC (physical cores per logical core) the
            Neuron runtime uses on this type: 1 on Trn1, 2 on Trn2.
        accelerator_memory_gib: device (HBM) memory per instance, GiB.
        network_cards: network cards per instance; one EFA interface is attached per card.
        efa_interfaces: maximum EFA interfaces per instance (0: EFA not supported).
        network_bandwidth_gbps: aggregate network bandwidth, Gbit/s.
        vcpus: vCPUs per instance.
        memory_gib: host memory per instance, GiB.
        peak_bf16_tflops_per_chip: dense BF16 peak per chip, TFLOPS (10**12 FLOP/s).
        hyperpod_instance_type: SageMaker HyperPod ``ml.`` name, or ``None`` if HyperPod
            does not offer this type.
        az_ids_seen: AZ IDs where the type was seen offered (a hint, not a guarantee).
        sources: fact name -> source key from the module docstring.
    """

    name: str
    chips: int
    neuron_cores: int
    neuron_core_version: str
    logical_neuron_core_config: int
    accelerator_memory_gib: int
    network_cards: int
    efa_interfaces: int
    network_bandwidth_gbps: float
    vcpus: int
    memory_gib: int
    peak_bf16_tflops_per_chip: float
    hyperpod_instance_type: str | None
    az_ids_seen: tuple[str, ...]
    sources: tuple[tuple[str, str], ...] = ()

    @property
    def supports_efa(self) -> bool:
        """True when at least one EFA interface can be attached (multi-node training)."""
        return self.efa_interfaces > 0

    @property
    def logical_neuron_cores(self) -> int:
        """NeuronCores the runtime exposes at the default LNC: one worker process each."""
        return self.neuron_cores // self.logical_neuron_core_config

    @property
    def peak_bf16_tflops(self) -> float:
        """Dense BF16 peak of the whole instance, TFLOPS."""
        return self.peak_bf16_tflops_per_chip * self.chips

    @property
    def peak_bf16_tflops_per_logical_core(self) -> float:
        """Dense BF16 peak of one logical NeuronCore (one training process), TFLOPS."""
        return self.peak_bf16_tflops / self.logical_neuron_cores


_TRN1_SOURCES = (
    ("chips, neuron_cores, accelerator_memory_gib", "neuron-trn1"),
    ("network_cards, efa_interfaces", "karpenter-vpclimits"),
    ("network_bandwidth_gbps, vcpus, memory_gib", "neuron-trn1"),
    ("peak_bf16_tflops_per_chip", "neuron-trainium"),
    ("hyperpod_instance_type", "botocore-sagemaker"),
    ("az_ids_seen", "offerings-2026-08"),
)
_TRN2_SOURCES = (
    ("chips, neuron_cores, logical_neuron_core_config, accelerator_memory_gib", "neuron-trn2"),
    ("network_cards, efa_interfaces", "ec2-accel (not verified)"),
    ("network_bandwidth_gbps, vcpus, memory_gib", "neuron-trn2"),
    ("peak_bf16_tflops_per_chip", "neuron-trainium2"),
    ("hyperpod_instance_type", "botocore-sagemaker"),
    ("az_ids_seen", "offerings-2026-08"),
)

TRN1_32XLARGE = InstanceSpec(
    name="trn1.32xlarge",
    chips=16,
    neuron_cores=32,
    neuron_core_version="v2",
    logical_neuron_core_config=1,
    accelerator_memory_gib=512,
    network_cards=8,
    efa_interfaces=8,
    network_bandwidth_gbps=800.0,
    vcpus=128,
    memory_gib=512,
    peak_bf16_tflops_per_chip=190.0,
    hyperpod_instance_type="ml.trn1.32xlarge",
    az_ids_seen=(
        "use1-az4", "use1-az5", "use1-az6", "use2-az3", "usw2-az1", "usw2-az4",
        "aps1-az2", "apse2-az1", "apse2-az2", "apse4-az1",
    ),
    sources=_TRN1_SOURCES,
)
TRN2_48XLARGE = InstanceSpec(
    name="trn2.48xlarge",
    chips=16,
    neuron_cores=128,
    neuron_core_version="v3",
    logical_neuron_core_config=2,
    accelerator_memory_gib=1536,
    network_cards=16,
    efa_interfaces=16,
    network_bandwidth_gbps=3200.0,
    vcpus=192,
    memory_gib=2048,
    peak_bf16_tflops_per_chip=667.0,
    hyperpod_instance_type="ml.trn2.48xlarge",
    az_ids_seen=("use2-az1", "use2-az2", "use2-az3"),
    sources=_TRN2_SOURCES,
)

CATALOG: dict[str, InstanceSpec] = {
    spec.name: spec
    for spec in (
        replace(
            TRN1_32XLARGE,
            name="trn1.2xlarge",
            chips=1,
            neuron_cores=2,
            accelerator_memory_gib=32,
            network_cards=1,
            efa_interfaces=0,  # no EFA: single-node only (Neuron multi-node setup guide)
            network_bandwidth_gbps=12.5,  # "up to"; not verified (see module docstring)
            vcpus=8,
            memory_gib=32,
            hyperpod_instance_type=None,  # HyperPod has no ml.trn1.2xlarge
            az_ids_seen=("use1-az5", "use1-az6", "use2-az3", "usw2-az1", "usw2-az4"),  # moto
            sources=(
                ("chips, neuron_cores, accelerator_memory_gib, vcpus, memory_gib", "neuron-trn1"),
                ("network_cards, efa_interfaces", "karpenter-vpclimits"),
                ("network_bandwidth_gbps", "ec2-accel (not verified)"),
                ("peak_bf16_tflops_per_chip", "neuron-trainium"),
                ("hyperpod_instance_type", "botocore-sagemaker"),
                ("az_ids_seen", "offerings-moto"),
            ),
        ),
        TRN1_32XLARGE,
        # trn1n: the same node with twice the network cards and bandwidth.
        replace(
            TRN1_32XLARGE,
            name="trn1n.32xlarge",
            network_cards=16,
            efa_interfaces=16,
            network_bandwidth_gbps=1600.0,
            hyperpod_instance_type="ml.trn1n.32xlarge",
            az_ids_seen=("use1-az6", "use2-az3", "usw2-az4"),
            sources=(
                ("chips, neuron_cores, accelerator_memory_gib", "neuron-trn1"),
                ("network_cards, efa_interfaces", "karpenter-vpclimits"),
                ("network_bandwidth_gbps, vcpus, memory_gib", "neuron-trn1"),
                ("peak_bf16_tflops_per_chip", "neuron-trainium"),
                ("hyperpod_instance_type", "botocore-sagemaker"),
                ("az_ids_seen", "offerings-2026-08"),
            ),
        ),
        TRN2_48XLARGE,
        # A Trn2 UltraServer node (4 per UltraServer): same per-node specs (neuron-trn2).
        replace(
            TRN2_48XLARGE,
            name="trn2u.48xlarge",
            hyperpod_instance_type=None,  # HyperPod offers no ml.trn2u type
            az_ids_seen=(),  # not recorded
            sources=(
                ("chips, neuron_cores, logical_neuron_core_config, accelerator_memory_gib",
                 "neuron-trn2"),
                ("network_cards, efa_interfaces", "ec2-accel (not verified)"),
                ("network_bandwidth_gbps, vcpus, memory_gib", "neuron-trn2"),
                ("peak_bf16_tflops_per_chip", "neuron-trainium2"),
                ("hyperpod_instance_type", "botocore-sagemaker"),
            ),
        ),
    )
}


def get_instance(instance_type: str) -> InstanceSpec:
    """Return the catalog entry for ``instance_type``.

    Raises:
        UnknownInstanceTypeError: the type is not in :data:`CATALOG`; the message lists
            the supported types.
    """
    try:
        return CATALOG[instance_type]
    except KeyError:
        allowed = ", ".join(sorted(CATALOG))
        raise UnknownInstanceTypeError(
            f"unknown instance type {instance_type!r}; supported: {allowed} "
            "(add one in trn_ultracluster/contracts/catalog.py)"
        ) from None
