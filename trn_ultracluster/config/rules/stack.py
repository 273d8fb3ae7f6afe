"""Rules of the stack's name, from which the physical names that must be unique in an account
and Region derive (the EKS cluster ``<stack name>-<8 hex>``, the HyperPod cluster unless
``hyperpod.cluster_name`` names it)."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    DOC_CFN_STACK_NAME,
    DOC_EKS_CREATE_CLUSTER,
    DOC_HYPERPOD_CREATE,
    EKS_CLUSTER_NAME_MAX_CHARS,
    HYPERPOD_NAME_MAX_CHARS,
    HYPERPOD_NAME_RE,
    STACK_NAME_MAX_CHARS,
    STACK_NAME_RE,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.config.model.hyperpod import LEGACY_HYPERPOD_CLUSTER_NAME
from trn_ultracluster.contracts.outputs import STACK_NAME

__all__ = ["stack_name"]

EKS_ORCHESTRATORS = ("eks", "hyperpod-eks")
EKS_SUFFIX_CHARS = 9
"""``-`` and 8 hex digits of the stack id that follow the stack name in the EKS cluster's
name (:func:`trn_ultracluster.constructs.names.stack_unique_name`)."""


def stack_name(c: ClusterConfig) -> Iterator[ConfigIssue]:
    name = c.stack_name
    if len(name) > STACK_NAME_MAX_CHARS or not STACK_NAME_RE.match(name):
        yield ConfigIssue("stack_name", name,
                          f"must be 1-{STACK_NAME_MAX_CHARS} letters, digits and hyphens, "
                          "starting with a letter (a CloudFormation stack name)",
                          DOC_CFN_STACK_NAME)
        return
    longest = EKS_CLUSTER_NAME_MAX_CHARS - EKS_SUFFIX_CHARS
    if c.orchestrator in EKS_ORCHESTRATORS and len(name) > longest:
        yield ConfigIssue("stack_name", name,
                          f"must be at most {longest} characters with orchestrator "
                          f"{c.orchestrator!r}: the EKS cluster is named '<stack_name>-<8 hex "
                          f"digits>' and EKS allows {EKS_CLUSTER_NAME_MAX_CHARS}",
                          DOC_EKS_CREATE_CLUSTER)
    if (c.orchestrator.startswith("hyperpod-") and c.hyperpod.cluster_name is None
            and name == LEGACY_HYPERPOD_CLUSTER_NAME):
        yield ConfigIssue("stack_name", name,
                          f"must not be {LEGACY_HYPERPOD_CLUSTER_NAME!r} with a HyperPod "
                          "orchestrator unless hyperpod.cluster_name is set: the default stack "
                          f"({STACK_NAME}) names its HyperPod cluster so", DOC_HYPERPOD_CREATE)
    if (c.orchestrator.startswith("hyperpod-") and c.hyperpod.cluster_name is None
            and (len(name) > HYPERPOD_NAME_MAX_CHARS or not HYPERPOD_NAME_RE.match(name))):
        yield ConfigIssue("stack_name", name,
                          f"must be at most {HYPERPOD_NAME_MAX_CHARS} characters and not end "
                          "with a hyphen while it also names the HyperPod cluster; or set "
                          "hyperpod.cluster_name", DOC_HYPERPOD_CREATE)
