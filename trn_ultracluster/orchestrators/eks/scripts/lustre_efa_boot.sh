#!/bin/bash
# TrnUltraCluster: the shell part of the EKS Trainium launch template's user data with
# fsx.efa on (a template: trn_ultracluster/orchestrators/eks/lustre_efa.py replaces every
# @@...@@ with a value of the deploy and inlines lustre_efa.sh, without its comment lines,
# gzip-compressed and base64-encoded: user data is limited to 16 KB). The script's helper
# lustre_efa.py does not fit beside it: this part fetches it, an S3 asset of the deploy that
# the node role may read (s3:GetObject on that one object), and checks it against the
# SHA-256 of the deploy before anything runs it (eks/lustre_efa.py LustreEfaHelper).
#
# cloud-init runs it once, at the first boot, in cloud-final; the EKS AL2023 AMIs start
# kubelet from nodeadm-run.service, "After=nodeadm-config.service cloud-final.service", so
# this part ends before the node joins the cluster (awslabs/amazon-eks-ami
# templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service @81fec2e). That
# unit has no Requires= on cloud-final: a failed part alone does not keep the node out.
# lustre_efa.sh csi-node: the Lustre client when it lacks EFA support (dnf), LNet over EFA,
# its boot unit, and the watcher that checks the first Lustre mount (the FSx CSI driver
# mounts the volume for pods) and publishes node_fsx_lustre_over_efa.
#
# Mode required (fsx.efa: true), set-up failed (the helper could not be fetched or does not
# match, or csi-node failed): the node has reported 0, says why
# on stderr (/var/log/cloud-init-output.log), in the log below and on the console (`aws ec2
# get-console-output`), and powers off before kubelet starts, so that it never joins and its
# node group replaces it:
# - "Managed node groups are always deployed with a launch template to be used with the
#   Amazon EC2 Auto Scaling group" (EKS user guide, "Customize managed nodes with launch
#   templates");
# - "By default, when you initiate a shutdown from an Amazon EBS backed instance (using a
#   command such as shutdown or poweroff), the instance stops" (EC2 user guide, "Change
#   instance initiated shutdown behavior"); a node group's launch template "can't include ...
#   TerminateInstances" (CloudFormation, AWS::EKS::Nodegroup LaunchTemplateSpecification), and
#   the stack's sets no InstanceInitiatedShutdownBehavior, so the default applies;
# - "Auto Scaling marks an instance as unhealthy if its instance status is any value other
#   than running" and replaces unhealthy instances (EC2 Auto Scaling user guide, "Health
#   checks for instances in an Auto Scaling group",
#   https://docs.aws.amazon.com/autoscaling/ec2/userguide/healthcheck.html).
# That a managed node group's Auto Scaling group replaces a stopped node this way is not
# verified on a cluster here. A cause that holds for every node makes the group replace nodes
# in a loop (docs/lustre-over-efa.md). Mode preferred never powers off: a WARNING, 0 on the
# dashboard, and the node joins.
#
# Test hooks: TRN_ROOT (prefix of every path written; passed on to lustre_efa.sh),
# TRN_CONSOLE (default /dev/console), TRN_POWEROFF (a file: "poweroff" is appended to it
# instead of powering off), TRN_FETCH_ATTEMPTS (default 10), TRN_RETRY_DELAY_S (seconds
# between attempts, default 10).
set -uo pipefail

ROOT="${TRN_ROOT:-}"
MODE='@@MODE@@'
HELPER_URL='@@HELPER_URL@@'
HELPER_SHA256='@@HELPER_SHA256@@'
ATTEMPTS="${TRN_FETCH_ATTEMPTS:-10}"
DIR="${ROOT}/opt/trn-ultracluster"
LOG="${ROOT}/var/log/trn-ultracluster/lustre-efa-boot.log"
CONSOLE="${TRN_CONSOLE:-/dev/console}"
mkdir -p "${DIR}" "$(dirname "${LOG}")"

# power_off_required CAUSE: mode required and the set-up failed: say so everywhere, power off.
power_off_required() {
  local message="trn-ultracluster: ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and this node cannot have it: $1 (${LOG#"${ROOT}"}); the node powers off before it joins the cluster, so that its node group replaces it"
  echo "${message}" | tee -a "${LOG}" >&2
  if [[ -w "${CONSOLE}" ]]; then
    echo "${message}" > "${CONSOLE}" 2> /dev/null || true
  fi
  sync
  if [[ -n "${TRN_POWEROFF:-}" ]]; then
    echo poweroff >> "${TRN_POWEROFF}"
  else
    systemctl poweroff || shutdown -h now
  fi
  exit 1
}

# report_0: node_fsx_lustre_over_efa 0 (lustre_efa.sh report needs no helper), into the log.
report_0() {
  bash "${DIR}/lustre_efa.sh" report --value 0 --region '@@REGION@@' --namespace '@@NAMESPACE@@' \
    --metric '@@METRIC@@' --cluster '@@CLUSTER@@' >> "${LOG}" 2>&1 || true
}

# fetch_helper: lustre_efa.py from HELPER_URL beside lustre_efa.sh, retried while the network
# and the node role's credentials come up at boot (as the standalone user data fetches its
# scripts), then checked against HELPER_SHA256; a file that does not match is removed. When
# it fails, prints the cause.
fetch_helper() {
  local n sum
  for (( n = 1; n <= ATTEMPTS; n++ )); do
    if aws s3 cp --region '@@REGION@@' --only-show-errors "${HELPER_URL}" "${DIR}/lustre_efa.py" >> "${LOG}" 2>&1; then
      sum="$(sha256sum "${DIR}/lustre_efa.py")"
      sum="${sum%% *}"
      [[ "${sum}" != "${HELPER_SHA256}" ]] || return 0
      rm -f "${DIR}/lustre_efa.py"
      echo "lustre_efa.py from ${HELPER_URL} has SHA-256 ${sum:-none}, not the deploy's ${HELPER_SHA256}"
      return 1
    fi
    echo "trn-ultracluster: fetching ${HELPER_URL} failed (attempt ${n}/${ATTEMPTS})" >> "${LOG}"
    (( n == ATTEMPTS )) || sleep "${TRN_RETRY_DELAY_S:-10}"
  done
  echo "cannot fetch lustre_efa.py from ${HELPER_URL} (aws s3 cp, ${ATTEMPTS} attempts; the node role needs s3:GetObject on it)"
  return 1
}

if ! base64 -d <<'TRN_LUSTRE_EFA' | gunzip > "${DIR}/lustre_efa.sh"; then
@@LUSTRE_EFA_GZ@@
TRN_LUSTRE_EFA
  if [[ "${MODE}" == required ]]; then
    power_off_required "cannot unpack lustre_efa.sh (base64, gunzip), so nothing is set up and no metric is reported"
  fi
  echo "trn-ultracluster: ERROR: cannot unpack lustre_efa.sh (base64, gunzip); FSx for Lustre over EFA is not set up on this node, which joins the cluster over TCP (fsx.efa: auto)" >&2
  exit 1
fi
chmod 755 "${DIR}/lustre_efa.sh"
if ! cause="$(fetch_helper)"; then
  report_0
  if [[ "${MODE}" == required ]]; then
    power_off_required "${cause}, so nothing is set up"
  fi
  echo "trn-ultracluster: ERROR: ${cause}; FSx for Lustre over EFA is not set up on this node, which joins the cluster over TCP (fsx.efa: auto)" >&2
  exit 1
fi
# csi-node: 0 LNet configured for EFA, 4 preferred and not configured (over TCP), else failed.
status=0
bash "${DIR}/lustre_efa.sh" csi-node --mode "${MODE}" --interfaces '@@INTERFACES@@' \
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
      # The cause: the last "ERROR (<cause>): ..." line of lustre_efa.sh, else its last ERROR.
      cause="$(grep 'ERROR (' "${LOG}" | tail -n 1)"
      if [[ -n "${cause}" ]]; then
        cause="${cause##*ERROR }"
      else
        cause="$(grep 'ERROR' "${LOG}" | tail -n 1)"
        cause="${cause#*] }"
      fi
      power_off_required "${cause:-lustre_efa.sh csi-node failed (exit ${status})}"
    fi
    echo "trn-ultracluster: WARNING: lustre_efa.sh csi-node failed (exit ${status}; ${LOG#"${ROOT}"}): FSx for Lustre over EFA is not set up on this node, which joins the cluster over TCP (fsx.efa: auto)" >&2
    report_0
    exit 1 ;;
esac
