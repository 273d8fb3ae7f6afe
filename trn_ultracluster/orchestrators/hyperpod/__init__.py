"""What both SageMaker HyperPod orchestrators (``hyperpod-slurm``, ``hyperpod-eks``) share.

- :mod:`.execution_role`: the instance groups' IAM role (AWS managed instance policy,
  lifecycle bucket, training image, cluster logs, the network interfaces HyperPod creates in
  the stack's VPC) and its cdk-nag acknowledgments;
- :mod:`.lifecycle`: the ``sagemaker-``-prefixed lifecycle bucket, the upload of the
  lifecycle scripts and the instance groups' ``LifeCycleConfig``;
- :mod:`.instance_groups`: the worker instance groups, one or more per node pool (its
  ``ml.`` type from the catalog, count, threads per core, EBS volume, deep health checks on
  Trainium, the training plan on the main pool) and the instance
  groups' networks (``GroupNetworks``: the cluster's ``VpcConfig``, each group's
  ``OverrideVpcConfig``, and so the subnets the execution role may create interfaces in).
"""
