#!/bin/bash
# TrnUltraCluster standalone node setup.
#
# The user data (user_data.sh) runs this as root at an instance's first boot, beside the
# shared node scripts (fsx.sh, lcs.py, lustre_efa.sh, lustre_efa.py) and the stack's trn_ultracluster.json. It is
# idempotent: `sudo bash /opt/trn-ultracluster/node/node_setup.sh` on a node gives the same
# result again. Steps:
#
# The nodes of a Trainium pool boot a Neuron DLAMI (Ubuntu); a CPU pool's boot Amazon Linux
# 2023 (orchestrators/standalone/ami.py). Where they differ (the Lustre client, Docker), the
# steps follow /etc/os-release's ID: `amzn` is Amazon Linux, anything else Ubuntu.
#
# 1. the Lustre client, when the AMI lacks it (FSx for Lustre user guide, "Installing the
#    Lustre client", Ubuntu and Amazon Linux 2023:
#    https://docs.aws.amazon.com/fsx/latest/LustreGuide/install-lustre-client.html);
# 2. the stack's FSx for Lustre file system, found by its tag, waited for (with its S3 link's
#    metadata import) and mounted at /fsx with retries and an fstab entry (with fsx.efa:
#    LNet over EFA first, its boot unit, and after the mount the check that the traffic
#    goes over EFA, lustre_efa.sh through fsx.sh); the job
#    environment file /fsx/.trn-ultracluster/env (the Neuron/EFA variables, the compile cache
#    on FSx) and /etc/profile.d: the shared steps of fsx.sh, the same as on HyperPod nodes;
# 3. the runtime of the jobs (trn_ultracluster.json node.runtime): `container` logs Docker
#    in to the stack's ECR registry and pulls the pool's training image (installing Docker
#    first if the AMI has none); `dlami-venv` unpacks the training program and checks that the
#    DLAMI's virtual environment imports it;
# 4. the node's Neuron and EFA metrics to CloudWatch (the node metrics scripts of HyperPod
#    Slurm nodes, neuron_metrics.sh --role compute; never fails the node);
# 5. the ready marker the job CLI checks before it starts a job on this node.
#
# Log: /var/log/trn-ultracluster/node-setup.log (node.log), sent to the stack's log group
# (node.log_group, stream <instance id>/node-setup) when the script ends, also on failure.
#
# --boot (the user data passes it; a rerun by hand does not): this is the instance's first
# boot. Then, in mode required (fsx.efa: true) only, a failed FSx-for-Lustre-over-EFA step
# (LNet, the file system not EFA-enabled, or the check after the mount: fsx.sh efa_failed)
# does not leave the node up without its ready marker: after the metric 0 (fsx.sh) and the
# log shipped to CloudWatch Logs, the cause also goes to the console (`aws ec2
# get-console-output`) and the node powers off, so that its Auto Scaling group (cluster.py:
# one AWS::AutoScaling::AutoScalingGroup per subnet, EC2 health checks, the default)
# replaces it: "Auto Scaling marks an instance as unhealthy if its instance status is any
# value other than running" and replaces unhealthy instances (EC2 Auto Scaling user guide,
# "Health checks for instances in an Auto Scaling group",
# https://docs.aws.amazon.com/autoscaling/ec2/userguide/healthcheck.html); "By default,
# when you initiate a shutdown from an Amazon EBS backed instance (using a command such as
# shutdown or poweroff), the instance stops" (EC2 user guide, "Change instance initiated
# shutdown behavior"; the stack's launch template sets no InstanceInitiatedShutdownBehavior).
# Any other failure, and every failure in mode preferred, leaves the node up, not ready.
#
# Test hooks (all optional; fsx.sh lists its own):
#   TRN_ROOT          prefix of every file path written or read (a fake root in tests)
#   TRN_NODE_DIR      directory of this script, fsx.sh, lcs.py, lustre_efa.sh, lustre_efa.py and trn_ultracluster.json
#   TRN_INSTANCE_ID   this instance's id (default: the instance metadata service)
#   TRN_AMI_ID        the AMI this instance booted from (default: the instance metadata service)
#   TRN_PULL_ATTEMPTS attempts of the ECR login and the image pull (default 5)
#   TRN_CONSOLE       the console (default /dev/console)
#   TRN_POWEROFF      a file: "poweroff" is appended to it instead of powering off

set -euo pipefail

NODE_DIR="${TRN_NODE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
# shellcheck source-path=SCRIPTDIR/../../node_scripts source=fsx.sh
source "${NODE_DIR}/fsx.sh"
CLUSTER_JSON="${NODE_DIR}/trn_ultracluster.json"
PULL_ATTEMPTS="${TRN_PULL_ATTEMPTS:-5}"
IMDS="http://169.254.169.254/latest"
CONSOLE="${TRN_CONSOLE:-/dev/console}"
BOOT=""
if [[ "${1:-}" == --boot ]]; then
  BOOT=1
fi
export DEBIAN_FRONTEND=noninteractive  # apt-get asks nothing

lcs() { python3 "${NODE_DIR}/lcs.py" --cluster "${CLUSTER_JSON}" "$@"; }
setting() { lcs get node "$1"; }

if [[ ! -f "${CLUSTER_JSON}" ]]; then
  echo "${CLUSTER_JSON} not found: the user data did not finish" >&2
  exit 1
fi
LOG_FILE="${ROOT}$(setting log)"
mkdir -p "$(dirname "${LOG_FILE}")"
exec > >(tee -a "${LOG_FILE}") 2>&1

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [trn-ultracluster] $*"; }

# imds CATEGORY: one instance metadata category (instance-id, ami-id), with an IMDSv2 session
# token (the launch template requires IMDSv2; EC2 user guide, "Use the Instance Metadata
# Service to access instance metadata",
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html, and
# "Instance metadata categories" for the names).
imds() {
  local token
  token="$(curl -sSf -X PUT "${IMDS}/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 300")" \
    && curl -sSf -H "X-aws-ec2-metadata-token: ${token}" "${IMDS}/meta-data/$1"
}
instance_id() { if [[ -n "${TRN_INSTANCE_ID:-}" ]]; then echo "${TRN_INSTANCE_ID}"; else imds instance-id; fi; }
ami_id() { if [[ -n "${TRN_AMI_ID:-}" ]]; then echo "${TRN_AMI_ID}"; else imds ami-id; fi; }

# Send the log to the stack's log group (PutLogEvents; the newest lines that fit one batch,
# lcs.py log-events). Never fails the script: a node without its log in CloudWatch still has
# it in LOG_FILE.
ship_log() {
  local group stream events
  group="$(setting log_group)" || return 0
  [[ -n "${group}" ]] || return 0
  stream="$(instance_id || echo unknown-instance)/node-setup"
  events="$(mktemp)"
  lcs log-events "${LOG_FILE}" > "${events}" || return 0
  aws logs create-log-stream --region "${REGION}" --log-group-name "${group}" \
    --log-stream-name "${stream}" > /dev/null 2>&1 || true
  if ! aws logs put-log-events --region "${REGION}" --log-group-name "${group}" \
       --log-stream-name "${stream}" --log-events "file://${events}" > /dev/null; then
    echo "WARNING: could not send this log to CloudWatch Logs group ${group}" >&2
  fi
  rm -f "${events}"
}

# power_off: the node stops (see the header); TRN_POWEROFF records it instead.
power_off() {
  sync
  if [[ -n "${TRN_POWEROFF:-}" ]]; then
    echo poweroff >> "${TRN_POWEROFF}"
  else
    systemctl poweroff || shutdown -h now
  fi
}

fail() {
  log "ERROR: $*"
  if [[ -n "${BOOT}" && "${EFA_MODE}" == required ]] && efa_failed; then
    log "FSx for Lustre over EFA is required (fsx.efa: true) and this node's set-up failed on it at its first boot: the node powers off, so that its Auto Scaling group replaces it"
    if [[ -w "${CONSOLE}" ]]; then
      echo "trn-ultracluster: ERROR: $* (the node powers off)" > "${CONSOLE}" 2> /dev/null || true
    fi
    sync
    ship_log
    power_off
    exit 1
  fi
  sync
  ship_log
  exit 1
}

# os_id: ID of /etc/os-release (`amzn` on Amazon Linux, `ubuntu` on Ubuntu).
# shellcheck source=/dev/null
os_id() { (. "${ROOT}/etc/os-release" && echo "${ID:-}"); }

# 1. The Lustre client: mount.lustre and the kernel modules for the running kernel. On Amazon
# Linux 2023 from its own repository ("sudo dnf install -y lustre-client", the guide's Amazon
# Linux 2023 section); on Ubuntu from the AWS Lustre client repository for this release. (The
# guide's Ubuntu sections name the focal and jammy repositories; one for this release,
# VERSION_CODENAME, is not verified.)
install_lustre_client() {
  if command -v mount.lustre > /dev/null 2>&1; then
    log "Lustre client present"
    return 0
  fi
  if [[ "$(os_id)" == amzn ]]; then
    log "installing the Lustre client from the Amazon Linux repository, kernel $(uname -r)"
    retry 3 "${RETRY_DELAY_S}" dnf install -y -q lustre-client \
      || fail "could not install lustre-client with dnf: the Amazon Linux repository has no Lustre client for this kernel"
    return 0
  fi
  local codename keyring="${ROOT}/usr/share/keyrings/fsx-ubuntu-public-key.gpg"
  # shellcheck source=/dev/null
  codename="$(. "${ROOT}/etc/os-release" && echo "${VERSION_CODENAME:-}")"
  [[ -n "${codename}" ]] || fail "cannot tell the Ubuntu release (/etc/os-release VERSION_CODENAME) to install the Lustre client"
  log "installing the Lustre client for ${codename}, kernel $(uname -r)"
  mkdir -p "$(dirname "${keyring}")" "${ROOT}/etc/apt/sources.list.d"
  retry 3 "${RETRY_DELAY_S}" curl -fsSL -o "${keyring}.asc" \
    https://fsx-lustre-client-repo-public-keys.s3.amazonaws.com/fsx-ubuntu-public-key.asc \
    || fail "could not download the FSx Lustre client repository key"
  gpg --batch --yes --dearmor -o "${keyring}" "${keyring}.asc"
  echo "deb [signed-by=/usr/share/keyrings/fsx-ubuntu-public-key.gpg] https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu ${codename} main" \
    > "${ROOT}/etc/apt/sources.list.d/fsxlustreclientrepo.list"
  retry 3 "${RETRY_DELAY_S}" apt-get update -q \
    || fail "apt-get update failed (the FSx Lustre client repository may have no ${codename} release)"
  retry 3 "${RETRY_DELAY_S}" \
    apt-get install -y -q "lustre-client-modules-$(uname -r)" \
    || fail "could not install lustre-client-modules-$(uname -r): the AWS Lustre client repository has no modules for this kernel"
}

# 3a. Docker, logged in to the stack's registry, with the training image pulled. Docker is
# installed if the AMI has none: Amazon Linux 2023's docker package ("AL2023 includes these
# packages [containerd, docker] in the core repositories", Amazon Linux 2023 user guide,
# "Using AL2023 based Amazon ECS AMIs", https://docs.aws.amazon.com/linux/al2023/ug/ecs.html),
# or Ubuntu's docker.io. ECR login: `aws ecr
# get-login-password | docker login --username AWS --password-stdin <registry>` (ECR user
# guide, "Private registry authentication",
# https://docs.aws.amazon.com/AmazonECR/latest/userguide/registry_auth.html).
ecr_login() {
  aws ecr get-login-password --region "${REGION}" \
    | docker login --username AWS --password-stdin "$1" > /dev/null
}
setup_container_runtime() {
  local registry image
  env_get registry=ECR_REGISTRY image=TRAINING_IMAGE_URI
  [[ -n "${registry}" && -n "${image}" ]] || fail "the job environment lacks ECR_REGISTRY or TRAINING_IMAGE_URI"
  if ! command -v docker > /dev/null 2>&1 && [[ "$(os_id)" == amzn ]]; then
    log "Docker is not installed; installing Amazon Linux's docker"
    retry 3 "${RETRY_DELAY_S}" dnf install -y -q docker || fail "could not install docker with dnf"
  elif ! command -v docker > /dev/null 2>&1; then
    log "Docker is not installed; installing Ubuntu's docker.io"
    # A fresh package list first: the AMI's lists may be stale or cleared.
    retry 3 "${RETRY_DELAY_S}" apt-get update -q || fail "apt-get update failed"
    retry 3 "${RETRY_DELAY_S}" apt-get install -y -q docker.io \
      || fail "could not install docker.io"
  fi
  systemctl enable --now docker > /dev/null || fail "could not start Docker"
  retry "${PULL_ATTEMPTS}" "${RETRY_DELAY_S}" ecr_login "${registry}" \
    || fail "docker login to ${registry} failed: the node role needs ecr:GetAuthorizationToken"
  log "pulling ${image} (tens of GB; minutes)"
  retry "${PULL_ATTEMPTS}" "${RETRY_DELAY_S}" docker pull -q "${image}" > /dev/null \
    || fail "could not pull ${image}: the node role needs ECR pull on the repository, and the image must exist (the deploy builds it)"
  log "training image ${image} is here"
}

# The Neuron virtual environments this AMI has (/opt/aws_neuronx_venv_*), comma separated.
neuron_venvs() {
  local dir found=()
  for dir in "${ROOT}"/opt/aws_neuronx_venv_*; do
    [[ -f "${dir}/bin/activate" ]] && found+=("${dir#"${ROOT}"}")
  done
  local IFS=,
  echo "${found[*]:-none}"
}
# A missing venv: say which AMI this is, what it has, which DLAMI has the stack's venv and how
# to boot it (node.venv_source, by Neuron stack), and which settings change it. (Neuron removed
# NxD Training's venv from the DLAMIs at SDK 2.31 and published no PyTorch 2.9 DLAMI from 2.32:
# Neuron DLAMI release notes; the native stack's default AMI, the Base DLAMI, has no venv.)
fail_no_venv() {
  local venv="$1" ami
  ami="$(ami_id 2> /dev/null || true)"
  fail "the AMI ${ami:-(id unknown)} has no virtual environment ${venv} (standalone.dlami_venv);" \
    "its Neuron environments: $(neuron_venvs). The nodes' AMI is $(setting ami_source)." \
    "$(setting venv_source). Fix one of: boot that DLAMI, set standalone.dlami_venv to one of" \
    "this AMI's environments, or set standalone.runtime: container; then redeploy and replace" \
    "the node (trn-ultracluster scale --nodes 0 and back)"
}
# 3b. The training program (the files the training image holds) in node.program_dir, and a
# check that the DLAMI's virtual environment imports it and what it needs on Neuron.
setup_venv_runtime() {
  local venv program staging imports
  venv="$(setting venv)"
  program="${ROOT}$(setting program_dir)"
  imports="$(setting imports)"
  [[ -f "${ROOT}${venv}/bin/activate" ]] || fail_no_venv "${venv}"
  [[ -f "${NODE_DIR}/program.zip" ]] || fail "${NODE_DIR}/program.zip not found: the user data did not fetch the training program"
  staging="$(mktemp -d "${program}.XXXXXX" 2> /dev/null || mktemp -d)"
  python3 -m zipfile -e "${NODE_DIR}/program.zip" "${staging}"
  chmod -R a+rX "${staging}"
  rm -rf "${program}"
  mv "${staging}" "${program}"
  if ! PYTHONPATH="${program}:${program}/training" "${ROOT}${venv}/bin/python" -c \
       "import importlib, sys; [importlib.import_module(m) for m in sys.argv[1].split(',') if m]; import trn_train.cli" \
       "${imports}"; then
    fail "${venv} cannot import the training program or one of ${imports} (error above): use a virtual environment that has them, or runtime container"
  fi
  log "training program in ${program}; ${venv} imports it"
}

write_ready_marker() {
  local ready runtime
  ready="${ROOT}$(setting ready_file)"
  runtime="$(setting runtime)"
  mkdir -p "$(dirname "${ready}")"
  printf 'runtime=%s\nready_at=%s\n' "${runtime}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "${ready}"
  log "node ready (${ready})"
}

main() {
  log "node_setup start (node dir ${NODE_DIR})"
  read_storage_layout
  rm -f "${ROOT}$(setting ready_file)"
  install_lustre_client
  # LNet over EFA (fsx.efa; nothing in mode off) before the file system is waited for: a
  # node that cannot have it fails early, without its ready marker.
  setup_lustre_efa "$(setting metrics_cluster)"
  wait_for_file_system
  wait_for_link
  mount_fsx
  check_lustre_efa
  write_environment
  case "$(setting runtime)" in
    container) setup_container_runtime ;;
    dlami-venv) setup_venv_runtime ;;
    *) fail "unknown runtime '$(setting runtime)' in ${CLUSTER_JSON}" ;;
  esac
  # Every node also follows the first node's log of each job (node-0.log, where the
  # training program prints its JSON lines): the dashboard averages them, so several nodes
  # publishing the same line do not change what it shows.
  for role in compute controller; do
    bash "${NODE_DIR}/neuron_metrics.sh" --region "${REGION}" --cluster "$(setting metrics_cluster)" \
      --role "${role}" --jobs-dir "${STATE_DIR}/jobs" --log-glob '*/node-0.log' \
      || log "WARNING: node metrics (${role}) are not set up (see above); the node works without them"
  done
  write_ready_marker
  log "node_setup done"
  ship_log
}

main "$@"
