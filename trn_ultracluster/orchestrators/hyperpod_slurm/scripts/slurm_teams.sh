# shellcheck shell=bash disable=SC2034  # TEAMS_STEP is read by the caller's fail
# TrnUltraCluster: the controller's steps that make Slurm enforce the stack's teams, shared by
# the lifecycle script (on_init_complete.sh, on a new or replaced controller) and by
# `trn-ultracluster teams --apply` (the same steps on the running controller through SSM Run
# Command, after a deploy that changed teams or scheduling: HyperPod runs lifecycle scripts
# only on new or replaced nodes). Sourced, not run; uploaded only with teams.
#
# The caller defines: log MESSAGE, fail MESSAGE (exits), LCS_DIR (the directory of
# slurm_teams.py), TEAMS_JSON (slurm_teams.json), ACCOUNTING_WAIT_S (seconds to wait for
# slurmdbd and slurmctld). TEAMS_STEP names the step running, for fail's message:
# wait-slurmdbd, find-slurm-conf, install, restart-slurmctld, apply.

# Slurm's commands on HyperPod are under /opt/slurm/bin (HyperPod base lifecycle scripts,
# aws-samples/awsome-distributed-training .../base-config/start_slurm.sh); last, so a
# PATH that has them already wins.
case ":${PATH}:" in *:/opt/slurm/bin:*) ;; *) export PATH="${PATH}:/opt/slurm/bin" ;; esac

teams() { python3 "${LCS_DIR}/slurm_teams.py" --teams "${TEAMS_JSON}" "$@"; }

# wait_for WHAT COMMAND...: run COMMAND every 5 s until it succeeds, at most
# ACCOUNTING_WAIT_S; fail naming WHAT otherwise.
wait_for() {
  local what="$1" deadline=$(( SECONDS + ACCOUNTING_WAIT_S ))
  shift
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS >= deadline )); then
      fail "${what} after ${ACCOUNTING_WAIT_S}s"
    fi
    sleep 5
  done
}

# Controller only, with teams: Slurm enforces them. HyperPod runs MariaDB and slurmdbd on the
# controller ("By default, SageMaker HyperPod deploys MariaDB on your cluster's controller
# instance": SageMaker developer guide, "Using an external accounting database with
# SageMaker HyperPod Slurm clusters"), possibly still starting while this runs, so this
# waits for slurmdbd to answer; slurm_teams.py install puts the teams' settings in a file
# included at the end of slurm.conf (the path slurmctld reports) and says whether it changed
# anything, in which case slurmctld restarts (AccountingStorageEnforce needs a restart,
# slurm.conf(5); HyperPod runs slurmctld as the systemd unit slurmctld:
# awsome-distributed-training .../base-config/start_slurm.sh); slurm_teams.py apply then
# creates or updates the QOS, accounts and associations and prints what it set. Every step is
# idempotent.
setup_slurm_teams() {
  if [[ ! -f "${TEAMS_JSON}" ]]; then
    return 0
  fi
  local conf changed
  TEAMS_STEP=wait-slurmdbd
  wait_for "Slurm accounting (slurmdbd) does not answer \`sacctmgr show cluster\`; teams need it (check \`systemctl status slurmdbd mariadb\` on the controller)" \
    sacctmgr -n -P show cluster
  TEAMS_STEP=find-slurm-conf
  conf="$(scontrol show config 2>/dev/null | awk '$1 == "SLURM_CONF" { print $3 }')"
  [[ -n "${conf}" ]] || fail "slurmctld does not report its slurm.conf (scontrol show config: SLURM_CONF)"
  TEAMS_STEP=install
  changed="$(teams install --slurm-conf "${conf}")" || fail "cannot add the teams' settings to ${conf} (slurm_teams.py's error is above)"
  if [[ "${changed}" == changed ]]; then
    TEAMS_STEP=restart-slurmctld
    log "teams' Slurm settings added to ${conf}; restarting slurmctld"
    systemctl restart slurmctld || fail "cannot restart slurmctld after adding the teams' settings to ${conf}"
    wait_for "slurmctld does not answer \`scontrol ping\` after its restart (see /var/log/slurm/slurmctld.log)" \
      scontrol ping
  else
    log "${conf} has the teams' Slurm settings already; slurmctld keeps running"
  fi
  TEAMS_STEP=apply
  teams apply || fail "cannot create the teams' Slurm accounts, limits and QOS (slurm_teams.py's error is above)"
  log "Slurm enforces the teams of ${TEAMS_JSON}"
}
