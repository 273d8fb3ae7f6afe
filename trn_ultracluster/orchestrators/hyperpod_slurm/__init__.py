"""SageMaker HyperPod orchestrator with Slurm.

- :mod:`.cluster`: the ``AWS::SageMaker::Cluster`` construct and its instance groups;
- :mod:`.lifecycle`: the lifecycle bucket, the generated ``trn_ultracluster.json`` and the
  job environment;
- :mod:`.execution_role`: the instance groups' IAM role and its cdk-nag acknowledgments;
- ``scripts/``: the lifecycle scripts HyperPod runs on every node.
"""
