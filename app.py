#!/usr/bin/env python3
"""CDK app entry point (``cdk.json`` runs it): see trn_ultracluster/app.py."""

import sys

from trn_ultracluster.app import main

if __name__ == "__main__":
    sys.exit(main())
