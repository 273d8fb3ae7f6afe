#!/usr/bin/env bash
# Install what tests/slurm needs when it is missing (make test-slurm): Slurm's controller, node
# daemon, database daemon and clients, MUNGE, and the MariaDB server slurmdbd keeps its
# accounting in, from the distribution's packages (Debian 12 "bookworm": slurmctld, slurmd,
# slurmdbd and slurm-client 22.05.8-4+deb12u3, munge 0.5.15, mariadb-server 10.11; apt-cache
# policy, 2026-11-27).
#
# Needs root; as another user it only says what is missing (the tests then fail when
# TRN_REQUIRE_SLURM=1, or skip). Runs `apt-get update` first only when the package index does
# not know slurmctld (a fresh container has an empty index). Starts nothing: the Debian
# packages try to start their services (through systemd, or invoke-rc.d, which a container's
# policy-rc.d refuses), and the tests start their own daemons with private configuration and
# data (a MariaDB datadir of their own: the package's /var/lib/mysql is not used).
set -euo pipefail

PACKAGES=(slurmctld slurmd slurmdbd slurm-client munge mariadb-server)
NEEDED=(/usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/slurmdbd /usr/sbin/munged
        /usr/sbin/mungekey /usr/sbin/mariadbd /usr/bin/mariadb /usr/bin/mariadb-install-db
        /usr/bin/sbatch /usr/bin/srun /usr/bin/squeue /usr/bin/sacct /usr/bin/sacctmgr
        /usr/bin/sshare /usr/bin/scancel /usr/bin/scontrol /usr/bin/sinfo)

missing=()
for path in "${NEEDED[@]}"; do
  [[ -x "${path}" ]] || missing+=("${path}")
done
if (( ${#missing[@]} == 0 )); then
  echo "test-slurm: Slurm, MUNGE and MariaDB are installed ($(/usr/sbin/slurmctld -V))"
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
