"""Rules of the SageMaker HyperPod Slurm orchestrator (more cases, each naming its field:
tests/orchestrators/hyperpod_slurm/test_cluster.py)."""

from __future__ import annotations

import pytest

from tests.config import check_one_error

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('hyperpod without ml. type', {'orchestrator': 'hyperpod-slurm', 'instance_type': 'trn1.2xlarge'},
     "error: orchestrator = 'hyperpod-slurm': must be 'eks' or 'standalone' for trn1.2xlarge: SageMaker HyperPod offers only 'trn1.32xlarge', 'trn1n.32xlarge', 'trn2.3xlarge' or 'trn2.48xlarge' (or choose one of those instance types) (see https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod.html)"),
    ('worker group split past 63 characters',
     {'orchestrator': 'hyperpod-slurm', 'nodes.desired': 2000, 'nodes.max': 2000,
      'hyperpod.worker_groups': [{'name': 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww'}]},
     "error: hyperpod.worker_groups[0].name = 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww': must be at most 61 characters: its 2000 instances take 2 instance groups (one per compute subnet they fill, at most 6758 each), the last named '<name>-2', and an instance group name has at most 63 (see https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupSpecification.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)
