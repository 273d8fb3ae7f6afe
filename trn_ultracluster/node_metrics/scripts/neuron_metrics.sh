#!/bin/bash
# TrnUltraCluster: publish a node's Neuron and EFA metrics (and, on the node that sees every
# job log, the training program's tokens/s and MFU) to CloudWatch, as systemd services.
#
# Usage: neuron_metrics.sh --region REGION --cluster NAME --role ROLE [--jobs-dir DIR] [--log-glob GLOB]
#   ROLE compute:    on a node with neuron-monitor (aws-neuronx-tools,
#                    /opt/aws/neuron/bin/neuron-monitor), the service trn-neuron-metrics:
#                    `neuron-monitor -c <config> | neuron_metrics.py nodes` (metric names and
#                    sources: neuron_metrics.py). Without neuron-monitor: a warning, nothing else.
#   ROLE controller: the service trn-training-metrics: `neuron_metrics.py training` over the
#                    job logs matching --log-glob (default *.out: sbatch output files) in
#                    --jobs-dir (default /fsx/.trn-ultracluster/jobs).
#   other roles:     nothing.
# neuron-monitor's documented use is a pipe into a consumer (`neuron-monitor |
# neuron-monitor-cloudwatch.py --namespace <ns> --region <region>`: Neuron documentation,
# "Neuron Monitor User Guide", companion scripts). We use our own consumer because the
# metric names neuron-monitor-cloudwatch.py publishes are not documented, and the dashboard
# needs names it can rely on (Container Insights' names, in our namespace).
#
# Idempotent: files are rewritten only when their content changes, and a service is
# restarted only then; a rerun changes nothing. It never fails the node for metrics: the
# caller logs a non-zero exit as a warning. Log lines go to stdout.
#
# Test hooks: TRN_ROOT (prefix of every path written or read), TRN_NEURON_MONITOR (path of
# neuron-monitor on the node, default /opt/aws/neuron/bin/neuron-monitor).

set -euo pipefail

ROOT="${TRN_ROOT:-}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NEURON_MONITOR="${TRN_NEURON_MONITOR:-/opt/aws/neuron/bin/neuron-monitor}"
INSTALL_DIR="/opt/trn-ultracluster/metrics"
CONFIG_DIR="/etc/trn-ultracluster"
UNIT_DIR="/etc/systemd/system"
NODE_NAMESPACE="TrnUltraCluster/Neuron"
TRAINING_NAMESPACE_PREFIX="TrnUltraCluster/Training"
REGION="" CLUSTER="" ROLE="" JOBS_DIR="/fsx/.trn-ultracluster/jobs" LOG_GLOB="*.out"

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [trn-ultracluster metrics] $*"; }
usage() { echo "usage: $0 --region REGION --cluster NAME --role ROLE [--jobs-dir DIR] [--log-glob GLOB]" >&2; exit 2; }

while (( $# )); do
  case "$1" in
    --region) REGION="${2:-}"; shift 2 ;;
    --cluster) CLUSTER="${2:-}"; shift 2 ;;
    --role) ROLE="${2:-}"; shift 2 ;;
    --jobs-dir) JOBS_DIR="${2:-}"; shift 2 ;;
    --log-glob) LOG_GLOB="${2:-}"; shift 2 ;;
    *) usage ;;
  esac
done
[[ -n "${REGION}" && -n "${CLUSTER}" && -n "${ROLE}" && -n "${JOBS_DIR}" && -n "${LOG_GLOB}" ]] || usage

CHANGED=""
# write_file PATH MODE < CONTENT: write PATH (under ROOT) when its content differs; records
# the change in CHANGED.
write_file() {
  local path="${ROOT}$1" mode="$2" tmp
  mkdir -p "$(dirname "${path}")"
  tmp="$(mktemp "${path}.XXXXXX")"
  cat > "${tmp}"
  chmod "${mode}" "${tmp}"
  if [[ -f "${path}" ]] && cmp -s "${tmp}" "${path}"; then
    rm -f "${tmp}"
    return 0
  fi
  mv -f "${tmp}" "${path}"
  CHANGED="${CHANGED} $1"
  log "wrote $1"
}

# service NAME DESCRIPTION EXEC: write the unit and enable it; restart it when this run
# changed any file it uses.
service() {
  local name="$1" description="$2" exec_start="$3" before="${CHANGED}"
  write_file "${UNIT_DIR}/${name}.service" 644 <<EOF
# Written by the TrnUltraCluster node scripts (neuron_metrics.sh).
[Unit]
Description=${description}
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=${exec_start}
Restart=always
RestartSec=30

[Install]
WantedBy=multi-user.target
EOF
  systemctl daemon-reload
  systemctl enable --now "${name}.service"
  if [[ "${CHANGED}" != "${before}" || -n "${SCRIPT_CHANGED}" ]]; then
    systemctl restart "${name}.service"
  fi
  log "service ${name} enabled"
}

write_file "${INSTALL_DIR}/neuron_metrics.py" 755 < "${HERE}/neuron_metrics.py"
SCRIPT_CHANGED="${CHANGED}"
PY="/usr/bin/env python3 ${INSTALL_DIR}/neuron_metrics.py"

case "${ROLE}" in
  compute)
    if [[ ! -x "${ROOT}${NEURON_MONITOR}" ]]; then
      log "WARNING: ${NEURON_MONITOR} not found (aws-neuronx-tools): no Neuron metrics from this node"
      exit 0
    fi
    # neuron-monitor configuration: the metric groups neuron_metrics.py reads, every 10 s
    # (Neuron Monitor User Guide, "Configuration file example").
    write_file "${CONFIG_DIR}/neuron-monitor.json" 644 <<'EOF'
{
  "period": "10s",
  "neuron_runtimes": [
    {
      "tag_filter": ".*",
      "metrics": [
        {"type": "neuroncore_counters"},
        {"type": "memory_used"},
        {"type": "execution_stats"}
      ]
    }
  ],
  "system_metrics": [
    {"type": "neuron_hw_counters"}
  ]
}
EOF
    service trn-neuron-metrics "TrnUltraCluster: Neuron and EFA metrics to CloudWatch" \
      "/bin/bash -c 'set -o pipefail; ${NEURON_MONITOR} -c ${CONFIG_DIR}/neuron-monitor.json | ${PY} nodes --region ${REGION} --namespace ${NODE_NAMESPACE} --cluster ${CLUSTER}'"
    ;;
  controller)
    service trn-training-metrics "TrnUltraCluster: training tokens/s and MFU to CloudWatch" \
      "${PY} training --region ${REGION} --namespace ${TRAINING_NAMESPACE_PREFIX}/${CLUSTER} --jobs-dir ${JOBS_DIR} --log-glob ${LOG_GLOB}"
    ;;
  *)
    log "no metrics services on a ${ROLE} node"
    ;;
esac
