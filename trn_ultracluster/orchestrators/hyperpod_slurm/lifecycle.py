"""The HyperPod Slurm orchestrator's lifecycle files: the scripts and the generated
``trn_ultracluster.json`` with the job environment (the bucket and the upload:
:mod:`trn_ultracluster.orchestrators.hyperpod.lifecycle`).

One environment is the cluster's (the main pool's values: ``env``, written to the shared
``/fsx/.trn-ultracluster/env`` by every node, as before pools existed); each other pool has
its own (``pools``), which its nodes write to a file of their own
(:data:`~trn_ultracluster.contracts.hyperpod.NODE_ENV_FILE`, ``scripts/pool_env.py``) and job
scripts source after the shared one: a node of a trn2 or CPU pool gets its type's NeuronCores,
EFA interfaces, Neuron stack and image, whatever node wrote the shared file last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from aws_cdk import Fn
from constructs import Construct

from trn_ultracluster.config import HyperPodConfig
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.hyperpod import CONTROLLER_GROUP, LOGIN_GROUP, JobEnv
from trn_ultracluster.orchestrators import nodes
from trn_ultracluster.orchestrators.base import Foundation
from trn_ultracluster.orchestrators.hyperpod.instance_groups import WorkerPart
from trn_ultracluster.orchestrators.nodes import node_file

__all__ = ["LIFECYCLE_ASSETS", "job_environment", "lifecycle_file", "pool_environments"]

LIFECYCLE_ASSETS = Path(__file__).resolve().parent / "scripts"
"""Our lifecycle scripts (uploaded as they are, with the shared node scripts of
:data:`~trn_ultracluster.orchestrators.nodes.NODE_SCRIPTS` beside them)."""


def lifecycle_file(settings: HyperPodConfig, workers: Sequence[str], env: dict[str, str],
                   fsx_tag_value: str, data_repository: bool,
                   efa: dict[str, Any] | None = None,
                   pools: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """``trn_ultracluster.json``, what the lifecycle script reads (values may be tokens);
    ``workers``: the worker instance groups (every part of every worker group).

    Shape: :func:`trn_ultracluster.orchestrators.nodes.node_file` (``fsx``, ``names``,
    ``env``; ``efa``: :func:`~trn_ultracluster.orchestrators.nodes.efa_node_settings`, mode
    ``off`` by default) plus::

        {"groups": {"controller": str, "login": str | None, "workers": [str, ...]},
         "pools": {pool: {"groups": [str, ...], "efa": bool, "env": {VARIABLE: value}}}}

    ``groups`` tells the script a node's Slurm role (with HyperPod's
    ``resource_config.json``). ``pools`` (:func:`pool_environments`; left out when empty, as
    without ``pools`` in the configuration) holds each pool but the main one: its instance
    groups, whether its type has EFA, and its whole job environment. Nothing in the file
    refers to the file system itself, so the lifecycle files, and the cluster that waits for
    them, do not wait for FSx.
    """
    return {
        "groups": {
            "controller": CONTROLLER_GROUP,
            "login": LOGIN_GROUP if settings.login_instance_type is not None else None,
            "workers": list(workers),
        },
        **node_file(env, fsx_tag_value, data_repository, efa),
        **({"pools": dict(pools)} if pools else {}),
    }


def pool_environments(scope: Construct, settings: HyperPodConfig, parts: Sequence[WorkerPart],
                      worker_counts: dict[str, int], partitions: Sequence[str],
                      foundation: Foundation) -> dict[str, dict[str, Any]]:
    """The ``pools`` section of :func:`lifecycle_file`: every pool but the main one (index
    0, whose values are the file's ``env``) -> ``{"groups": its instance groups, "efa":
    whether its type has EFA, "env": its job environment}`` (:func:`job_environment` of its
    type and its training image: the image of its Neuron stack, the main one for a CPU pool,
    ``Foundation.pools``). Empty for a cluster of one pool.

    Raises:
        KeyError: a part's pool is not in ``foundation.pools``.
    """
    images = {f.pool.name: f.training_image for f in foundation.pools}
    out: dict[str, dict[str, Any]] = {}
    for part in parts:
        pool = part.pool
        if pool.index == 0:
            continue
        if pool.name not in out:
            pool_base = replace(foundation, training_image=images[pool.name])
            out[pool.name] = {"groups": [], "efa": pool.instance.supports_efa,
                              "env": job_environment(scope, settings, pool.instance,
                                                     worker_counts, partitions, pool_base)}
        out[pool.name]["groups"].append(part.name)
    return out


def job_environment(scope: Construct, settings: HyperPodConfig, instance: InstanceSpec,
                    worker_counts: dict[str, int], partitions: Sequence[str],
                    foundation: Foundation) -> dict[str, str]:
    """What job scripts read from ``/fsx/.trn-ultracluster/env`` (and a pool's nodes from
    their own file): variable -> value (values may be tokens):
    :func:`trn_ultracluster.orchestrators.nodes.job_environment` of ``instance`` and
    ``foundation.training_image``, plus the cluster name, the worker count, the partitions
    (``partitions``: the worker groups', each once, in order; the first is the default) and
    the image in Pyxis form.
    """
    image = foundation.training_image
    registry = Fn.select(0, Fn.split("/", image.repository.repository_uri))
    partitions = list(dict.fromkeys(partitions))
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
