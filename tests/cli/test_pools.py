"""Node pools in the job CLI's stack commands: ``pools`` lists them as the ``Pools`` output
holds them; ``status --pool``, ``scale --pool`` and ``smoke-test --pool`` choose one
(default: the only Trainium pool), refuse a pool that does not exist or does not fit, and
hand the backend the pool (``None`` on a stack deployed before pools)."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import run
from tests.cli.pool_helpers import (  # noqa: F401 (fixtures)
    IMAGES,
    MIXED,
    backend_calls,
    jobs_made,
    mixed_file,
    never_sent,
)
from tests.cli.test_smoke import log_line
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.cli.smoke import smoke_launch
from trn_ultracluster.contracts.pools import parse_pools

LISTED = "trn1 (trn1.32xlarge), trn2 (trn2.48xlarge), cpu (m7i.8xlarge, CPU)"
ONE_TRAINIUM = tuple(p for p in MIXED if p[0] != "trn2")
BACKENDS = ("hyperpod-slurm", "eks", "hyperpod-eks", "standalone")


@pytest.mark.parametrize("orchestrator, where", [
    ("hyperpod-slurm", "partition trn2; instance groups trn2"),
    ("eks", "node groups TrnUltraCluster-trn2-0,TrnUltraCluster-trn2-1"),
    ("standalone", "Auto Scaling groups TrnUltraCluster-Nodestrn2-A,TrnUltraCluster-Nodestrn2-B"),
    ("hyperpod-eks", "instance groups trn2"),
])
def test_pools_lists_every_pool_and_where_its_nodes_are(capsys, tmp_path, orchestrator, where):
    code, out, _ = run(capsys, "pools", "--outputs-file", mixed_file(tmp_path, orchestrator))
    assert code == ExitCode.OK
    lines = out.splitlines()
    assert lines[1].split() == ["POOL", "TYPE", "KIND", "NODES", "NEURON", "WHERE"]
    rows = {line.split()[0]: line.split(None, 5) for line in lines[2:5]}
    assert rows["trn2"][:5] == ["trn2", "trn2.48xlarge", "trainium", "0/0/4", "native"]
    assert rows["trn2"][5] == where
    assert rows["cpu"][:5] == ["cpu", "m7i.8xlarge", "cpu", "0/1/2", "-"]
    assert lines[5] == ("no default pool: 2 Trainium pools (trn1, trn2), so submit, scale and "
                        "smoke-test need --pool NAME")


def test_pools_marks_the_default_pool_as_sinfo_marks_the_default_partition(capsys, tmp_path):
    code, out, _ = run(capsys, "pools", "--outputs-file", mixed_file(tmp_path, pools=ONE_TRAINIUM))
    assert code == ExitCode.OK
    names = [line.split()[0] for line in out.splitlines()[2:4]]
    assert names == ["trn1*", "cpu"]
    assert out.splitlines()[-1] == "* default of submit, scale and smoke-test without --pool"


def test_pools_json_is_what_the_stack_wrote(capsys, tmp_path):
    path = mixed_file(tmp_path, "eks")
    code, out, _ = run(capsys, "pools", "--outputs-file", path, "--json")
    assert code == ExitCode.OK
    written = json.loads(json.loads(open(path).read())["TrnUltraCluster"]["Pools"])
    assert parse_pools(out) == parse_pools(json.dumps(written))
    assert json.loads(out)[0]["node_groups"] == ["TrnUltraCluster-trn1-0", "TrnUltraCluster-trn1-1"]


def test_a_stack_deployed_before_pools_has_one_pool_of_its_outputs(capsys, tmp_path):
    code, out, _ = run(capsys, "pools", "--outputs-file", mixed_file(tmp_path, Pools=None))
    assert code == ExitCode.OK
    assert out.splitlines()[2].split() == ["trainium*", "trn1.32xlarge", "trainium", "0/1/2",
                                           "xla", "-"]


def test_status_passes_the_pool_and_shows_every_pool_without_one(capsys, tmp_path,
                                                                   backend_calls):
    path = mixed_file(tmp_path)
    assert run(capsys, "status", "--outputs-file", path, "--pool", "cpu")[1] == "jobs of cpu\n"
    assert run(capsys, "status", "--outputs-file", path, "7")[1] == "jobs of every pool\n"
    assert [(c[0], c[1], c[2] and c[2].name) for c in backend_calls] == [
        ("status", None, "cpu"), ("status", "7", None)]
    code, _, err = run(capsys, "status", "--outputs-file", path, "--pool", "gpu")
    assert code == ExitCode.USAGE
    assert f"error: --pool 'gpu' names no pool of this stack; its pools: {LISTED}" in err
    assert len(backend_calls) == 2


def test_a_stack_without_the_pools_output_gives_the_backend_no_pool(capsys, tmp_path,
                                                                     backend_calls):
    """Its nodes carry no pool label and its partition is not named after the pool: the
    backend keeps its behaviour from before pools."""
    path = mixed_file(tmp_path, Pools=None)
    assert run(capsys, "status", "--outputs-file", path, "--pool", "trainium")[0] == ExitCode.OK
    assert run(capsys, "scale", "--outputs-file", path, "--nodes", "2")[0] == ExitCode.OK
    assert backend_calls == [("status", None, None), ("scale", 2, None)]


@pytest.mark.parametrize("orchestrator", BACKENDS)
def test_scale_sizes_the_named_pool(capsys, tmp_path, backend_calls, orchestrator):
    path = mixed_file(tmp_path, orchestrator)
    code, out, err = run(capsys, "scale", "--outputs-file", path, "--pool", "cpu", "--nodes", "2")
    assert code == ExitCode.OK, err
    assert out == "cpu: 2 nodes\n"
    (method, nodes, pool), = backend_calls
    assert (method, nodes, pool.name, pool.instance_type) == ("scale", 2, "cpu", "m7i.8xlarge")


def test_scale_defaults_to_the_only_trainium_pool(capsys, tmp_path, backend_calls):
    path = mixed_file(tmp_path, pools=ONE_TRAINIUM)
    assert run(capsys, "scale", "--outputs-file", path, "--nodes", "0")[1] == "trn1: 0 nodes\n"


@pytest.mark.parametrize("argv, message", [
    (["--nodes", "1"], "this stack has 2 Trainium pools: choose one with --pool NAME; its "
                       f"pools: {LISTED}"),
    (["--pool", "trn3", "--nodes", "1"], f"--pool 'trn3' names no pool of this stack; its "
                                         f"pools: {LISTED}"),
    (["--pool", "trn1", "--nodes", "3"], "--nodes 3 is more than pool trn1 (trn1.32xlarge) "
                                         "holds: its nodes.max is 2"),
    (["--pool", "cpu", "--nodes", "-1"], "--nodes must be at least 0, got -1"),
])
def test_scale_refuses_before_the_backend_is_asked(capsys, tmp_path, backend_calls, argv,
                                                    message):
    code, _, err = run(capsys, "scale", "--outputs-file", mixed_file(tmp_path), *argv)
    assert code == ExitCode.USAGE
    assert f"error: {message}" in err and "\nfix: " in err
    assert backend_calls == []


@pytest.mark.parametrize("orchestrator", BACKENDS)
def test_smoke_test_runs_on_the_named_trainium_pool(capsys, tmp_path, jobs_made, orchestrator):
    code, _, err = run(capsys, "smoke-test", "--outputs-file", mixed_file(tmp_path, orchestrator),
                       "--pool", "trn2", "--dry-run", "--name", "smoke-a")
    assert code == ExitCode.OK, err
    job, = jobs_made
    assert (job.pool.name, job.nodes, job.image) == ("trn2", 2, IMAGES["native"])
    assert job.launch.program == smoke_launch("native").program
    assert job.launch.nproc_per_node == 64  # trn2.48xlarge's logical NeuronCores (LNC 2)


@pytest.mark.parametrize("argv, message", [
    ([], "this stack has 2 Trainium pools: choose one with --pool NAME"),
    (["--pool", "cpu"], "--pool 'cpu' is a CPU pool (m7i.8xlarge), and this needs NeuronCores; "
                        "Trainium pools: trn1, trn2"),
    (["--pool", "nope"], f"--pool 'nope' names no pool of this stack; its pools: {LISTED}"),
])
def test_smoke_test_refuses_a_pool_it_cannot_test(capsys, tmp_path, never_sent, argv, message):
    code, _, err = run(capsys, "smoke-test", "--outputs-file", mixed_file(tmp_path), *argv)
    assert code == ExitCode.USAGE
    assert f"error: {message}" in err


def test_smoke_test_needs_two_nodes_in_the_pool(capsys, tmp_path, never_sent):
    pools = (("trn1", "trn1.32xlarge", (0, 1, 1), "xla"),) + MIXED[2:]
    code, _, err = run(capsys, "smoke-test", "--outputs-file", mixed_file(tmp_path, pools=pools))
    assert code == ExitCode.USAGE
    assert "error: the smoke test runs on 2 nodes, and pool trn1 has at most 1" in err


def test_smoke_test_judges_a_log_against_the_pools_instance(capsys, tmp_path):
    """trn2.48xlarge's 3,200 Gbit/s, not the main pool's 800."""
    log = tmp_path / "smoke.log"
    log.write_text(log_line(512 << 20, 128, (512 << 20) * 2 * 127 / 128 / 200e9) + "\n")
    code, out, _ = run(capsys, "smoke-test", "--outputs-file", mixed_file(tmp_path), "--pool",
                       "trn2", "--from-log", str(log))
    assert code == ExitCode.OK, out
    assert "= 50% of the instance's 3200 Gbit/s" in out
