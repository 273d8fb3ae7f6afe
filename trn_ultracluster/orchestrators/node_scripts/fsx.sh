# shellcheck shell=bash
# TrnUltraCluster node scripts: the shared FSx for Lustre steps (sourced, not run).
#
# Sourced by the HyperPod lifecycle script (hyperpod_slurm/scripts/on_init_complete.sh) and
# the standalone nodes' setup (standalone/scripts/node_setup.sh), so that every node finds,
# waits for and mounts the file system, and writes the job environment, the same way.
#
# The sourcing script defines, before calling anything here:
#   log MESSAGE...     print a timestamped line (its stdout goes to its log)
#   fail MESSAGE...    log an error and exit non-zero
#   lcs ARGS...        run lcs.py (beside this file) on the stack's trn_ultracluster.json
# and calls read_storage_layout first.
#
# Test hooks (all optional; defaults are the real paths and times):
#   TRN_ROOT             prefix of every file path written or read (a fake root in tests)
#   TRN_FSX_WAIT_S       seconds to wait for the file system to be AVAILABLE (default 1800)
#   TRN_FSX_POLL_S       seconds between FSx API calls, plus up to 10 s of jitter (default 30)
#   TRN_DENIED_WAIT_S    seconds a permission error may last before the script fails (default 300)
#   TRN_IMPORT_GRACE_S   seconds to wait for the association's metadata import to show up (default 300)
#   TRN_MOUNT_ATTEMPTS   FSx mount attempts (default 5)
#   TRN_RETRY_DELAY_S    seconds before the second mount attempt, doubled each time (default 10)

ROOT="${TRN_ROOT:-}"
FSX_WAIT_S="${TRN_FSX_WAIT_S:-1800}"
FSX_POLL_S="${TRN_FSX_POLL_S:-30}"
DENIED_WAIT_S="${TRN_DENIED_WAIT_S:-300}"
IMPORT_GRACE_S="${TRN_IMPORT_GRACE_S:-300}"
MOUNT_ATTEMPTS="${TRN_MOUNT_ATTEMPTS:-5}"
RETRY_DELAY_S="${TRN_RETRY_DELAY_S:-10}"
FSX_ID="" FSX_DNS="" FSX_MOUNT_NAME=""
FSX_MOUNT_POINT="" NEURON_CACHE_DIR="" REGION="" STATE_DIR=""

# read_storage_layout: the shared-storage layout and the Region from the stack
# (trn_ultracluster/contracts/shared_storage.py, written into trn_ultracluster.json), so that
# jobs on every orchestrator use the same paths.
read_storage_layout() {
  FSX_MOUNT_POINT="$(lcs env-get FSX_MOUNT_POINT)"
  NEURON_CACHE_DIR="$(lcs env-get NEURON_CACHE_DIR)"
  REGION="$(lcs env-get REGION)"
  [[ -n "${FSX_MOUNT_POINT}" && -n "${NEURON_CACHE_DIR}" && -n "${REGION}" ]] \
    || fail "the job environment of the stack's trn_ultracluster.json lacks FSX_MOUNT_POINT, NEURON_CACHE_DIR or REGION"
  STATE_DIR="${FSX_MOUNT_POINT}/.trn-ultracluster"
}

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
# mount_fsx.sh calls `aws fsx describe-file-systems` the same way; on the standalone nodes' AMI
# it is assumed, not verified) and follows NextToken
# itself; the node's credentials are its IAM role (HyperPod: the instance group's execution
# role), which may call fsx:DescribeFileSystems. Failed calls (throttling, credentials not there yet) and
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
        fail "${last} (for ${DENIED_WAIT_S}s): this node's IAM role needs fsx:DescribeFileSystems"
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
        fail "${last} (for ${DENIED_WAIT_S}s): this node's IAM role needs fsx:DescribeDataRepositoryAssociations and fsx:DescribeDataRepositoryTasks"
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
# The stack's environment for every login shell and job (HyperPod: srun passes it into Pyxis
# containers; standalone: the job scripts source it): stack outputs plus the Neuron/EFA variables of trn_ultracluster/contracts/neuron_env.py
# (FI_PROVIDER, FI_EFA_USE_DEVICE_RDMA, the Neuron stack's compile cache on FSx), and
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
# Written by the TrnUltraCluster node scripts.
if [ -r ${STATE_DIR}/env ]; then . ${STATE_DIR}/env; fi
EOF
  log "wrote /etc/profile.d/trn-ultracluster.sh"
}
