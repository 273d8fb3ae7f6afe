"""Teams on the real two-node Slurm with accounting (``make test-slurm``): slurmdbd on a real
MariaDB, and the teams of ``accounting.TEAMS_CONFIG`` set up by the lifecycle's own
``slurm_teams.py`` (``conftest.py``). The job CLI runs on the stack outputs of that
configuration (its ``Teams`` output), so ``submit --team/--priority``, ``status`` and
``usage`` are the commands users type.

The cluster: partitions ``trn`` (node1, node2) and ``cpu`` (node2). ``research`` (default
team, class ``experiment``) may hold 2 ``trn`` nodes and 1 ``cpu`` node (it borrows;
``platform`` lends); ``platform`` (class ``training``, no borrowing) at most 1 ``trn`` node.
Classes: ``training`` (100) above ``experiment`` (10), preemption ``lower-priority``.
What Slurm says of a waiting job is its own reason code (squeue(1), "JOB REASON CODES":
``AssocGrp*Limit``, "The job's association has reached an aggregate limit").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.slurm.accounting import TEAMS_SCRIPT, teams_output
from tests.slurm.conftest import CPU_PARTITION, PARTITION, SlurmCluster, wait_until
from tests.slurm.harness import cli_on, jobs, stack_values
from trn_ultracluster.contracts.shared_storage import JOBS_DIR

pytestmark = pytest.mark.slurm

SQUEUE = ("squeue", "-h", "-t", "all", "-o", "%i|%a|%q|%T|%r|%P")


@pytest.fixture(scope="module")
def cli(slurm: SlurmCluster, cluster_files: Path, tmp_path_factory):
    """The job CLI on the outputs of the stack of ``TEAMS_CONFIG`` (with its ``Teams``)."""
    values = {**stack_values(), "Teams": json.dumps(teams_output().to_json())}
    with cli_on(slurm, values, tmp_path_factory.mktemp("outputs")) as run:
        yield run


@pytest.fixture(autouse=True)
def no_jobs_left(slurm: SlurmCluster):
    """Every test starts and ends with an empty queue (the tests fill the nodes)."""
    yield
    slurm.run("scancel", "--user=root")
    wait_until(lambda: not slurm.run("squeue", "-h", "-o", "%i").strip(), 60,
               "jobs ended after scancel", slurm.log_tails)


def submit(cli, name: str, *argv: str, nodes: int = 1, pool: str = PARTITION,
           seconds: int = 300) -> int:
    """``submit --name NAME --pool POOL --nodes N ARGV -- sleep SECONDS``; the job id."""
    code, out, err = cli("submit", "--name", name, "--pool", pool, "--nodes", str(nodes),
                         "--launcher", "none", *argv, "--", "sleep", str(seconds))
    assert code == 0, err
    match = re.match(r"submitted (\d+) ", out)
    assert match, out
    return int(match.group(1))


def queue(slurm: SlurmCluster) -> dict[int, dict[str, str]]:
    """Job id -> account, qos, state, reason, partition (squeue of every job it knows)."""
    rows = (line.split("|") for line in slurm.run(*SQUEUE).splitlines() if line.strip())
    return {int(r[0]): dict(zip(("account", "qos", "state", "reason", "partition"), r[1:]))
            for r in rows}


def wait_state(slurm: SlurmCluster, job: int, state: str, reason: str | None = None) -> None:
    def there() -> bool:
        row = queue(slurm).get(job, {})
        return row.get("state") == state and (reason is None or row.get("reason") == reason)

    wait_until(there, 60, f"job {job} {state} {reason or ''}",
               lambda: json.dumps(queue(slurm), indent=1) + "\n" + slurm.log_tails())


def test_a_team_over_its_limit_waits_while_the_other_teams_job_runs(slurm, cli):
    first = submit(cli, "platform-1", "--team", "platform")
    wait_state(slurm, first, "RUNNING")
    over = submit(cli, "platform-2", "--team", "platform")
    wait_state(slurm, over, "PENDING", "AssocGrpNodeLimit")
    other = submit(cli, "research-1", "--team", "research")
    wait_state(slurm, other, "RUNNING")  # the second node, which platform may not take
    assert queue(slurm)[over]["state"] == "PENDING"
    rows = queue(slurm)
    assert (rows[first]["account"], rows[first]["qos"]) == ("platform", "training")
    assert (rows[other]["account"], rows[other]["qos"]) == ("research", "experiment")
    assert "#SBATCH --account=platform" in Path(JOBS_DIR, "platform-2.sbatch").read_text()

    code, out, err = cli("status")
    assert code == 0, err
    assert re.search(r"^  pool trn \(partition trn\): 1 node\(s\) in use, quota 1, limit 1; "
                     r"1 running, 1 pending$", out, flags=re.M), out
    assert re.search(rf"^  waiting: {over} platform-2 nodes=1 qos=training partition=trn "
                     r"reason=AssocGrpNodeLimit$", out, flags=re.M), out
    assert re.search(r"^  pool trn \(partition trn\): 1 node\(s\) in use, quota 1, limit 2; "
                     r"1 running, 0 pending$", out, flags=re.M), out


def test_submit_team_and_priority_land_in_its_account_and_qos(slurm, cli):
    job = submit(cli, "platform-exp", "--team", "platform", "--priority", "experiment")
    wait_state(slurm, job, "RUNNING")
    row = queue(slurm)[job]
    assert (row["account"], row["qos"], row["partition"]) == ("platform", "experiment", "trn")
    script = Path(JOBS_DIR, "platform-exp.sbatch").read_text().splitlines()
    assert {"#SBATCH --account=platform", "#SBATCH --qos=experiment"} <= set(script)


def test_a_bad_team_or_class_is_refused_before_any_sbatch(slurm, cli):
    """No job reaches Slurm: no new job id (ended jobs of earlier tests may leave the list
    meanwhile, ``MinJobAge``) and no job script."""
    before = set(queue(slurm))
    code, _, err = cli("submit", "--name", "bad-team", "--team", "nosuch", "--launcher", "none",
                       "--", "sleep", "1")
    assert code == 2 and "--team 'nosuch' names no team of this stack" in err, err
    assert "research (default), platform" in err
    code, _, err = cli("submit", "--name", "bad-class", "--priority", "urgent", "--launcher",
                       "none", "--", "sleep", "1")
    assert code == 2 and "--priority 'urgent' names no priority class" in err, err
    for name in ("bad-team", "bad-class"):
        assert not Path(JOBS_DIR, f"{name}.sbatch").exists()
    assert set(queue(slurm)) <= before


def test_a_higher_class_starts_before_a_lower_one_queued_earlier(slurm, cli):
    """The one ``cpu`` node is busy; an ``experiment`` job is queued, then a ``training``
    job; when the node frees, the ``training`` job starts, the earlier one waits."""
    blocker = submit(cli, "cpu-blocker", "--priority", "training", pool=CPU_PARTITION)
    wait_state(slurm, blocker, "RUNNING")
    low = submit(cli, "cpu-low", "--priority", "experiment", pool=CPU_PARTITION)
    high = submit(cli, "cpu-high", "--priority", "training", pool=CPU_PARTITION)
    wait_state(slurm, high, "PENDING")
    assert queue(slurm)[low]["state"] == "PENDING"
    jobs(slurm).cancel(blocker)
    wait_state(slurm, high, "RUNNING")
    assert queue(slurm)[low]["state"] == "PENDING"


def test_a_higher_class_preempts_a_lower_one_which_is_requeued(slurm, cli):
    """``research`` fills both ``trn`` nodes at class ``experiment``; a ``platform`` job of
    class ``training`` needs one: Slurm requeues the ``experiment`` job (``PreemptMode=
    REQUEUE``; the job script asks ``--requeue``) and starts the ``training`` job."""
    low = submit(cli, "research-wide", "--team", "research", nodes=2)
    wait_state(slurm, low, "RUNNING")
    high = submit(cli, "platform-urgent", "--team", "platform")
    wait_state(slurm, high, "RUNNING")
    assert queue(slurm)[low]["state"] in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED")
    restarts = re.search(r"Restarts=(\d+)", slurm.run("scontrol", "show", "job", str(low)))
    assert restarts and int(restarts.group(1)) >= 1


def test_usage_reads_sacct_and_reports_both_teams(slurm, cli):
    """After the jobs above (every one of them ran a while), ``usage`` has node-hours of
    both teams on ``trn`` and of ``research`` on ``cpu``, each row from sacct's records."""
    def usage() -> dict[tuple[str, str], dict]:
        code, out, err = cli("usage", "--since", "1h", "--json")
        assert code == 0, err
        return {(r["team"], r["pool"]): r for r in json.loads(out)["usage"]}

    wanted = {("research", "trn"), ("platform", "trn"), ("research", "cpu")}
    wait_until(lambda: wanted <= set(usage()), 60, "usage of both teams",
               lambda: json.dumps(list(usage())))
    rows = usage()
    for key in wanted:
        assert rows[key]["node_hours"] > 0 and rows[key]["jobs"] >= 1, rows[key]
    assert rows[("platform", "trn")]["neuron_core_hours"] == pytest.approx(
        rows[("platform", "trn")]["node_hours"] * 32)  # trn1.32xlarge
    code, out, _ = cli("usage", "--since", "1h", "--team", "platform")
    assert code == 0 and re.search(r"^platform\s+trn\s+trn1\.32xlarge\s+\d+\s", out, re.M), out
    assert not re.search(r"^research\s", out, re.M), out


def test_the_teams_setup_converges_when_run_again(slurm, tmp_path):
    """The lifecycle's script again, as a rerun of the lifecycle or a stack update runs it:
    nothing to install, every sacctmgr command succeeds, the associations are unchanged."""
    from tests.slurm.accounting import run_teams_script, write_teams

    assoc = ("sacctmgr", "-n", "-P", "show", "assoc", "format=account,user,partition,grptres,"
             "qos,defaultqos")
    before = slurm.run(*assoc)
    teams = write_teams(tmp_path)
    assert run_teams_script("install", teams, slurm.env, "--slurm-conf",
                            str(slurm.conf)).strip() == "unchanged"
    run_teams_script("apply", teams, slurm.env)
    assert slurm.run(*assoc) == before
    assert TEAMS_SCRIPT.name == "slurm_teams.py"
