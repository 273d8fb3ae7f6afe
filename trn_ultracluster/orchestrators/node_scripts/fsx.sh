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
# and calls read_storage_layout first. env_get (below) reads job-environment values for it.
#
# FSx for Lustre over EFA (trn_ultracluster.json fsx.efa, mode off|preferred|required):
# setup_lustre_efa before mount_fsx, check_lustre_efa after it; both run lustre_efa.sh
# (beside this file) and do nothing in mode off, where the fstab entry is as before.
# wait_for_file_system also checks that the file system is EFA-enabled. When one of these
# fails the node in mode required, efa_failed is true as fail runs: the sourcing script's
# fail may act on it (node_setup.sh powers a standalone node off at its first boot).
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
LUSTRE_EFA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lustre_efa.sh"
EFA_UNIT="trn-lustre-efa.service"  # nodes.LUSTRE_EFA_UNIT (tests check the two agree)
EFA_MODE="off" EFA_INTERFACES=0 EFA_CHECK_MIB=0 EFA_NAMESPACE="" EFA_METRIC=""
EFA_CLUSTER="" EFA_CONFIGURED="" EFA_FSTAB="" EFA_FAILED=""

# env_get [VARIABLE=]MEMBER...: the job environment's values of the contract MEMBERs (one
# lcs.py call, one line each) into the caller's VARIABLEs (MEMBER itself without one); a value
# the file does not set is empty. mapfile, not read: $(...) drops the empty lines of empty
# values at the end, where read would fail and set -e end the script without the caller's
# message.
env_get() {
  local _found _pair _n=0
  local -a _values
  _found="$(lcs env-get "${@#*=}")" \
    || fail "cannot read the job environment of the stack's trn_ultracluster.json (lcs.py's error is above)"
  mapfile -t _values <<< "${_found}"
  for _pair in "$@"; do
    printf -v "${_pair%%=*}" '%s' "${_values[_n]:-}"
    _n=$((_n + 1))
  done
}

# read_storage_layout: the shared-storage layout and the Region from the stack
# (trn_ultracluster/contracts/shared_storage.py, written into trn_ultracluster.json), so that
# jobs on every orchestrator use the same paths.
read_storage_layout() {
  local efa
  env_get FSX_MOUNT_POINT NEURON_CACHE_DIR REGION
  [[ -n "${FSX_MOUNT_POINT}" && -n "${NEURON_CACHE_DIR}" && -n "${REGION}" ]] \
    || fail "the job environment of the stack's trn_ultracluster.json lacks FSX_MOUNT_POINT, NEURON_CACHE_DIR or REGION"
  STATE_DIR="${FSX_MOUNT_POINT}/.trn-ultracluster"
  # (read on a here-string never fails: lcs's status is taken from the assignment.)
  efa="$(lcs fsx-efa)" \
    || fail "cannot read fsx.efa of the stack's trn_ultracluster.json (lcs.py's error is above)"
  read -r EFA_MODE EFA_INTERFACES EFA_CHECK_MIB EFA_NAMESPACE EFA_METRIC <<< "${efa}"
  [[ "${EFA_MODE}" =~ ^(off|preferred|required)$ ]] \
    || fail "fsx.efa mode '${EFA_MODE}' of the stack's trn_ultracluster.json is not off, preferred or required"
}

# lustre_efa_off_for ROLE: this node mounts over TCP as in mode off, whatever fsx.efa says
# (HyperPod Slurm's controller and login nodes have no EFA device: only the workers do Lustre
# over EFA). No LNet, no metric, the plain fstab entry.
lustre_efa_off_for() {
  if [[ "${EFA_MODE}" != off ]]; then
    log "FSx for Lustre over EFA (fsx.efa: ${EFA_MODE}) is for the worker nodes: this ${1} node mounts over TCP"
    EFA_MODE=off
  fi
}

# --- FSx for Lustre over EFA -------------------------------------------------------------
# Mode preferred (fsx.efa: auto, on) or required (fsx.efa: true): LNet over EFA before the
# mount, and after it the check that the traffic really goes over EFA; a fall back to TCP is
# a WARNING (preferred) or fails the node (required), and the node's metric
# node_fsx_lustre_over_efa says 1 or 0 either way (lustre_efa.sh report, never fails).
EFA_CAUSES="usual causes: the file system is not EFA-enabled; its security group and the nodes' do not allow all traffic to and from each other by security group id (0.0.0.0/0 rules do not count for EFA); node and file system in different Availability Zones or /16 blocks; see dmesg | grep -i kefalnd"

# efa_failed: true while fail runs for FSx for Lustre over EFA in mode required (LNet, the
# file system not EFA-enabled, or the check), false for any other failure.
efa_failed() { [[ -n "${EFA_FAILED}" ]]; }

efa_report() {
  bash "${LUSTRE_EFA}" report --value "$1" --region "${REGION}" --namespace "${EFA_NAMESPACE}" \
    --metric "${EFA_METRIC}" --cluster "${EFA_CLUSTER}" || true
}

# setup_lustre_efa CLUSTER: configure LNet for EFA (lustre_efa.sh configure, whose one-line
# error names the cause), then install its boot unit; CLUSTER is the metric's ClusterName.
# The fstab entry then orders the automount after the unit (ADT PR #1208), and in mode
# required also requires it, as the FSx guide's EFA example does ("Mounting Amazon FSx
# automatically": x-systemd.requires= and x-systemd.after= the configuration service): #1208
# left requires= out to keep a TCP fall back, which required refuses. When LNet cannot be
# configured in mode preferred, the node stays on TCP with the plain fstab entry and no unit.
setup_lustre_efa() {
  EFA_CLUSTER="$1"
  if [[ "${EFA_MODE}" == off ]]; then
    return 0
  fi
  local out status=0 cause
  log "FSx for Lustre over EFA (${EFA_MODE}): configuring LNet with ${EFA_INTERFACES} EFA interface(s)"
  out="$(bash "${LUSTRE_EFA}" configure --interfaces "${EFA_INTERFACES}" 2>&1)" || status=$?
  echo "${out}"
  # The watcher (enabled, not started: this boot's check is check_lustre_efa's) checks the
  # first Lustre mount again after every later boot, where the unit may have failed
  # (ADT #1204) or the network changed: a reboot never falls back to TCP silently.
  if (( status == 0 )) && bash "${LUSTRE_EFA}" install-unit --interfaces "${EFA_INTERFACES}" \
     && bash "${LUSTRE_EFA}" install-watcher --no-start --mode "${EFA_MODE}" \
          --mib "${EFA_CHECK_MIB}" --region "${REGION}" --namespace "${EFA_NAMESPACE}" \
          --metric "${EFA_METRIC}" --cluster "${EFA_CLUSTER}"; then
    EFA_CONFIGURED=1
    EFA_FSTAB=",x-systemd.after=${EFA_UNIT}"
    if [[ "${EFA_MODE}" == required ]]; then
      EFA_FSTAB=",x-systemd.requires=${EFA_UNIT}${EFA_FSTAB}"
    fi
    return 0
  fi
  cause="${out##*ERROR }"
  (( status != 0 )) || cause="${EFA_UNIT} or its watcher could not be installed (see above)"
  efa_report 0
  if [[ "${EFA_MODE}" == required ]]; then
    EFA_FAILED=1
    fail "FSx for Lustre over EFA is required (fsx.efa: true) and LNet could not be configured for EFA: ${cause}"
  fi
  log "WARNING: LNet could not be configured for EFA: ${cause}; FSx for Lustre goes over TCP on this node (fsx.efa: auto)"
}

# check_lustre_efa: after the mount, whether the traffic goes over EFA (lustre_efa.sh check).
check_lustre_efa() {
  if [[ "${EFA_MODE}" == off || -z "${EFA_CONFIGURED}" ]]; then
    return 0
  fi
  local result status=0 what
  result="$(bash "${LUSTRE_EFA}" check --mount "${ROOT}${FSX_MOUNT_POINT}" --mib "${EFA_CHECK_MIB}" 2>&1)" \
    || status=$?
  log "${result}"
  if (( status == 0 )); then
    efa_report 1
    log "FSx for Lustre traffic goes over EFA"
    return 0
  fi
  efa_report 0
  if (( status == 3 )); then
    what="this node's FSx for Lustre traffic goes over TCP, not EFA: ${result#*: tcp }"
  else
    what="the check of FSx for Lustre over EFA failed (${result##*ERROR })"
  fi
  if [[ "${EFA_MODE}" == required ]]; then
    EFA_FAILED=1
    fail "FSx for Lustre over EFA is required (fsx.efa: true) and ${what}; ${EFA_CAUSES}"
  fi
  log "WARNING: ${what}; the node goes on over TCP (fsx.efa: auto); ${EFA_CAUSES}"
}

# check_efa_file_system ID EFA_ENABLED: with LNet configured for EFA, the file system must be
# EFA-enabled (DescribeFileSystems LustreConfiguration.EfaEnabled, lcs.py fsx-status), or its
# traffic goes over TCP whatever the node does: that cause is named before the mount, not
# left to the check. Mode required fails the node; mode preferred warns, reports 0 and skips
# the check (its answer is known). The watcher installed by setup_lustre_efa stays: after a
# reboot it checks and reports again.
check_efa_file_system() {
  if [[ "${EFA_MODE}" == off || -z "${EFA_CONFIGURED}" || "$2" == true ]]; then
    return 0
  fi
  local what="FSx for Lustre $1 is not EFA-enabled (aws fsx describe-file-systems: LustreConfiguration.EfaEnabled is not true), so its traffic goes over TCP"
  efa_report 0
  if [[ "${EFA_MODE}" == required ]]; then
    EFA_FAILED=1
    fail "FSx for Lustre over EFA is required (fsx.efa: true) and ${what}: the file system not EFA-enabled is the cause (EFA is fixed when a file system is created)"
  fi
  log "WARNING: ${what}: the file system not EFA-enabled is the cause; the node goes on over TCP (fsx.efa: auto)"
  EFA_CONFIGURED=""
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
# FSX_DNS and FSX_MOUNT_NAME, and checks that it is EFA-enabled where LNet is configured for
# EFA (check_efa_file_system). The AWS CLI is on HyperPod nodes (AWS's base-config
# mount_fsx.sh calls `aws fsx describe-file-systems` the same way; on the standalone nodes' AMI
# it is assumed, not verified) and follows NextToken
# itself; the node's credentials are its IAM role (HyperPod: the instance group's execution
# role), which may call fsx:DescribeFileSystems. Failed calls (throttling, credentials not there yet) and
# unreadable answers are retried until the deadline; a permission error fails after
# TRN_DENIED_WAIT_S.
wait_for_file_system() {
  local deadline=$(( SECONDS + FSX_WAIT_S )) answer status verdict id state dns mount_name efa
  local last="no answer yet"
  answer="$(mktemp)"
  while true; do
    if aws_json "${answer}" fsx describe-file-systems; then
      status="$(lcs fsx-status < "${answer}")" || fail "cannot read the file systems (lcs.py's error is above)"
      read -r verdict id state dns mount_name efa <<< "${status}"
      case "${verdict}" in
        ready)
          FSX_ID="${id}" FSX_DNS="${dns}" FSX_MOUNT_NAME="${mount_name}"
          rm -f "${answer}"
          log "FSx for Lustre ${id} is ${state} (EFA-enabled: ${efa})"
          check_efa_file_system "${id}" "${efa}"
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

# set_fstab_line SOURCE MOUNT_POINT LINE: /etc/fstab with LINE as the one Lustre entry of
# SOURCE at MOUNT_POINT. An entry written by an earlier run with other options (mode off, or
# a preferred node that fell back to TCP, has no x-systemd.after=/requires= of the LNet
# unit) is replaced, so that a later run that configured EFA also orders the automount
# after the unit at the next boot (ADT PR #1208's race). The other lines are kept as they
# are; the new file is written beside fstab and renamed over it (a reader sees the old file
# or the new one), with fstab's mode.
set_fstab_line() {
  local source="$1" mount_point="$2" line="$3" fstab="${ROOT}/etc/fstab" tmp
  mkdir -p "${ROOT}/etc"
  touch "${fstab}"
  if [[ "$(awk -v s="${source}" -v m="${mount_point}" \
             '$1 == s && $2 == m && $3 == "lustre"' "${fstab}")" == "${line}" ]]; then
    return 0
  fi
  tmp="$(mktemp "${fstab}.XXXXXX")" || fail "cannot create a temporary file beside /etc/fstab"
  if ! awk -v s="${source}" -v m="${mount_point}" -v line="${line}" '
         $1 == s && $2 == m && $3 == "lustre" { if (!done) print line; done = 1; next }
         { print }
         END { if (!done) print line }' "${fstab}" > "${tmp}" \
     || ! chmod --reference="${fstab}" "${tmp}" || ! mv -f "${tmp}" "${fstab}"; then
    rm -f "${tmp}"
    fail "cannot write /etc/fstab"
  fi
  log "fstab: ${line}"
}

mount_fsx() {
  local source="${FSX_DNS}@tcp:/${FSX_MOUNT_NAME}" options="relatime,flock"
  # Mount command and fstab options: FSx for Lustre user guide, "Mounting from an Amazon
  # EC2 instance" and "Mounting Amazon FSx automatically"
  # (https://docs.aws.amazon.com/fsx/latest/LustreGuide/mount-fs-auto-mount-onreboot.html).
  mkdir -p "${ROOT}${FSX_MOUNT_POINT}"
  # After the network is up: network-online.target, as AWS's base-config mount_fsx.sh; the
  # FSx guide's example names network.service, which Ubuntu (HyperPod's AMIs) does not have.
  # EFA_FSTAB: the LNet unit of setup_lustre_efa (empty in mode off).
  local fstab_line="${source} ${FSX_MOUNT_POINT} lustre defaults,${options},_netdev,x-systemd.automount,x-systemd.requires=network-online.target${EFA_FSTAB} 0 0"
  set_fstab_line "${source}" "${FSX_MOUNT_POINT}" "${fstab_line}"
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
