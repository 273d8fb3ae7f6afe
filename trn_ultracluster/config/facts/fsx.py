"""FSx for Lustre, and FSx for Lustre over EFA. Each fact with its source (the package docstring says more)."""

from __future__ import annotations

import re

# --- FSx for Lustre --------------------------------------------------------------------

FSX_THROUGHPUT_MB_S_TIB: dict[str, tuple[int, ...]] = {
    # PerUnitStorageThroughput (MB/s/TiB) allowed per deployment type (SSD storage).
    # Source: CloudFormation AWS::FSx::FileSystem LustreConfiguration (DOC_FSX_THROUGHPUT).
    "PERSISTENT_1": (50, 100, 200),
    "PERSISTENT_2": (125, 250, 500, 1000),
}
FSX_DRA_DEPLOYMENT_TYPES = ("SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
FSX_DRA_LUSTRE_VERSIONS = ("2.12", "2.15")
"""Data repository associations are "supported on all FSx for Lustre 2.12 and 2.15 file
systems, excluding scratch_1" (FSx API reference, CreateDataRepositoryAssociation,
https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateDataRepositoryAssociation.html)."""
FSX_DRA_PATH_MAX_CHARS = 4096
"""``FileSystemPath`` of a data repository association: 1-4096 characters (botocore's FSx
model, ``CreateDataRepositoryAssociationRequest.FileSystemPath``, shape ``Namespace``); the
API documents it as a directory such as ``/ns1/`` with a required leading ``/``."""
FSX_LUSTRE_VERSIONS: dict[str, tuple[str, ...]] = {
    # FileSystemTypeVersion allowed per deployment type. PERSISTENT_2 needs 2.12 or newer.
    # Source: FSx for Lustre user guide, "Lustre versions" (DOC_FSX_VERSION).
    "SCRATCH_1": ("2.10", "2.12", "2.15"),
    "SCRATCH_2": ("2.10", "2.12", "2.15"),
    "PERSISTENT_1": ("2.10", "2.12", "2.15"),
    "PERSISTENT_2": ("2.12", "2.15"),
}
FSX_MAX_STORAGE_GIB = 2_147_483_647
"""Largest ``StorageCapacity`` the FSx API takes (botocore FSx model, shape
``StorageCapacity``: max 2147483647 GiB)."""
FSX_MIN_MB_S_PER_NODE = 10
"""Our bound of file system throughput per node (no AWS guideline relates FSx throughput to
the number of clients): a restart reads a checkpoint on every node at once; with less than
this share, reading the bf16 weights of the 8B recipe (:data:`RESTART_READ_GB`) on every node
takes more than about half an hour. The file system's throughput is capacity (TiB) x
``PerUnitStorageThroughput`` ("File system throughput capacity is calculated by multiplying
file system storage capacity (TiB) by the PerUnitStorageThroughput (MB/s/TiB)", FSx API
reference, ``LustreConfiguration``)."""
RESTART_READ_GB = 16
"""What each node reads at a restart in that bound: Llama-3-8B's weights in bf16, 8 billion
parameters x 2 bytes."""
FSX_DEFAULT_QUOTA_GIB = 100_800
"""Default account quota "Total storage for all file systems" of FSx for Lustre in the
larger Regions (FSx for Lustre user guide, "Quotas": 100,800 GiB in us-east-1, us-east-2,
us-west-2 and others, 25,200 GiB in smaller Regions; adjustable up to petabytes)."""

# --- FSx for Lustre over EFA -------------------------------------------------------------
# Pages of the FSx for Lustre user guide; "the EFA page" below is DOC_FSX_EFA.
DOC_FSX_EFA = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/efa-file-systems.html"
DOC_FSX_EFA_CLIENTS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html"
DOC_FSX_EFA_CAPACITY = (
    "https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-storage-capacity.html")
DOC_LUSTRE_OVER_EFA = "docs/lustre-over-efa.md"

FSX_EFA_DEPLOYMENT_TYPE = "PERSISTENT_2"
FSX_EFA_LUSTRE_VERSION = "2.15"
"""EFA-enabled file systems: "EFA is supported on Persistent 2 file systems with a metadata
configuration specified" (the EFA page, Considerations). The stack gives PERSISTENT_2 a
metadata configuration on Lustre 2.15 only, and 2.15 is what the FSx API creates with one
("2.12 is supported by all Lustre deployment types, except for PERSISTENT_2 with a metadata
configuration mode": botocore's FSx model, ``CreateFileSystemRequest.FileSystemTypeVersion``)."""
FSX_EFA_CAPACITY_STEP_GIB: dict[int, int] = {125: 38_400, 250: 19_200, 500: 9_600, 1000: 4_800}
"""``PerUnitStorageThroughput`` (MB/s/TiB) -> the step of an EFA-enabled file system's storage
capacity, GiB: "For an EFA-enabled file system, this value must be in multiples of 38400 GiB
for 125 MBps/TiB file systems, multiples of 19200 GiB for 250 MBps/TiB file systems, multiples
of 9600 GiB for 500 MBps/TiB file systems, and multiples of 4800 GiB for 1000 MBps/TiB file
systems" (user guide, "Managing storage capacity", DOC_FSX_EFA_CAPACITY). One step is also the
smallest such file system: 16x the 1,200 GiB minimum without EFA at 250 MB/s/TiB."""
FSX_EFA_CLIENT_TYPES = frozenset({"trn1.32xlarge", "trn1n.32xlarge"})
"""Trainium types that may be clients of an EFA-enabled file system: "EFA is supported on
Nitro v4 (or higher) EC2 instances that support EFA, excluding the trn2 instance family"
(the EFA page and DOC_FSX_EFA_CLIENTS). Trn1 and Trn1n are Nitro v4 (EC2 instance types guide,
accelerated computing specifications, DOC_INSTANCES) and only their 32xlarge sizes have EFA
(the catalog). trn2, trn2.3xlarge and trn2u are out: the first two by name, trn2u (its own row
in EC2's tables) because no FSx page says it is outside "the trn2 instance family" (not
verified either way)."""
FSX_EFA_MAX_CONNECTIONS = 1024
""""Each FSx for Lustre file system has a maximum limit of 1024 EFA connections across all
client instances", and "Each configured EFA interface on a client instance counts as one
connection" (DOC_FSX_EFA_CLIENTS, "EFA interfaces"). What happens past it is not documented
(not found: refused, or TCP). It depends on ``nodes.max``, so it is a warning and never
decides whether the file system has EFA (:mod:`trn_ultracluster.config.fsx_efa`): past it the
nodes run in mode ``preferred`` and one without an EFA connection falls back to TCP."""
FSX_EFA_MULTI_CARD_INTERFACES = 2
"""EFA interfaces a client binds to LNet: AWS's client set-up binds 2 on "Other instances
with multiple network cards" and 1 on "Other instances with a single network card"
(DOC_FSX_EFA_CLIENTS, "EFA interfaces", default table; AWS ParallelCluster binds all 8 on
trn1.32xlarge instead, aws/aws-parallelcluster PR #7572: the stack keeps the guide's number,
which lets 512 nodes share one file system's 1,024 connections)."""
FSX_EFA_RECOMMENDED_MB_S = 10_000
"""``auto`` turns EFA on above this file system throughput: "If you are creating a file system
with over 10 GBps of throughput capacity, we recommend enabling Elastic Fabric Adapter (EFA)
to optimize throughput per client instance" (the EFA page)."""
FSX_CLIENT_GBPS = {"tcp": 100, "efa": 700}
"""Throughput of one client instance, Gbps: 100 over ENA (TCP), 700 over EFA; "the traffic
between an individual client instance and an individual FSx for Lustre object storage server
is limited to 5 Gbps" over TCP (user guide, "Performance", "Throughput to individual client
instances"). Read from three copies of that table, not from the page itself (not verified
against a primary copy)."""
FSX_TCP_GBPS_PER_SERVER = 5
"""Over TCP, one client reaches one storage server (OSS) at most at this rate, Gbps: the
footnote of the TCP rows of :data:`FSX_CLIENT_GBPS`'s table (same source, same caveat). So a
client reaches :data:`FSX_CLIENT_GBPS` ``["tcp"]`` only through at least 20 storage servers
(derived)."""
DOC_FSX_SERVERS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html"
FSX_STORAGE_PER_SERVER_GIB: dict[str, int] = {
    "PERSISTENT_2": 2_400, "PERSISTENT_1": 2_400, "SCRATCH_2": 2_400, "SCRATCH_1": 3_600}
"""SSD storage per storage server (OSS) by deployment type, GiB, without EFA: "2.4 TiB per
OSS" (Persistent 2 non-EFA, Persistent 1 SSD, Scratch 2), "3.6 TiB per OSS" (Scratch 1); an
EFA-enabled Persistent 2 file system has one OSS per :data:`FSX_EFA_CAPACITY_STEP_GIB` step
("38.4 TiB per OSS" at 125 MB/s/TiB ... "4.8 TiB per OSS" at 1000) (user guide, "Deployment and
storage class options", "IP addresses for file systems", DOC_FSX_SERVERS). The page's "TiB"
is 1,000 GiB here, as the capacity steps show (4.8 TiB per OSS, multiples of 4800 GiB). The
same page's table of Scratch file servers fits it: 2 for 1.2 and 2.4 TiB, 3 for 4.8, 5 for 9.6,
22 for 50.4 TiB, i.e. one per 2.4 TiB (at least one) plus one (our reading: the metadata
server)."""
FSX_SCRATCH_MB_S_TIB: dict[str, int] = {"SCRATCH_1": 200, "SCRATCH_2": 200}
"""Baseline throughput of the scratch types, MB/s per TiB (they take no
``PerUnitStorageThroughput``): 200 for both (user guide, "Deployment and storage class
options", throughput per TiB by deployment type, DOC_FSX_SERVERS; "Performance
characteristics of SSD and HDD storage classes", SCRATCH_2's network baseline, burst up to
1,300). Read from copies of those tables, not from the pages themselves. Used only to decide
whether ``fsx.efa: auto`` should say why a scratch file system stays without EFA."""
FSX_EFA_CLIENT_OS = "Amazon Linux 2023, RHEL 9.5 or newer, Ubuntu 22.04 or newer with kernel 6.8+"
"""The client operating systems of EFA-enabled file systems (DOC_FSX_EFA_CLIENTS: "Amazon
Linux 2023 (AL2023); Red Hat Enterprise Linux (RHEL) 9.5 or newer; Ubuntu 22.04 or newer with
kernel version 6.8+"). Checked on each node at boot (``node_scripts/lustre_efa.sh``): the
stack does not know the kernel of every AMI."""
