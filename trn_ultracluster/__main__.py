"""``python -m trn_ultracluster``: the job CLI (see :mod:`trn_ultracluster.cli.main`)."""

import sys

from trn_ultracluster.cli.main import main

sys.exit(main())
