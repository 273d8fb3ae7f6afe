#!/bin/bash
# TrnUltraCluster: lifecycle script of the Trainium instance group of a SageMaker HyperPod
# cluster orchestrated by EKS (LifeCycleConfig.OnCreate). HyperPod runs it as root on every
# new or replaced node, before the node joins the EKS cluster; a non-zero exit fails the node.
#
# What it does, and what it leaves to others:
# - FSx for Lustre is mounted in pods by the FSx CSI driver (the stack's static volume), which
#   uses the node's Lustre client: load its kernel modules now, as AWS's HyperPod EKS sample
#   does (aws-samples/awsome-distributed-training 1.architectures/7.sagemaker-hyperpod-eks/
#   LifecycleScripts/base-config/on_create_main.sh, load_lustre_modules: a failed modprobe is
#   a warning, the module may be loaded already or load on first mount).
# - No containerd or kubelet configuration: the sample's Amazon Linux 2023 branch writes a
#   containerd config whose default runtime is NVIDIA's, which a Trainium node does not have.
#   Images stay where the HyperPod AMI puts them.
# - No Neuron or EFA setup: the HyperPod AMI has the drivers, the device plugins run as pods.
# Safe to rerun. Logs to $TRN_LOG_DIR/lifecycle.log (default /var/log/trn-ultracluster), which
# HyperPod also sends to CloudWatch Logs (/aws/sagemaker/Clusters/<name>/<id>) with stdout.
set -euo pipefail

LOG_DIR="${TRN_LOG_DIR:-/var/log/trn-ultracluster}"
LOG="$LOG_DIR/lifecycle.log"
mkdir -p "$LOG_DIR"

log() { printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | tee -a "$LOG"; }

on_error() {
  local code=$?
  log "ERROR: on_create.sh failed (exit $code) at line ${BASH_LINENO[0]}"
  # Give HyperPod's log upload time before the node is failed, as AWS's sample does.
  sync
  sleep "${TRN_FAIL_WAIT_S:-60}"
  exit "$code"
}
trap on_error ERR

log "start on $(hostname)"
for module in lnet lustre; do
  if modprobe "$module" >>"$LOG" 2>&1; then
    log "kernel module $module loaded"
  else
    log "WARNING: modprobe $module failed: /fsx cannot mount on this node unless the FSx CSI driver loads it"
  fi
done
log "done"
