"""Standalone Trainium (and CPU) nodes without a scheduler, reached with Session Manager.

- :mod:`.cluster`: each node pool's Auto Scaling groups from its launch template, the stack
  outputs and the pools' groups for the ``Pools`` output;
- :mod:`.ami`: each pool's AMI (a Neuron DLAMI for Trainium pools, Amazon Linux 2023 for CPU
  pools) and the ``standalone`` settings as its nodes use them;
- :mod:`.dlami`: the deploy-time lookup of the ``xla`` stack's DLAMI;
- :mod:`.node`: the nodes' role, instance profile, log group, script assets and each pool's
  user data;
- ``scripts/``: the user data template and ``node_setup.sh``, which sources the shared
  ``fsx.sh`` (:data:`trn_ultracluster.orchestrators.nodes.NODE_SCRIPTS`).
"""
