#!/bin/bash
# TrnUltraCluster: lifecycle script (LifeCycleConfig.OnCreate) of the instance groups of a CPU
# pool of a SageMaker HyperPod cluster orchestrated by EKS. Their instance types have no EFA
# device, so FSx for Lustre stays on TCP on them whatever fsx.efa says: on_create.sh (beside
# this file) with TRN_NODE_EFA=off, everything else as on the Trainium nodes.
set -euo pipefail
TRN_NODE_EFA=off exec bash "$(dirname "${BASH_SOURCE[0]}")/on_create.sh" "$@"
