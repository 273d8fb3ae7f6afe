"""``python -m trn_train``: see :mod:`trn_train.cli`."""

import sys

from trn_train.cli import main

if __name__ == "__main__":
    sys.exit(main())
