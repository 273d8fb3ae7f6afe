"""The job CLI: ``python -m trn_ultracluster <command> --help`` or ``trn-ultracluster``.

It reads everything from the TrnUltraCluster stack outputs (``DescribeStacks`` or a
``cdk deploy --outputs-file`` JSON): ``preflight``, ``outputs``, ``data``, ``submit``,
``status``, ``logs``, ``cancel``, ``smoke-test``. It never imports the CDK, so it starts
fast on a laptop or a login node.
"""
