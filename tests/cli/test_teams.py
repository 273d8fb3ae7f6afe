"""Teams in the job CLI, whatever the scheduler: ``teams`` lists the stack's ``Teams`` output;
``submit --team/--priority`` resolve to the job's team and class (the default team, errors
that list what exists, a non-borrowing team's quota); ``status`` adds the teams' lines;
``usage`` sums the backend's records over the period and prices them. The backends'
scheduler calls are faked here (``team_helpers.scheduler``)."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import run
from tests.cli.pool_helpers import MIXED, jobs_made, never_sent  # noqa: F401 (fixtures)
from tests.cli.program_helpers import make_workdir
from tests.cli.team_helpers import (  # noqa: F401 (fixture)
    TEAMS_POOLS,
    scheduler,
    teams_file,
    teams_of,
)
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import check_team_nodes
from trn_ultracluster.cli.stack_outputs import outputs_from_file
from trn_ultracluster.cli.usage import UsageRecord
from trn_ultracluster.contracts.pools import PoolInfo
from trn_ultracluster.contracts.teams import TeamInfo, TeamQuotaInfo, TeamsInfo, parse_teams

HOUR = 3600.0
NO_TEAMS = TeamsInfo()


# --- teams ---------------------------------------------------------------------------------

@pytest.mark.parametrize("orchestrator, research, platform", [
    ("hyperpod-slurm", "account research", "account platform"),
    ("eks", "namespace research, queue research-queue", "namespace platform, queue platform-queue"),
])
def test_teams_lists_quotas_borrowing_priority_and_where_jobs_go(capsys, tmp_path,
                                                                  orchestrator, research,
                                                                  platform):
    code, out, _ = run(capsys, "teams", "--outputs-file", teams_file(tmp_path, orchestrator))
    assert code == ExitCode.OK
    lines = out.splitlines()
    assert lines[1].split(None, 6) == ["TEAM", "QUOTA", "(nodes", "per", "pool)", "BORROW",
                                       "LEND  PRIORITY    RUNS AS"]
    assert lines[2].split(None, 7) == ["research*", "trn1=2", "(64", "NC)", "cpu=1", "yes",
                                       "yes", f"experiment  {research}"]
    assert lines[3].split(None, 7) == ["platform", "trn1=1", "(32", "NC)", "cpu=1", "no", "no",
                                       f"training    {platform}"]
    assert lines[4] == ("priority classes (higher first): training 100, experiment 10; "
                        "preemption: lower-priority")
    assert lines[5] == "* default of submit without --team"


def test_teams_says_when_no_team_is_the_default(capsys, tmp_path):
    info = teams_of(**{"teams": [{"name": "alpha"}, {"name": "beta"}]})
    code, out, _ = run(capsys, "teams", "--outputs-file", teams_file(tmp_path, teams=info))
    assert code == ExitCode.OK
    assert [line.split()[0] for line in out.splitlines()[2:4]] == ["alpha", "beta"]
    assert out.splitlines()[-1] == "no default team: submit needs --team NAME"


def test_teams_quota_of_no_whole_node_shows_its_neuron_cores(capsys, tmp_path):
    """On eks a quota may be NeuronCores that are no whole node: nodes ``?``."""
    info = teams_of("eks", **{"teams": [{"name": "alpha",
                                         "quota": {"trn1": {"neuron_cores": 16}}}]})
    code, out, _ = run(capsys, "teams", "--outputs-file", teams_file(tmp_path, "eks", info))
    assert code == ExitCode.OK
    assert out.splitlines()[2].split()[:4] == ["alpha*", "trn1=?", "(16", "NC)"]


def test_teams_json_is_what_the_stack_wrote(capsys, tmp_path):
    path = teams_file(tmp_path, "eks")
    code, out, _ = run(capsys, "teams", "--outputs-file", path, "--json")
    assert code == ExitCode.OK
    written = json.loads(open(path).read())["TrnUltraCluster"]["Teams"]
    assert parse_teams(out) == parse_teams(written) == teams_of("eks")
    assert json.loads(out)["teams"][0]["cluster_queue"] == "research-cq"


def test_teams_on_a_stack_without_teams(capsys, tmp_path):
    path = teams_file(tmp_path, teams=NO_TEAMS)
    code, out, _ = run(capsys, "teams", "--outputs-file", path)
    assert code == ExitCode.OK
    assert out == ("stack TrnUltraCluster has no teams: every job is first come, first served "
                   "(add `teams` to the configuration: docs/teams.md)\n")
    code, out, _ = run(capsys, "teams", "--outputs-file", path, "--json")
    assert json.loads(out) == {"teams": [], "priority_classes": [], "preemption": "never"}


def test_a_teams_output_of_another_shape_is_a_stack_error(capsys, tmp_path):
    code, _, err = run(capsys, "teams", "--outputs-file",
                       teams_file(tmp_path, Teams='{"teams": 3}'))
    assert code == ExitCode.STACK
    assert err.splitlines() == ["error: the stack output Teams is not the teams' JSON "
                                "('int' object is not iterable)",
                                "fix: redeploy the stack with this version"]


# --- the team and class a job runs as ------------------------------------------------------

def outputs(tmp_path, teams=None, orchestrator="hyperpod-slurm"):
    return outputs_from_file(teams_file(tmp_path, orchestrator, teams), "TrnUltraCluster")


def test_a_job_runs_as_the_default_team_at_its_class_unless_told(tmp_path):
    stack = outputs(tmp_path)
    team, cls = stack.team(None)
    assert (team.name, cls.name) == ("research", "experiment")
    team, cls = stack.team("platform")
    assert (team.name, cls.name, team.account) == ("platform", "training", "platform")
    team, cls = stack.team("platform", "experiment")
    assert (team.name, cls.name, cls.weight) == ("platform", "experiment", 10)


def test_one_team_without_default_is_the_default(tmp_path):
    """``ClusterConfig.team_list`` marks a lone team default, so the output says so."""
    info = teams_of(**{"teams": [{"name": "solo"}]})
    assert [t.default for t in info.teams] == [True]
    assert outputs(tmp_path, info).team(None)[0].name == "solo"


def test_a_stack_without_teams_runs_jobs_outside_teams(tmp_path):
    assert outputs(tmp_path, NO_TEAMS).team(None) is None


@pytest.mark.parametrize("teams, name, priority, message, fix", [
    ("none", "research", None,
     "--team 'research': stack TrnUltraCluster has no teams (its configuration has no "
     "`teams`), so every job is first come, first served",
     "leave --team out, or add `teams` to the configuration and deploy (docs/teams.md)"),
    ("none", None, "training",
     "--priority 'training': stack TrnUltraCluster has no teams (its configuration has no "
     "`teams`), so every job is first come, first served",
     "leave --priority out, or add `teams` to the configuration and deploy (docs/teams.md)"),
    ("profile", "ops", None,
     "--team 'ops' names no team of this stack; its teams: research (default), platform",
     "name one of them with --team NAME (`trn-ultracluster teams` lists them)"),
    ("no default", None, None,
     "this stack has 2 teams and none is the default: choose one with --team NAME; its "
     "teams: alpha, beta",
     "name one with --team NAME, or mark one team `default: true` in the configuration and "
     "deploy (`trn-ultracluster teams` lists them)"),
    ("profile", "platform", "urgent",
     "--priority 'urgent' names no priority class of this stack; its classes (weight, higher "
     "first): training (100), experiment (10)",
     "name one of them with --priority CLASS, or leave it out for team platform's (training)"),
])
def test_a_team_or_class_that_does_not_exist_lists_what_does(tmp_path, teams, name, priority,
                                                              message, fix):
    info = {"none": NO_TEAMS, "profile": None,
            "no default": teams_of(**{"teams": [{"name": "alpha"}, {"name": "beta"}]})}[teams]
    with pytest.raises(CliError) as err:
        outputs(tmp_path, info).team(name, priority)
    assert (err.value.message, err.value.fix, err.value.exit_code) == (message, fix,
                                                                       ExitCode.USAGE)


def submit(capsys, tmp_path, *argv, teams=None):
    work = make_workdir(tmp_path / "work")
    return run(capsys, "submit", "--outputs-file", teams_file(tmp_path, teams=teams),
               "--name", "job-a", "--workdir", str(work), "--dry-run", "--pool", "trn1", *argv,
               "--", "train.py")


@pytest.mark.parametrize("argv, team, priority", [
    ([], "research", "experiment"),
    (["--team", "platform"], "platform", "training"),
    (["--team", "platform", "--priority", "experiment"], "platform", "experiment"),
    (["--priority", "training"], "research", "training"),
])
def test_submit_hands_the_backend_the_team_and_class(capsys, tmp_path, jobs_made, never_sent,
                                                     argv, team, priority):
    code, _, err = submit(capsys, tmp_path, *argv)
    assert code == ExitCode.OK, err
    assert (jobs_made[0].team.name, jobs_made[0].priority.name) == (team, priority)


def test_submit_on_a_stack_without_teams_has_no_team(capsys, tmp_path, jobs_made, never_sent):
    code, _, err = submit(capsys, tmp_path, teams=NO_TEAMS)
    assert code == ExitCode.OK, err
    assert (jobs_made[0].team, jobs_made[0].priority) == (None, None)


def test_submit_refuses_more_than_a_non_borrowing_teams_quota(capsys, tmp_path, never_sent):
    code, _, err = submit(capsys, tmp_path, "--team", "platform", "--nodes", "2")
    assert code == ExitCode.USAGE
    assert err.splitlines() == [
        "error: --nodes 2 is more than team platform's quota on pool trn1 (1 node), and the "
        "team may not borrow: its scheduler would hold the job forever",
        "fix: run it on 1 node or fewer, as another team (--team NAME), or raise the team's "
        "quota (teams[].quota) or set borrow: true and deploy (docs/teams.md)"]
    assert submit(capsys, tmp_path, "--team", "research", "--nodes", "4")[0] == ExitCode.OK


def test_a_quota_of_no_whole_node_allows_its_whole_nodes():
    pool = PoolInfo("trn1", "trn1.32xlarge", True, 0, 3, 4)
    team = TeamInfo("alpha", True, "low", False, False, (TeamQuotaInfo("trn1", None, 80, 40),))
    check_team_nodes(2, pool, team)  # 80 NeuronCores: 2 whole trn1.32xlarge
    with pytest.raises(CliError, match=r"\(2 nodes\)"):
        check_team_nodes(3, pool, team)
    check_team_nodes(9, PoolInfo("cpu", "m7i.8xlarge", False, 0, 1, 2), team)  # no quota there


# --- status --------------------------------------------------------------------------------

def test_status_adds_the_teams_lines_without_a_job(capsys, tmp_path, scheduler):
    path = teams_file(tmp_path)
    code, out, _ = run(capsys, "status", "--outputs-file", path)
    assert code == ExitCode.OK
    assert out.splitlines() == ["JOB  STATE", *scheduler.status_lines]
    assert [c[0] for c in scheduler.calls] == ["status", "team_status"]
    assert scheduler.calls[1][1] == teams_of()


def test_status_of_one_job_or_a_stack_without_teams_has_no_team_lines(capsys, tmp_path,
                                                                      scheduler):
    assert run(capsys, "status", "--outputs-file", teams_file(tmp_path), "42")[1] == \
        "JOB  STATE\n"
    assert run(capsys, "status", "--outputs-file", teams_file(tmp_path, teams=NO_TEAMS))[1] == \
        "JOB  STATE\n"
    assert [c[0] for c in scheduler.calls] == ["status", "status"]


# --- usage ---------------------------------------------------------------------------------

PERIOD = ["--since", "2026-11-01", "--until", "2026-12-01"]
RECORDS = [UsageRecord("research", "trn1", "11", 2, 3 * HOUR),
           UsageRecord("research", "cpu", "12", 1, 2 * HOUR),
           UsageRecord("platform", "trn1", "13", 1, 4 * HOUR),
           UsageRecord("platform", "trn2", "14", 1, 2 * HOUR)]


def usage(capsys, tmp_path, *argv, orchestrator="hyperpod-slurm"):
    path = teams_file(tmp_path, orchestrator, pools=MIXED)  # trn1, trn2 (no price), cpu
    return run(capsys, "usage", "--outputs-file", path, *PERIOD, *argv)


def test_usage_prices_each_teams_node_hours(capsys, tmp_path, scheduler):
    scheduler.records = RECORDS
    code, out, _ = usage(capsys, tmp_path, orchestrator="eks")
    assert code == ExitCode.OK
    lines = out.splitlines()
    assert lines[0] == "usage 2026-11-01 00:00 to 2026-12-01 00:00 UTC"
    assert [line.split() for line in lines[2:8]] == [
        ["platform", "trn1", "trn1.32xlarge", "1", "4.00", "128.0", "86.00"],
        ["platform", "trn2", "trn2.48xlarge", "1", "2.00", "256.0", "n/a"],
        ["research", "trn1", "trn1.32xlarge", "1", "6.00", "192.0", "129.00"],
        ["research", "cpu", "m7i.8xlarge", "1", "2.00", "0.0", "3.23"],
        ["total", "platform", "2", "6.00", "384.0", "n/a"],
        ["total", "research", "2", "8.00", "192.0", "132.23"]]
    assert lines[8].startswith("prices: offline table of ")
    assert "HyperPod" not in lines[8]
    (name, period, teams), = [c for c in scheduler.calls if c[0] == "usage"]
    assert (period.start.isoformat(), period.end.isoformat()) == (
        "2026-11-01T00:00:00+00:00", "2026-12-01T00:00:00+00:00")
    assert teams == teams_of("eks")


def test_usage_on_hyperpod_says_its_prices_are_a_lower_bound(capsys, tmp_path, scheduler):
    scheduler.records = RECORDS[:1]
    code, out, _ = usage(capsys, tmp_path, "--json")
    assert code == ExitCode.OK
    data = json.loads(out)
    assert data["prices"].endswith("; EC2 On-Demand prices of the same types, a lower bound "
                                   "for HyperPod's ml. instances")
    assert (data["since"], data["until"]) == ("2026-11-01T00:00:00+00:00",
                                              "2026-12-01T00:00:00+00:00")
    assert data["usage"] == [{"team": "research", "pool": "trn1",
                              "instance_type": "trn1.32xlarge", "jobs": 1, "node_hours": 6.0,
                              "neuron_core_hours": 192.0, "cost_usd": 129.0}]


def test_usage_of_one_team(capsys, tmp_path, scheduler):
    scheduler.records = RECORDS
    code, out, _ = usage(capsys, tmp_path, "--team", "platform")
    assert code == ExitCode.OK
    assert {line.split()[0] for line in out.splitlines()[2:-1]} == {"platform", "total"}


@pytest.mark.parametrize("argv, teams, message, fix", [
    (["--team", "ops"], None,
     "--team 'ops' names no team of this stack; its teams: research (default), platform",
     "leave --team out for every team, or name one `trn-ultracluster teams` lists"),
    (["--team", "ops"], NO_TEAMS,
     "stack TrnUltraCluster has no teams: its scheduler keeps no per-team records to count "
     "(usage reads Kueue's Workloads or Slurm accounting, which the stack sets up with teams)",
     "add `teams` to the configuration and deploy (docs/teams.md)"),
    ([], NO_TEAMS,
     "stack TrnUltraCluster has no teams: its scheduler keeps no per-team records to count "
     "(usage reads Kueue's Workloads or Slurm accounting, which the stack sets up with teams)",
     "add `teams` to the configuration and deploy (docs/teams.md)"),
    (["--since", "2026-12-01"], None,
     "--since 2026-12-01 00:00:00 UTC must be before --until 2026-12-01 00:00:00 UTC",
     "e.g. --since 2026-11-01 --until 2026-12-01"),
])
def test_bad_usage_input_is_refused_before_the_scheduler(capsys, tmp_path, scheduler, argv,
                                                         teams, message, fix):
    path = teams_file(tmp_path, teams=teams)
    code, _, err = run(capsys, "usage", "--outputs-file", path, "--until", "2026-12-01", *argv)
    assert code == ExitCode.USAGE
    assert err.splitlines() == [f"error: {message}", f"fix: {fix}"]
    assert scheduler.calls == []


def test_usage_without_scheduler_records_says_so():
    """The backends' default (every backend of an orchestrator with teams overrides it)."""
    from trn_ultracluster.cli.backends.standalone import StandaloneBackend
    from trn_ultracluster.cli.errors import CliError
    from trn_ultracluster.cli.usage import parse_period
    from trn_ultracluster.contracts.teams import TeamsInfo

    backend = StandaloneBackend(None, None, lambda: None)
    with pytest.raises(CliError) as err:
        backend.usage(parse_period("7d", None), TeamsInfo())
    assert (err.value.message, err.value.fix) == (
        "usage is not available with the standalone job backend: it keeps no per-team "
        "records", "see docs/teams.md")


def test_the_teams_pools_are_the_profiles():
    """The helper's pools are profiles/teams.yaml's (the Teams quotas name them)."""
    assert [q.pool for q in teams_of().teams[0].quotas] == [p[0] for p in TEAMS_POOLS]


def test_without_nodes_a_non_borrowing_teams_job_takes_its_quota(capsys, tmp_path, jobs_made,
                                                                  never_sent):
    """trn1 runs 3 nodes (desired): platform's job takes its 1, research's (borrowing) 3."""
    assert submit(capsys, tmp_path, "--team", "platform")[0] == ExitCode.OK
    assert submit(capsys, tmp_path)[0] == ExitCode.OK
    assert [(j.team.name, j.nodes) for j in jobs_made] == [("platform", 1), ("research", 3)]
