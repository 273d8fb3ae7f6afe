"""Rules of FSx for Lustre: capacity steps, throughput and Lustre version per deployment
type, the data repository association, and what ``data_removal_policy: retain`` needs."""

from __future__ import annotations

import re
from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import (
    DOC_FSX_CAPACITY,
    DOC_FSX_DRA,
    DOC_FSX_QUOTAS,
    DOC_FSX_THROUGHPUT,
    DOC_FSX_VERSION,
    DOC_LUSTRE_OVER_EFA,
    FSX_DEFAULT_QUOTA_GIB,
    FSX_DRA_DEPLOYMENT_TYPES,
    FSX_DRA_LUSTRE_VERSIONS,
    FSX_DRA_PATH_MAX_CHARS,
    FSX_EFA_RECOMMENDED_MB_S,
    FSX_LUSTRE_VERSIONS,
    FSX_MAX_STORAGE_GIB,
    FSX_THROUGHPUT_MB_S_TIB,
)
from trn_ultracluster.config.fsx_efa import MODE_IN_LAUNCH_TEMPLATE, plan_fsx_efa
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.contracts.catalog import CATALOG, CPU_CATALOG

__all__ = ["data_removal", "fsx_capacity", "fsx_data_repository", "fsx_efa", "fsx_throughput",
           "fsx_version"]


def fsx_capacity(c: ClusterConfig) -> Iterator[ConfigIssue]:
    gib, kind = c.fsx.storage_capacity_gib, c.fsx.deployment_type
    # Source: CloudFormation AWS::FSx::FileSystem StorageCapacity (DOC_FSX_CAPACITY):
    # SCRATCH_1: 1200, 2400, 3600 and multiples of 3600 GiB; SCRATCH_2, PERSISTENT_1 and
    # PERSISTENT_2 (SSD): 1200, 2400 and multiples of 2400 GiB.
    step = 3600 if kind == "SCRATCH_1" else 2400
    if gib not in (1200, 2400) and (gib <= 0 or gib % step):
        yield ConfigIssue(
            "fsx.storage_capacity_gib", gib,
            f"must be 1200, 2400 or a multiple of {step} GiB for {kind}", DOC_FSX_CAPACITY,
        )
    elif gib > FSX_MAX_STORAGE_GIB:
        yield ConfigIssue("fsx.storage_capacity_gib", gib,
                          f"must be at most {FSX_MAX_STORAGE_GIB} GiB (the FSx API's maximum)",
                          DOC_FSX_CAPACITY)
    elif gib > FSX_DEFAULT_QUOTA_GIB:
        yield ConfigIssue("fsx.storage_capacity_gib", gib,
                          f"should be at most the default FSx for Lustre storage quota of "
                          f"{FSX_DEFAULT_QUOTA_GIB} GiB per account and Region (25,200 in "
                          "smaller Regions) unless yours was raised: otherwise the file system "
                          "fails to create", DOC_FSX_QUOTAS, severity="warning")


def fsx_throughput(c: ClusterConfig) -> Iterator[ConfigIssue]:
    kind, value = c.fsx.deployment_type, c.fsx.per_unit_storage_throughput
    allowed = FSX_THROUGHPUT_MB_S_TIB.get(kind)
    if allowed is None and value is not None:
        yield ConfigIssue(
            "fsx.per_unit_storage_throughput", value,
            f"must be null for {kind} (only PERSISTENT_1 and PERSISTENT_2 take a throughput)",
            DOC_FSX_THROUGHPUT,
        )
    elif allowed is not None and value not in allowed:
        yield ConfigIssue(
            "fsx.per_unit_storage_throughput", value,
            f"must be {one_of(allowed)} MB/s/TiB for {kind}", DOC_FSX_THROUGHPUT,
        )


def fsx_version(c: ClusterConfig) -> Iterator[ConfigIssue]:
    allowed = FSX_LUSTRE_VERSIONS[c.fsx.deployment_type]
    if c.fsx.lustre_version not in allowed:
        yield ConfigIssue(
            "fsx.lustre_version", c.fsx.lustre_version,
            f"must be {one_of(allowed)} for {c.fsx.deployment_type}", DOC_FSX_VERSION,
        )


def fsx_data_repository(c: ClusterConfig) -> Iterator[ConfigIssue]:
    dra = c.fsx.data_repository
    if dra is None or c.fsx.lustre_version not in FSX_LUSTRE_VERSIONS[c.fsx.deployment_type]:
        return  # no link, or the version error is reported already
    if (c.fsx.deployment_type not in FSX_DRA_DEPLOYMENT_TYPES
            or c.fsx.lustre_version not in FSX_DRA_LUSTRE_VERSIONS):
        yield ConfigIssue(
            "fsx.data_repository", dra.model_dump(exclude_defaults=True) or "default link",
            f"must be null unless fsx.deployment_type is {one_of(FSX_DRA_DEPLOYMENT_TYPES)} "
            f"and fsx.lustre_version is {one_of(FSX_DRA_LUSTRE_VERSIONS)} (got "
            f"{c.fsx.deployment_type}, {c.fsx.lustre_version})",
            DOC_FSX_DRA,
        )
    if dra.s3_path is not None and not re.match(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$",
                                                dra.s3_path):
        yield ConfigIssue("fsx.data_repository.s3_path", dra.s3_path,
                          "must be an S3 URI like 's3://my-bucket/prefix/' or null for the "
                          "stack's data bucket", DOC_FSX_DRA)
    path = dra.file_system_path
    levels = path.split("/")[1:]
    if path != "/" and (
            not re.match(r"^/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*\Z", path)
            or any(level in (".", "..") for level in levels)
            or len(path) > FSX_DRA_PATH_MAX_CHARS):
        yield ConfigIssue("fsx.data_repository.file_system_path", path,
                          "must be '/' (the whole file system) or an absolute directory path "
                          "like '/s3': levels of letters, digits and '_.-', none of them '.' "
                          f"or '..', no trailing '/', at most {FSX_DRA_PATH_MAX_CHARS} "
                          "characters", DOC_FSX_DRA)


def data_removal(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``retain`` keeps what the file system holds by exporting it to S3 before
    ``cdk destroy`` deletes the file system (the file system itself cannot outlive the VPC
    it sits in); that needs a data repository association."""
    if c.data_removal_policy != "retain":
        return
    dra = c.fsx.data_repository
    if dra is None:
        yield ConfigIssue(
            "data_removal_policy", "retain",
            "must be 'destroy' when fsx.data_repository is null: 'retain' exports the file "
            "system to S3 before cdk destroy deletes it, and without a data repository there "
            "is nowhere to export to. Link one (the default) to keep the file system's "
            "contents, or set 'destroy' to delete them with the stack", DOC_FSX_DRA)
    elif dra.file_system_path != "/":
        yield ConfigIssue(
            "fsx.data_repository.file_system_path", dra.file_system_path,
            "should be '/' with data_removal_policy 'retain': files outside the linked path "
            "(e.g. the Neuron compile cache) are not exported and are deleted with the file "
            "system on cdk destroy", DOC_FSX_DRA, severity="warning")


def fsx_efa(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``fsx.efa`` (:mod:`trn_ultracluster.config.fsx_efa`): with ``true``, each rule of the
    file system or its client type that does not hold is an error naming it; a node-count
    limit that does not hold is a warning naming ``nodes.max`` whatever the setting (mode
    ``preferred``, never a replaced file system); with ``auto``, a warning when EFA stays off
    although the throughput is one AWS recommends it for, one when it turns on, because the
    setting is fixed when the file system is created ("you cannot enable or disable EFA on an
    existing file system", FSx for Lustre user guide, "Working with EFA-enabled file
    systems"), and one when it turns on for an ``instance_type`` that cannot be a client.

    A node-count limit with ``true`` on an orchestrator of :data:`MODE_IN_LAUNCH_TEMPLATE` is
    an error instead: the mode it would drop to is in the nodes' launch template, so a grow
    across the limit would roll every node (issue 29: a grow changes no launch template).

    With ``pools`` the file system's clients are every pool's nodes: each Trainium pool has
    its own ``client`` rule (``pools[i].instance_type``), and the node-count limits count the
    pools whose type is a client (named ``pools``). CPU pools have no EFA: whatever
    ``fsx.efa`` says, their nodes mount the file system over TCP (mode ``off``: they never set
    up Lustre over EFA, so ``true``, which makes the Trainium clients' mode ``required``,
    asks nothing of them and fails none of them). ``true`` therefore means "EFA on every
    Trainium node"; a CPU pool beside an EFA-enabled file system reaches fewer, larger
    storage servers over TCP than it would without EFA (docs/lustre-over-efa.md),
    which is what its data-preparation jobs get."""
    known = CATALOG.keys() | (CPU_CATALOG.keys() if c.pools else set())
    if any(p.instance_type not in known for p in c.node_pools):
        return  # instance_type's (pools[i].instance_type's) own rule reports it
    plan = plan_fsx_efa(c)
    if plan.setting is True:
        for rule in plan.failed_of("file-system", "client"):
            yield ConfigIssue(rule.field, rule.value,
                              f"{rule.needs}. fsx.efa is true, which needs this rule: meet it, "
                              "or set fsx.efa to false for a file system without EFA (on a "
                              "deployed stack whose file system has EFA, that replaces the file "
                              "system and deletes what it holds beyond its S3 export: "
                              f"{DOC_LUSTRE_OVER_EFA})", rule.doc)
    elif plan.setting == "auto" and plan.gains and plan.failed_of("file-system"):
        failed = plan.failed_of("file-system")
        yield ConfigIssue(
            "fsx.efa", "auto",
            f"should be reviewed: the file system's throughput is above "
            f"{FSX_EFA_RECOMMENDED_MB_S:,} MB/s, from which AWS recommends EFA, but EFA stays "
            "off because " + "; and ".join(f"{r.field} {r.needs}" for r in failed),
            failed[0].doc, severity="warning")
    elif plan.setting == "auto" and plan.enabled:
        yield ConfigIssue(
            "fsx.efa", "auto",
            "should be true or false, not auto, now that auto turns EFA on: EFA is fixed when "
            "the file system is created, so if this stack is deployed with a file system "
            "without EFA this deploy replaces it (`trn-ultracluster preflight` says; false "
            "keeps it), and a later change of the file system that makes auto decide "
            "otherwise (storage capacity, throughput, deployment type) would too, deleting "
            "what it holds beyond its S3 export; with true such a change is an error instead "
            "(node counts and instance_type never change it)",
            DOC_LUSTRE_OVER_EFA, severity="warning")
        for rule in plan.failed_of("client"):
            yield ConfigIssue(
                rule.field, rule.value,
                f"should be a client type to use the EFA-enabled file system that fsx.efa auto "
                f"decides from the file system's settings: {rule.needs}. These nodes mount it "
                "over TCP, and an EFA-enabled file system has fewer, larger storage servers, so "
                "one node reaches less of it over TCP than of the same file system without "
                "EFA; set fsx.efa to false for a file system without EFA (on a deployed stack, "
                f"that replaces it: {DOC_LUSTRE_OVER_EFA})", rule.doc, severity="warning")
    if plan.enabled and plan.clients:
        for rule in plan.failed_of("limit"):
            what = "nodes.max" if rule.field == "nodes.max" else "the client pools' nodes.max"
            if plan.setting is True and c.orchestrator in MODE_IN_LAUNCH_TEMPLATE:
                yield ConfigIssue(
                    rule.field, rule.value,
                    f"must {rule.needs.removeprefix('should ')}. fsx.efa is true, and on "
                    f"{c.orchestrator} the nodes' "
                    "Lustre-over-EFA mode is in their launch template: past this limit a node "
                    "that cannot use EFA would fail its set-up (mode required), and the mode "
                    "the stack would give them instead (preferred) is a new launch template "
                    "version, which rolls every Trainium node of a running cluster. Keep "
                    f"{what} within the limit, or set fsx.efa to false (a file system "
                    "without EFA: on a deployed stack that replaces the file system and "
                    f"deletes what it holds beyond its S3 export; {DOC_LUSTRE_OVER_EFA})", rule.doc)
                continue
            downgrade = (
                "fsx.efa is true, so the nodes set up Lustre over EFA in mode preferred "
                "instead of required (their lifecycle scripts read it, no launch template): "
                "a node that cannot use EFA falls back to TCP (a warning in its log, 0 on the "
                "dashboard) instead of failing its set-up" if plan.setting is True else
                "A node that cannot use EFA falls back to TCP (a warning in its log, 0 on the "
                "dashboard)")
            yield ConfigIssue(
                rule.field, rule.value,
                f"{rule.needs}. {downgrade}. The file system stays EFA-enabled: a node count "
                f"never replaces it ({DOC_LUSTRE_OVER_EFA})", rule.doc, severity="warning")
