"""HyperPod Slurm: the instance groups and partitions the stack, the configuration rules and
the lifecycle scripts agree on.

Sources: SageMaker developer guide, "SageMaker HyperPod references", section "SageMaker
HyperPod Slurm configuration"
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html).
"""

from __future__ import annotations

__all__ = ["ALL_NODES_PARTITION", "CONTROLLER_GROUP", "LOGIN_GROUP"]

CONTROLLER_GROUP = "controller"
"""Instance group of the Slurm controller (``SlurmConfig.NodeType: Controller``; exactly one
group has that type)."""
LOGIN_GROUP = "login"
"""Instance group of the optional login node (``NodeType: Login``; at most one group)."""
ALL_NODES_PARTITION = "dev"
"""HyperPod adds every node to its own ``dev`` partition besides the group's partition ("All
nodes are automatically added to the universal dev partition"), so no group may use it."""
