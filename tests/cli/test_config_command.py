"""``trn-ultracluster config show`` and ``config check``: offline, the layer of every key, the
same errors and warnings as synth (issue "a newcomer's first hour")."""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT
from trn_ultracluster.cli.main import main


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)


def test_show_names_the_layer_that_set_each_key(capsys):
    assert main(["config", "show", "--profile", "profiles/dev.yaml",
                 "-c", "fsx.storage_capacity_gib=2400"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("# effective configuration")
    by_key = {line.split(":")[0].strip(): line for line in lines[1:]}
    assert by_key["storage_capacity_gib"].split("#")[-1].strip() == "-c"
    assert "2400" in by_key["storage_capacity_gib"]
    assert by_key["instance_type"].endswith("# profile")
    assert by_key["vpc_cidr"].endswith("# default")
    assert by_key["deployment_type"].endswith("# profile")


def test_show_annotates_a_list_of_mappings_once(capsys):
    assert main(["config", "show", "--profile", "profiles/mixed.yaml"]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("pools:")][0].endswith(
        "# profile")
    assert "- name: trn2" in out


def test_check_passes_a_valid_profile_and_summarizes_it(capsys):
    assert main(["config", "check", "--profile", "profiles/teams.yaml",
                 "-c", "orchestrator=hyperpod-slurm"]) == 0
    out = capsys.readouterr().out
    assert "configuration OK" in out and "hyperpod-slurm" in out and "cpu m7i.8xlarge" in out


def test_check_prints_a_bad_keys_error_as_synth_does_and_exits_2(capsys):
    assert main(["config", "check", "-c", "fsx.storage_capacty_gib=1"]) == 2
    err = capsys.readouterr().err
    assert ("error: fsx.storage_capacty_gib = 1: must be one of the known keys here: "
            "data_compression, data_repository") in err
    assert "configuration invalid: 1 error(s)" in err


def test_check_prints_rule_errors_and_warnings(capsys):
    assert main(["config", "check", "--profile", "profiles/teams.yaml",
                 "-c", "orchestrator=standalone"]) == 2
    err = capsys.readouterr().err
    assert "error: teams = ['research', 'platform']: must be left out with orchestrator " \
           "'standalone'" in err


def test_show_refuses_an_invalid_configuration_with_the_fix(capsys):
    assert main(["config", "show", "-c", "nodes.max=-1"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "config check" in err


def test_a_c_item_without_equals_is_a_usage_error(capsys):
    assert main(["config", "check", "-c", "nodes.max"]) == 2
    assert "-c 'nodes.max' must be KEY=VALUE" in capsys.readouterr().err
