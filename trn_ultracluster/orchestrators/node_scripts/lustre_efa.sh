#!/bin/bash
# TrnUltraCluster: FSx for Lustre over EFA on a node, and never a silent fall back to TCP.
#
# One script for every orchestrator (run, not sourced): node_scripts/fsx.sh calls it on
# HyperPod Slurm and standalone nodes, hyperpod_eks/scripts/on_create.sh on HyperPod EKS
# nodes, and the EKS launch template's user data carries a copy of it (comment lines
# stripped: user data is limited to 16 KB, EC2 user guide, "Work with instance user data").
# It runs the system tools and keeps their order; lustre_efa.py beside it (python3, standard
# library; shipped with this script everywhere, fetched from S3 by the EKS user data, which
# cannot carry both, and installed with it) decides from what they
# print: the client OS rule, the EFA devices LNet binds, the LNet steps (and their refusal
# under a mount), the check's verdict, the text of the units and what a failure means in
# each mode (its docstrings give the sources of each, and where python3 comes from).
# Sources: FSx for Lustre user guide (UG) "Configuring EFA
# clients" (configure-efa-clients.html) and "Mounting Amazon FSx automatically"
# (mount-fs-auto-mount-onreboot.html); EKS user guide fsx-csi-tuning-efa.adoc (the explicit
# LNet commands AWS's setup.sh runs: awsdocs/amazon-eks-user-guide @1527dee);
# awslabs/awsome-distributed-ai (ADT) PRs #989, #1204, #1208 and its HyperPod base-config
# lifecycle script 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/
# mount_fsx.sh (@11e237a); aws/aws-parallelcluster PR #7572 (the counter check).
#
# Usage:
#   lustre_efa.sh configure --interfaces N
#   lustre_efa.sh install-unit --interfaces N
#   lustre_efa.sh install-client
#   lustre_efa.sh check --mount DIR --mib M
#   lustre_efa.sh report --value 0|1 REPORT_ARGS
#   lustre_efa.sh watch --mode preferred|required --mib M REPORT_ARGS
#   lustre_efa.sh install-watcher --mode MODE --mib M REPORT_ARGS [--no-start]
#   lustre_efa.sh csi-node --mode MODE --interfaces N --mib M REPORT_ARGS
# REPORT_ARGS: --region R --namespace NS --metric NAME --cluster C [--instance-id I] [--node-name N]
#
# Errors end with one line on stderr, "... ERROR (<cause>): <message>", and exit status 1;
# causes: usage, os, no-efa-device, no-kefalnd, network, modules, lnetctl, ni-not-up, mounted,
# check, install. `check` exits 3 when the traffic went over TCP; `csi-node` exits 4 when EFA
# is preferred and LNet could not be configured for it, or its boot unit or watcher could
# not be installed (the node goes on, with 0 on the dashboard). Every command but `report`
# needs python3 and lustre_efa.py (cause os when they are missing).
#
# Test hooks: TRN_ROOT (prefix of every file path read or written: /etc, /sys, /proc,
# /usr/local/sbin, /var/log), TRN_NI_WAIT_S (seconds for the EFA NIs to come up, default 60:
# our choice, no source gives a bring-up time), TRN_PROBE_WAIT_S (seconds a node waits for
# another node's probe, and the age of a stale probe lock, default 300), TRN_WATCH_POLL_S
# (default 30), TRN_INSTANCE_ID, TRN_NODE_NAME.
#
# Time bounds (all our choice: no AWS source gives any of them). Every lnetctl call and every
# modprobe runs under timeout(1), and so does the I/O of the check on the file system:
# LNETCTL_TIMEOUT_S, MODPROBE_TIMEOUT_S, IO_TIMEOUT_S (the probe's dd), STAT_TIMEOUT_S. The
# boot unit (install-unit) is bounded as a whole (lustre_efa.py boot_unit): it ends "active"
# or "failed" at most 550 s after its first start, so what is ordered after it (kubelet,
# nodeadm-run, the automount, the watcher) waits at most that.

set -euo pipefail

ROOT="${TRN_ROOT:-}"
SELF="${BASH_SOURCE[0]}"
# HELPER: lustre_efa.py beside this script, named as it with .py (installed: trn-lustre-efa.py).
HELPER="${SELF%.sh}.py"
INSTALLED="/usr/local/sbin/trn-lustre-efa"
# UNIT: nodes.LUSTRE_EFA_UNIT (the tests check that the two agree).
UNIT="trn-lustre-efa.service"
WATCH_UNIT="trn-lustre-efa-check.service"
UNIT_DIR="/etc/systemd/system"
LOG_FILE="/var/log/trn-ultracluster/lustre-efa.log"
IMDS="http://169.254.169.254/latest"
# The time bounds of the header (our choices; comment lines only: the EKS user data strips
# them). One lnetctl call answers at once when LNet is well: 30 s. One modprobe: 60 s. The
# probe's dd: 256 MiB in 300 s is under 1 MB/s, a broken mount. One stat: 30 s.
# install-unit's systemctl start: 150 s, more than one attempt of the unit (100 s).
# IMDS: 5 attempts, 3 s apart.
LNETCTL_TIMEOUT_S=30
MODPROBE_TIMEOUT_S=60
IO_TIMEOUT_S=300
STAT_TIMEOUT_S=30
START_TIMEOUT_S=150
IMDS_ATTEMPTS=5
IMDS_RETRY_S=3

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [lustre-efa] $*"; }
die() {
  local cause="$1"
  shift
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [lustre-efa] ERROR (${cause}): $*" >&2
  exit 1
}

# py COMMAND ARGS...: lustre_efa.py's COMMAND (its exit status: 1 for "no", 3 for TCP).
py() { python3 -I -S "${HELPER}" "$@"; }

# bounded SECONDS COMMAND...: COMMAND under timeout(1), SIGKILL 5 s after SIGTERM; its exit
# status, 124 when it timed out.
bounded() { timeout -k 5 "$@"; }

# must CAUSE SECONDS COMMAND...: COMMAND under its time bound; when it fails, die with CAUSE,
# saying whether it timed out, with its output folded on one line.
must() {
  local cause="$1" seconds="$2" out status=0
  shift 2
  out="$(bounded "${seconds}" "$@" 2>&1)" || status=$?
  if (( status == 124 )); then
    die "${cause}" "$* did not finish within ${seconds}s"
  elif (( status != 0 )); then
    die "${cause}" "$* failed${out:+: ${out//$'\n'/ }}"
  fi
}

run_lnetctl() { must lnetctl "${LNETCTL_TIMEOUT_S}" lnetctl "$@"; }
load_module() { must modules "${MODPROBE_TIMEOUT_S}" modprobe "$@"; }
# lnet_show ARGS...: `lnetctl net show ARGS` (nothing when it fails), for lustre_efa.py.
lnet_show() { bounded "${LNETCTL_TIMEOUT_S}" lnetctl net show "$@" 2> /dev/null || true; }

# The mount point of the first Lustre file system mounted on the host, or "".
lustre_mount() { py lustre-mount "${ROOT}/proc/mounts"; }

# follow PLAN: the steps of lustre_efa.py ni-plan, a line each: "run ARGS" (lnetctl ARGS,
# must succeed), "try ARGS" (lnetctl ARGS, may fail), "die CAUSE MESSAGE".
follow() {
  local verb rest
  local -a args
  while read -r -u 3 verb rest; do
    read -r -a args <<< "${rest}"
    case "${verb}" in
      run) run_lnetctl "${args[@]}" ;;
      try) bounded "${LNETCTL_TIMEOUT_S}" lnetctl "${args[@]}" > /dev/null 2>&1 || true ;;
      die) die "${args[0]}" "${rest#* }" ;;
      *) die usage "lustre_efa.py ni-plan gave: ${verb} ${rest}" ;;
    esac
  done 3<<< "$1"
}

# configure --interfaces N: modules, LNet (tcp NI, N EFA NIs, discovery, EFA preferred),
# then the lustre module, in the EKS UG's order; what to bind, add and remove (and refuse
# under a mount, cause: mounted) is lustre_efa.py's configure_plan and ni_plan.
configure() {
  local n="$1" kefalnd=no plan tcp_if status=0
  local -a chosen
  ! modinfo kefalnd > /dev/null 2>&1 || kefalnd=yes
  plan="$({ ip route show default 2> /dev/null || true; } \
          | py configure-plan "${ROOT}" "${n}" "$(uname -r)" "${kefalnd}")" \
    || die "${plan%% *}" "${plan#* }"
  tcp_if="${plan%%$'\n'*}"
  read -r -a chosen <<< "${plan#*$'\n'}"
  load_module lnet
  load_module kefalnd ipif_name="${tcp_if}"
  load_module ksocklnd
  bounded "${LNETCTL_TIMEOUT_S}" lnetctl lnet configure > /dev/null 2>&1 || status=$?
  if (( status == 124 )); then
    die lnetctl "lnetctl lnet configure did not finish within ${LNETCTL_TIMEOUT_S}s"
  elif (( status != 0 )); then
    # a rerun: LNet is configured already when `net show` answers
    bounded "${LNETCTL_TIMEOUT_S}" lnetctl net show > /dev/null 2>&1 \
      || die lnetctl "lnetctl lnet configure failed"
  fi
  follow "$(py ni-plan "${n}" "${tcp_if}" "${chosen[*]}" "$(lustre_mount)" \
            "$(lnet_show --net tcp)" "$(lnet_show --net efa)" \
            "$(bounded "${LNETCTL_TIMEOUT_S}" lnetctl udsp show 2> /dev/null || true)")"
  load_module lustre
  local waited=0 wait_s="${TRN_NI_WAIT_S:-60}" up
  until up="$(lnet_show --net efa | py up)"; (( up == n )) || (( waited >= wait_s )); do
    sleep 2
    waited=$(( waited + 2 ))
  done
  (( up == n )) \
    || die ni-not-up "${up} of ${n} EFA NIs (${chosen[*]}) are up after ${wait_s}s (lnetctl net show --net efa; dmesg | grep -i kefalnd)"
  log "LNet configured: tcp on ${tcp_if}, EFA NIs ${chosen[*]} up, discovery on, EFA preferred (udsp)"
}

# write_if_changed PATH MODE < CONTENT: write ROOT/PATH when its content differs (a temporary
# file beside it, renamed); prints "changed" when it wrote. Every step that fails is an
# install error: callers run it where set -e does not hold (csi_node's command substitution).
write_if_changed() {
  local path="${ROOT}$1" tmp
  mkdir -p "$(dirname "${path}")" || die install "cannot create the directory of $1"
  tmp="$(mktemp "${path}.XXXXXX")" || die install "cannot create a temporary file beside $1"
  if ! cat > "${tmp}" || ! chmod "$2" "${tmp}"; then
    rm -f "${tmp}"
    die install "cannot write ${tmp}"
  fi
  if [[ -f "${path}" ]] && cmp -s "${tmp}" "${path}"; then
    rm -f "${tmp}"
  else
    mv -f "${tmp}" "${path}" || { rm -f "${tmp}"; die install "cannot rename ${tmp} to $1"; }
    echo changed
  fi
}

# install_self: this script as INSTALLED and lustre_efa.py beside it (what the units run).
install_self() {
  write_if_changed "${INSTALLED}" 755 < "${SELF}" > /dev/null \
    || die install "cannot install ${SELF} as ${INSTALLED}"
  write_if_changed "${INSTALLED}.py" 644 < "${HELPER}" > /dev/null \
    || die install "cannot install ${HELPER} as ${INSTALLED}.py"
}

# systemctl_or_die ARGS...: systemctl ARGS, an install error when it fails.
systemctl_or_die() { systemctl "$@" || die install "systemctl $* failed"; }

# install-unit --interfaces N: LNet configured again at every boot, before the remote mounts
# and kubelet (the unit and its sources: lustre_efa.py boot_unit).
install_unit() {
  local n="$1" status=0 text
  install_self
  text="$(py boot-unit "${INSTALLED}" "${n}")" || die install "lustre_efa.py boot-unit failed"
  write_if_changed "${UNIT_DIR}/${UNIT}" 644 <<< "${text}" > /dev/null \
    || die install "cannot write ${UNIT_DIR}/${UNIT}"
  systemctl_or_die daemon-reload
  systemctl_or_die enable "${UNIT}"
  # LNet was configured just before: the start has nothing left to do. Bounded all the same
  # (systemctl start waits for the unit's restarts).
  bounded "${START_TIMEOUT_S}" systemctl start "${UNIT}" || status=$?
  if (( status != 0 )); then
    log "WARNING: systemctl start ${UNIT} failed (exit ${status}; 124: not within ${START_TIMEOUT_S}s; journalctl -u ${UNIT})"
  fi
  log "${UNIT} installed and enabled"
}

# install-client: the Lustre client with EFA support when kefalnd is missing, on Amazon Linux
# 2023 only (lustre_efa.py is_al2023). Whether AL2023's lustre-client package brings kefalnd
# is not verified: configure checks.
install_client() {
  if modinfo kefalnd > /dev/null 2>&1; then
    log "Lustre client with EFA support (kefalnd) present"
    return 0
  fi
  py is-al2023 "${ROOT}/etc/os-release" \
    || die install "no kefalnd, and only Amazon Linux 2023 clients are installed here"
  local n
  for n in 1 2 3; do
    if dnf install -y lustre-client; then
      log "installed lustre-client"
      return 0
    fi
    log "dnf install -y lustre-client failed (attempt ${n}/3)"
    sleep 10
  done
  die install "dnf install -y lustre-client failed 3 times"
}

# received NET: the LNet messages the NIs of NET received (lustre_efa.py received).
received() { lnet_show -v --net "$1" | py received; }

# check --mount DIR --mib M: whether the Lustre traffic of this node goes over EFA: the LNet
# counters read immediately before and after a direct-I/O read of the probe (one file of M
# MiB), and only then: whatever else the node sends or receives while the probe is written or
# waited for (metadata on tcp, other traffic) is outside the window; the verdict and its
# sources: lustre_efa.py check_verdict.
# The probe (.trn-ultracluster/lustre-efa-probe-<M>MiB) is written once per file system and
# read by every node. One node writes it: the one whose mkdir of the lock directory succeeds
# (mkdir is atomic on Lustre, as on any POSIX file system), under a temporary name, then
# renamed (a reader sees the whole file or none), so there is only one temporary file at a
# time. The others wait up to TRN_PROBE_WAIT_S (default 300) for the probe at full size, then
# read it; a lock older than that is stale (its writer died) and is taken over. The data
# repository association exports the probe to S3 like any file under its path (one 256 MiB
# object; retained with the file system's data). The I/O on the file system runs under
# timeout(1) (IO_TIMEOUT_S, STAT_TIMEOUT_S): a hung mount is a check error, not a hung node.
probe_size() { bounded "${STAT_TIMEOUT_S}" stat -c %s "$1" 2> /dev/null || echo 0; }

# write_probe PROBE LOCK MIB: with LOCK held, write PROBE, then release LOCK.
write_probe() {
  local probe="$1" lock="$2" mib="$3" tmp
  tmp="${probe%/*}/.lustre-efa-probe.$(hostname).$$"
  bounded "${IO_TIMEOUT_S}" dd if=/dev/urandom of="${tmp}" bs=1M count="${mib}" \
      iflag=fullblock oflag=direct status=none \
    || { rm -f "${tmp}"; rmdir "${lock}" 2> /dev/null || true; die check "cannot write ${mib} MiB to ${tmp} within ${IO_TIMEOUT_S}s"; }
  mv -f "${tmp}" "${probe}" || { rm -f "${tmp}"; rmdir "${lock}" 2> /dev/null || true; die check "cannot rename ${tmp} to ${probe}"; }
  rmdir "${lock}" 2> /dev/null || true
}

# ensure_probe STATE PROBE MIB: the probe at full size, written here or by another node.
ensure_probe() {
  local state="$1" probe="$2" mib="$3" lock="$2.lock" waited=0 age changed
  local wait_s="${TRN_PROBE_WAIT_S:-300}"
  if (( $(probe_size "${probe}") == mib * 1048576 )); then
    return 0
  fi
  mkdir -p "${state}" || die check "cannot create ${state}"
  until (( $(probe_size "${probe}") == mib * 1048576 )); do
    if mkdir "${lock}" 2> /dev/null; then
      write_probe "${probe}" "${lock}" "${mib}"
      return 0
    fi
    changed="$(bounded "${STAT_TIMEOUT_S}" stat -c %Y "${lock}" 2> /dev/null || date +%s)"
    age=$(( $(date +%s) - changed ))
    if (( age >= wait_s )); then
      log "taking over the probe lock ${lock} (${age}s old: its writer is gone)" >&2
      if rmdir "${lock}" 2> /dev/null && mkdir "${lock}" 2> /dev/null; then
        write_probe "${probe}" "${lock}" "${mib}"
        return 0
      fi
    fi
    (( waited < wait_s )) \
      || die check "${probe} is not there at ${mib} MiB after ${wait_s}s while another node holds ${lock}"
    sleep 2
    waited=$(( waited + 2 ))
  done
}

check() {
  local mount="$1" mib="$2" state probe
  py is-lustre-mount "${ROOT}/proc/mounts" "${mount}" \
    || die check "${mount} is not a mounted Lustre file system (/proc/mounts)"
  state="${mount}/.trn-ultracluster"
  probe="${state}/lustre-efa-probe-${mib}MiB"
  ensure_probe "${state}" "${probe}" "${mib}"
  local efa0 tcp0 efa1 tcp1 status=0 nis
  efa0="$(received efa)"
  tcp0="$(received tcp)"
  bounded "${IO_TIMEOUT_S}" dd if="${probe}" of=/dev/null bs=1M iflag=direct status=none \
    || status=$?
  efa1="$(received efa)"
  tcp1="$(received tcp)"
  (( status == 0 )) \
    || die check "cannot read ${probe} (dd exit ${status}; 124: not within ${IO_TIMEOUT_S}s)"
  nis="$(lnet_show --net efa | py interfaces | wc -l)"
  # the verdict's line; exit 0 over EFA, 3 over TCP
  py verdict "${mib}" "${mount}" "${nis}" "${efa0}" "${tcp0}" "${efa1}" "${tcp1}"
}

imds() {
  local token
  token="$(curl -sSf -m 3 -X PUT "${IMDS}/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 60")" \
    && curl -sSf -m 3 -H "X-aws-ec2-metadata-token: ${token}" "${IMDS}/meta-data/$1"
}

# instance_id: this instance's id from the instance metadata service (IMDSv2), asked up to
# IMDS_ATTEMPTS times IMDS_RETRY_S apart, each call at most 3 s (curl -m 3): at most
# 5 * (2 * 3) + 4 * 3 = 42 s (our bounds; the service may not answer for a moment at boot).
# Fails when no answer looks like an instance id.
instance_id() {
  local n id
  for (( n = 1; ; n++ )); do
    id="$(imds instance-id 2> /dev/null || true)"
    if [[ "${id}" =~ ^i-[0-9a-f]+$ ]]; then
      echo "${id}"
      return 0
    fi
    (( n < IMDS_ATTEMPTS )) || return 1
    sleep "${IMDS_RETRY_S}"
  done
}

# report --value V ...: the node's node_fsx_lustre_over_efa (Count), with the per-node
# dimensions of the node metrics exporter (node_metrics/scripts/neuron_metrics.py: ClusterName,
# InstanceId, NodeName = the host name). Never fails: a node without the metric works.
report() {
  local instance="${R_INSTANCE:-${TRN_INSTANCE_ID:-}}" node="${R_NODE:-${TRN_NODE_NAME:-}}"
  [[ -n "${instance}" ]] || instance="$(instance_id)" || instance=unknown
  [[ -n "${node}" ]] || node="$(hostname)"
  if aws cloudwatch put-metric-data --region "${R_REGION}" --namespace "${R_NAMESPACE}" \
       --metric-name "${R_METRIC}" --unit Count --value "$1" \
       --dimensions "ClusterName=${R_CLUSTER},InstanceId=${instance},NodeName=${node}"; then
    log "published ${R_METRIC}=$1 (${R_NAMESPACE}, ClusterName=${R_CLUSTER}, InstanceId=${instance}, NodeName=${node})"
  else
    log "WARNING: could not publish ${R_METRIC}=$1 to ${R_NAMESPACE} (the node role needs cloudwatch:PutMetricData there); the node goes on"
  fi
}

# conclude EVENT STATUS [OUTPUT]: what lustre_efa.py outcome decides for EVENT (the step's
# exit STATUS and OUTPUT) in mode W_MODE: report its value (none: "-"), log its line (an ERROR
# on stderr), return its exit status.
conclude() {
  local decision value status line
  decision="$(py outcome "${W_MODE}" "$1" "$2" "${UNIT}" <<< "${3:-}")" \
    || die usage "lustre_efa.py outcome $1 $2: ${decision}"
  { read -r value status; line="$(cat)"; } <<< "${decision}"
  [[ "${value}" == - ]] || report "${value}"
  if (( status == 1 )); then log "${line}" >&2; elif [[ -n "${line}" ]]; then log "${line}"; fi
  return "${status}"
}

# watch: wait for a Lustre mount (pods mount the file system through the FSx CSI driver
# after the node has joined), then check and report once (lustre_efa.py outcome). The first
# Lustre mount of the host is taken: the stack's nodes mount only the stack's file system.
# While it waits, a failed LNet unit (after its bounded restarts) is concluded at once: in
# mode required the automount (x-systemd.requires= the unit) never happens, so no mount would
# ever show up.
watch() {
  local poll="${TRN_WATCH_POLL_S:-30}" mount result status=0
  mkdir -p "$(dirname "${ROOT}${LOG_FILE}")"
  exec > >(tee -a "${ROOT}${LOG_FILE}") 2>&1
  log "waiting for a Lustre mount (/proc/mounts) to check that it goes over EFA"
  until mount="$(lustre_mount)" && [[ -n "${mount}" ]]; do
    if systemctl is-failed --quiet "${UNIT}" 2> /dev/null; then
      conclude unit-failed 0
      return
    fi
    sleep "${poll}"
  done
  result="$(check "${mount}" "${W_MIB}" 2>&1)" || status=$?
  log "${result}"
  conclude check "${status}" "${result}"
}

# install-watcher: watch as a service at every boot (the unit: lustre_efa.py watch_unit).
# --no-start: from the next boot on (HyperPod Slurm and standalone nodes, which check at
# set-up themselves). The instance id is resolved here, once, and written into the command
# (the metric's InstanceId); when the instance metadata service does not give it, the
# watcher asks again when it reports.
install_watcher() {
  local start="$1" instance="${R_INSTANCE:-${TRN_INSTANCE_ID:-}}" text
  if [[ -z "${instance}" ]] && ! instance="$(instance_id)"; then
    instance=""
    log "WARNING: no instance id from the instance metadata service after ${IMDS_ATTEMPTS} attempts; ${WATCH_UNIT} asks again when it reports"
  fi
  local -a args=(--mode "${W_MODE}" --mib "${W_MIB}" --region "${R_REGION}"
                 --namespace "${R_NAMESPACE}" --metric "${R_METRIC}" --cluster "${R_CLUSTER}")
  [[ -z "${instance}" ]] || args+=(--instance-id "${instance}")
  valid_value "${instance:-i-0}" || die usage "unexpected characters in the instance id ${instance}"
  install_self
  text="$(py watch-unit "${INSTALLED}" "${UNIT}" "${args[@]}")" \
    || die install "lustre_efa.py watch-unit failed"
  write_if_changed "${UNIT_DIR}/${WATCH_UNIT}" 644 <<< "${text}" > /dev/null \
    || die install "cannot write ${UNIT_DIR}/${WATCH_UNIT}"
  systemctl_or_die daemon-reload
  if [[ "${start}" == yes ]]; then
    systemctl_or_die enable --now "${WATCH_UNIT}"
  else
    systemctl_or_die enable "${WATCH_UNIT}"
  fi
  log "${WATCH_UNIT} installed and enabled"
}

# csi-node: the node side where pods mount the file system later (FSx CSI driver: it mounts
# <dns>@tcp:/<mount> and sets up no LNet, kubernetes-sigs/aws-fsx-csi-driver
# pkg/driver/node.go): client, LNet, the boot unit and the watcher. Exit 0 when all of it is
# in place; else lustre_efa.py outcome: 0 reported, exit 1 in mode required and 4 in mode
# preferred (callers must not say it is set up). Each step runs in a subshell whose errors
# end in one "ERROR (<cause>)" line (die), which names the cause.
csi_node() {
  local out status=0
  out="$( (install_client && configure "${C_INTERFACES}") 2>&1)" || status=$?
  echo "${out}"
  if (( status != 0 )); then
    conclude configure-failed "${status}" "${out}"
    return
  fi
  out="$( (install_unit "${C_INTERFACES}" && install_watcher yes) 2>&1)" || status=$?
  echo "${out}"
  (( status == 0 )) || conclude install-failed "${status}" "${out}"
}

# valid_value V: V is one word of letters, digits and . _ : / # - (no space: the values go
# into the watcher's ExecStart, where a space would split them).
valid_value() { [[ "$1" =~ ^[A-Za-z0-9._:/#-]+$ ]]; }

usage() { die usage "$*; usage: see the header of lustre_efa.sh"; }

main() {
  (( $# )) || usage "no command"
  local command="$1" n="" mount="" mib="" value="" start=yes
  shift
  R_REGION="" R_NAMESPACE="" R_METRIC="" R_CLUSTER="" R_INSTANCE="" R_NODE="" W_MODE="" W_MIB=""
  while (( $# )); do
    (( $# >= 2 )) || [[ "$1" == --no-start ]] || usage "$1 needs a value"
    case "$1" in
      --interfaces) n="$2" ;;
      --mount) mount="$2" ;;
      --mib) mib="$2" W_MIB="$2" ;;
      --value) value="$2" ;;
      --mode) W_MODE="$2" ;;
      --region) R_REGION="$2" ;;
      --namespace) R_NAMESPACE="$2" ;;
      --metric) R_METRIC="$2" ;;
      --cluster) R_CLUSTER="$2" ;;
      --instance-id) R_INSTANCE="$2" ;;
      --node-name) R_NODE="$2" ;;
      --no-start) start=no; shift; continue ;;
      *) usage "unknown argument $1" ;;
    esac
    shift 2
  done
  # REPORT_ARGS: the four given, each (and --instance-id, --node-name when given) one word.
  local report_ok=yes v
  for v in "${R_REGION}" "${R_NAMESPACE}" "${R_METRIC}" "${R_CLUSTER}"; do
    valid_value "${v}" || report_ok=no
  done
  for v in "${R_INSTANCE}" "${R_NODE}"; do
    [[ -z "${v}" ]] || valid_value "${v}" || report_ok=no
  done
  local number='^[1-9][0-9]*$'
  case "${command}" in
    configure|install-unit|csi-node) [[ "${n}" =~ ${number} ]] || usage "--interfaces must be a positive number" ;;&
    check) [[ -n "${mount}" && "${mib}" =~ ${number} ]] || usage "check needs --mount and --mib" ;;
    report)
      [[ "${value}" =~ ^[01]$ && "${report_ok}" == yes ]] || usage "report needs --value 0|1 and REPORT_ARGS (one word each: letters, digits, . _ : / # -)"
      report "${value}"
      return ;;
    watch|install-watcher|csi-node)
      [[ "${W_MODE}" =~ ^(preferred|required)$ && "${W_MIB}" =~ ${number} \
         && "${report_ok}" == yes ]] || usage "${command} needs --mode, --mib and REPORT_ARGS (one word each: letters, digits, . _ : / # -)" ;;
    configure|install-unit|install-client) ;;
    *) usage "unknown command ${command}" ;;
  esac
  command -v python3 > /dev/null && [[ -r "${HELPER}" ]] \
    || die os "${command} needs python3 and ${HELPER} (lustre_efa.py, shipped with this script)"
  case "${command}" in
    configure) configure "${n}" ;;
    install-unit) install_unit "${n}" ;;
    install-client) install_client ;;
    check) check "${mount}" "${mib}" ;;
    watch) watch ;;
    install-watcher) install_watcher "${start}" ;;
    csi-node) C_INTERFACES="${n}" csi_node ;;
  esac
}

main "$@"
