"""Stack output keys: defined once, used by the stack (writing) and the job CLI (reading).

Each key is the CloudFormation output's logical id, so ``cdk deploy --outputs-file`` JSON
and ``DescribeStacks`` both show it under this name. Each orchestrator adds its own keys; the
CLI treats keys of another orchestrator as absent, not missing.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["DESCRIPTIONS", "EKS_KEYS", "FOUNDATION_KEYS", "FSX_EFA_MODES", "FSX_EFA_OFF",
           "HYPERPOD_EKS_KEYS", "HYPERPOD_KEYS", "NONE", "OPTIONAL_KEYS", "OutputKey", "STACK_NAME",
           "STANDALONE_KEYS", "fsx_efa_description", "fsx_efa_reason"]

STACK_NAME = "TrnUltraCluster"
"""Name of the CloudFormation stack (and of the CDK stack id)."""
NONE = "none"
"""The value of an output whose thing the configuration does not have (no placement group,
no data repository association, no capacity reservation): CloudFormation outputs cannot be
empty."""
FSX_EFA_OFF = "off"
FSX_EFA_MODES = (FSX_EFA_OFF, "preferred", "required")
"""Values of the ``FsxEfa`` output: what the nodes do about FSx for Lustre over EFA
(``trn_ultracluster.config.fsx_efa.EfaMode``): nothing (a file system without EFA), set it up
and report a fall back to TCP, or set it up and fail the node set-up on a fall back. A stack
deployed before the output existed has a file system without EFA (:data:`FSX_EFA_OFF`)."""


class OutputKey(str, Enum):
    """Output keys of the TrnUltraCluster stack, with what each holds."""

    REGION = "Region"
    COMPUTE_AZ_ID = "ComputeAzId"
    COMPUTE_AZ_NAME = "ComputeAzName"
    VPC_ID = "VpcId"
    COMPUTE_SUBNET_ID = "ComputeSubnetId"
    COMPUTE_SUBNET_IDS = "ComputeSubnetIds"
    PRIVATE_SUBNET_IDS = "PrivateSubnetIds"
    EFA_SECURITY_GROUP_ID = "EfaSecurityGroupId"
    PLACEMENT_GROUP_NAME = "PlacementGroupName"
    LAUNCH_TEMPLATE_ID = "LaunchTemplateId"
    LAUNCH_TEMPLATE_VERSION = "LaunchTemplateVersion"
    FSX_FILE_SYSTEM_ID = "FsxFileSystemId"
    FSX_DNS_NAME = "FsxDnsName"
    FSX_MOUNT_NAME = "FsxMountName"
    FSX_DATA_REPOSITORY_PATH = "FsxDataRepositoryPath"
    DATA_BUCKET_ON_FSX = "DataBucketOnFsx"
    POOLS = "Pools"
    TEAMS = "Teams"
    FSX_EFA = "FsxEfa"
    DATA_BUCKET_NAME = "DataBucketName"
    TRAINING_IMAGE_URI = "TrainingImageUri"
    TRAINING_IMAGE_REPOSITORY = "TrainingImageRepository"
    NEURON_STACK = "NeuronStack"
    INSTANCE_TYPE = "InstanceType"
    NODE_COUNT_MIN = "NodeCountMin"
    NODE_COUNT_DESIRED = "NodeCountDesired"
    NODE_COUNT_MAX = "NodeCountMax"
    ORCHESTRATOR = "Orchestrator"
    JOB_BACKEND = "JobBackend"
    CAPACITY_TYPE = "CapacityType"
    CAPACITY_RESERVATION_ID = "CapacityReservationId"
    DASHBOARD_URL = "DashboardUrl"
    ALARM_TOPIC_ARN = "AlarmTopicArn"
    # --- EKS orchestrator (present when Orchestrator = eks) ---
    EKS_CLUSTER_NAME = "EksClusterName"
    EKS_CLUSTER_ARN = "EksClusterArn"
    EKS_UPDATE_KUBECONFIG = "EksUpdateKubeconfigCommand"
    EKS_TRAINING_NAMESPACE = "EksTrainingNamespace"
    EKS_FSX_PVC_NAME = "EksFsxPvcName"
    EKS_TRAINING_RUNTIME = "EksTrainingRuntimeName"
    EKS_TRAINIUM_NODEGROUP = "EksTrainiumNodegroupName"
    # --- HyperPod Slurm orchestrator (present when Orchestrator = hyperpod-slurm) ---
    HYPERPOD_CLUSTER_NAME = "HyperPodClusterName"
    HYPERPOD_CLUSTER_ARN = "HyperPodClusterArn"
    HYPERPOD_CONTROLLER_GROUP = "HyperPodControllerGroupName"
    HYPERPOD_WORKER_GROUPS = "HyperPodWorkerGroupNames"
    HYPERPOD_CONTROLLER_SHELL = "HyperPodControllerShellCommand"
    HYPERPOD_LIFECYCLE_BUCKET = "HyperPodLifecycleBucketName"
    # --- standalone orchestrator (present when Orchestrator = standalone) ---
    STANDALONE_NODE_GROUP = "StandaloneAutoScalingGroupName"
    STANDALONE_RUNTIME = "StandaloneRuntime"
    STANDALONE_DLAMI_VENV = "StandaloneDlamiVenv"
    STANDALONE_AMI = "StandaloneAmiId"
    STANDALONE_LOG_GROUP = "StandaloneNodeLogGroupName"
    STANDALONE_SHELL = "StandaloneShellCommand"

    def __str__(self) -> str:
        return self.value


DESCRIPTIONS: dict[OutputKey, str] = {
    OutputKey.REGION: "AWS Region of the cluster",
    OutputKey.COMPUTE_AZ_ID: "AZ ID of the Trainium nodes and FSx",
    OutputKey.COMPUTE_AZ_NAME: "AZ name of the compute subnet in this account",
    OutputKey.VPC_ID: "VPC id",
    OutputKey.COMPUTE_SUBNET_ID: "First compute subnet (Trainium nodes and FSx)",
    OutputKey.COMPUTE_SUBNET_IDS: "Compute subnets of the Trainium nodes, comma separated, in fill order",
    OutputKey.PRIVATE_SUBNET_IDS: "All private subnets, comma separated, compute subnet first",
    OutputKey.EFA_SECURITY_GROUP_ID: "Security group of the nodes (EFA: all traffic within)",
    OutputKey.PLACEMENT_GROUP_NAME: "Cluster placement group, or 'none'",
    OutputKey.LAUNCH_TEMPLATE_ID: "EFA launch template id",
    OutputKey.LAUNCH_TEMPLATE_VERSION: "EFA launch template version",
    OutputKey.FSX_FILE_SYSTEM_ID: "FSx for Lustre file system id",
    OutputKey.FSX_DNS_NAME: "FSx for Lustre DNS name",
    OutputKey.FSX_MOUNT_NAME: "FSx for Lustre mount name",
    OutputKey.FSX_DATA_REPOSITORY_PATH: "File system path linked to S3, or 'none'",
    OutputKey.DATA_BUCKET_ON_FSX: ("File system path under which new objects of the data bucket "
                                   "appear (its root linked with automatic import), or 'none'"),
    OutputKey.POOLS: ("Node pools as JSON: name, instance type, node counts, Neuron stack, "
                      "training image and where jobs of the pool go (partition, node groups, "
                      "Auto Scaling groups or instance groups)"),
    OutputKey.TEAMS: ("Teams as JSON (present with teams): quota per pool, borrow and lend, "
                      "default priority, and where the scheduler puts the team's jobs (Slurm "
                      "account, namespace and Kueue queues); the priority classes"),
    OutputKey.FSX_EFA: ("FSx for Lustre over EFA: off, preferred (a node may fall back to TCP) "
                        "or required (a fall back to TCP is an error on the node)"),
    OutputKey.DATA_BUCKET_NAME: "S3 bucket for datasets and checkpoints",
    OutputKey.TRAINING_IMAGE_URI: "Training container image URI in ECR",
    OutputKey.TRAINING_IMAGE_REPOSITORY: "ECR repository of the training image",
    OutputKey.NEURON_STACK: "Neuron training stack of the image and jobs: xla or native",
    OutputKey.INSTANCE_TYPE: "Trainium instance type",
    OutputKey.NODE_COUNT_MIN: "Minimum Trainium nodes",
    OutputKey.NODE_COUNT_DESIRED: "Desired Trainium nodes",
    OutputKey.NODE_COUNT_MAX: "Maximum Trainium nodes",
    OutputKey.ORCHESTRATOR: "eks, hyperpod-slurm, hyperpod-eks or standalone",
    OutputKey.JOB_BACKEND: "How the job CLI submits jobs to this stack's orchestrator",
    OutputKey.CAPACITY_TYPE: "on-demand, capacity-reservation or capacity-block",
    OutputKey.CAPACITY_RESERVATION_ID: "Capacity Reservation or Capacity Block id, or 'none'",
    OutputKey.DASHBOARD_URL: "CloudWatch dashboard of the cluster (nodes, FSx, training)",
    OutputKey.ALARM_TOPIC_ARN: "SNS topic of the cluster's alarms: subscribe to it",
    OutputKey.EKS_CLUSTER_NAME: "EKS cluster name",
    OutputKey.EKS_CLUSTER_ARN: "EKS cluster ARN",
    OutputKey.EKS_UPDATE_KUBECONFIG: "Command that writes a kubeconfig entry for the cluster",
    OutputKey.EKS_TRAINING_NAMESPACE: "Kubernetes namespace for training jobs",
    OutputKey.EKS_FSX_PVC_NAME: "PersistentVolumeClaim of the FSx file system",
    OutputKey.EKS_TRAINING_RUNTIME: "Kubeflow Trainer ClusterTrainingRuntime for Neuron",
    OutputKey.EKS_TRAINIUM_NODEGROUP: "Trainium managed node groups, comma separated, in fill order",
    OutputKey.HYPERPOD_CLUSTER_NAME: "SageMaker HyperPod cluster name",
    OutputKey.HYPERPOD_CLUSTER_ARN: "SageMaker HyperPod cluster ARN",
    OutputKey.HYPERPOD_CONTROLLER_GROUP: "Instance group of the Slurm controller",
    OutputKey.HYPERPOD_WORKER_GROUPS: "HyperPod instance groups of every pool's nodes, comma separated",
    OutputKey.HYPERPOD_CONTROLLER_SHELL: "Command that opens a shell on the controller (SSM)",
    OutputKey.HYPERPOD_LIFECYCLE_BUCKET: "Bucket holding the lifecycle scripts",
    OutputKey.STANDALONE_NODE_GROUP: "Auto Scaling group of the Trainium nodes",
    OutputKey.STANDALONE_RUNTIME: "How jobs run on the nodes: container or dlami-venv",
    OutputKey.STANDALONE_DLAMI_VENV: "Neuron virtual environment of the DLAMI jobs use, or 'none'",
    OutputKey.STANDALONE_AMI: "AMI of the nodes (standalone.ami_id, its SSM parameter, or the DLAMI lookup)",
    OutputKey.STANDALONE_LOG_GROUP: "CloudWatch log group of the nodes' setup logs",
    OutputKey.STANDALONE_SHELL: "Command that opens a shell on the first node (SSM)",
}

EKS_KEYS: tuple[OutputKey, ...] = tuple(k for k in OutputKey if k.value.startswith("Eks"))
"""Keys an ``eks`` stack adds."""
HYPERPOD_KEYS: tuple[OutputKey, ...] = tuple(
    k for k in OutputKey if k.value.startswith("HyperPod")
)
"""Keys a ``hyperpod-slurm`` stack adds."""
HYPERPOD_EKS_KEYS: tuple[OutputKey, ...] = (
    *(k for k in EKS_KEYS if k is not OutputKey.EKS_TRAINIUM_NODEGROUP),
    OutputKey.HYPERPOD_CLUSTER_NAME, OutputKey.HYPERPOD_CLUSTER_ARN,
    OutputKey.HYPERPOD_WORKER_GROUPS, OutputKey.HYPERPOD_LIFECYCLE_BUCKET,
)
"""Keys a ``hyperpod-eks`` stack adds: the EKS cluster's (its Trainium nodes are no EKS node
group) and the HyperPod cluster's (no Slurm controller)."""
STANDALONE_KEYS: tuple[OutputKey, ...] = tuple(
    k for k in OutputKey if k.value.startswith("Standalone")
)
"""Keys a ``standalone`` stack adds."""
OPTIONAL_KEYS: tuple[OutputKey, ...] = (OutputKey.TEAMS,)
"""Keys a stack has only when its configuration asks for them (``Teams``: with ``teams``)."""
FOUNDATION_KEYS: tuple[OutputKey, ...] = tuple(
    k for k in OutputKey if k not in EKS_KEYS and k not in HYPERPOD_KEYS
    and k not in STANDALONE_KEYS and k not in OPTIONAL_KEYS
)
"""Keys every TrnUltraCluster stack has, whatever the orchestrator."""


_REASON_MARKER = ". Why: "
OUTPUT_DESCRIPTION_MAX_CHARS = 1024
"""CloudFormation's limit on an output's ``Description`` ("a String type between 0 and 1024
bytes in length", CloudFormation user guide, "Outputs syntax",
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/outputs-section-structure.html);
characters here: the text is ASCII."""


def fsx_efa_description(reason: str) -> str:
    """The ``FsxEfa`` output's description: what the output holds, then why ``fsx.efa`` is on
    or off for this stack (``FsxEfaPlan.reason``), so the summary and the estimate can say it
    from the template alone. Cut with "..." to CloudFormation's 1,024 characters."""
    text = f"{DESCRIPTIONS[OutputKey.FSX_EFA]}{_REASON_MARKER}{reason}"
    if len(text) > OUTPUT_DESCRIPTION_MAX_CHARS:
        text = text[:OUTPUT_DESCRIPTION_MAX_CHARS - 3] + "..."
    return text


def fsx_efa_reason(description: str | None) -> str | None:
    """The reason :func:`fsx_efa_description` put in ``description``; ``None`` when it has
    none (a stack synthesized before the reason was written)."""
    if not description or _REASON_MARKER not in description:
        return None
    return description.split(_REASON_MARKER, 1)[1]
