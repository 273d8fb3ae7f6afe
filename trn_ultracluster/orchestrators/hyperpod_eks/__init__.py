"""SageMaker HyperPod orchestrated by Amazon EKS (``orchestrator: hyperpod-eks``).

- :mod:`.cluster`: the construct: the shared EKS cluster
  (:class:`~trn_ultracluster.orchestrators.eks.control_plane.EksCluster`) plus an
  ``AWS::SageMaker::Cluster`` whose Trainium instance group joins it;
- :mod:`.versions`: HyperPod's labels, taints, namespace and the vendored dependencies chart,
  with their sources;
- :mod:`.execution_role`: what the HyperPod execution role needs on EKS beyond the shared
  role (:mod:`trn_ultracluster.orchestrators.hyperpod.execution_role`);
- ``charts/``: the part of HyperPod's Helm chart the stack installs (with provenance);
- ``scripts/``: the lifecycle script HyperPod runs on every new node.
"""
