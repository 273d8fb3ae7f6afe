"""The job CLI: ``python -m trn_ultracluster <command> --help`` or ``trn-ultracluster``.

It reads everything from the TrnUltraCluster stack outputs (``DescribeStacks`` or a
``cdk deploy --outputs-file`` JSON): ``preflight``, ``outputs``, ``data``, ``submit``,
``status``, ``logs``, ``cancel``, ``scale``, ``smoke-test``. It never imports the CDK, so
it starts fast on a laptop or a login node.

Layout: :mod:`~trn_ultracluster.cli.main` parses the command line;
:mod:`~trn_ultracluster.cli.commands` runs the commands; :mod:`~trn_ultracluster.cli.backends`
holds one job backend per way of running jobs (EKS TrainJobs, HyperPod Slurm), chosen from
the stack outputs; the other modules are what the commands share (stack outputs, AWS errors,
argument checks, the job's program, the smoke test, preflight checks, data staging).
"""
