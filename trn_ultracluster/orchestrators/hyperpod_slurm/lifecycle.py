"""The HyperPod Slurm orchestrator's lifecycle files: the scripts and the generated
``trn_ultracluster.json`` with the job environment (the bucket and the upload:
:mod:`trn_ultracluster.orchestrators.hyperpod.lifecycle`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aws_cdk import Fn
from constructs import Construct

from trn_ultracluster.config import HyperPodConfig
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.hyperpod import CONTROLLER_GROUP, LOGIN_GROUP, JobEnv
from trn_ultracluster.orchestrators import nodes
from trn_ultracluster.orchestrators.base import Foundation
from trn_ultracluster.orchestrators.nodes import node_file

__all__ = ["LIFECYCLE_ASSETS", "job_environment", "lifecycle_file"]

LIFECYCLE_ASSETS = Path(__file__).resolve().parent / "scripts"
"""Our lifecycle scripts (uploaded as they are, with the shared node scripts of
:data:`~trn_ultracluster.orchestrators.nodes.NODE_SCRIPTS` beside them)."""


def lifecycle_file(settings: HyperPodConfig, workers: Sequence[str], env: dict[str, str],
                   fsx_tag_value: str, data_repository: bool,
                   efa: dict[str, Any] | None = None) -> dict[str, Any]:
    """``trn_ultracluster.json``, what the lifecycle script reads (values may be tokens);
    ``workers``: the Trainium instance groups (every part of every worker group).

    Shape: :func:`trn_ultracluster.orchestrators.nodes.node_file` (``fsx``, ``names``,
    ``env``; ``efa``: :func:`~trn_ultracluster.orchestrators.nodes.efa_node_settings`, mode
    ``off`` by default) plus::

        {"groups": {"controller": str, "login": str | None, "workers": [str, ...]}}

    ``groups`` tells the script a node's Slurm role (with HyperPod's
    ``resource_config.json``). Nothing in it refers to the file system itself, so the
    lifecycle files, and the cluster that waits for them, do not wait for FSx.
    """
    return {
        "groups": {
            "controller": CONTROLLER_GROUP,
            "login": LOGIN_GROUP if settings.login_instance_type is not None else None,
            "workers": list(workers),
        },
        **node_file(env, fsx_tag_value, data_repository, efa),
    }


def job_environment(scope: Construct, settings: HyperPodConfig, instance: InstanceSpec,
                    worker_counts: dict[str, int], foundation: Foundation) -> dict[str, str]:
    """What job scripts read from ``/fsx/.trn-ultracluster/env``: variable -> value (values
    may be tokens): :func:`trn_ultracluster.orchestrators.nodes.job_environment` plus the
    cluster name, the worker count, the partitions and the image in Pyxis form.
    """
    image = foundation.training_image
    registry = Fn.select(0, Fn.split("/", image.repository.repository_uri))
    partitions = list(dict.fromkeys(g.partition for g in settings.worker_groups))
    env = {
        JobEnv.CLUSTER_NAME: settings.cluster_name,
        JobEnv.WORKER_NODES: str(sum(worker_counts.values())),
        JobEnv.PARTITIONS: ",".join(partitions),
        JobEnv.DEFAULT_PARTITION: partitions[0],
        # Pyxis names a registry image "<registry>#<repository>:<tag>" (Pyxis README,
        # --container-image).
        JobEnv.CONTAINER_IMAGE:
            f"{registry}#{image.repository.repository_name}:{image.image_tag}",
    }
    return {**nodes.job_environment(scope, instance, foundation),
            **{k.value: v for k, v in env.items()}}
