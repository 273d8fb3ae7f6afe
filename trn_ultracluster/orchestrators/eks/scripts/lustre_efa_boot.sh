#!/bin/bash
# TrnUltraCluster: the shell part of the EKS Trainium launch template's user data with
# fsx.efa on (a template: trn_ultracluster/orchestrators/eks/lustre_efa.py replaces every
# @@...@@ with a value of the deploy and inlines lustre_efa.sh, without its comment lines,
# gzip-compressed and base64-encoded: user data is limited to 16 KB).
#
# cloud-init runs it once, at the first boot, in cloud-final; the EKS AL2023 AMIs start
# kubelet from nodeadm-run.service, "After=nodeadm-config.service cloud-final.service", so
# this part ends before the node joins the cluster (awslabs/amazon-eks-ami
# templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service @81fec2e). That
# unit has no Requires= on cloud-final: a failure here does not keep the node out. So with
# fsx.efa: true a node that cannot have EFA joins anyway, with 0 on the dashboard, an ERROR
# in /var/log/cloud-init-output.log and in the log below (docs/eks.md, "FSx for Lustre over
# EFA"). lustre_efa.sh csi-node: the Lustre client when it lacks EFA support (dnf), LNet over
# EFA, its boot unit, and the watcher that checks the first Lustre mount (the FSx CSI driver
# mounts the volume for pods) and publishes node_fsx_lustre_over_efa.
#
# Test hook: TRN_ROOT (prefix of every path written; passed on to lustre_efa.sh).
set -uo pipefail

ROOT="${TRN_ROOT:-}"
MODE='@@MODE@@'
DIR="${ROOT}/opt/trn-ultracluster"
LOG="${ROOT}/var/log/trn-ultracluster/lustre-efa-boot.log"
mkdir -p "${DIR}" "$(dirname "${LOG}")"
if ! base64 -d <<'TRN_LUSTRE_EFA' | gunzip > "${DIR}/lustre_efa.sh"; then
@@LUSTRE_EFA_GZ@@
TRN_LUSTRE_EFA
  echo "trn-ultracluster: ERROR: cannot unpack lustre_efa.sh (base64, gunzip)" >&2
  exit 1
fi
chmod 755 "${DIR}/lustre_efa.sh"
# csi-node: 0 LNet configured for EFA, 4 preferred and not configured (over TCP), else failed.
status=0
bash "${DIR}/lustre_efa.sh" csi-node --mode '@@MODE@@' --interfaces '@@INTERFACES@@' \
  --mib '@@CHECK_MIB@@' --region '@@REGION@@' --namespace '@@NAMESPACE@@' \
  --metric '@@METRIC@@' --cluster '@@CLUSTER@@' >> "${LOG}" 2>&1 || status=$?
case "${status}" in
  0) echo "trn-ultracluster: FSx for Lustre over EFA set up (${LOG#"${ROOT}"})" ;;
  4)
    tail -n 1 "${LOG}" >&2
    echo "trn-ultracluster: WARNING: LNet could not be configured for EFA (${LOG#"${ROOT}"}); the node joins the cluster over TCP (fsx.efa: auto)" >&2 ;;
  *)
    tail -n 3 "${LOG}" >&2
    if [[ "${MODE}" == required ]]; then
      echo "trn-ultracluster: ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and this node cannot have it (${LOG#"${ROOT}"}); it joins the cluster anyway, over TCP" >&2
      exit 1
    fi
    echo "trn-ultracluster: WARNING: lustre_efa.sh csi-node failed (exit ${status}; ${LOG#"${ROOT}"}): FSx for Lustre over EFA is not set up on this node, which joins the cluster over TCP (fsx.efa: auto)" >&2
    bash "${DIR}/lustre_efa.sh" report --value 0 --region '@@REGION@@' --namespace '@@NAMESPACE@@' \
      --metric '@@METRIC@@' --cluster '@@CLUSTER@@' >> "${LOG}" 2>&1 || true
    exit 1 ;;
esac
