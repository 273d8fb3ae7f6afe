#!/bin/bash
# TrnUltraCluster standalone node: the user data of the EFA launch template.
#
# A template: the stack replaces every @@...@@ placeholder with a value of the deploy
# (trn_ultracluster/orchestrators/standalone/node.py, render_user_data). cloud-init runs the
# result once, as root, at an instance's first boot (EC2 user guide, "Run commands when you
# launch an EC2 instance with user data input",
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html). It fetches the node
# scripts, which the deploy uploaded as S3 assets (node_setup.sh, the shared fsx.sh, lcs.py,
# lustre_efa.sh and lustre_efa.py, the node metrics scripts), writes the stack's trn_ultracluster.json beside them and runs node_setup.sh. It
# needs the AWS CLI on the AMI (that the Neuron DLAMIs have it is not verified here).
#
# Test hooks: TRN_ROOT (prefix of every path written), TRN_FETCH_ATTEMPTS (default 10),
# TRN_RETRY_DELAY_S (seconds between attempts, default 10).

set -euo pipefail

ROOT="${TRN_ROOT:-}"
NODE_DIR="${ROOT}@@NODE_DIR@@"
REGION='@@REGION@@'
PROGRAM_URL='@@PROGRAM_URL@@'
ATTEMPTS="${TRN_FETCH_ATTEMPTS:-10}"
mkdir -p "${NODE_DIR}"

# fetch S3_URL FILE: copy one asset into NODE_DIR, retrying while the network and the
# instance profile's credentials come up at boot.
fetch() {
  local n
  for (( n = 1; n <= ATTEMPTS; n++ )); do
    if aws s3 cp --region "${REGION}" --only-show-errors "$1" "${NODE_DIR}/$2"; then
      return 0
    fi
    echo "trn-ultracluster user data: fetching $1 failed (attempt ${n}/${ATTEMPTS})" >&2
    sleep "${TRN_RETRY_DELAY_S:-10}"
  done
  echo "trn-ultracluster user data: could not fetch $1; the node is not set up" >&2
  return 1
}

fetch '@@NODE_SETUP_URL@@' node_setup.sh
fetch '@@FSX_URL@@' fsx.sh
fetch '@@LCS_URL@@' lcs.py
fetch '@@LUSTRE_EFA_URL@@' lustre_efa.sh
fetch '@@LUSTRE_EFA_HELPER_URL@@' lustre_efa.py
fetch '@@METRICS_SETUP_URL@@' neuron_metrics.sh
fetch '@@METRICS_EXPORTER_URL@@' neuron_metrics.py
if [[ -n "${PROGRAM_URL}" ]]; then
  fetch "${PROGRAM_URL}" program.zip
fi
cat > "${NODE_DIR}/trn_ultracluster.json" <<'TRN_CLUSTER_JSON'
@@CLUSTER_JSON@@
TRN_CLUSTER_JSON
# --boot: the first boot (node_setup.sh: in mode required a failed Lustre-over-EFA step
# powers the node off; a rerun by hand never does).
exec bash "${NODE_DIR}/node_setup.sh" --boot
