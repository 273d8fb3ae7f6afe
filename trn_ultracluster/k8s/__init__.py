"""Kubernetes objects of the EKS orchestrator, as plain dicts (no CDK import).

The EKS construct applies them; the job CLI reuses the names and the per-node Neuron
resources so a TrainJob only names the image, the command and the node count.
"""

from trn_ultracluster.k8s.manifests import (
    EFA_NODE_LABEL,
    EFA_RESOURCE,
    FSX_CSI_DRIVER,
    FSX_MOUNT_PATH,
    FSX_PV_NAME,
    FSX_PVC_NAME,
    INSTANCE_TYPE_LABEL,
    NEURON_RESOURCE,
    NEURON_TAINT,
    PROJECT_LABEL,
    TRAINER_API_VERSION,
    TRAINER_NODE,
    TRAINING_RUNTIME_NAME,
    Taint,
    fsx_persistent_volume,
    fsx_persistent_volume_claim,
    namespace,
    neuron_container_env,
    neuron_processes_per_node,
    neuron_resource_requirements,
    neuron_resources_per_node,
    neuron_training_runtime,
)

__all__ = [
    "EFA_NODE_LABEL",
    "EFA_RESOURCE",
    "FSX_CSI_DRIVER",
    "FSX_MOUNT_PATH",
    "FSX_PV_NAME",
    "FSX_PVC_NAME",
    "INSTANCE_TYPE_LABEL",
    "NEURON_RESOURCE",
    "NEURON_TAINT",
    "PROJECT_LABEL",
    "TRAINER_API_VERSION",
    "TRAINER_NODE",
    "TRAINING_RUNTIME_NAME",
    "Taint",
    "fsx_persistent_volume",
    "fsx_persistent_volume_claim",
    "namespace",
    "neuron_container_env",
    "neuron_processes_per_node",
    "neuron_resource_requirements",
    "neuron_resources_per_node",
    "neuron_training_runtime",
]
