"""Trainium instance catalog: the one place that holds per-instance-type facts.

Everything that depends on an instance type (the EFA launch template, the Kubernetes
resource requests, the Slurm scripts, the training program's MFU) reads this module.
It imports only the standard library, so the training container can ship it without
the CDK.

Sources (each fact below names one or more of these keys, joined by `` + ``):

- ``ec2-accel``: Amazon EC2 instance types, accelerated computing specifications,
  https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (network cards, EFA,
  bandwidth, vCPU, memory). For trn2.3xlarge and the trn2/trn2u 48xlarge rows it was read in
  a stored copy of the page from 2026 (the live page could not be fetched here).
- ``moto-instance-types``: ``aws ec2 describe-instance-types`` as recorded in getmoto/moto
  ``moto/ec2/resources/instance_types.json`` at commit 0af643a5 (regenerated 2026-08-02):
  ``NetworkInfo.MaximumNetworkCards``, ``EfaInfo.MaximumEfaInterfaces``,
  ``NetworkPerformance``, ``VCpuInfo``, ``MemoryInfo``, ``NeuronInfo``. It has no
  trn2u.48xlarge.
- ``ec2-efa``: EC2 user guide, "Maximize network bandwidth on accelerated instance types",
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
- ``neuron-trn1``: Neuron docs, Trn1/Trn1n architecture,
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn1-arch.html
- ``neuron-trn2``: Neuron docs, Trn2 architecture,
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn2-arch.html
  (trn2.48xlarge, trn2u.48xlarge and the Trn2 UltraServer: "A Trn2 UltraServer comprises four
  trn2u.48xlarge instances connected together via the NeuronLink-v3 chip-to-chip
  interconnect"). It does not cover trn2.3xlarge.
- ``neuron-trainium``, ``neuron-trainium2``: Neuron docs, Trainium / Trainium2 chip pages,
  .../arch/neuron-hardware/trainium.html and .../trainium2.html (peak BF16 TFLOPS; Trainium2:
  "Every Trainium2 chip contains eight NeuronCore-V3 cores", "96 GiB of device memory").
- ``neuron-lnc``: Neuron docs, Logical NeuronCore configuration,
  .../about-neuron/arch/neuron-features/logical-neuroncore-config.html: "On Trn2, each chip
  has 8 physical NeuronCores. With LNC=2 (default), these are grouped into 4 Logical
  NeuronCores."
- ``neuron-eks-samples``: aws-neuron/aws-neuron-eks-samples pull request #10 (2026-02-17):
  "trn2.48xlarge and trn2u.48xlarge instance types, both containing 16 EFA devices".
- ``botocore-sagemaker``: botocore ``data/sagemaker/2017-07-24/service-2.json``,
  shape ``ClusterInstanceType`` (HyperPod ``ml.`` names; ``ml.trn2.3xlarge`` since botocore
  1.40.72, "Add support for trn2.3xlarge instance type for SageMaker Hyperpod").
- ``botocore-ec2``: botocore ``data/ec2/2016-11-15/service-2.json``, shape ``InstanceType``:
  the EC2 API's names. Every row's ``name`` must be in it (tests/contracts/test_catalog.py
  reads the installed botocore); trn2.3xlarge since botocore 1.40.65, trn2u.48xlarge after
  1.43.67 and in 1.44.5.
- ``offerings-2026-08``: ``aws ec2 describe-instance-type-offerings --location-type
  availability-zone-id`` as the maintainers recorded it in 2026-08 (not re-run here: there
  is no AWS account on the build machines).
- ``offerings-moto``: the DescribeInstanceTypeOfferings snapshot in getmoto/moto
  (``moto/ec2/resources/instance_type_offerings/availability-zone-id/*.json``). Read undated
  for trn1.2xlarge (it does not list trn1.32xlarge in use1-az4, which the 2026-08 record
  does); for trn2.3xlarge at commit 0af643a5 (files regenerated 2026-08-01), where it is the
  only record. One account's view: capacity sold only as Capacity Blocks may be missing.
- ``service-quotas-ec2``: the On-Demand vCPU quota of the type's family, as
  :mod:`trn_ultracluster.contracts.quotas` records it: "Running On-Demand Trn instances"
  (L-2C3B7624) for the trn types, "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z)
  instances" (L-1216C47A) for the m, c and r types of :data:`CPU_CATALOG` (quota names of the EC2
  user guide, "Amazon EC2 service quotas", On-Demand instance quotas; the codes as public quota
  dumps record them, not read on an AWS page).
- ``karpenter-vpclimits``: aws/karpenter-provider-aws ``zz_generated.vpclimits.go``
  (network cards and interfaces per card, generated from DescribeInstanceTypes). It has only
  the trn1 types (v1.14.1).

AZ IDs are only a hint: ``preflight`` re-checks offerings live in the user's account.

Known inconsistencies (the value used is said first):

- Accelerator memory of Trainium2 types: 96 GiB per chip (``neuron-trainium2``; 1,536 GiB
  on the 48xlarge, ``neuron-trn2``). EC2 says 512 GiB per chip ("512 GiB (1 x 512 GiB)" for
  trn2.3xlarge, 8192 GiB for the 48xlarge, ``ec2-accel``; ``NeuronInfo`` ``SizeInMiB``
  524288 per device, ``moto-instance-types``), which contradicts Neuron's chip page.
- trn2.3xlarge network bandwidth: 200 Gbps, the headline of ``ec2-accel`` and of the API
  (``NetworkPerformance: "200 Gigabit"``); the API's one network card says
  ``BaselineBandwidthInGbps`` / ``PeakBandwidthInGbps`` 50. No source explains the
  difference, so the smoke test's bandwidth ratio on this type may read low.

Not verified: trn1.2xlarge bandwidth (the Neuron trn1-arch table says "up to 25" Gbps, the
EC2 product page as last read "up to 12.5"); the EFA interface count of trn2u.48xlarge (no
DescribeInstanceTypes record: 16 network cards from ``ec2-accel``, "16 EFA devices" from
``neuron-eks-samples``); the EC2 EFA guide's list of supported types (efa.html) was not read
for trn2.3xlarge or trn2u.48xlarge (``ec2-accel`` marks EFA "Yes" for both); AZ IDs of
trn2u.48xlarge (none recorded: it is sold as UltraServer Capacity Blocks).

Trn3 (Trainium3): no row, because no AWS API source names a Trn3 EC2 instance type or its
network cards (checked 2026-11: the EC2 ``InstanceType`` enum of botocore, ``ec2-accel``,
moto's DescribeInstanceTypes data, Karpenter). What is known:

- the chip (Neuron docs, .../arch/neuron-hardware/trainium3.html): "A Trainium3 device
  contains eight NeuronCore-v4 cores", 671 BF16/FP16/TF32 TFLOPS, "144 GiB of device memory,
  with 4.9 TB/sec of bandwidth"; LNC 1 or 2 as on Trn2 (``neuron-lnc``);
- the UltraServers (.../trn3-arch.html): Gen1 "consists of four servers with 16 Trainium3
  devices per server" (64 devices); Gen2 "consists of 36 servers with 4 Trainium3 devices per
  server" (144 devices). The page names no EC2 instance types;
- names seen only in Neuron software, not in any AWS API: the Neuron driver
  (aws-neuron/aws-neuron-driver ``v4/neuron_dhal_v4.c``: trn3.48xlarge, trn3e.24xlarge,
  trn3p.48xlarge, trn3s-es.48xlarge, trn3sn.48xlarge, trn3pd98.3xlarge, ...), the Neuron Helm
  chart's ``neuronInstances`` (1.9.0: trn3.48xlarge, trn3e.24xlarge; 1.10.0 as captured by a
  third party: trn3n.48xlarge, trn3en.24xlarge, trn3s-es.48xlarge) and the docs' "Trn3pds".

To add a Trn3 row, first find its name in the EC2 ``InstanceType`` enum of botocore
(``botocore-ec2``) and its network cards and ``MaximumEfaInterfaces`` in
``aws ec2 describe-instance-types`` (or ``ec2-accel``), then give every fact its source.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = [
    "CATALOG",
    "CPU_CATALOG",
    "InstanceSpec",
    "UnknownInstanceTypeError",
    "get_any_instance",
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
        ultraserver_nodes: instances per UltraServer (one NeuronLink domain across
            instances), for a type that is a building block of one (trn2u.48xlarge: 4);
            ``None`` for a type used on its own.
        az_ids_seen: AZ IDs where the type was seen offered (a hint, not a guarantee).
        sources: fact name -> source key from the module docstring.
        vcpu_quota: the Service Quotas key (:data:`~trn_ultracluster.contracts.quotas.QUOTAS`)
            of the On-Demand vCPU quota of the type's family: ``trn_vcpus`` (Running
            On-Demand Trn instances, L-2C3B7624) for Trainium, ``standard_vcpus`` for the
            CPU types (Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances,
            L-1216C47A). Two pools of one family share it.
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
    ultraserver_nodes: int | None
    az_ids_seen: tuple[str, ...]
    sources: tuple[tuple[str, str], ...] = ()
    vcpu_quota: str = "trn_vcpus"

    @property
    def accelerated(self) -> bool:
        """True for a Trainium type (it has NeuronCores); False for a CPU type of
        :data:`CPU_CATALOG`."""
        return self.neuron_cores > 0

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
        """Dense BF16 peak of one logical NeuronCore (one training process), TFLOPS (0 for a
        CPU type)."""
        cores = self.logical_neuron_cores
        return self.peak_bf16_tflops / cores if cores else 0.0


_TRN1_SOURCES = (
    ("chips, neuron_cores, accelerator_memory_gib", "neuron-trn1"),
    ("network_cards, efa_interfaces", "karpenter-vpclimits"),
    ("network_bandwidth_gbps, vcpus, memory_gib, ultraserver_nodes", "neuron-trn1"),
    ("peak_bf16_tflops_per_chip", "neuron-trainium"),
    ("hyperpod_instance_type", "botocore-sagemaker"),
    ("az_ids_seen", "offerings-2026-08"),
    ("vcpu_quota", "service-quotas-ec2"),
)
_TRN2_SOURCES = (
    ("chips, neuron_cores, logical_neuron_core_config, accelerator_memory_gib", "neuron-trn2"),
    ("network_cards", "ec2-accel + moto-instance-types"),
    ("efa_interfaces", "moto-instance-types"),
    ("network_bandwidth_gbps, vcpus, memory_gib, ultraserver_nodes", "neuron-trn2"),
    ("peak_bf16_tflops_per_chip", "neuron-trainium2"),
    ("hyperpod_instance_type", "botocore-sagemaker"),
    ("az_ids_seen", "offerings-2026-08"),
    ("vcpu_quota", "service-quotas-ec2"),
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
    ultraserver_nodes=None,
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
    ultraserver_nodes=None,
    az_ids_seen=("use2-az1", "use2-az2", "use2-az3"),
    sources=_TRN2_SOURCES,
)
TRN2_3XLARGE = InstanceSpec(
    name="trn2.3xlarge",
    chips=1,
    neuron_cores=8,
    neuron_core_version="v3",
    logical_neuron_core_config=2,
    accelerator_memory_gib=96,  # Neuron's figure; EC2 says 512 (module docstring)
    network_cards=1,
    efa_interfaces=1,
    network_bandwidth_gbps=200.0,  # headline; the API's card says 50 (module docstring)
    vcpus=12,
    memory_gib=128,
    peak_bf16_tflops_per_chip=667.0,
    hyperpod_instance_type="ml.trn2.3xlarge",
    ultraserver_nodes=None,
    az_ids_seen=("apse4-az3", "sae1-az1", "sae1-az2", "sae1-az3"),
    sources=(
        ("chips", "ec2-accel + moto-instance-types"),
        ("neuron_cores, accelerator_memory_gib, peak_bf16_tflops_per_chip", "neuron-trainium2"),
        ("logical_neuron_core_config", "neuron-lnc"),
        ("network_cards, efa_interfaces, network_bandwidth_gbps, vcpus, memory_gib",
         "ec2-accel + moto-instance-types"),
        ("ultraserver_nodes", "neuron-trn2"),
        ("hyperpod_instance_type", "botocore-sagemaker"),
        ("az_ids_seen", "offerings-moto"),
        ("vcpu_quota", "service-quotas-ec2"),
    ),
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
                ("chips, neuron_cores, accelerator_memory_gib, vcpus, memory_gib, "
                 "ultraserver_nodes", "neuron-trn1"),
                ("network_cards, efa_interfaces", "karpenter-vpclimits"),
                ("network_bandwidth_gbps", "ec2-accel (not verified)"),
                ("peak_bf16_tflops_per_chip", "neuron-trainium"),
                ("hyperpod_instance_type", "botocore-sagemaker"),
                ("az_ids_seen", "offerings-moto"),
                ("vcpu_quota", "service-quotas-ec2"),
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
            sources=_TRN1_SOURCES,
        ),
        TRN2_3XLARGE,
        TRN2_48XLARGE,
        # A Trn2 UltraServer node (4 per UltraServer): same per-node specs (neuron-trn2).
        replace(
            TRN2_48XLARGE,
            name="trn2u.48xlarge",
            hyperpod_instance_type=None,  # HyperPod offers no ml.trn2u type
            ultraserver_nodes=4,
            az_ids_seen=(),  # not recorded
            sources=(
                ("chips, neuron_cores, logical_neuron_core_config, accelerator_memory_gib",
                 "neuron-trn2"),
                ("network_cards", "ec2-accel"),
                ("efa_interfaces", "ec2-accel + neuron-eks-samples (no DescribeInstanceTypes "
                 "record)"),
                ("network_bandwidth_gbps, vcpus, memory_gib, ultraserver_nodes", "neuron-trn2"),
                ("peak_bf16_tflops_per_chip", "neuron-trainium2"),
                ("hyperpod_instance_type", "botocore-sagemaker"),
                ("vcpu_quota", "service-quotas-ec2"),
            ),
        ),
    )
}


def _cpu(name: str, vcpus: int, memory_gib: int, bandwidth_gbps: float,
         az_ids_seen: tuple[str, ...] = ()) -> InstanceSpec:
    return InstanceSpec(
        name=name, chips=0, neuron_cores=0, neuron_core_version="", logical_neuron_core_config=1,
        accelerator_memory_gib=0, network_cards=1, efa_interfaces=0,
        network_bandwidth_gbps=bandwidth_gbps, vcpus=vcpus, memory_gib=memory_gib,
        peak_bf16_tflops_per_chip=0.0, hyperpod_instance_type=f"ml.{name}",
        ultraserver_nodes=None, az_ids_seen=az_ids_seen, vcpu_quota="standard_vcpus",
        sources=(("vcpus, memory_gib, network_cards, efa_interfaces, network_bandwidth_gbps",
                  "moto-instance-types"),
                 ("hyperpod_instance_type", "botocore-sagemaker"),
                 ("vcpu_quota", "service-quotas-ec2")))


CPU_CATALOG: dict[str, InstanceSpec] = {spec.name: spec for spec in (
    # General purpose, 4 GiB per vCPU: tokenizing, notebooks, tools.
    _cpu("m7i.4xlarge", 16, 64, 12.5),  # "Up to 12.5 Gigabit"
    _cpu("m7i.8xlarge", 32, 128, 12.5),
    _cpu("m7i.16xlarge", 64, 256, 25.0),
    # Compute optimized, 2 GiB per vCPU: CPU-bound preprocessing (HyperPod offers c6i, not c7i).
    _cpu("c6i.8xlarge", 32, 64, 12.5),
    # Memory optimized, 8 GiB per vCPU: large in-memory shuffles and deduplication.
    _cpu("r7i.8xlarge", 32, 256, 12.5),
)}
"""CPU instance types for a CPU node pool (data preparation, tools): a small choice of
current general-purpose, compute- and memory-optimized types that every orchestrator can run
(each has an ``ml.`` name in HyperPod's ``ClusterInstanceType``), not a list of all of EC2.
None has EFA or NeuronCores: one network card, one ordinary interface in the launch template.
Sources: ``moto-instance-types`` (``VCpuInfo.DefaultVCpus``, ``MemoryInfo.SizeInMiB``,
``NetworkInfo.MaximumNetworkCards`` 1, ``EfaSupported`` false, ``NetworkPerformance``);
``botocore-sagemaker`` (``ml.m7i.4xlarge``, ``ml.m7i.8xlarge``, ``ml.m7i.16xlarge``,
``ml.c6i.8xlarge``, ``ml.r7i.8xlarge`` in ``ClusterInstanceType``, botocore 1.44.8);
``service-quotas-ec2``: EC2 user guide, "Amazon EC2 service quotas", On-Demand
instance quotas: "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"
(L-1216C47A), in vCPUs. ``az_ids_seen`` is left empty: general-purpose types are offered
in every AZ ``preflight`` checks, which re-checks the offering live."""


def get_any_instance(instance_type: str) -> InstanceSpec:
    """Return the catalog entry for a Trainium (:data:`CATALOG`) or CPU
    (:data:`CPU_CATALOG`) instance type.

    Raises:
        UnknownInstanceTypeError: the type is in neither; the message lists both.
    """
    spec = CATALOG.get(instance_type) or CPU_CATALOG.get(instance_type)
    if spec is None:
        raise UnknownInstanceTypeError(
            f"unknown instance type {instance_type!r}; Trainium: "
            f"{', '.join(sorted(CATALOG))}; CPU: {', '.join(sorted(CPU_CATALOG))} "
            "(add one in trn_ultracluster/contracts/catalog.py)")
    return spec


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
