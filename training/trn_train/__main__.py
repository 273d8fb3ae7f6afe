"""``python -m trn_train``: see :mod:`trn_train.cli`.

A worker that stops with an error while its distributed process group is still up (the group
is left to the process exit then: :meth:`trn_train.runtime.Runtime.shutdown`) ends with
``os._exit`` after flushing its output: the group's destructor at interpreter exit, with the
peer already gone, could abort the process (SIGABRT instead of the exit status: 1 in about 20
runs of the 2-process divergence test in tests/training/test_native.py, none in 40 with this).
"""

import os
import sys

from trn_train.cli import main


def _exit(code: int) -> None:
    """Exit with ``code``; without destructors when a process group is still up."""
    dist = sys.modules.get("torch.distributed")
    if code and dist is not None and dist.is_available() and dist.is_initialized():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    else:
        sys.exit(code)


if __name__ == "__main__":
    _exit(main())
