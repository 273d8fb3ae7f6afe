#!/bin/bash
# TrnUltraCluster HyperPod lifecycle script (OnInitComplete).
#
# SageMaker HyperPod downloads the lifecycle prefix of the stack's bucket to each node and,
# after its AMI-based configuration (Slurm configured from the instance groups' SlurmConfig
# and started, Docker, Enroot, Pyxis), runs this file as root on every new or replaced node
# (CreateCluster LifeCycleConfig.OnInitComplete; SageMaker developer guide, "Getting started
# with SageMaker HyperPod using the AWS CLI", "Node lifecycle configuration options",
# https://docs.aws.amazon.com/sagemaker/latest/dg/smcluster-getting-started-slurm-cli.html).
# It is idempotent: rerunning it on a node gives the same result.
#
# What HyperPod does not do, and this script does: find the stack's FSx for Lustre file
# system by its tag and wait until it is AVAILABLE (CloudFormation creates it alongside the
# cluster), mount it at /fsx; home directories on FSx; the /fsx/.trn-ultracluster/env file
# (stack outputs and the Neuron/EFA environment) and the Neuron compile cache on FSx; Enroot
# credentials for the stack's ECR registry. It starts no Slurm daemon; on the controller it
# reports (never fails on) whether slurmctld serves the stack's partitions.
# docs/hyperpod.md compares each step with AWS's base-config lifecycle scripts.
#
# Log: /var/log/trn-ultracluster/lifecycle.log (and stdout, which HyperPod sends to
# CloudWatch Logs, log group /aws/sagemaker/Clusters/<cluster>/<id>).
#
# Test hooks (all optional; defaults are the real paths and times):
#   TRN_ROOT             prefix of every file path written or read (a fake root in tests)
#   TRN_LCS_DIR          directory of this script and its JSON input
#   TRN_NODE_IP          this node's IP address (default: `lcs.py node-ip`)
#   TRN_FSX_WAIT_S       seconds to wait for the file system to be AVAILABLE (default 1800)
#   TRN_FSX_POLL_S       seconds between FSx API calls, plus up to 10 s of jitter (default 30)
#   TRN_DENIED_WAIT_S    seconds a permission error may last before the script fails (default 300)
#   TRN_IMPORT_GRACE_S   seconds to wait for the association's metadata import to show up (default 300)
#   TRN_MOUNT_ATTEMPTS   FSx mount attempts (default 5)
#   TRN_RETRY_DELAY_S    seconds before the second mount attempt, doubled each time (default 10)
#   TRN_SLURM_CHECK_S    seconds the controller waits for its partitions (default 60)
#   TRN_FAIL_LOG_WAIT_S  seconds to wait before exiting on an error (default 60)
#   SAGEMAKER_RESOURCE_CONFIG_PATH  HyperPod's resource config

set -euo pipefail

ROOT="${TRN_ROOT:-}"
LCS_DIR="${TRN_LCS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
LOG_DIR="${ROOT}/var/log/trn-ultracluster"
LOG_FILE="${LOG_DIR}/lifecycle.log"
CLUSTER_JSON="${LCS_DIR}/trn_ultracluster.json"
RESOURCE_CONFIG="${SAGEMAKER_RESOURCE_CONFIG_PATH:-${ROOT}/opt/ml/config/resource_config.json}"
FSX_WAIT_S="${TRN_FSX_WAIT_S:-1800}"
FSX_POLL_S="${TRN_FSX_POLL_S:-30}"
DENIED_WAIT_S="${TRN_DENIED_WAIT_S:-300}"
IMPORT_GRACE_S="${TRN_IMPORT_GRACE_S:-300}"
MOUNT_ATTEMPTS="${TRN_MOUNT_ATTEMPTS:-5}"
RETRY_DELAY_S="${TRN_RETRY_DELAY_S:-10}"
SLURM_CHECK_S="${TRN_SLURM_CHECK_S:-60}"
FAIL_LOG_WAIT_S="${TRN_FAIL_LOG_WAIT_S:-60}"
# Slurm's commands on HyperPod are under /opt/slurm/bin (HyperPod base lifecycle scripts,
# aws-samples/awsome-distributed-training .../base-config/start_slurm.sh); last, so a
# PATH that has them already wins.
export PATH="${PATH}:/opt/slurm/bin"

mkdir -p "${LOG_DIR}"
exec > >(tee -a "${LOG_FILE}") 2>&1

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [trn-ultracluster] $*"; }
# On an error, wait before exiting so that the log reaches CloudWatch before HyperPod stops
# the node (AWS's OnInitComplete sample waits 60 s for the same reason:
# awslabs/awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/Extensions/run_extensions.sh).
fail() { log "ERROR: $*"; sync; sleep "${FAIL_LOG_WAIT_S}"; exit 1; }
lcs() { python3 "${LCS_DIR}/lcs.py" --resource-config "${RESOURCE_CONFIG}" \
          --cluster "${CLUSTER_JSON}" "$@"; }

[[ -f "${CLUSTER_JSON}" ]] || fail "${CLUSTER_JSON} not found; the lifecycle bucket is incomplete"
# The shared-storage layout comes from the stack (trn_ultracluster/contracts/shared_storage.py, written
# into trn_ultracluster.json), so jobs on every orchestrator use the same paths.
FSX_MOUNT_POINT="$(lcs env-get FSX_MOUNT_POINT)"
NEURON_CACHE_DIR="$(lcs env-get NEURON_CACHE_DIR)"
REGION="$(lcs env-get REGION)"
[[ -n "${FSX_MOUNT_POINT}" && -n "${NEURON_CACHE_DIR}" && -n "${REGION}" ]] \
  || fail "the job environment of ${CLUSTER_JSON} lacks FSX_MOUNT_POINT, NEURON_CACHE_DIR or REGION"
STATE_DIR="${FSX_MOUNT_POINT}/.trn-ultracluster"
FSX_ID="" FSX_DNS="" FSX_MOUNT_NAME=""

# retry ATTEMPTS DELAY_S COMMAND...: run COMMAND until it succeeds, doubling the delay.
retry() {
  local attempts="$1" delay="$2" n=1
  shift 2
  until "$@"; do
    if (( n >= attempts )); then
      return 1
    fi
    log "attempt ${n}/${attempts} failed: $*; retrying in ${delay}s"
    sleep "${delay}"
    n=$(( n + 1 ))
    delay=$(( delay * 2 ))
  done
}

# aws_json OUT_FILE ARGS...: run `aws ARGS... --region REGION --output json` with stdout in
# OUT_FILE; stderr (warnings, errors) goes to the log, never into the JSON. On failure sets
# AWS_ERROR to its last stderr line and returns non-zero.
AWS_ERROR=""
aws_json() {
  local out="$1" err
  shift
  err="$(mktemp)"
  if aws "$@" --region "${REGION}" --output json > "${out}" 2> "${err}"; then
    cat "${err}"
    rm -f "${err}"
    return 0
  fi
  AWS_ERROR="$(tail -n 1 "${err}")"
  cat "${err}"
  rm -f "${err}"
  return 1
}

# denied_too_long: true when the last AWS error is a permission error that has lasted more
# than TRN_DENIED_WAIT_S (IAM changes take a little while to reach every endpoint; longer
# than that, the role lacks the permission and waiting only delays the failure).
DENIED_SINCE=""
denied_too_long() {
  if [[ "${AWS_ERROR}" =~ AccessDenied|UnauthorizedOperation|not\ authorized ]]; then
    DENIED_SINCE="${DENIED_SINCE:-${SECONDS}}"
    (( SECONDS - DENIED_SINCE >= DENIED_WAIT_S ))
  else
    DENIED_SINCE=""
    return 1
  fi
}

# pause: the poll interval plus up to 10 s of jitter, so that the nodes of a large cluster
# do not call the FSx API in step.
pause() { sleep $(( FSX_POLL_S + RANDOM % 10 )); }

# Find the stack's file system by its tag and wait until it is AVAILABLE; sets FSX_ID,
# FSX_DNS and FSX_MOUNT_NAME. The AWS CLI is on HyperPod nodes (AWS's base-config
# mount_fsx.sh calls `aws fsx describe-file-systems` the same way) and follows NextToken
# itself; the node's credentials are the instance group's execution role, which may call
# fsx:DescribeFileSystems. Failed calls (throttling, credentials not there yet) and
# unreadable answers are retried until the deadline; a permission error fails after
# TRN_DENIED_WAIT_S.
wait_for_file_system() {
  local deadline=$(( SECONDS + FSX_WAIT_S )) answer status verdict id state dns mount_name
  local last="no answer yet"
  answer="$(mktemp)"
  while true; do
    if aws_json "${answer}" fsx describe-file-systems; then
      status="$(lcs fsx-status < "${answer}")" || fail "cannot read the file systems (lcs.py's error is above)"
      read -r verdict id state dns mount_name <<< "${status}"
      case "${verdict}" in
        ready)
          FSX_ID="${id}" FSX_DNS="${dns}" FSX_MOUNT_NAME="${mount_name}"
          rm -f "${answer}"
          log "FSx for Lustre ${id} is ${state}"
          return 0 ;;
        failed)
          fail "FSx for Lustre ${id} is ${state}; it will not become AVAILABLE (aws fsx describe-file-systems --file-system-ids ${id} gives FailureDetails)" ;;
      esac
      last="file system ${id} is ${state}"
    else
      last="aws fsx describe-file-systems failed: ${AWS_ERROR}"
      if denied_too_long; then
        fail "${last} (for ${DENIED_WAIT_S}s): the instance group's execution role needs fsx:DescribeFileSystems"
      fi
    fi
    if (( SECONDS >= deadline )); then
      fail "the stack's FSx for Lustre file system was not AVAILABLE within ${FSX_WAIT_S}s (${last})"
    fi
    log "waiting for FSx for Lustre: ${last}"
    pause
  done
}

# With a data repository association (trn_ultracluster.json fsx.data_repository), wait until
# it is AVAILABLE and its metadata import has ended (lcs.py link-status says why) before
# anything is written to the file system. When no import task shows up within
# TRN_IMPORT_GRACE_S of the association being AVAILABLE, go on.
wait_for_link() {
  if [[ "$(lcs fsx-get data_repository)" != "true" ]]; then
    return 0
  fi
  local deadline=$(( SECONDS + FSX_WAIT_S )) associations tasks status verdict detail
  local last="no answer yet" no_import_since=""
  local filter="Name=file-system-id,Values=${FSX_ID}"
  associations="$(mktemp)"
  tasks="$(mktemp)"
  while true; do
    if aws_json "${associations}" fsx describe-data-repository-associations --filters "${filter}" \
       && aws_json "${tasks}" fsx describe-data-repository-tasks --filters "${filter}"; then
      status="$(lcs link-status "${associations}" "${tasks}")" || status="wait unreadable-answer"
      read -r verdict detail <<< "${status}"
      case "${verdict}" in
        ready)
          log "data repository association ready (${detail})"
          rm -f "${associations}" "${tasks}"
          return 0 ;;
        failed)
          fail "the data repository association of ${FSX_ID} is ${detail#association-} (aws fsx describe-data-repository-associations --filters ${filter} gives FailureDetails)" ;;
        no-import)
          no_import_since="${no_import_since:-${SECONDS}}"
          if (( SECONDS - no_import_since >= IMPORT_GRACE_S )); then
            log "data repository association AVAILABLE, no metadata import listed after ${IMPORT_GRACE_S}s; going on"
            rm -f "${associations}" "${tasks}"
            return 0
          fi ;;
      esac
      last="${detail}"
    else
      last="aws fsx failed: ${AWS_ERROR}"
      if denied_too_long; then
        fail "${last} (for ${DENIED_WAIT_S}s): the instance group's execution role needs fsx:DescribeDataRepositoryAssociations and fsx:DescribeDataRepositoryTasks"
      fi
    fi
    if (( SECONDS >= deadline )); then
      fail "the data repository association of ${FSX_ID} was not ready within ${FSX_WAIT_S}s (${last})"
    fi
    log "waiting for the data repository association: ${last}"
    pause
  done
}

is_mounted() { grep -qs " ${ROOT}${FSX_MOUNT_POINT} lustre " "${ROOT}/proc/mounts"; }

mount_fsx() {
  local source="${FSX_DNS}@tcp:/${FSX_MOUNT_NAME}" options="relatime,flock"
  # Mount command and fstab options: FSx for Lustre user guide, "Mounting from an Amazon
  # EC2 instance" and "Mounting Amazon FSx automatically"
  # (https://docs.aws.amazon.com/fsx/latest/LustreGuide/mount-fs-auto-mount-onreboot.html).
  mkdir -p "${ROOT}${FSX_MOUNT_POINT}"
  # After the network is up: network-online.target, as AWS's base-config mount_fsx.sh; the
  # FSx guide's example names network.service, which Ubuntu (HyperPod's AMIs) does not have.
  local fstab_line="${source} ${FSX_MOUNT_POINT} lustre defaults,${options},_netdev,x-systemd.automount,x-systemd.requires=network-online.target 0 0"
  touch "${ROOT}/etc/fstab"
  if ! grep -qF "${source} ${FSX_MOUNT_POINT} lustre" "${ROOT}/etc/fstab"; then
    echo "${fstab_line}" >> "${ROOT}/etc/fstab"
  fi
  if is_mounted; then
    log "FSx for Lustre already mounted at ${FSX_MOUNT_POINT}"
    return 0
  fi
  log "mounting FSx for Lustre ${source} at ${FSX_MOUNT_POINT}"
  if ! retry "${MOUNT_ATTEMPTS}" "${RETRY_DELAY_S}" \
       mount -t lustre -o "${options}" "${source}" "${ROOT}${FSX_MOUNT_POINT}"; then
    fail "could not mount FSx for Lustre ${source} at ${FSX_MOUNT_POINT} after ${MOUNT_ATTEMPTS} attempts; check that the node's security group may reach the file system on TCP 988 and 1018-1023"
  fi
  log "mounted FSx for Lustre at ${FSX_MOUNT_POINT}"
}

# Home directories on FSx for every login user (UID 1000-59999 in /etc/passwd), so that
# code, virtual environments and Enroot credentials are the same on every node.
setup_homes() {
  local user uid gid home registry
  registry="$(lcs env-get ECR_REGISTRY)"
  mkdir -p "${ROOT}${FSX_MOUNT_POINT}/home"
  while IFS=: read -r user _ uid gid _ home _; do
    if (( uid < 1000 || uid >= 60000 )); then
      continue
    fi
    local target="${FSX_MOUNT_POINT}/home/${user}"
    if [[ ! -d "${ROOT}${target}" ]]; then
      mkdir -p "${ROOT}${target}"
      if [[ -d "${ROOT}${home}" ]]; then
        cp -a "${ROOT}${home}/." "${ROOT}${target}/"
      fi
      chown -R "${uid}:${gid}" "${ROOT}${target}"
      chmod 700 "${ROOT}${target}"
    fi
    if [[ "${home}" != "${target}" ]]; then
      # usermod refuses while the user has a process (usermod(8), -d); a node still works
      # with a local home, so say so rather than fail the node.
      if retry 3 5 usermod -d "${target}" "${user}"; then
        home="${target}"
      else
        log "WARNING: could not move the home of ${user} to ${target} (is ${user} logged in?); it stays ${home}"
      fi
    fi
    log "home of ${user} is ${home}"
    setup_enroot_credentials "${user}" "${uid}" "${gid}" "${home}" "${registry}"
  done < "${ROOT}/etc/passwd"
}

# Enroot reads registry credentials from $ENROOT_CONFIG_PATH/.credentials (netrc format;
# `$(...)` is evaluated at import): ECR takes user AWS and a token from
# `aws ecr get-login-password` (Enroot docs, doc/cmd/import.md, "Credentials"). Where
# ENROOT_CONFIG_PATH points depends on the AMI's enroot.conf (lcs.py enroot-config-dir).
# Arguments: user uid gid home registry.
setup_enroot_credentials() {
  local user="$1" uid="$2" gid="$3" home="$4" registry="$5" config_dir
  if [[ -z "${registry}" ]]; then
    return 0
  fi
  config_dir="$(lcs enroot-config-dir "${home}" "${uid}" "${gid}" --conf "${ROOT}/etc/enroot/enroot.conf")" \
    || fail "cannot tell where Enroot reads ${user}'s credentials"
  local dir="${ROOT}${config_dir}"
  local line="machine ${registry} login AWS password \$(aws ecr get-login-password --region ${REGION})"
  mkdir -p "${dir}"
  touch "${dir}/.credentials"
  if ! grep -qF "machine ${registry} " "${dir}/.credentials"; then
    echo "${line}" >> "${dir}/.credentials"
  fi
  chmod 600 "${dir}/.credentials"
  chown "${uid}:${gid}" "${dir}" "${dir}/.credentials"
  log "Enroot credentials for ${registry} written for ${user} (${config_dir})"
}

# The stack's environment for every login shell and Slurm job (srun passes it into Pyxis
# containers): stack outputs plus the Neuron/EFA variables of trn_ultracluster/contracts/neuron_env.py
# (FI_PROVIDER, FI_EFA_USE_DEVICE_RDMA, NEURON_CC_FLAGS with the compile cache on FSx), and
# the file system id found above. Written to a temporary file and renamed: every node writes
# the same content, and a reader never sees half a file.
write_environment() {
  mkdir -p "${ROOT}${STATE_DIR}" "${ROOT}${NEURON_CACHE_DIR}"
  chmod 1777 "${ROOT}${NEURON_CACHE_DIR}"
  local tmp
  tmp="$(mktemp "${ROOT}${STATE_DIR}/env.XXXXXX")"
  lcs env-file --set "FSX_FILE_SYSTEM_ID=${FSX_ID}" > "${tmp}"
  chmod 644 "${tmp}"
  mv -f "${tmp}" "${ROOT}${STATE_DIR}/env"
  log "wrote ${STATE_DIR}/env"
  mkdir -p "${ROOT}/etc/profile.d"
  cat > "${ROOT}/etc/profile.d/trn-ultracluster.sh" <<EOF
# Written by the TrnUltraCluster lifecycle scripts.
if [ -r ${STATE_DIR}/env ]; then . ${STATE_DIR}/env; fi
EOF
  log "wrote /etc/profile.d/trn-ultracluster.sh"
}

# Enroot and Pyxis come with HyperPod's AMI-based configuration; jobs need both
# (`srun --container-image`). Reported, not installed: a node without them is an AMI
# problem the log should name.
check_container_tools() {
  if command -v enroot >/dev/null 2>&1; then
    log "Enroot: $(enroot version 2>/dev/null || echo present)"
  else
    log "WARNING: enroot is not installed; \`srun --container-image\` jobs will fail on this node (update the cluster software: aws sagemaker update-cluster-software)"
  fi
}

# Controller only: does slurmctld serve the stack's partitions (PARTITIONS, the worker
# groups' PartitionNames)? HyperPod writes slurm.conf from SlurmConfig and starts slurmctld,
# possibly while this script runs (awslabs/awsome-distributed-training
# .../Extensions/detect-node/README.md: OnInitComplete "can run before or in parallel with
# Slurm service startup"), so this waits up to TRN_SLURM_CHECK_S and only reports, as
# base-config's wait_for_slurm_conf (60 s, result ignored) does.
check_slurm_partitions() {
  local partitions partition missing deadline=$(( SECONDS + SLURM_CHECK_S ))
  partitions="$(lcs env-get PARTITIONS)"
  while true; do
    missing=""
    for partition in ${partitions//,/ }; do
      if ! scontrol show partition "${partition}" >/dev/null 2>&1; then
        missing="${missing:+${missing},}${partition}"
      fi
    done
    if [[ -z "${missing}" ]]; then
      log "slurmctld serves the partitions ${partitions}"
      return 0
    fi
    if (( SECONDS >= deadline )); then
      log "WARNING: slurmctld does not serve partition(s) ${missing} after ${SLURM_CHECK_S}s; check \`sinfo\` and /var/log/slurm/slurmctld.log once the cluster is InService"
      return 0
    fi
    sleep 5
  done
}

main() {
  log "on_init_complete start (lifecycle dir ${LCS_DIR})"
  local ip role
  ip="${TRN_NODE_IP:-$(lcs node-ip)}" || fail "cannot find this node's address"
  if ! role="$(lcs role "${ip}")"; then
    log "WARNING: ${ip} is in no instance group of ${RESOURCE_CONFIG}; skipping the controller checks"
    role="unknown"
  fi
  log "node ${ip} is a Slurm ${role} node"
  wait_for_file_system
  wait_for_link
  mount_fsx
  setup_homes
  write_environment
  check_container_tools
  bash "${LCS_DIR}/neuron_metrics.sh" --region "${REGION}" --cluster "$(lcs env-get CLUSTER_NAME)" --role "${role}" --jobs-dir "${STATE_DIR}/jobs" || log "WARNING: node metrics are not set up (see above); the node works without them"
  if [[ "${role}" == "controller" ]]; then
    check_slurm_partitions
  fi
  log "on_init_complete done"
}

main "$@"
