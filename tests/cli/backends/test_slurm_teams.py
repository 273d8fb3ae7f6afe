"""Teams on the ``hyperpod-slurm`` job backend, with Slurm's answers recorded from the real
Slurm 22.05 of ``tests/slurm`` (two teams, a job waiting at its team's limit): the sbatch
script's account and QOS, ``status`` lines per team, and ``usage`` from sacct."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from tests.cli.backends.test_hyperpod_slurm import Answers  # noqa: F401  (its fixture's transport)
from tests.cli.backends.test_hyperpod_slurm import controller  # noqa: F401
from tests.cli.helpers import outputs_values, run, write_outputs
from trn_ultracluster.cli.backends.slurm_teams import (
    parse_sections,
    parse_usage,
    team_status_lines,
    usage_script,
)
from trn_ultracluster.cli.usage import Period
from trn_ultracluster.contracts.teams import TeamsInfo, parse_teams

TEAMS = {
    "teams": [
        {"name": "research", "default": True, "priority": "experiment", "borrow": True,
         "lend": True, "account": "research",
         "quotas": [{"pool": "trn", "nodes": 1, "neuron_cores": 32, "neuron_devices": 16},
                    {"pool": "cpu", "nodes": 1, "neuron_cores": 0, "neuron_devices": 0}]},
        {"name": "platform", "default": False, "priority": "training", "borrow": False,
         "lend": True, "account": "platform",
         "quotas": [{"pool": "trn", "nodes": 1, "neuron_cores": 32, "neuron_devices": 16},
                    {"pool": "cpu", "nodes": 0, "neuron_cores": 0, "neuron_devices": 0}]}],
    "priority_classes": [{"name": "training", "weight": 100, "scheduler_name": "training"},
                         {"name": "experiment", "weight": 10, "scheduler_name": "experiment"}],
    "preemption": "lower-priority"}
INFO: TeamsInfo = parse_teams(json.dumps(TEAMS))
POOLS = [{"name": "trn", "instance_type": "trn1.32xlarge", "accelerated": True,
          "nodes": {"min": 0, "desired": 2, "max": 2}, "neuron_stack": "xla",
          "partition": "trn", "instance_groups": "trn"},
         {"name": "cpu", "instance_type": "m7i.8xlarge", "accelerated": False,
          "nodes": {"min": 0, "desired": 1, "max": 1}, "neuron_stack": "",
          "partition": "cpu", "instance_groups": "cpu"}]
STATUS = """#trn-section squeue
research|cpu|RUNNING|1|3|r1|None|training
platform|trn|PENDING|1|2|p2|AssocGrpNodeLimit|training
platform|trn|RUNNING|1|1|p1|None|training
#trn-section assoc
platform|cpu|node=0
platform|trn|node=1
research|cpu|node=1
research|trn|node=2
root||
#trn-section sshare
root||
 root|root|1.000000
 platform||
  platform|root|0.000000
  platform|root|0.000000
 research||
  research|root|0.500000
  research|root|0.000000
"""
"""``team_status_script("root")`` on the test cluster, recorded (squeue, sacctmgr, sshare)."""
T0 = 1795782905 - 86400
USAGE = f"""1|platform|trn|1|{T0 - 4}|Unknown|RUNNING
2|platform|trn|1|Unknown|Unknown|PENDING
3|research|cpu|1|{T0}|{T0 + 60}|COMPLETED
4|root|trn|2|{T0 - 905}|{T0 - 605}|COMPLETED
5|research|dev|1|{T0}|{T0 + 20}|CANCELLED by 0
"""
"""``usage_script`` on the test cluster, recorded, its times a day earlier (so that the running
job has run longer than the periods here); the last three rows added: a job that ended, a job
outside the teams, a job in a partition of no pool."""


def test_team_status_lines_say_use_quota_limit_and_why_jobs_wait():
    lines = team_status_lines(INFO, {"trn": "trn", "cpu": "cpu"}, parse_sections(STATUS))
    assert lines == [
        "team research (account research, priority experiment, fair-share factor 0.500)",
        "  pool trn (partition trn): 0 node(s) in use, quota 1, limit 2; 0 running, 0 pending",
        "  pool cpu (partition cpu): 1 node(s) in use, quota 1, limit 1; 1 running, 0 pending",
        "team platform (account platform, priority training, fair-share factor 0.000)",
        "  pool trn (partition trn): 1 node(s) in use, quota 1, limit 1; 1 running, 1 pending",
        "  pool cpu (partition cpu): 0 node(s) in use, quota 0, limit 0; 0 running, 0 pending",
        "  waiting: 2 p2 nodes=1 qos=training partition=trn reason=AssocGrpNodeLimit"]


def test_team_status_without_associations_says_there_is_no_limit():
    lines = team_status_lines(INFO, {"trn": "trn", "cpu": "cpu"}, parse_sections(""))
    assert lines[0] == "team research (account research, priority experiment)"
    assert lines[1].endswith("quota 1, limit none; 0 running, 0 pending")


def test_usage_records_clip_to_the_period_and_name_team_and_pool():
    period = Period(datetime.fromtimestamp(T0 + 30, timezone.utc),
                    datetime.fromtimestamp(T0 + 90, timezone.utc))
    records = parse_usage(USAGE, INFO, {"trn": "trn", "cpu": "cpu"}, period)
    assert [(r.team, r.pool, r.job, r.nodes, r.seconds) for r in records] == [
        ("platform", "trn", "1", 1, 60.0),   # still running: until the period's end
        ("research", "cpu", "3", 1, 30.0),   # ended 60 s after it started: 30 s inside
    ]
    wide = Period(datetime.fromtimestamp(T0 - 1905, timezone.utc),
                  datetime.fromtimestamp(T0 + 95, timezone.utc))
    records = parse_usage(USAGE, INFO, {"trn": "trn", "cpu": "cpu"}, wide)
    assert [(r.team, r.pool, r.job, r.seconds) for r in records] == [
        ("platform", "trn", "1", 99.0), ("research", "cpu", "3", 60.0),
        ("", "trn", "4", 300.0), ("research", "", "5", 20.0)]


def test_usage_script_asks_sacct_for_every_users_runs_in_utc_epoch_seconds():
    period = Period(datetime(2026, 11, 1, tzinfo=timezone.utc),
                    datetime(2026, 12, 1, 6, 30, tzinfo=timezone.utc))
    script = usage_script(period)
    assert script == ("TZ=UTC SLURM_TIME_FORMAT=%s sacct -a -X -D -P -n -S 2026-11-01T00:00:00 "
                      "-E 2026-12-01T06:30:00 --format=JobID,Account,Partition,NNodes,Start,"
                      "End,State\n")


def stack(tmp_path):
    values = outputs_values("hyperpod-slurm")
    values["Pools"] = json.dumps([{**p, "image_uri": values["TrainingImageUri"]} for p in POOLS])
    values["Teams"] = json.dumps(TEAMS)
    return write_outputs(tmp_path, values)


def test_submit_puts_the_job_in_its_teams_account_at_its_class_qos(capsys, tmp_path):
    path = stack(tmp_path)
    code, out, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--name",
                         "job-a", "--pool", "trn", "--nodes", "1", "--launcher", "none",
                         "--team", "platform", "--", "sleep", "1")
    assert code == 0, err
    assert "#SBATCH --account=platform\n#SBATCH --qos=training\n" in out
    code, out, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--name",
                         "job-a", "--pool", "cpu", "--nodes", "1", "--launcher", "none",
                         "--priority", "training", "--", "sleep", "1")
    assert code == 0, err
    assert "#SBATCH --account=research\n#SBATCH --qos=training\n" in out  # the default team


def test_a_stack_without_teams_submits_without_account_or_qos(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("hyperpod-slurm"))
    code, out, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--name",
                         "job-a", "--launcher", "none", "--", "sleep", "1")
    assert code == 0, err
    assert "--account=" not in out and "--qos=" not in out


def test_status_and_usage_through_the_cli(capsys, tmp_path, controller):
    path = stack(tmp_path)
    controller.answers += ["", STATUS]
    code, out, err = run(capsys, "status", "--outputs-file", str(path))
    assert code == 0, err
    assert "  waiting: 2 p2 nodes=1 qos=training partition=trn reason=AssocGrpNodeLimit" in out
    assert controller.scripts[1].startswith("echo '#trn-section squeue'")
    controller.answers.append(USAGE)
    code, out, err = run(capsys, "usage", "--outputs-file", str(path), "--since",
                         "2026-11-26", "--until", "2026-11-27", "--json")
    assert code == 0, err
    rows = {(r["team"], r["pool"]): r for r in json.loads(out)["usage"]}
    assert rows[("research", "cpu")]["node_hours"] == 60 / 3600
    assert rows[("", "trn")]["node_hours"] == 2 * 300 / 3600
    assert "sacct -a -X -D" in controller.scripts[-1]
