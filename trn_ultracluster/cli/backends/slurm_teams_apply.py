"""``trn-ultracluster teams --apply`` on ``hyperpod-slurm``: the stack's current teams applied
to the running Slurm controller.

HyperPod runs lifecycle scripts only on new or replaced nodes (``LifeCycleConfig``: SageMaker
developer guide, "Node lifecycle configuration options"), so a deploy that changes ``teams``
or ``scheduling`` uploads a new ``slurm_teams.json`` that a running controller never reads.
:func:`apply_script` is what ``teams --apply`` runs there as root through SSM Run Command
(:func:`~trn_ultracluster.cli.backends.ssm.run_command`): it copies the teams file and the
teams scripts from the lifecycle bucket (the keys the stack uploads them to:
:data:`~trn_ultracluster.contracts.hyperpod.LIFECYCLE_PREFIX` ``/<name>``) and runs the very
steps the lifecycle script runs, ``setup_slurm_teams`` of ``slurm_teams.sh`` (wait for slurmdbd,
``slurm_teams.py install``, restart slurmctld only if that changed something,
``slurm_teams.py apply``). The node reads the bucket with the cluster's execution role, which
may read the lifecycle bucket (``orchestrators/hyperpod/execution_role.py``).
"""

from __future__ import annotations

import re

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.hyperpod import (
    LIFECYCLE_PREFIX,
    SLURM_TEAMS_FILE,
    SLURM_TEAMS_SCRIPT,
    SLURM_TEAMS_STEPS,
)

__all__ = ["ACCOUNTING_WAIT_S", "APPLY_TIMEOUT_S", "apply_error", "apply_script"]

ACCOUNTING_WAIT_S = 300
"""Seconds the steps wait for slurmdbd, and for slurmctld after its restart (the lifecycle
script's default, ``TRN_ACCOUNTING_WAIT_S``)."""
APPLY_TIMEOUT_S = 3 * ACCOUNTING_WAIT_S
"""The Run Command's ``executionTimeout`` and how long the CLI waits, seconds: both waits and
the sacctmgr commands (each at most 120 s in ``slurm_teams.py``)."""
FAILED = re.compile(r"teams --apply: step (\S+) failed: (.*)", re.S)
"""The line :func:`apply_script`'s ``fail`` writes to stderr."""


BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
"""A general purpose bucket's name: 3-63 lowercase letters, digits, dots and hyphens, a letter
or digit first and last (S3 user guide, "General purpose bucket naming rules"): nothing a
shell would read."""
REGION_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")
"""An AWS Region's code as Regions are named (us-east-1, us-gov-west-1): a sanity check of
the outputs file, nothing a shell would read."""


def apply_script(bucket: str, region: str) -> str:
    """The bash script ``teams --apply`` runs as root on the controller: copy
    :data:`SLURM_TEAMS_FILE`, :data:`SLURM_TEAMS_SCRIPT` and :data:`SLURM_TEAMS_STEPS` from
    ``s3://<bucket>/<LIFECYCLE_PREFIX>/`` (``region``: the bucket's, the stack's) to a
    temporary directory, then ``setup_slurm_teams``. Its stdout says what changed (whether
    slurmctld restarted, then each QOS, account and association ``apply`` set); on an error
    it writes ``teams --apply: step <step> failed: <why>`` to stderr and exits 1.

    Raises:
        CliError: (STACK) the stack outputs' bucket or Region is not a bucket or Region name.
    """
    if not BUCKET_NAME.fullmatch(bucket) or not REGION_NAME.fullmatch(region):
        raise CliError(f"the stack outputs' lifecycle bucket {bucket!r} or Region {region!r} "
                       "is not a valid S3 bucket / AWS Region name",
                       "check the outputs file (`trn-ultracluster outputs`)", ExitCode.STACK)
    files = (SLURM_TEAMS_FILE, SLURM_TEAMS_SCRIPT, SLURM_TEAMS_STEPS)
    source = f"s3://{bucket}/{LIFECYCLE_PREFIX}"
    return "\n".join([
        "set -euo pipefail",
        "TEAMS_STEP=fetch",
        'log() { echo "[trn-ultracluster] $*"; }',
        'fail() { echo "teams --apply: step ${TEAMS_STEP} failed: $*" >&2; exit 1; }',
        'LCS_DIR="$(mktemp -d)"',
        "trap 'rm -rf \"${LCS_DIR}\"' EXIT",
        f"for name in {' '.join(files)}; do",
        f'  aws s3 cp --only-show-errors --region {region} "{source}/${{name}}" '
        '"${LCS_DIR}/${name}" \\',
        f'    || fail "cannot copy {source}/${{name}} (was the stack deployed with teams? '
        'the error of aws s3 cp is above)"',
        "done",
        f'TEAMS_JSON="${{LCS_DIR}}/{SLURM_TEAMS_FILE}"',
        f"ACCOUNTING_WAIT_S={ACCOUNTING_WAIT_S}",
        f'source "${{LCS_DIR}}/{SLURM_TEAMS_STEPS}"',
        "setup_slurm_teams",
        "",
    ])


def apply_error(err: CliError) -> CliError:
    """``err`` (a failed Run Command, its stderr in the message) as the error of ``teams
    --apply``: naming the step that failed and why when the script said so, else ``err``
    itself (SSM could not run the command at all)."""
    found = FAILED.search(err.message)
    if found is None:
        return err
    step, why = found.group(1), found.group(2).strip()
    return CliError(f"teams --apply failed on the controller at step {step}: {why}",
                    "fix what the step names, then run `trn-ultracluster teams --apply` again "
                    "(every step is idempotent); the controller's Slurm logs are in "
                    "/var/log/slurm/", ExitCode.CLUSTER)
