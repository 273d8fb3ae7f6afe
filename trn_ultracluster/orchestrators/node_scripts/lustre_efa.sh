#!/bin/bash
# TrnUltraCluster: FSx for Lustre over EFA on a node, and never a silent fall back to TCP.
#
# One script for every orchestrator (run, not sourced): node_scripts/fsx.sh calls it on
# HyperPod Slurm and standalone nodes, hyperpod_eks/scripts/on_create.sh on HyperPod EKS
# nodes, and the EKS launch template's user data carries a copy of it (comment lines
# stripped: user data is limited to 16 KB, EC2 user guide, "Work with instance user data").
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
# not be installed (the node goes on, with 0 on the dashboard).
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
# boot unit (install-unit) is bounded as a whole: each attempt at most UNIT_ATTEMPT_S
# (TimeoutStartSec=; a oneshot service has no start timeout by default, systemd.service(5)),
# RestartSec=UNIT_RESTART_S, and StartLimitBurst=UNIT_BURST within
# StartLimitIntervalSec=UNIT_INTERVAL_S, chosen so that UNIT_BURST attempts, each with its
# restart delay, fit in the interval: the next start is refused and the unit is "failed"
# (systemd.unit(5), StartLimitIntervalSec=; restarts count, systemd.service(5), Restart=)
# at most UNIT_BURST * (UNIT_ATTEMPT_S + UNIT_RESTART_S) = 550 s after its first start, so
# what is ordered after it (kubelet, nodeadm-run, the automount, the watcher) waits at most that.

set -euo pipefail

ROOT="${TRN_ROOT:-}"
SELF="${BASH_SOURCE[0]}"
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
# install-unit's systemctl start: 150 s, more than one attempt of the unit. The unit: an
# attempt (TimeoutStartSec) is the NI wait (60 s) plus the modules and lnetctl calls, 100 s;
# RestartSec 10 s; StartLimitBurst 5: 5 attempts of at most 110 s fit in
# StartLimitIntervalSec 600 s, so the 6th start is refused. IMDS: 5 attempts, 3 s apart.
LNETCTL_TIMEOUT_S=30
MODPROBE_TIMEOUT_S=60
IO_TIMEOUT_S=300
STAT_TIMEOUT_S=30
START_TIMEOUT_S=150
UNIT_ATTEMPT_S=100
UNIT_RESTART_S=10
UNIT_BURST=5
UNIT_INTERVAL_S=600
IMDS_ATTEMPTS=5
IMDS_RETRY_S=3

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [lustre-efa] $*"; }
die() {
  local cause="$1"
  shift
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [lustre-efa] ERROR (${cause}): $*" >&2
  exit 1
}

# bounded SECONDS COMMAND...: COMMAND under timeout(1), SIGKILL 5 s after SIGTERM; its exit
# status, 124 when it timed out.
bounded() { timeout -k 5 "$@"; }

# version_ge A B: dotted version A >= B.
version_ge() { printf '%s\n%s\n' "$2" "$1" | sort -V -C; }

# os_id, os_version: ID and VERSION_ID of /etc/os-release.
# shellcheck source=/dev/null
os_id() { (. "${ROOT}/etc/os-release" && echo "${ID:-}"); }
# shellcheck source=/dev/null
os_version() { (. "${ROOT}/etc/os-release" && echo "${VERSION_ID:-}"); }

# The client OS rule of EFA-enabled file systems: "Amazon Linux 2023 (AL2023); Red Hat
# Enterprise Linux (RHEL) 9.5 or newer; Ubuntu 22.04 or newer with kernel version 6.8+"
# (UG, configure-efa-clients.html; config/facts.py FSX_EFA_CLIENT_OS).
check_os() {
  [[ -r "${ROOT}/etc/os-release" ]] || die os "cannot read /etc/os-release to check the client OS"
  local id version kernel rule="EFA clients of FSx for Lustre run Amazon Linux 2023, RHEL 9.5 or newer, or Ubuntu 22.04 or newer with kernel 6.8+ (FSx for Lustre user guide, Configuring EFA clients)"
  id="$(os_id)"
  version="$(os_version)"
  kernel="$(uname -r)"
  case "${id}" in
    amzn) [[ "${version}" == 2023* ]] || die os "Amazon Linux ${version}: ${rule}" ;;
    rhel) version_ge "${version}" 9.5 || die os "RHEL ${version}: ${rule}" ;;
    ubuntu)
      if ! version_ge "${version}" 22.04 || ! version_ge "${kernel%%-*}" 6.8; then
        die os "Ubuntu ${version} with kernel ${kernel}: ${rule}"
      fi ;;
    *) die os "${id:-an unknown OS} ${version}: ${rule}" ;;
  esac
}

# The EFA devices: /sys/class/infiniband/* whose device/driver is efa (UG, "EFA interfaces").
efa_devices() {
  local dev
  for dev in "${ROOT}"/sys/class/infiniband/*; do
    if [[ -e "${dev}/device/driver" && "$(readlink -f "${dev}/device/driver")" == */efa ]]; then
      echo "${dev##*/}"
    fi
  done | sort -V
}

# pick N DEVICE...: the devices LNet binds, from efa_devices (only the devices whose driver is
# efa, sorted with sort -V: rdmap16s0 before rdmap128s0). The EKS UG's example binds the
# first and, when there are several, the last line of `ls -1 /sys/class/infiniband` (every
# device, whatever its driver, in ls's alphabetical order). We keep its rule, the first and
# the last, on our filtered, version-sorted list: on a trn1.32xlarge that is rdmap16s0 and
# rdmap128s0 where the example's order gives rdmap112s0 and rdmap96s0 (two different EFA
# devices either way; whether the choice matters is not documented). N >= 3 spreads over the
# devices, first and last included.
pick() {
  local n="$1" i
  shift
  local devices=("$@") count="$#"
  if (( n >= count )); then
    printf '%s\n' "${devices[@]}"
  elif (( n == 1 )); then
    echo "${devices[0]}"
  else
    for (( i = 0; i < n; i++ )); do
      echo "${devices[$(( i * (count - 1) / (n - 1) ))]}"
    done
  fi
}

# The interface of the default route: LNet's tcp NI ("a TCP interface (prerequisite of EFA
# interfaces)": AWS's setup.sh README). AWS's examples (EKS UG, fsx-csi-tuning-efa) take the
# interface that holds the address of `hostname -i` instead; on an EC2 instance both are
# normally the primary network interface (our reading, not verified on every AMI).
tcp_interface() {
  ip route show default 2> /dev/null \
    | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}'
}

# The interfaces of one LNet net (`lnetctl net show --net NET` lists "N: <interface>").
net_interfaces() {
  { bounded "${LNETCTL_TIMEOUT_S}" lnetctl net show --net "$1" 2> /dev/null || true; } \
    | awk '/^[[:space:]]+[0-9]+: / {print $2}'
}

efa_up() {
  { bounded "${LNETCTL_TIMEOUT_S}" lnetctl net show --net efa 2> /dev/null || true; } \
    | grep -c 'status: up' || true
}

# (grep reads its whole input in the pipelines below: with pipefail, grep -q could leave the
# writer a SIGPIPE and turn a match into a failure.)
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

# The mount point of the first Lustre file system mounted on the host (/proc/mounts), or "".
lustre_mount() { awk '$3 == "lustre" {print $2; exit}' "${ROOT}/proc/mounts" 2> /dev/null || true; }

# refuse_under_mount WHAT: die when a Lustre file system is mounted: removing a NI under it
# cuts its traffic (reboot, or unmount first).
refuse_under_mount() {
  local mounted
  mounted="$(lustre_mount)"
  [[ -z "${mounted}" ]] \
    || die mounted "LNet would have to remove $1 while Lustre is mounted at ${mounted} (/proc/mounts): removing a NI under a mounted file system cuts its traffic; unmount it (or reboot) and rerun"
}

# configure --interfaces N: modules, LNet (tcp NI, N EFA NIs, discovery, EFA preferred),
# then the lustre module, in the EKS UG's order. Idempotent: a NI already there is kept. A NI
# that would have to go (a tcp NI on another interface, an EFA NI not chosen) is removed only
# while no Lustre file system is mounted; under a mount, configure fails (cause: mounted).
configure() {
  local n="$1" tcp_if dev
  local -a devices chosen current
  check_os
  mapfile -t devices < <(efa_devices)
  (( ${#devices[@]} > 0 )) \
    || die no-efa-device "no EFA device under /sys/class/infiniband (no device whose driver is efa): the instance type has no EFA, the launch template gave it no EFA interface, or the EFA driver is not loaded (modinfo efa)"
  (( ${#devices[@]} >= n )) \
    || die no-efa-device "${#devices[@]} EFA device(s) (${devices[*]}), ${n} wanted for LNet"
  # AWS's set-up treats "modinfo kefalnd succeeds" as "this Lustre client supports EFA"
  # (aws-parallelcluster-cookbook pcluster-diag core/constants.py EFA_LND_KERNEL_MODULE).
  modinfo kefalnd > /dev/null 2>&1 \
    || die no-kefalnd "no kefalnd kernel module (modinfo kefalnd) for kernel $(uname -r): the Lustre client installed has no EFA support; install the FSx Lustre client for this kernel (FSx for Lustre user guide, Installing the Lustre client)"
  tcp_if="$(tcp_interface)"
  [[ -n "${tcp_if}" ]] || die network "no default route (ip route show default): LNet needs its tcp NI on the node's primary interface"
  mapfile -t chosen < <(pick "${n}" "${devices[@]}")
  load_module lnet
  load_module kefalnd ipif_name="${tcp_if}"
  load_module ksocklnd
  local status=0
  bounded "${LNETCTL_TIMEOUT_S}" lnetctl lnet configure > /dev/null 2>&1 || status=$?
  if (( status == 124 )); then
    die lnetctl "lnetctl lnet configure did not finish within ${LNETCTL_TIMEOUT_S}s"
  elif (( status != 0 )); then
    # a rerun: LNet is configured already when `net show` answers
    bounded "${LNETCTL_TIMEOUT_S}" lnetctl net show > /dev/null 2>&1 \
      || die lnetctl "lnetctl lnet configure failed"
  fi
  if ! net_interfaces tcp | grep -x "${tcp_if}" > /dev/null; then
    local old_tcp
    old_tcp="$(net_interfaces tcp | paste -sd ' ')"
    [[ -z "${old_tcp}" ]] || refuse_under_mount "the tcp NI on ${old_tcp} (the default route is on ${tcp_if})"
    bounded "${LNETCTL_TIMEOUT_S}" lnetctl net del --net tcp > /dev/null 2>&1 || true
    run_lnetctl net add --net tcp --if "${tcp_if}"
  fi
  mapfile -t current < <(net_interfaces efa)
  for dev in "${current[@]}"; do
    if ! printf '%s\n' "${chosen[@]}" | grep -x "${dev}" > /dev/null; then
      refuse_under_mount "the EFA NI on ${dev} (${n} wanted: ${chosen[*]})"
      run_lnetctl net del --net efa --if "${dev}"
    fi
  done
  for dev in "${chosen[@]}"; do
    if ! printf '%s\n' "${current[@]}" | grep -x "${dev}" > /dev/null; then
      run_lnetctl net add --net efa --if "${dev}" --peer-credits 32
    fi
  done
  run_lnetctl set discovery 1
  # The format of `lnetctl udsp show` ("src: efa") is not verified on a node.
  if ! { bounded "${LNETCTL_TIMEOUT_S}" lnetctl udsp show 2> /dev/null || true; } \
       | grep 'src: efa' > /dev/null; then
    run_lnetctl udsp add --src efa --priority 0
  fi
  load_module lustre
  local waited=0 wait_s="${TRN_NI_WAIT_S:-60}" up
  until up="$(efa_up)"; (( up == n )) || (( waited >= wait_s )); do
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

install_self() {
  write_if_changed "${INSTALLED}" 755 < "${SELF}" > /dev/null \
    || die install "cannot install ${SELF} as ${INSTALLED}"
}

# systemctl_or_die ARGS...: systemctl ARGS, an install error when it fails.
systemctl_or_die() { systemctl "$@" || die install "systemctl $* failed"; }

# install-unit --interfaces N: LNet configured again at every boot, before the remote mounts.
# AWS's own unit (configure-efa-fsx-lustre-client.service) is a oneshot after
# network-online.target; ADT #1204 found it losing a race at boot and staying failed, and
# added Restart=on-failure with a start limit. Ours reads no instance metadata (the IMDS
# race of #1204 cannot happen) and keeps the restarts for an EFA device or route that comes
# up late, within the bounds of the header (TimeoutStartSec=, RestartSec=, StartLimitBurst=,
# StartLimitIntervalSec=): the unit ends "active" or "failed", it never restarts forever.
# remote-fs-pre.target is pulled in by the units ordered before it (systemd commit
# 627506f "units: there is no point in pulling in ordering 'provides'-style targets";
# systemd.special(7)).
# Before=kubelet.service nodeadm-run.service: on the Kubernetes nodes the mount comes from the
# FSx CSI driver once kubelet runs pods, not from fstab, so after a reboot LNet must be
# configured before kubelet starts (nodeadm-run.service starts it on the EKS AL2023 AMIs).
# Before=/After= only order units that are both started; they pull nothing in, and an
# ordering on a unit that does not exist has no effect (systemd.unit(5), Before=/After=:
# ordering is independent of the requirement dependencies), so the same unit is harmless
# on the Slurm and standalone nodes, which have neither.
install_unit() {
  local n="$1" status=0
  install_self
  write_if_changed "${UNIT_DIR}/${UNIT}" 644 > /dev/null <<EOF || die install "cannot write ${UNIT_DIR}/${UNIT}"
# Written by the TrnUltraCluster node scripts (lustre_efa.sh install-unit).
[Unit]
Description=TrnUltraCluster: LNet over EFA for FSx for Lustre
Documentation=https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html
Wants=network-online.target remote-fs-pre.target
After=network-online.target
Before=remote-fs-pre.target
Before=kubelet.service nodeadm-run.service
StartLimitIntervalSec=${UNIT_INTERVAL_S}s
StartLimitBurst=${UNIT_BURST}

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=${INSTALLED} configure --interfaces ${n}
TimeoutStartSec=${UNIT_ATTEMPT_S}s
Restart=on-failure
RestartSec=${UNIT_RESTART_S}s

[Install]
WantedBy=multi-user.target
EOF
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

# install-client: the Lustre client with EFA support when kefalnd is missing. Amazon Linux
# 2023 only: "sudo dnf install -y lustre-client" (UG, "Installing the Lustre client", AL2023;
# the EKS AL2023 AMIs have no Lustre client: awslabs/amazon-eks-ami PR #2696, closed).
# Whether AL2023's lustre-client package brings kefalnd is not verified: configure checks.
install_client() {
  if modinfo kefalnd > /dev/null 2>&1; then
    log "Lustre client with EFA support (kefalnd) present"
    return 0
  fi
  [[ "$(os_id)" == amzn && "$(os_version)" == 2023* ]] \
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

# received NET: the LNet messages the NIs of NET received, summed over its NIs (one
# statistics block per NI, as ADT's mount_fsx.sh @11e237a sums them: a single-NI parse
# breaks on trn1's two): recv_count minus drop_count (`lnetctl net show -v` prints both per
# NI; a dropped message carried nothing to the client).
received() {
  { bounded "${LNETCTL_TIMEOUT_S}" lnetctl net show -v --net "$1" 2> /dev/null || true; } \
    | awk '/recv_count:/ {sum += $2} /drop_count:/ {sum -= $2} END {print sum + 0}'
}

# check --mount DIR --mib M: whether the Lustre traffic of this node goes over EFA. An efa NI
# that is configured does not prove it (ADT #989: "Lustre silently falls back to ENA/TCP with
# no errors"); the counters do. The probe (one file of M MiB) is read with direct I/O, bs=1M,
# so that each MiB comes from the storage servers in at least one bulk transfer, which reaches
# the client as a received LNet message on the NI that carried it. The counters are read
# immediately before and after that read, and only then: whatever else the node sends or
# receives while the probe is written or waited for (metadata on tcp, other traffic) is
# outside the window. Over EFA the EFA NIs must receive at least M/2 messages in the window
# and more than the tcp NI ("Metadata RPCs and pings ride tcp by design": PR #7572).
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
  grep -qs " ${mount} lustre " "${ROOT}/proc/mounts" \
    || die check "${mount} is not a mounted Lustre file system (/proc/mounts)"
  state="${mount}/.trn-ultracluster"
  probe="${state}/lustre-efa-probe-${mib}MiB"
  ensure_probe "${state}" "${probe}" "${mib}"
  local efa0 tcp0 efa1 tcp1 status=0
  efa0="$(received efa)"
  tcp0="$(received tcp)"
  bounded "${IO_TIMEOUT_S}" dd if="${probe}" of=/dev/null bs=1M iflag=direct status=none \
    || status=$?
  efa1="$(received efa)"
  tcp1="$(received tcp)"
  (( status == 0 )) \
    || die check "cannot read ${probe} (dd exit ${status}; 124: not within ${IO_TIMEOUT_S}s)"
  local efa=$(( efa1 - efa0 )) tcp=$(( tcp1 - tcp0 )) nis
  nis="$(net_interfaces efa | wc -l)"
  local detail="efa +${efa}, tcp +${tcp} LNet messages received while reading ${mib} MiB with direct I/O from ${mount}, ${nis} EFA NI(s)"
  if (( efa * 2 >= mib && efa > tcp )); then
    echo "lustre-efa check: efa (${detail})"
    return 0
  fi
  echo "lustre-efa check: tcp (${detail})"
  return 3
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

# watch: wait for a Lustre mount (pods mount the file system through the FSx CSI driver
# after the node has joined), then check and report once. The first Lustre mount of the
# host is taken: the stack's nodes mount only the stack's file system. A node that joined
# its cluster cannot be failed from here: required + TCP is an ERROR in the log and this
# unit, and 0 on the dashboard. While it waits, a failed LNet unit (after its bounded
# restarts) is reported at once: the traffic cannot go over EFA, and in mode required the
# automount (x-systemd.requires= the unit) never happens, so no mount would ever show up. A
# check that fails (exit 1: it could not tell, e.g. the probe could not be written) is an
# ERROR, not a verdict: nothing is reported.
watch() {
  local poll="${TRN_WATCH_POLL_S:-30}" mount result status=0
  mkdir -p "$(dirname "${ROOT}${LOG_FILE}")"
  exec > >(tee -a "${ROOT}${LOG_FILE}") 2>&1
  log "waiting for a Lustre mount (/proc/mounts) to check that it goes over EFA"
  until mount="$(lustre_mount)" && [[ -n "${mount}" ]]; do
    if systemctl is-failed --quiet "${UNIT}" 2> /dev/null; then
      report 0
      if [[ "${W_MODE}" == required ]]; then
        log "ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and ${UNIT} failed, so LNet is not configured for EFA and, where fstab requires the unit, the file system is not mounted (journalctl -u ${UNIT}). $(tcp_causes)"
        return 1
      fi
      log "WARNING: ${UNIT} failed (journalctl -u ${UNIT}): LNet is not configured for EFA and Lustre goes over TCP on this node (fsx.efa: auto)"
      return 0
    fi
    sleep "${poll}"
  done
  result="$(check "${mount}" "${W_MIB}" 2>&1)" || status=$?
  log "${result}"
  if (( status == 0 )); then
    report 1
    return 0
  fi
  if (( status != 3 )); then
    log "ERROR: the check of FSx for Lustre over EFA failed (${result##*ERROR }); nothing reported"
    return 1
  fi
  report 0
  if [[ "${W_MODE}" == required ]]; then
    log "ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and this node's Lustre traffic does not go over EFA. $(tcp_causes)"
    return 1
  fi
  log "WARNING: this node's Lustre traffic does not go over EFA (fsx.efa: auto); it goes on over TCP. $(tcp_causes)"
}

tcp_causes() {
  echo "Check: the file system is EFA-enabled; its security group and the nodes' allow all traffic to and from each other by security group id (0.0.0.0/0 rules do not count for EFA); nodes and file system share the Availability Zone and /16; dmesg | grep -i kefalnd"
}

# install-watcher: watch as a service at every boot (Type=exec, systemd 240+: the wait does
# not hold up multi-user.target). --no-start: from the next boot on (HyperPod Slurm and
# standalone nodes, which check at set-up themselves). The instance id is resolved here,
# once, and written into the command (the metric's InstanceId); when the instance metadata
# service does not give it, the watcher asks again when it reports.
install_watcher() {
  local start="$1" instance="${R_INSTANCE:-${TRN_INSTANCE_ID:-}}" args
  if [[ -z "${instance}" ]] && ! instance="$(instance_id)"; then
    instance=""
    log "WARNING: no instance id from the instance metadata service after ${IMDS_ATTEMPTS} attempts; ${WATCH_UNIT} asks again when it reports"
  fi
  args="--mode ${W_MODE} --mib ${W_MIB} --region ${R_REGION} --namespace ${R_NAMESPACE} --metric ${R_METRIC} --cluster ${R_CLUSTER}${instance:+ --instance-id ${instance}}"
  valid_value "${instance:-i-0}" || die usage "unexpected characters in the instance id ${instance}"
  install_self
  write_if_changed "${UNIT_DIR}/${WATCH_UNIT}" 644 > /dev/null <<EOF || die install "cannot write ${UNIT_DIR}/${WATCH_UNIT}"
# Written by the TrnUltraCluster node scripts (lustre_efa.sh install-watcher).
[Unit]
Description=TrnUltraCluster: check that FSx for Lustre traffic goes over EFA once mounted
Wants=network-online.target
After=network-online.target ${UNIT}

[Service]
Type=exec
ExecStart=${INSTALLED} watch ${args}

[Install]
WantedBy=multi-user.target
EOF
  systemctl_or_die daemon-reload
  if [[ "${start}" == yes ]]; then
    systemctl_or_die enable --now "${WATCH_UNIT}"
  else
    systemctl_or_die enable "${WATCH_UNIT}"
  fi
  log "${WATCH_UNIT} installed and enabled"
}

# cause_of OUTPUT DEFAULT: the "(<cause>): <message>" of the last ERROR line of OUTPUT, or
# DEFAULT when it has none.
cause_of() {
  if [[ "$1" == *"ERROR ("* ]]; then
    echo "${1##*ERROR }"
  else
    echo "$2"
  fi
}

# csi-node: the node side where pods mount the file system later (FSx CSI driver: it mounts
# <dns>@tcp:/<mount> and sets up no LNet, kubernetes-sigs/aws-fsx-csi-driver
# pkg/driver/node.go): client, LNet, the boot unit and the watcher. Exit 0 when all of it is
# in place; when LNet cannot be configured for EFA, or the boot unit or the watcher cannot be
# installed (after reporting 0), exit 1 in mode required and 4 in mode preferred (the node
# goes on over TCP, or unchecked: callers must not say it is set up). Each step runs in a
# subshell whose errors end in one "ERROR (<cause>)" line (die), which names the cause here.
csi_node() {
  local out status=0 cause what
  out="$( (install_client && configure "${C_INTERFACES}") 2>&1)" || status=$?
  echo "${out}"
  what="LNet could not be configured for EFA"
  cause="$(cause_of "${out}" "(configure): exit ${status} without a named cause (above)")"
  if (( status == 0 )); then
    out="$( (install_unit "${C_INTERFACES}" && install_watcher yes) 2>&1)" || status=$?
    echo "${out}"
    if (( status == 0 )); then
      return 0
    fi
    what="LNet is configured for EFA, but its boot unit or the watcher could not be installed, so the next boot and the check are not covered"
    cause="$(cause_of "${out}" "(install): exit ${status} without a named cause (above)")"
  fi
  report 0
  if [[ "${W_MODE}" == required ]]; then
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [lustre-efa] ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and ${what}: ${cause}" >&2
    return 1
  fi
  log "WARNING: ${what} (${cause}); Lustre is not known to go over EFA on this node, which goes on (fsx.efa: auto)"
  return 4
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
  case "${command}" in
    configure|install-unit)
      [[ "${n}" =~ ^[1-9][0-9]*$ ]] || usage "--interfaces must be a positive number"
      if [[ "${command}" == configure ]]; then configure "${n}"; else install_unit "${n}"; fi ;;
    install-client) install_client ;;
    check)
      [[ -n "${mount}" && "${mib}" =~ ^[1-9][0-9]*$ ]] || usage "check needs --mount and --mib"
      check "${mount}" "${mib}" ;;
    report)
      [[ "${value}" =~ ^[01]$ && "${report_ok}" == yes ]] || usage "report needs --value 0|1 and REPORT_ARGS (one word each: letters, digits, . _ : / # -)"
      report "${value}" ;;
    watch|install-watcher|csi-node)
      [[ "${W_MODE}" =~ ^(preferred|required)$ && "${W_MIB}" =~ ^[1-9][0-9]*$ \
         && "${report_ok}" == yes ]] || usage "${command} needs --mode, --mib and REPORT_ARGS (one word each: letters, digits, . _ : / # -)"
      case "${command}" in
        watch) watch ;;
        install-watcher) install_watcher "${start}" ;;
        csi-node)
          [[ "${n}" =~ ^[1-9][0-9]*$ ]] || usage "--interfaces must be a positive number"
          C_INTERFACES="${n}"
          csi_node ;;
      esac ;;
    *) usage "unknown command ${command}" ;;
  esac
}

main "$@"
