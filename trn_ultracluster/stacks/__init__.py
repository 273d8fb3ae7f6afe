"""Stacks: :mod:`.cluster` holds ``TrnUltraClusterStack``, the one thin stack that composes
the constructs and the configured orchestrator and declares the stack outputs.

Importing this package imports nothing else (the stack module pulls in aws-cdk-lib):
``from trn_ultracluster.stacks.cluster import TrnUltraClusterStack``.
"""
