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
# cluster), mount it at /fsx (over EFA when fsx.efa says so, checked after the mount:
# fsx.sh setup_lustre_efa / check_lustre_efa); home directories on FSx; the /fsx/.trn-ultracluster/env file
# (stack outputs and the Neuron/EFA environment) and the Neuron compile cache on FSx; on a
# worker of a pool other than the main one, the node's own job environment (its type's
# NeuronCores, EFA interfaces, Neuron stack and image: pool_env.py, beside this file) in
# /etc/trn-ultracluster/pool.env, and FSx over TCP on a pool without EFA; Enroot
# credentials for the stack's ECR registry. It starts no Slurm daemon; on the controller it
# reports (never fails on) whether slurmctld serves the stack's partitions and, when the
# stack has teams (slurm_teams.json beside this file), makes Slurm enforce them
# (slurm_teams.sh, slurm_teams.py: settings included in slurm.conf, then accounts, limits
# and QOS), failing the node when it cannot: a cluster whose teams nothing enforces is not what was deployed.
# docs/hyperpod.md compares each step with AWS's base-config lifecycle scripts.
#
# Log: /var/log/trn-ultracluster/lifecycle.log (and stdout, which HyperPod sends to
# CloudWatch Logs, log group /aws/sagemaker/Clusters/<cluster>/<id>).
#
# The FSx steps (find the file system by its tag, wait for it and its S3 link, LNet over EFA,
# mount it, check that it goes over EFA, write the job environment) are the shared node
# scripts' fsx.sh, uploaded beside this file with lcs.py, lustre_efa.sh and lustre_efa.py
# (trn_ultracluster/orchestrators/node_scripts/); the standalone nodes run the same steps.
#
# Test hooks (all optional; defaults are the real paths and times; fsx.sh lists its own):
#   TRN_ROOT             prefix of every file path written or read (a fake root in tests)
#   TRN_LCS_DIR          directory of this script and its JSON input
#   TRN_NODE_IP          this node's IP address (default: `lcs.py node-ip`)
#   TRN_SLURM_CHECK_S    seconds the controller waits for its partitions (default 60)
#   TRN_ACCOUNTING_WAIT_S seconds the controller waits for slurmdbd and slurmctld (default 300)
#   TRN_FAIL_LOG_WAIT_S  seconds to wait before exiting on an error (default 60)
#   SAGEMAKER_RESOURCE_CONFIG_PATH  HyperPod's resource config

set -euo pipefail

LCS_DIR="${TRN_LCS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
# shellcheck source-path=SCRIPTDIR/../../node_scripts source=fsx.sh
source "${LCS_DIR}/fsx.sh"
LOG_DIR="${ROOT}/var/log/trn-ultracluster"
LOG_FILE="${LOG_DIR}/lifecycle.log"
CLUSTER_JSON="${LCS_DIR}/trn_ultracluster.json"
# The node's own job environment (trn_ultracluster/contracts/hyperpod.py NODE_ENV_FILE).
NODE_ENV_FILE="/etc/trn-ultracluster/pool.env"
RESOURCE_CONFIG="${SAGEMAKER_RESOURCE_CONFIG_PATH:-${ROOT}/opt/ml/config/resource_config.json}"
SLURM_CHECK_S="${TRN_SLURM_CHECK_S:-60}"
ACCOUNTING_WAIT_S="${TRN_ACCOUNTING_WAIT_S:-300}"
# The stack's teams (trn_ultracluster/contracts/hyperpod.py SLURM_TEAMS_FILE), only with teams.
TEAMS_JSON="${LCS_DIR}/slurm_teams.json"
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
pools() { python3 "${LCS_DIR}/pool_env.py" --cluster "${CLUSTER_JSON}" "$@"; }

[[ -f "${CLUSTER_JSON}" ]] || fail "${CLUSTER_JSON} not found; the lifecycle bucket is incomplete"
read_storage_layout

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


# write_node_environment GROUP: this node's own job environment (NODE_ENV_FILE, on its
# local disk): what its pool's environment changes in the shared one (pool_env.py env;
# only a comment on the main pool's nodes and on the controller and login nodes, GROUP "").
# Job scripts source it after the shared file, and so do login shells (the profile line).
write_node_environment() {
  local file="${ROOT}${NODE_ENV_FILE}" tmp
  mkdir -p "$(dirname "${file}")"
  tmp="$(mktemp "${file}.XXXXXX")"
  pools env "$1" > "${tmp}" || fail "cannot write this node's pool environment (pool_env.py's error is above)"
  chmod 644 "${tmp}"
  mv -f "${tmp}" "${file}"
  echo "if [ -r ${NODE_ENV_FILE} ]; then . ${NODE_ENV_FILE}; fi" >> "${ROOT}/etc/profile.d/trn-ultracluster.sh"
  log "wrote ${NODE_ENV_FILE}"
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
  local ip role cluster_name
  ip="${TRN_NODE_IP:-$(lcs node-ip)}" || fail "cannot find this node's address"
  if ! role="$(lcs role "${ip}")"; then
    log "WARNING: ${ip} is in no instance group of ${RESOURCE_CONFIG}; skipping the controller checks"
    role="unknown"
  fi
  log "node ${ip} is a Slurm ${role} node"
  # Only the workers (role compute) have EFA: the controller and login nodes mount over TCP
  # as in mode off. A node whose role is unknown keeps fsx.efa (in mode required it fails
  # loudly rather than going over TCP unnoticed).
  if [[ "${role}" == controller || "${role}" == login ]]; then
    lustre_efa_off_for "${role}"
  fi
  # A worker's pool: a pool without EFA (a CPU pool) mounts over TCP too.
  local group="" pool="-" efa=true found
  if [[ "${role}" == compute ]]; then
    group="$(lcs group "${ip}")" || fail "cannot find this node's instance group (lcs.py's error is above)"
    found="$(pools pool "${group}")" || fail "cannot read the pools of the stack's trn_ultracluster.json (pool_env.py's error is above)"
    read -r pool efa <<< "${found}"
    if [[ "${pool}" != - ]]; then
      log "node ${ip} is in instance group ${group} of pool ${pool}"
    fi
    if [[ "${efa}" == false && "${EFA_MODE}" != off ]]; then
      log "FSx for Lustre over EFA (fsx.efa: ${EFA_MODE}) needs an EFA device: this node of pool ${pool} has none and mounts over TCP"
      EFA_MODE=off
    fi
  fi
  # LNet over EFA first (fsx.efa; nothing in mode off): a node that cannot have it fails
  # before it waits for the file system.
  env_get cluster_name=CLUSTER_NAME
  setup_lustre_efa "${cluster_name}"
  wait_for_file_system
  wait_for_link
  mount_fsx
  check_lustre_efa
  setup_homes
  write_environment
  write_node_environment "${group}"
  check_container_tools
  bash "${LCS_DIR}/neuron_metrics.sh" --region "${REGION}" --cluster "${cluster_name}" --role "${role}" --jobs-dir "${STATE_DIR}/jobs" || log "WARNING: node metrics are not set up (see above); the node works without them"
  if [[ "${role}" == "controller" ]]; then
    check_slurm_partitions
    if [[ -f "${TEAMS_JSON}" ]]; then
      # The teams' steps (shared with `trn-ultracluster teams --apply`), uploaded with teams.
      # shellcheck source-path=SCRIPTDIR source=slurm_teams.sh
      source "${LCS_DIR}/slurm_teams.sh"
      setup_slurm_teams
    fi
  fi
  log "on_init_complete done"
}

main "$@"
