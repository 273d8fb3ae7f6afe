"""Standalone Trainium nodes without a scheduler, reached with Session Manager.

- :mod:`.cluster`: the Auto Scaling group from the stack's EFA launch template and the
  stack outputs;
- :mod:`.node`: the nodes' role, instance profile, log group, script assets and user data;
- ``scripts/``: the user data template and ``node_setup.sh``, which sources the shared
  ``fsx.sh`` (:data:`trn_ultracluster.orchestrators.nodes.NODE_SCRIPTS`).
"""
