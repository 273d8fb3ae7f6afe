"""``python -m trn_train``: see :mod:`trn_train.cli`.

A worker that stops because training diverged (exit 3) leaves together with its peers (every
rank passes a barrier first, ``trn_train.train``) while its distributed process group is still
up (it is left to the process exit then: :meth:`trn_train.runtime.Runtime.shutdown`). It ends
with ``os._exit`` after flushing its output: the group's destructor at interpreter exit, with
the peer already gone, could abort the process (SIGABRT instead of exit 3: 1 in about 20 runs
of the 2-process divergence test in tests/training/test_native.py, none in 20 with this).
Other errors exit normally: they can come before the ranks meet (a bad launch, exit 2), and a
worker that left at once would have torchrun stop its peers before they say why.
"""

import os
import sys

from trn_train.cli import main
from trn_train.errors import TrainingDiverged


def _exit(code: int) -> None:
    """Exit with ``code``; without destructors after a divergence with a process group up."""
    dist = sys.modules.get("torch.distributed")
    if (code == TrainingDiverged.exit_code and dist is not None and dist.is_available()
            and dist.is_initialized()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    else:
        sys.exit(code)


if __name__ == "__main__":
    _exit(main())
