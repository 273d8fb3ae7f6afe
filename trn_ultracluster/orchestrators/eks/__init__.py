"""Amazon EKS orchestrator: an EKS cluster with Trainium node groups, the Neuron and EFA
device plugins, the FSx CSI driver and Kubeflow Trainer.

- :mod:`.cluster`: the construct (imports the CDK; only the stack imports it);
- :mod:`.manifests`: the Kubernetes objects as plain dicts (standard library only: the job
  CLI builds TrainJobs with the same names and per-node resources);
- :mod:`.versions`: the pinned Kubernetes version, add-ons and Helm charts, with sources;
- :mod:`.nag`: cdk-nag acknowledgments of what EKS and aws-eks-v2 define.
"""
