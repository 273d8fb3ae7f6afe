#!/usr/bin/env bash
# Install what tests/slurm needs when it is missing (make test-slurm): Slurm's controller, node
# daemon and clients and MUNGE, from the distribution's packages (Debian 12: Slurm 22.05.8).
#
# Needs root; as another user it only says what is missing (the tests then fail when
# TRN_REQUIRE_SLURM=1, or skip). Runs `apt-get update` first only when the package index does
# not know slurmctld (a fresh container has an empty index). Starts nothing: the Debian
# packages try to start the services through systemd, which is absent here, and the tests
# start their own daemons with private configuration.
set -euo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge)
NEEDED=(/usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/munged /usr/sbin/mungekey
        /usr/bin/sbatch /usr/bin/srun /usr/bin/squeue /usr/bin/sacct /usr/bin/scancel
        /usr/bin/scontrol /usr/bin/sinfo)

missing=()
for path in "${NEEDED[@]}"; do
  [[ -x "${path}" ]] || missing+=("${path}")
done
if (( ${#missing[@]} == 0 )); then
  echo "test-slurm: Slurm and MUNGE are installed ($(/usr/sbin/slurmctld -V))"
  exit 0
fi
echo "test-slurm: missing ${missing[*]}"
if (( EUID != 0 )); then
  echo "test-slurm: not root, so not installing ${PACKAGES[*]}; install them with apt-get" >&2
  exit 0
fi
if ! apt-cache policy slurmctld 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  apt-get update -qq
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}"
echo "test-slurm: installed $(/usr/sbin/slurmctld -V)"
