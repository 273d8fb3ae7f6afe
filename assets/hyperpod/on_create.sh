#!/bin/bash
# TrnUltraCluster HyperPod lifecycle script (OnCreate entry point).
#
# SageMaker HyperPod downloads the lifecycle prefix of the stack's bucket to each node and
# runs this file as root when the node is created or replaced (CreateCluster
# LifeCycleConfig.OnCreate, https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterLifeCycleConfig.html).
# It is idempotent: rerunning it on a node (or on a replacement node) gives the same result.
#
# Steps: mount FSx for Lustre at /fsx (with retries); home directories on FSx; Neuron/EFA
# environment and the Neuron compile cache on FSx; the /fsx/.trn-ultracluster/env file for
# job scripts; Enroot + Pyxis so `srun --container-image` runs the training image; start
# the Slurm daemons for this node's role once HyperPod has written slurm.conf.
#
# Log: /var/log/trn-ultracluster/lifecycle.log (and stdout, which HyperPod sends to
# CloudWatch Logs, log group /aws/sagemaker/Clusters/<cluster>/<id>).
#
# Test hooks (all optional; defaults are the real paths):
#   TRN_ROOT            prefix of every file path written or read (a fake root in tests)
#   TRN_LCS_DIR         directory of this script and its JSON inputs
#   TRN_NODE_IP         this node's IP address (default: first address of `hostname -I`)
#   TRN_MOUNT_ATTEMPTS  FSx mount attempts (default 5)
#   TRN_RETRY_DELAY_S   seconds between attempts, doubled each time (default 10)
#   TRN_SLURM_WAIT_S    seconds to wait for slurm.conf (default 300)
#   SAGEMAKER_RESOURCE_CONFIG_PATH  HyperPod's resource config

set -euo pipefail

ROOT="${TRN_ROOT:-}"
LCS_DIR="${TRN_LCS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
LOG_DIR="${ROOT}/var/log/trn-ultracluster"
LOG_FILE="${LOG_DIR}/lifecycle.log"
PARAMS="${LCS_DIR}/provisioning_parameters.json"
CLUSTER_JSON="${LCS_DIR}/trn_ultracluster.json"
RESOURCE_CONFIG="${SAGEMAKER_RESOURCE_CONFIG_PATH:-${ROOT}/opt/ml/config/resource_config.json}"
MOUNT_ATTEMPTS="${TRN_MOUNT_ATTEMPTS:-5}"
RETRY_DELAY_S="${TRN_RETRY_DELAY_S:-10}"
SLURM_WAIT_S="${TRN_SLURM_WAIT_S:-300}"

SLURM_DIR="/opt/slurm"
# Slurm's configuration on HyperPod: /opt/slurm/etc/slurm.conf (HyperPod base lifecycle
# scripts, aws-samples/awsome-distributed-training .../base-config/lifecycle_script.py).
SLURM_CONF="${SLURM_DIR}/etc/slurm.conf"
# Pinned container tooling, the versions of the AWS HyperPod base lifecycle scripts
# (aws-samples/awsome-distributed-training .../base-config/utils/install_enroot_pyxis.sh).
ENROOT_VERSION="3.4.1"
PYXIS_VERSION="v0.19.0"

mkdir -p "${LOG_DIR}"
exec > >(tee -a "${LOG_FILE}") 2>&1

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [trn-ultracluster] $*"; }
fail() { log "ERROR: $*"; exit 1; }
lcs() { python3 "${LCS_DIR}/lcs.py" --params "${PARAMS}" --resource-config "${RESOURCE_CONFIG}" \
          --cluster "${CLUSTER_JSON}" "$@"; }

# The shared-storage layout comes from the stack (trn_ultracluster/shared_storage.py, written
# into trn_ultracluster.json), so jobs on every orchestrator use the same paths.
FSX_MOUNT_POINT="$(lcs env-get TRN_FSX_MOUNT_POINT)"
NEURON_CACHE_DIR="$(lcs env-get TRN_NEURON_CACHE_DIR)"
[[ -n "${FSX_MOUNT_POINT}" && -n "${NEURON_CACHE_DIR}" ]] \
  || fail "TRN_FSX_MOUNT_POINT and TRN_NEURON_CACHE_DIR missing from ${CLUSTER_JSON}"
STATE_DIR="${FSX_MOUNT_POINT}/.trn-ultracluster"

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

node_ip() {
  if [[ -n "${TRN_NODE_IP:-}" ]]; then
    echo "${TRN_NODE_IP}"
  else
    hostname -I | awk '{print $1}'
  fi
}

is_mounted() { grep -qs " ${ROOT}${FSX_MOUNT_POINT} lustre " "${ROOT}/proc/mounts"; }

mount_fsx() {
  local dns mount_name source options
  dns="$(lcs get fsx_dns_name)"
  mount_name="$(lcs get fsx_mountname)"
  source="${dns}@tcp:/${mount_name}"
  # Mount command and fstab options: FSx for Lustre user guide, "Mounting from an Amazon
  # EC2 instance" and "Mounting Amazon FSx automatically"
  # (https://docs.aws.amazon.com/fsx/latest/LustreGuide/mount-fs-auto-mount-onreboot.html).
  options="relatime,flock"
  mkdir -p "${ROOT}${FSX_MOUNT_POINT}"
  local fstab_line="${source} ${FSX_MOUNT_POINT} lustre defaults,${options},_netdev,x-systemd.automount,x-systemd.requires=network.service 0 0"
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
    fail "could not mount FSx for Lustre ${source} at ${FSX_MOUNT_POINT} after ${MOUNT_ATTEMPTS} attempts; check that the node's security group may reach the file system on TCP 988 and 1018-1023 and that the file system is AVAILABLE"
  fi
  log "mounted FSx for Lustre at ${FSX_MOUNT_POINT}"
}

# Home directories on FSx for every login user (UID 1000-59999 in /etc/passwd), so that
# code, virtual environments and Enroot credentials are the same on every node.
setup_homes() {
  local user uid gid home registry region
  registry="$(lcs env-get TRN_ECR_REGISTRY)"
  region="$(lcs env-get TRN_REGION)"
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
      usermod -d "${target}" "${user}"
    fi
    log "home of ${user} is ${target}"
    setup_enroot_credentials "${user}" "${uid}" "${gid}" "${target}" "${registry}" "${region}"
  done < "${ROOT}/etc/passwd"
}

# Enroot reads registry credentials from $ENROOT_CONFIG_PATH/.credentials (netrc format;
# `$(...)` is evaluated at import): ECR takes user AWS and a token from
# `aws ecr get-login-password` (Enroot docs, doc/cmd/import.md, "Credentials").
# Arguments: user uid gid home registry region (registry and region of the stack's env).
setup_enroot_credentials() {
  local user="$1" uid="$2" gid="$3" home="$4" registry="$5" region="$6"
  if [[ -z "${registry}" || -z "${region}" ]]; then
    return 0
  fi
  local dir="${ROOT}${home}/.config/enroot"
  mkdir -p "${dir}"
  local line="machine ${registry} login AWS password \$(aws ecr get-login-password --region ${region})"
  touch "${dir}/.credentials"
  if ! grep -qF "machine ${registry} " "${dir}/.credentials"; then
    echo "${line}" >> "${dir}/.credentials"
  fi
  chmod 600 "${dir}/.credentials"
  chown -R "${uid}:${gid}" "${ROOT}${home}/.config"
  log "Enroot credentials for ${registry} written for ${user}"
}

# The stack's environment for every login shell and Slurm job (srun passes it into Pyxis
# containers): stack outputs plus the Neuron/EFA variables of trn_ultracluster/neuron_env.py
# (FI_PROVIDER, FI_EFA_USE_DEVICE_RDMA, NEURON_CC_FLAGS with the compile cache on FSx).
write_environment() {
  mkdir -p "${ROOT}${STATE_DIR}" "${ROOT}${NEURON_CACHE_DIR}"
  chmod 1777 "${ROOT}${NEURON_CACHE_DIR}"
  local tmp="${ROOT}${STATE_DIR}/env.tmp.$$"
  lcs env-file > "${tmp}"
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

install_enroot_pyxis() {
  local arch workdir
  if command -v enroot >/dev/null 2>&1; then
    log "Enroot already installed"
  else
    arch="$(dpkg --print-architecture)"
    workdir="$(mktemp -d)"
    local base="https://github.com/NVIDIA/enroot/releases/download/v${ENROOT_VERSION}"
    retry 5 "${RETRY_DELAY_S}" curl -fsSL -o "${workdir}/enroot.deb" \
      "${base}/enroot_${ENROOT_VERSION}-1_${arch}.deb" || fail "could not download Enroot ${ENROOT_VERSION}"
    retry 5 "${RETRY_DELAY_S}" curl -fsSL -o "${workdir}/enroot-caps.deb" \
      "${base}/enroot+caps_${ENROOT_VERSION}-1_${arch}.deb" || fail "could not download Enroot+caps ${ENROOT_VERSION}"
    retry 5 "${RETRY_DELAY_S}" apt-get install -y -o DPkg::Lock::Timeout=120 \
      squashfs-tools fuse-overlayfs squashfuse "${workdir}/enroot.deb" "${workdir}/enroot-caps.deb" \
      || fail "could not install Enroot ${ENROOT_VERSION}"
    log "installed Enroot ${ENROOT_VERSION}"
  fi
  if [[ -f "${ROOT}/usr/local/lib/slurm/spank_pyxis.so" ]]; then
    log "Pyxis already installed"
  else
    local src="${ROOT}${SLURM_DIR}/pyxis"
    rm -rf "${src}"
    retry 5 "${RETRY_DELAY_S}" git clone --depth 1 --branch "${PYXIS_VERSION}" \
      https://github.com/NVIDIA/pyxis.git "${src}" || fail "could not download Pyxis ${PYXIS_VERSION}"
    CPPFLAGS="-I ${SLURM_DIR}/include/" make -C "${src}" install || fail "could not build Pyxis ${PYXIS_VERSION}"
    log "installed Pyxis ${PYXIS_VERSION}"
  fi
  # Slurm loads Pyxis through plugstack.conf (Pyxis README, "Installation").
  local plugstack="${ROOT}${SLURM_DIR}/etc/plugstack.conf"
  local pyxis_line="required /usr/local/lib/slurm/spank_pyxis.so"
  mkdir -p "$(dirname "${plugstack}")"
  touch "${plugstack}"
  if ! grep -qF "spank_pyxis.so" "${plugstack}"; then
    echo "${pyxis_line}" >> "${plugstack}"
  fi
  # Enroot's layer cache and container data on the node's EBS volume (/opt/sagemaker),
  # per-user runtime under /run.
  local conf="${ROOT}/etc/enroot/enroot.conf"
  mkdir -p "$(dirname "${conf}")" "${ROOT}/opt/sagemaker/enroot"
  chmod 1777 "${ROOT}/opt/sagemaker/enroot"
  cat > "${conf}" <<'EOF'
# Written by the TrnUltraCluster lifecycle scripts.
ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)
ENROOT_CACHE_PATH /opt/sagemaker/enroot/cache
ENROOT_DATA_PATH /opt/sagemaker/enroot/data/user-$(id -u)
ENROOT_TEMP_PATH /opt/sagemaker/enroot/tmp
EOF
  log "configured Enroot and Pyxis"
}

# HyperPod's agents write slurm.conf (nodes and the partitions of provisioning_parameters.json)
# before or while this script runs; wait until it names a controller address.
wait_for_slurm_conf() {
  local controllers="$1" waited=0 ip
  while (( waited <= SLURM_WAIT_S )); do
    if [[ -f "${ROOT}${SLURM_CONF}" ]]; then
      for ip in ${controllers//,/ }; do
        if grep -qF "${ip}" "${ROOT}${SLURM_CONF}"; then
          return 0
        fi
      done
    fi
    sleep 5
    waited=$(( waited + 5 ))
  done
  return 1
}

# The partitions come from the stack (TRN_PARTITIONS, the worker groups' partitions in
# order, the same config that wrote provisioning_parameters.json).
check_partitions() {
  local partitions partition missing=0
  partitions="$(lcs env-get TRN_PARTITIONS)"
  if [[ -z "${partitions}" ]]; then
    log "ERROR: TRN_PARTITIONS missing from ${CLUSTER_JSON}"
    return 1
  fi
  while read -r partition; do
    [[ -z "${partition}" ]] && continue
    if grep -qE "^PartitionName=${partition}([[:space:]]|$)" "${ROOT}${SLURM_CONF}"; then
      log "Slurm partition ${partition} is configured"
    else
      log "ERROR: Slurm partition ${partition} is missing from ${SLURM_CONF}"
      missing=1
    fi
  done < <(tr ',' '\n' <<< "${partitions}")
  return "${missing}"
}

start_slurm() {
  local role="$1" controllers="$2"
  if [[ "${role}" == "controller" ]]; then
    wait_for_slurm_conf "${controllers}" \
      || fail "${SLURM_CONF} did not name the controller (${controllers}) within ${SLURM_WAIT_S}s"
    check_partitions || fail "the partitions of TRN_PARTITIONS are not all in ${SLURM_CONF}"
    systemctl enable --now slurmctld
    log "started slurmctld"
  else
    # slurmd fetches slurm.conf from the controller (configless mode, --conf-server).
    local dropin="${ROOT}/etc/systemd/system/slurmd.service.d"
    mkdir -p "${dropin}"
    printf '[Service]\nEnvironment="SLURMD_OPTIONS=--conf-server %s"\n' "${controllers}" \
      > "${dropin}/trn-ultracluster.conf"
    systemctl daemon-reload
    systemctl enable --now slurmd
    log "started slurmd (conf server ${controllers})"
  fi
}

main() {
  log "on_create start (lifecycle dir ${LCS_DIR})"
  [[ -f "${PARAMS}" ]] || fail "${PARAMS} not found; the lifecycle bucket is incomplete"
  [[ -f "${RESOURCE_CONFIG}" ]] || fail "HyperPod resource config ${RESOURCE_CONFIG} not found"
  local ip role controllers
  ip="$(node_ip)"
  role="$(lcs role "${ip}")" || fail "cannot tell the Slurm role of ${ip}"
  controllers="$(lcs controller-ips)" || fail "cannot find the controller addresses"
  log "node ${ip} is a Slurm ${role} node; controller ${controllers}"
  mount_fsx
  setup_homes
  write_environment
  install_enroot_pyxis
  start_slurm "${role}" "${controllers}"
  log "on_create done"
}

main "$@"
