"""SageMaker HyperPod orchestrator with Slurm.

- :mod:`.cluster`: the ``AWS::SageMaker::Cluster`` construct and its Slurm instance groups;
- :mod:`.lifecycle`: the generated ``trn_ultracluster.json`` and the job environment;
- ``scripts/``: the lifecycle scripts HyperPod runs on every node.

What both HyperPod orchestrators share (execution role, lifecycle bucket and upload, the
Trainium instance group) is in :mod:`trn_ultracluster.orchestrators.hyperpod`.
"""
