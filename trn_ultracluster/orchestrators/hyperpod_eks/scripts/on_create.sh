#!/bin/bash
# TrnUltraCluster: lifecycle script of the Trainium instance group of a SageMaker HyperPod
# cluster orchestrated by EKS (LifeCycleConfig.OnCreate). HyperPod runs it as root on every
# new or replaced node, before the node joins the EKS cluster; a non-zero exit fails the node.
#
# What it does, and what it leaves to others:
# - FSx for Lustre is mounted in pods by the FSx CSI driver (the stack's static volume), which
#   uses the node's Lustre client and sets up no LNet (it mounts <dns>@tcp:/<mount>:
#   kubernetes-sigs/aws-fsx-csi-driver pkg/driver/node.go). With fsx.efa off (the stack's
#   trn_ultracluster.json, uploaded beside this file): load the client's kernel modules, as
#   AWS's HyperPod EKS sample does (aws-samples/awsome-distributed-training
#   1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/on_create_main.sh,
#   load_lustre_modules: a failed modprobe is a warning, the module may be loaded already or
#   load on first mount).
# - With fsx.efa preferred or required: lustre_efa.sh csi-node (beside this file) installs
#   the Lustre client if it has no EFA support (Amazon Linux 2023: dnf install lustre-client),
#   configures LNet over EFA, installs its boot unit and a watcher that checks the first
#   Lustre mount (when a pod mounts /fsx) and publishes node_fsx_lustre_over_efa. A node
#   that cannot configure LNet for EFA fails here in mode required (the lifecycle script fails
#   the node; during cluster creation this fails the creation: HyperPod's behaviour not
#   verified here), so it never joins; in mode preferred it joins on TCP, with 0 on the
#   dashboard. After the
#   node has joined, a fall back to TCP found by the watcher cannot fail it: see
#   docs/hyperpod-eks.md.
# - No containerd or kubelet configuration: the sample's Amazon Linux 2023 branch writes a
#   containerd config whose default runtime is NVIDIA's, which a Trainium node does not have.
#   Images stay where the HyperPod AMI puts them.
# - No Neuron or EFA device setup: the HyperPod AMI has the drivers, the device plugins run as
#   pods.
# Safe to rerun. Logs to $TRN_LOG_DIR/lifecycle.log (default /var/log/trn-ultracluster), which
# HyperPod also sends to CloudWatch Logs (/aws/sagemaker/Clusters/<name>/<id>) with stdout.
#
# - TRN_NODE_EFA=off (set by on_create_no_efa.sh, the OnCreate of a CPU pool's instance
#   groups): the node has no EFA device, so it does what mode off does whatever fsx.efa says.
# Test hooks: TRN_ROOT (passed on to lustre_efa.sh), TRN_LOG_DIR, TRN_LCS_DIR (directory of
# this script, lcs.py, lustre_efa.sh and trn_ultracluster.json), TRN_FAIL_WAIT_S (default 60).
set -euo pipefail

LCS_DIR="${TRN_LCS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
CLUSTER_JSON="$LCS_DIR/trn_ultracluster.json"
LOG_DIR="${TRN_LOG_DIR:-/var/log/trn-ultracluster}"
LOG="$LOG_DIR/lifecycle.log"
mkdir -p "$LOG_DIR"

log() { printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | tee -a "$LOG"; }

# Give HyperPod's log upload time before the node is failed, as AWS's sample does.
fail() {
  log "ERROR: $*"
  sync
  sleep "${TRN_FAIL_WAIT_S:-60}"
  exit 1
}

on_error() {
  local code=$?
  log "ERROR: on_create.sh failed (exit $code) at line ${BASH_LINENO[0]}"
  sync
  sleep "${TRN_FAIL_WAIT_S:-60}"
  exit "$code"
}
trap on_error ERR

lcs() { python3 "$LCS_DIR/lcs.py" --cluster "$CLUSTER_JSON" "$@"; }

log "start on $(hostname)"
[[ -f "$CLUSTER_JSON" ]] || fail "$CLUSTER_JSON not found; the lifecycle bucket is incomplete"
# The mode with lcs.py (which validates the section). Mode off must not need more than before
# fsx.efa existed: if python3 or lcs.py fails and the file says mode off, go on as off.
if efa="$(lcs fsx-efa)"; then
  read -r mode interfaces check_mib namespace metric <<< "$efa"
elif grep -Eq '"mode": *"off"' "$CLUSTER_JSON"; then
  log "WARNING: lcs.py could not read $CLUSTER_JSON (above); its fsx.efa mode is off"
  mode=off
else
  fail "cannot read fsx.efa of $CLUSTER_JSON (lcs.py's error is above)"
fi
[[ "$mode" =~ ^(off|preferred|required)$ ]] \
  || fail "fsx.efa mode '$mode' of $CLUSTER_JSON is not off, preferred or required"
if [[ "${TRN_NODE_EFA:-}" == off && "$mode" != off ]]; then
  log "FSx for Lustre over EFA (fsx.efa: $mode) is for the Trainium nodes: this node of a CPU pool has no EFA device and mounts over TCP"
  mode=off
fi

if [[ "$mode" == off ]]; then
  for module in lnet lustre; do
    if modprobe "$module" >>"$LOG" 2>&1; then
      log "kernel module $module loaded"
    else
      log "WARNING: modprobe $module failed: /fsx cannot mount on this node unless the FSx CSI driver loads it"
    fi
  done
else
  log "FSx for Lustre over EFA ($mode): LNet over $interfaces EFA interface(s), checked once a pod mounts the file system"
  region="$(lcs get node region)"
  cluster="$(lcs get node metrics_cluster)"
  status=0
  bash "$LCS_DIR/lustre_efa.sh" csi-node --mode "$mode" --interfaces "$interfaces" \
    --mib "$check_mib" --region "$region" --namespace "$namespace" \
    --metric "$metric" --cluster "$cluster" 2>&1 | tee -a "$LOG" || status=$?
  # csi-node: 0 set up, 4 preferred and not set up (it reported 0), else failed; only in
  # mode required does a failure fail the node.
  case "$status" in
    0) log "FSx for Lustre over EFA set up" ;;
    4) log "WARNING: FSx for Lustre over EFA is not set up on this node (the cause is above); the node joins over TCP or unchecked, with 0 on the dashboard (fsx.efa: auto)" ;;
    *)
      if [[ "$mode" == required ]]; then
        fail "FSx for Lustre over EFA is required (fsx.efa: true) and this node cannot have it (the cause is above); the lifecycle script fails the node (during cluster creation this fails the creation: HyperPod's behaviour not verified here)"
      fi
      log "WARNING: lustre_efa.sh csi-node failed (exit $status, above): FSx for Lustre over EFA is not set up on this node, which joins over TCP (fsx.efa: auto)"
      bash "$LCS_DIR/lustre_efa.sh" report --value 0 --region "$region" --namespace "$namespace" \
        --metric "$metric" --cluster "$cluster" 2>&1 | tee -a "$LOG" || true ;;
  esac
fi
log "done"
