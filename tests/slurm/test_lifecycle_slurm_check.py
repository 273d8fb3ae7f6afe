"""The Slurm part of the HyperPod lifecycle script against the real slurmctld of
``conftest.py``: on the controller, ``on_init_complete.sh`` reports whether slurmctld serves
the stack's partitions (it starts no daemon: HyperPod does) and, on a teams stack, makes Slurm
enforce the teams. Everything else the script does (AWS, mount, users) runs against the
stubs of ``tests/orchestrators/hyperpod_slurm/test_lifecycle_scripts.py``; ``scontrol`` and
``sacctmgr`` are real."""

from __future__ import annotations

import json

import pytest

from tests.slurm.conftest import PARTITION, PARTITIONS
from trn_ultracluster.contracts.hyperpod import JobEnv
from tests.orchestrators.hyperpod_slurm.test_lifecycle_scripts import CLUSTER, CONTROLLER_IP, STUBS, make_node

pytestmark = pytest.mark.slurm


def run_on_controller(tmp_path, slurm, partitions: str, check_s: str):
    cluster = json.loads(json.dumps(CLUSTER))
    cluster["env"][JobEnv.PARTITIONS.value] = partitions
    node = make_node(tmp_path, stubs=tuple(s for s in STUBS if s != "scontrol"), cluster=cluster)
    return node(CONTROLLER_IP, SLURM_CONF=slurm.env["SLURM_CONF"], TRN_SLURM_CHECK_S=check_s)


def test_controller_sees_the_partitions_slurmctld_serves(tmp_path, slurm):
    result = run_on_controller(tmp_path, slurm, PARTITION, "30")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"slurmctld serves the partitions {PARTITION}" in result.stdout


def test_controller_warns_about_a_partition_slurmctld_does_not_serve(tmp_path, slurm):
    result = run_on_controller(tmp_path, slurm, f"{PARTITION},gpu", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: slurmctld does not serve partition(s) gpu after 2s" in result.stdout
    assert result.stdout.rstrip().endswith("on_init_complete done")


def test_controller_of_a_teams_stack_converges_on_the_teams_slurm_has(tmp_path, slurm):
    """The lifecycle script on the controller of a teams stack, against the real slurmctld,
    slurmdbd and sacctmgr (``conftest.py`` set the same teams up at the start, as a first
    run would have): a rerun finds the settings included already (no slurmctld restart:
    ``systemctl`` stays a stub that is never called) and ``slurm_teams.py apply`` succeeds
    without changing an association."""
    from tests.slurm.accounting import teams_file
    from tests.orchestrators.hyperpod_slurm.test_lifecycle_scripts import calls

    assoc = ("sacctmgr", "-n", "-P", "show", "assoc", "format=account,user,partition,grptres,"
             "qos,defaultqos")
    before = slurm.run(*assoc)
    cluster = json.loads(json.dumps(CLUSTER))
    cluster["env"][JobEnv.PARTITIONS.value] = ",".join(PARTITIONS)
    node = make_node(tmp_path, stubs=(*(s for s in STUBS if s != "scontrol"), "systemctl"),
                     cluster=cluster)
    (node.lcs_dir / "slurm_teams.json").write_text(json.dumps(teams_file()))
    result = node(CONTROLLER_IP, SLURM_CONF=slurm.env["SLURM_CONF"], TRN_SLURM_CHECK_S="30")
    assert f"slurmctld serves the partitions {','.join(PARTITIONS)}" in result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Slurm enforces the teams of {node.lcs_dir}/slurm_teams.json" in result.stdout
    assert not calls(node, "systemctl")
    assert slurm.run(*assoc) == before
