"""Rules of the EKS cluster (orchestrators ``eks`` and ``hyperpod-eks``): Kubernetes version,
API endpoint access, cluster admins, system nodes, the training namespace and add-on
versions."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import (
    ADDON_VERSION_RE,
    DNS_LABEL_RE,
    EKS_KUBERNETES_VERSIONS,
    DOC_EKS_ACCESS,
    DOC_EKS_ADDONS,
    DOC_EKS_ENDPOINT,
    DOC_EKS_VERSIONS,
    DOC_INSTANCES,
    DOC_K8S_NAMES,
    DOC_NODE_UPDATES,
    IAM_PRINCIPAL_ARN_RE,
    IAM_ROLE_ARN_RE,
    INSTANCE_TYPE_RE,
    VPC_CNI_MIN_FOR_EFA_ONLY,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.contracts.catalog import CATALOG, CPU_CATALOG

__all__ = ["EKS_ORCHESTRATORS", "eks"]

EKS_ORCHESTRATORS = ("eks", "hyperpod-eks")
"""The orchestrators that build an EKS cluster (the ``eks`` section)."""


def _endpoint(c: ClusterConfig) -> Iterator[ConfigIssue]:
    eks = c.eks
    if eks.endpoint_access != "public-and-private":
        return
    if not eks.public_access_cidrs:
        yield ConfigIssue("eks.public_access_cidrs", [],
                          "must list at least one CIDR block with endpoint_access "
                          "'public-and-private' (or use 'private')", DOC_EKS_ENDPOINT)
    for i, cidr in enumerate(eks.public_access_cidrs):
        try:
            net = ipaddress.ip_network(cidr, strict=True)
        except ValueError as err:
            yield ConfigIssue(f"eks.public_access_cidrs[{i}]", cidr,
                              f"must be an IPv4 CIDR block like '203.0.113.0/24' ({err})",
                              DOC_EKS_ENDPOINT)
            continue
        if net.version != 4:
            yield ConfigIssue(f"eks.public_access_cidrs[{i}]", cidr,
                              "must be an IPv4 CIDR block", DOC_EKS_ENDPOINT)
        elif net.prefixlen == 0:
            yield ConfigIssue("eks.public_access_cidrs", cidr,
                              "should list your own networks instead: this block opens the "
                              "Kubernetes API endpoint to the whole internet", DOC_EKS_ENDPOINT,
                              severity="warning")


def _admins(c: ClusterConfig) -> Iterator[ConfigIssue]:
    eks = c.eks
    if eks.admin_role_arn is None and eks.deployer_principal_arn is None:
        yield ConfigIssue("eks.admin_role_arn", None,
                          "should be set, or eks.deployer_principal_arn (make deploy sets "
                          "it): with neither, only the CloudFormation execution role will be "
                          "cluster admin; deploy with make deploy, or set the ARN of the IAM "
                          "role you use with kubectl", DOC_EKS_ACCESS, severity="warning")
    if eks.admin_role_arn is not None and not IAM_ROLE_ARN_RE.match(eks.admin_role_arn):
        yield ConfigIssue("eks.admin_role_arn", eks.admin_role_arn,
                          "must be an IAM role ARN like 'arn:aws:iam::123456789012:role/Admin'",
                          DOC_EKS_ACCESS)
    deployer = eks.deployer_principal_arn
    if deployer is not None and not IAM_PRINCIPAL_ARN_RE.match(deployer):
        yield ConfigIssue("eks.deployer_principal_arn", deployer,
                          "must be an IAM role or user ARN like "
                          "'arn:aws:iam::123456789012:role/Admin' (an assumed-role session "
                          "ARN names its role: arn:aws:iam::<account>:role/<role name>)",
                          DOC_EKS_ACCESS)


def _addons(c: ClusterConfig) -> Iterator[ConfigIssue]:
    eks = c.eks
    for name, version in eks.addon_versions.model_dump().items():
        if version is not None and not ADDON_VERSION_RE.match(version):
            yield ConfigIssue(f"eks.addon_versions.{name}", version,
                              "must be an EKS add-on version like 'v1.22.2-eksbuild.1' or null",
                              DOC_EKS_ADDONS)
    cni = eks.addon_versions.vpc_cni
    match = ADDON_VERSION_RE.match(cni or "")
    efa_only = [p for p in c.node_pools if p.efa_interface_layout == "efa-only"
                and (not c.pools or p.instance_type not in CPU_CATALOG)]
    if (efa_only and match
            and tuple(int(g) for g in match.groups()) < VPC_CNI_MIN_FOR_EFA_ONLY):
        need = ".".join(map(str, VPC_CNI_MIN_FOR_EFA_ONLY))
        yield ConfigIssue("eks.addon_versions.vpc_cni", cni,
                          f"must be v{need} or newer with {efa_only[0].key('efa_interface_layout')} "
                          "'efa-only' (older CNIs fail on interfaces without an IP address)",
                          DOC_EKS_ADDONS)


def eks(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.orchestrator not in EKS_ORCHESTRATORS:
        return
    version = c.eks.kubernetes_version
    if version is not None and version not in EKS_KUBERNETES_VERSIONS:
        yield ConfigIssue("eks.kubernetes_version", version,
                          f"must be {one_of(EKS_KUBERNETES_VERSIONS)} or null (the versions "
                          "with an EKS Neuron AMI and a pinned kubectl layer)", DOC_EKS_VERSIONS)
    yield from _endpoint(c)
    yield from _admins(c)
    system = c.eks.system_instance_type
    if not INSTANCE_TYPE_RE.match(system) or system in CATALOG:
        yield ConfigIssue("eks.system_instance_type", system,
                          "must be a non-Trainium EC2 instance type like 'm6i.xlarge'",
                          DOC_INSTANCES)
    if not DNS_LABEL_RE.match(c.eks.training_namespace):
        yield ConfigIssue("eks.training_namespace", c.eks.training_namespace,
                          "must be a DNS-1123 label: lowercase letters, digits and '-', "
                          "at most 63 characters", DOC_K8S_NAMES)
    yield from _addons(c)
    yield from _node_update_config(c)


def _node_update_config(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``eks.node_update_config: none`` changes only the Trainium node groups of ``eks`` on
    reserved capacity (the others never get an ``UpdateConfig``:
    :func:`trn_ultracluster.orchestrators.eks.node_updates.node_update`)."""
    if c.eks.node_update_config != "none":
        return
    if c.orchestrator != "eks" or all(p.capacity.type == "on-demand" for p in c.node_pools):
        where = ("HyperPod runs the nodes of hyperpod-eks" if c.orchestrator != "eks"
                 else "on-demand node groups never get an UpdateConfig")
        yield ConfigIssue("eks.node_update_config", "none",
                          "should be 'auto' (or left out): 'none' only changes the Trainium "
                          f"node groups of eks on reserved capacity, and {where}",
                          DOC_NODE_UPDATES, severity="warning")
