"""Teams on hyperpod-slurm: the ``slurm_teams.json`` the stack uploads (only with teams), the
``Teams`` output, and ``scripts/slurm_teams.py`` (limits, QOS, sacctmgr commands, slurm.conf
include) with a recorded sacctmgr. The same script against a real Slurm: ``tests/slurm``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from trn_ultracluster.contracts.teams import parse_teams
from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import LIFECYCLE_ASSETS

sys.path.insert(0, str(LIFECYCLE_ASSETS))
import slurm_teams  # noqa: E402

TEAMS_PROFILE = REPO_ROOT / "profiles" / "teams.yaml"


@pytest.fixture(scope="module")
def teams_slurm(synth):
    """profiles/teams.yaml on hyperpod-slurm (tests/stacks/conftest.py TEAMS)."""
    return synth(TEAMS_PROFILE, orchestrator="hyperpod-slurm")


def staged(s) -> dict[str, Path]:
    """File name -> its staged copy, of every source of the lifecycle upload."""
    (upload,) = s.resources("Custom::CDKBucketDeployment").values()
    out = {}
    for key in upload["Properties"]["SourceObjectKeys"]:
        folder = s.outdir / f"asset.{key.removesuffix('.zip')}"
        if folder.is_dir():
            out.update({p.name: p for p in folder.iterdir()})
    return out


def test_teams_stack_uploads_the_teams_file_and_the_script(teams_slurm):
    files = staged(teams_slurm)
    assert "slurm_teams.py" in files and "slurm_teams.sh" in files
    data = json.loads(files["slurm_teams.json"].read_text())
    assert data == {
        "user": "ubuntu", "preemption": "lower-priority",
        "priority_classes": [{"name": "training", "weight": 100},
                             {"name": "experiment", "weight": 10}],
        "partitions": [{"name": "trn1", "pool": "trn1", "nodes": 3},
                       {"name": "cpu", "pool": "cpu", "nodes": 2}],
        "teams": [
            {"name": "research", "default": True, "priority": "experiment", "borrow": True,
             "lend": True, "quotas": {"trn1": 2, "cpu": 1}},
            # 32 NeuronCores of trn1.32xlarge: one node
            {"name": "platform", "default": False, "priority": "training", "borrow": False,
             "lend": False, "quotas": {"trn1": 1, "cpu": 1}}]}
    limits = {(a.account, a.partition): a.nodes for a in slurm_teams.associations(data)}
    # research borrows: the pool less platform's quota, which platform does not lend
    assert limits == {("research", "trn1"): 2, ("research", "cpu"): 1,
                      ("platform", "trn1"): 1, ("platform", "cpu"): 1}


def test_teams_output_names_each_teams_account_and_each_class_qos(teams_slurm):
    info = parse_teams(teams_slurm.output("Teams"))
    assert {t.name: t.account for t in info.teams} == {"research": "research",
                                                       "platform": "platform"}
    assert [(p.name, p.scheduled_as) for p in info.priority_classes] == [
        ("training", "training"), ("experiment", "experiment")]


def test_a_stack_without_teams_uploads_neither(synth):
    files = staged(synth(orchestrator="hyperpod-slurm"))
    assert not {"slurm_teams.json", "slurm_teams.py", "slurm_teams.sh"} & set(files)
    assert "on_init_complete.sh" in files


# --- limits ------------------------------------------------------------------------------

def team(name, quota, borrow=True, lend=True, priority="experiment", default=False):
    return {"name": name, "quotas": {"p": quota}, "borrow": borrow, "lend": lend,
            "priority": priority, "default": default}


@pytest.mark.parametrize("b_borrow, b_lend, a_limit, b_limit", [
    (True, True, 10, 10),     # both borrow, both lend: the whole pool each
    (True, False, 6, 10),     # b keeps its 4: a gets 10 - 4; b may borrow a's lent 6
    (False, True, 10, 4),     # b cannot borrow: its quota; it lends, so a may use all
    (False, False, 6, 4),     # b neither: its quota, always free for it
])
def test_node_limit_per_borrow_and_lend(b_borrow, b_lend, a_limit, b_limit):
    a, b = team("a", 3), team("b", 4, borrow=b_borrow, lend=b_lend)
    assert slurm_teams.node_limit([a, b], a, "p", 10) == a_limit
    assert slurm_teams.node_limit([a, b], b, "p", 10) == b_limit


def test_a_teams_own_quota_does_not_shrink_its_limit_and_limits_stay_in_the_pool():
    a = team("a", 3, lend=False)  # a keeps its own quota: not subtracted from its own limit
    c = team("c", 0, borrow=False)
    assert slurm_teams.node_limit([a, c], a, "p", 5) == 5
    assert slurm_teams.node_limit([a, c], c, "p", 5) == 0  # no quota, no borrowing: nothing
    big = team("big", 9, borrow=False)
    assert slurm_teams.node_limit([big], big, "p", 5) == 5  # never more than the pool
    assert slurm_teams.node_limit([a, team("d", 9, lend=False)], a, "p", 5) == 0
    assert slurm_teams.node_limit([a], team("e", 0), "other", 2) == 2  # a pool without quota


def test_fairshare_is_the_quota_in_nodes_at_least_one():
    assert slurm_teams.fairshare({"quotas": {"a": 2, "b": 1}}) == 3
    assert slurm_teams.fairshare({"quotas": {"a": 0}}) == 1


# --- QOS and slurm.conf ------------------------------------------------------------------

DATA = {"user": "ubuntu", "preemption": "lower-priority",
        "priority_classes": [{"name": "urgent", "weight": 100}, {"name": "training", "weight": 50},
                             {"name": "scavenger", "weight": 0}],
        "partitions": [{"name": "trn", "pool": "trn", "nodes": 4}],
        "teams": [{"name": "alpha", "default": False, "priority": "training", "borrow": True,
                   "lend": True, "quotas": {"trn": 2}},
                  {"name": "beta", "default": True, "priority": "scavenger", "borrow": False,
                   "lend": False, "quotas": {"trn": 2}}]}


def test_each_class_preempts_the_lower_ones_only_with_preemption():
    q = slurm_teams.qos_settings(DATA)
    assert q["urgent"][:2] == ["Priority=100", "Preempt=training,scavenger"]
    assert q["training"][:2] == ["Priority=50", "Preempt=scavenger"]
    assert q["scavenger"][:2] == ["Priority=0", "Preempt="]  # '' restores the default: none
    never = slurm_teams.qos_settings({**DATA, "preemption": "never"})
    assert all(s[1] == "Preempt=" for s in never.values())


def test_slurm_conf_lines_enforce_limits_and_order_by_class():
    lines = slurm_teams.slurm_conf_lines(DATA)
    assert "AccountingStorageType=accounting_storage/slurmdbd" in lines
    assert "AccountingStorageEnforce=associations,limits,qos,safe" in lines
    assert "PriorityType=priority/multifactor" in lines
    assert ["PreemptType=preempt/qos", "PreemptMode=REQUEUE"] == lines[-2:]
    never = slurm_teams.slurm_conf_lines({**DATA, "preemption": "never"})
    assert ["PreemptType=preempt/none", "PreemptMode=OFF"] == never[-2:]
    # one class step (1/100 of the QOS weight) outweighs fair share and age together
    assert (slurm_teams.PRIORITY_WEIGHT_QOS / 100 >
            slurm_teams.PRIORITY_WEIGHT_FAIRSHARE + slurm_teams.PRIORITY_WEIGHT_AGE)


def test_install_adds_the_include_last_once_and_says_when_it_changed(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=c\nAccountingStorageType=accounting_storage/none\n")
    assert slurm_teams.install(DATA, str(conf)) is True
    include = tmp_path / slurm_teams.INCLUDE_FILE
    assert include.read_text().splitlines()[1:] == slurm_teams.slurm_conf_lines(DATA)[1:]
    assert conf.read_text().splitlines()[-1] == f"Include {slurm_teams.INCLUDE_FILE}"
    assert slurm_teams.install(DATA, str(conf)) is False  # nothing to restart for
    # HyperPod rewrote slurm.conf with a line after ours: the include moves back to the end
    conf.write_text(conf.read_text() + "PartitionName=new Nodes=x\n")
    assert slurm_teams.install(DATA, str(conf)) is True
    lines = conf.read_text().splitlines()
    assert lines[-1] == f"Include {slurm_teams.INCLUDE_FILE}"
    assert lines.count(f"Include {slurm_teams.INCLUDE_FILE}") == 1
    assert slurm_teams.install({**DATA, "preemption": "never"}, str(conf)) is True


# --- sacctmgr ----------------------------------------------------------------------------

class FakeSacctmgr:
    """Records sacctmgr argv; answers ``show`` from :attr:`rows`, changes with ``answer``."""

    def __init__(self, rows=None, answer=(0, "")):
        self.rows = rows or {}
        self.answer = answer
        self.calls: list[list[str]] = []

    def __call__(self, argv):
        self.calls.append(argv)
        if argv[:3] == ["-n", "-P", "show"]:
            return subprocess.CompletedProcess(argv, 0, "\n".join(self.rows.get(argv[3], [])), "")
        code, text = self.answer(argv) if callable(self.answer) else self.answer
        return subprocess.CompletedProcess(argv, code, text, "")

    def changes(self):
        return [c[1:] for c in self.calls if c[0] == "-i"]


def test_apply_on_an_empty_database_adds_then_sets_everything():
    fake = FakeSacctmgr()
    slurm_teams.apply(DATA, fake)
    changes = fake.changes()
    adds = [c for c in changes if c[0] == "add"]
    assert adds == [["add", "qos", "urgent"], ["add", "qos", "training"], ["add", "qos", "scavenger"],
                    ["add", "account", "alpha", "Organization=trn-ultracluster",
                     "Description=trn-ultracluster team alpha"],
                    ["add", "account", "beta", "Organization=trn-ultracluster",
                     "Description=trn-ultracluster team beta"],
                    ["add", "user", "ubuntu", "account=alpha", "partition=trn"],
                    ["add", "user", "ubuntu", "account=beta", "partition=trn"]]
    assert ["modify", "user", "where", "name=ubuntu", "account=alpha", "partition=trn", "set",
            "GrpTRES=node=2", "QOS=urgent,training,scavenger",
            "DefaultQOS=training"] in changes  # 4 - beta's 2 (beta does not lend)
    assert ["modify", "user", "where", "name=ubuntu", "account=beta", "partition=trn", "set",
            "GrpTRES=node=2", "QOS=urgent,training,scavenger", "DefaultQOS=scavenger"] in changes
    assert ["modify", "account", "where", "name=alpha", "set", "Fairshare=2"] in changes
    assert changes[-1] == ["modify", "user", "where", "name=ubuntu", "set", "DefaultAccount=beta"]
    assert not any(c[0] == "delete" for c in changes)


def test_apply_again_adds_nothing_takes_nothing_modified_and_removes_only_its_own():
    rows = {"qos": ["normal|Normal QOS default|0|", "urgent|trn-ultracluster priority class|100|"
                    "scavenger,training", "training|trn-ultracluster priority class|50|scavenger",
                    "scavenger|trn-ultracluster priority class|0|",
                    "old|trn-ultracluster priority class|5|", "site|their own QOS|0|"],
            "account": ["root|root", "alpha|trn-ultracluster", "beta|trn-ultracluster",
                        "gone|trn-ultracluster", "theirs|someone"],
            "assoc": ["root|", "alpha|trn", "beta|trn", "alpha|cpu"]}
    fake = FakeSacctmgr(rows, answer=(1, " Nothing modified"))
    done = slurm_teams.apply(DATA, fake)
    changes = fake.changes()
    assert not any(c[0] == "add" for c in changes)
    # a QOS that has its settings is left alone (Slurm refuses to set a Preempt list again)
    assert not any(c[:2] == ["modify", "qos"] for c in changes)
    assert [c for c in changes if c[0] == "delete"] == [
        ["delete", "user", "ubuntu", "where", "account=alpha", "partition=cpu"],
        ["delete", "account", "gone"], ["delete", "qos", "old"]]
    assert "delete account gone" in done


def test_only_the_qos_settings_that_differ_are_set():
    settings = ["Priority=100", "Preempt=b,c", "Description=d"]
    assert slurm_teams._qos_changes(settings, ["a", "d", "100", "c,b"]) == []
    assert slurm_teams._qos_changes(settings, ["a", "d", "90", "c"]) == ["Priority=100",
                                                                         "Preempt=b,c"]
    assert slurm_teams._qos_changes(["Preempt="], ["a", "d", "1", "b"]) == ["Preempt="]
    assert slurm_teams._qos_changes(settings, None) == settings


def test_a_failing_sacctmgr_stops_apply_and_a_failing_delete_is_left_for_later():
    fake = FakeSacctmgr(answer=(1, "sacctmgr: error: Problem talking to the database"))
    with pytest.raises(slurm_teams.TeamsError, match="Problem talking to the database"):
        slurm_teams.apply(DATA, fake)
    rows = {"account": ["gone|trn-ultracluster"]}

    def answer(argv):
        if argv[1] == "delete":
            return 1, "sacctmgr: error: Job(s) active, cancel job(s) before remove"
        return 0, ""

    done = slurm_teams.apply(DATA, FakeSacctmgr(rows, answer))
    assert any(line.startswith("WARNING: left in place") and "Job(s) active" in line
               for line in done)


def test_the_command_line_reports_a_bad_file_with_status_2(tmp_path, capsys):
    bad = tmp_path / "slurm_teams.json"
    bad.write_text(json.dumps({"user": "ubuntu"}))
    assert slurm_teams.main(["--teams", str(bad), "apply"]) == 2
    assert "not a teams file" in capsys.readouterr().err


# --- on_init_complete.sh on the controller, against stubs -------------------------------

CONTROLLER_STUBS = {
    # scontrol: slurmctld's slurm.conf for `show config`; answers everything else
    "scontrol": '#!/bin/bash\necho "scontrol $*" >> "$STUB_LOG"\n'
                'if [[ "$1 $2" == "show config" ]]; then echo "SLURM_CONF = $STUB_SLURM_CONF"; fi\n',
    # sacctmgr: slurmdbd answers unless STUB_NO_DBD; `show` lists nothing
    "sacctmgr": '#!/bin/bash\necho "sacctmgr $*" >> "$STUB_LOG"\n'
                'if [[ -n "${STUB_NO_DBD:-}" ]]; then echo "sacctmgr: error: Problem talking '
                'to the database: Connection refused" >&2; exit 1; fi\n',
    "systemctl": '#!/bin/bash\necho "systemctl $*" >> "$STUB_LOG"\n',
}


@pytest.fixture
def controller(tmp_path):
    """The controller of a teams stack: its lifecycle dir has slurm_teams.json (the file of
    :data:`DATA`), Slurm's commands are stubs, slurm.conf is in ``tmp_path``."""
    from tests.orchestrators.hyperpod_slurm.test_lifecycle_scripts import make_node

    node = make_node(tmp_path)
    (node.lcs_dir / "slurm_teams.json").write_text(json.dumps(DATA))
    for name, text in CONTROLLER_STUBS.items():
        (node.bin / name).write_text(text)
        (node.bin / name).chmod(0o755)
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=c\n")
    node.conf = conf
    return node


def lifecycle_calls(node, name):
    from tests.orchestrators.hyperpod_slurm.test_lifecycle_scripts import calls

    return calls(node, name)


def test_controller_with_teams_includes_the_settings_restarts_once_and_applies(controller):
    from tests.orchestrators.hyperpod_slurm.test_lifecycle_scripts import CONTROLLER_IP

    result = controller(CONTROLLER_IP, STUB_SLURM_CONF=str(controller.conf))
    assert result.returncode == 0, result.stdout + result.stderr
    assert controller.conf.read_text().splitlines()[-1] == f"Include {slurm_teams.INCLUDE_FILE}"
    assert lifecycle_calls(controller, "systemctl") == ["systemctl restart slurmctld"]
    sacctmgr = lifecycle_calls(controller, "sacctmgr")
    assert sacctmgr[0] == "sacctmgr -n -P show cluster"  # waited for slurmdbd first
    assert "sacctmgr -i add account alpha Organization=trn-ultracluster Description=trn-" \
           "ultracluster team alpha" in sacctmgr
    assert "Slurm enforces the teams of" in result.stdout
    result = controller(CONTROLLER_IP, STUB_SLURM_CONF=str(controller.conf))  # a rerun
    assert result.returncode == 0, result.stdout + result.stderr
    assert lifecycle_calls(controller, "systemctl") == ["systemctl restart slurmctld"]


def test_controller_with_teams_fails_when_slurm_accounting_does_not_answer(controller):
    from tests.orchestrators.hyperpod_slurm.test_lifecycle_scripts import CONTROLLER_IP

    result = controller(CONTROLLER_IP, STUB_SLURM_CONF=str(controller.conf), STUB_NO_DBD="1",
                        TRN_ACCOUNTING_WAIT_S="0")
    assert result.returncode == 1
    assert "ERROR: Slurm accounting (slurmdbd) does not answer `sacctmgr show cluster`" in result.stdout
    assert not lifecycle_calls(controller, "systemctl")
    assert controller.conf.read_text() == "ClusterName=c\n"


def test_a_worker_never_touches_slurm_accounting(controller):
    from tests.orchestrators.hyperpod_slurm.test_lifecycle_scripts import WORKER_IPS

    result = controller(WORKER_IPS[0], STUB_SLURM_CONF=str(controller.conf))
    assert result.returncode == 0, result.stdout + result.stderr
    assert not lifecycle_calls(controller, "sacctmgr")
