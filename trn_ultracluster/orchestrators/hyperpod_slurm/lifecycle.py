"""The HyperPod Slurm orchestrator's lifecycle files: the scripts and the generated
``trn_ultracluster.json`` with the job environment (the bucket and the upload:
:mod:`trn_ultracluster.orchestrators.hyperpod.lifecycle`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Fn, Stack
from constructs import Construct

from trn_ultracluster.config import HyperPodConfig
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.hyperpod import CONTROLLER_GROUP, LOGIN_GROUP, JobEnv
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.shared_storage import (
    FSX_MOUNT_PATH,
    FSX_STACK_TAG,
    NEURON_COMPILE_CACHE_DIR,
    fsx_path,
)
from trn_ultracluster.orchestrators.base import Foundation

__all__ = ["LIFECYCLE_ASSETS", "job_environment", "lifecycle_file"]

LIFECYCLE_ASSETS = Path(__file__).resolve().parent / "scripts"
"""Our lifecycle scripts (uploaded as they are)."""


def lifecycle_file(settings: HyperPodConfig, env: dict[str, str], fsx_tag_value: str,
                   data_repository: bool) -> dict[str, Any]:
    """``trn_ultracluster.json``, what the lifecycle script reads (values may be tokens).

    Shape::

        {"groups": {"controller": str, "login": str | None, "workers": [str, ...]},
         "fsx": {"tag_key": str, "tag_value": str, "data_repository": bool},
         "names": {JobEnv member: variable, ...},
         "env": {variable: value, ...}}

    ``groups`` tells the script a node's Slurm role (with HyperPod's
    ``resource_config.json``); ``fsx`` finds the stack's file system (tagged with
    :data:`~trn_ultracluster.contracts.shared_storage.FSX_STACK_TAG`) and says whether it is
    linked to S3 (the script then waits for the link's metadata import before it writes
    files); ``names`` is :class:`~trn_ultracluster.contracts.hyperpod.JobEnv`, which the
    scripts read instead of copies of the names; ``env`` is the job environment. Nothing in
    it refers to the file system itself, so the lifecycle files, and the cluster that waits
    for them, do not wait for FSx.
    """
    return {
        "groups": {
            "controller": CONTROLLER_GROUP,
            "login": LOGIN_GROUP if settings.login_instance_type is not None else None,
            "workers": [g.name for g in settings.worker_groups],
        },
        "fsx": {"tag_key": FSX_STACK_TAG, "tag_value": fsx_tag_value,
                "data_repository": data_repository},
        "names": {member.name: member.value for member in JobEnv},
        "env": env,
    }


def job_environment(scope: Construct, settings: HyperPodConfig, instance: InstanceSpec,
                    worker_counts: dict[str, int], foundation: Foundation) -> dict[str, str]:
    """What job scripts read from ``/fsx/.trn-ultracluster/env``: variable -> value (values
    may be tokens).

    The file system's id is not here (it would make the lifecycle files wait for the file
    system): the lifecycle script adds ``JobEnv.FSX_FILE_SYSTEM_ID`` once it has found the
    file system by its tag.
    """
    image = foundation.training_image
    registry = Fn.select(0, Fn.split("/", image.repository.repository_uri))
    repository = image.repository.repository_name
    partitions = list(dict.fromkeys(g.partition for g in settings.worker_groups))
    data_path = foundation.data_repository_path
    env = {
        JobEnv.REGION: Stack.of(scope).region,
        JobEnv.CLUSTER_NAME: settings.cluster_name,
        JobEnv.INSTANCE_TYPE: instance.name,
        JobEnv.NEURON_CORES_PER_NODE: str(instance.logical_neuron_cores),
        JobEnv.NEURON_CHIPS_PER_NODE: str(instance.chips),
        JobEnv.EFA_INTERFACES_PER_NODE: str(instance.efa_interfaces),
        JobEnv.WORKER_NODES: str(sum(worker_counts.values())),
        JobEnv.PARTITIONS: ",".join(partitions),
        JobEnv.DEFAULT_PARTITION: partitions[0],
        JobEnv.TRAINING_IMAGE_URI: image.image_uri,
        JobEnv.ECR_REGISTRY: registry,
        # Pyxis names a registry image "<registry>#<repository>:<tag>" (Pyxis README,
        # --container-image).
        JobEnv.CONTAINER_IMAGE: f"{registry}#{repository}:{image.image_tag}",
        JobEnv.FSX_MOUNT_POINT: FSX_MOUNT_PATH,
        JobEnv.DATA_BUCKET: foundation.data_bucket.bucket_name,
        JobEnv.DATA_PATH: fsx_path(data_path) if data_path else "",
        JobEnv.NEURON_CACHE_DIR: NEURON_COMPILE_CACHE_DIR,
    }
    return {**{k.value: v for k, v in env.items()}, **neuron_environment(instance)}
