"""``submit --pool``: the job runs in one node pool, with the pool's node limit, image,
NeuronCores and Neuron stack; a CPU pool runs programs (data preparation: ``python -m
trn_train prepare-data`` reading and writing /fsx), not the bundled trainer; every bad
``--pool`` is refused before anything is uploaded or sent."""

from __future__ import annotations

import base64
import json
import shlex

import pytest
import yaml

from tests.cli.helpers import run
from tests.cli.pool_helpers import (  # noqa: F401 (fixtures)
    IMAGES,
    MIXED,
    jobs_made,
    mixed_file,
    never_sent,
)
from tests.cli.program_helpers import BACKENDS, make_workdir, node_script, run_line
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.contracts.pools import POOL_LABEL

LISTED = "trn1 (trn1.32xlarge), trn2 (trn2.48xlarge), cpu (m7i.8xlarge, CPU)"
RECIPE = ["--recipe", "llama-tiny", "--steps", "10", "--data-dir", "/fsx/datasets/wiki"]
PREPARE = ["python", "-m", "trn_train", "prepare-data", "--input", "/fsx/raw/wiki",
           "--tokenizer", "/fsx/tokenizers/llama", "--out", "/fsx/datasets/wiki",
           "--seq-len", "2048"]
"""The data preparation of docs/walkthrough.md, as a job on the CPU pool."""


def submit(capsys, tmp_path, *argv, orchestrator="hyperpod-slurm", **values):
    """``submit --outputs-file <mixed stack> --name job-a ARGV``; a PROGRAM runs in a working
    directory of ``train.py``."""
    work = ["--workdir", str(make_workdir(tmp_path / "work"))] if "--" in argv else []
    return run(capsys, "submit", "--outputs-file", mixed_file(tmp_path, orchestrator, **values),
               "--name", "job-a", *work, *argv)


@pytest.mark.parametrize("argv, message", [
    (["--", "train.py"], f"this stack has 2 Trainium pools: choose one with --pool NAME; its "
                         f"pools: {LISTED}"),
    (["--pool", "trn3", "--", "train.py"], f"--pool 'trn3' names no pool of this stack; its "
                                           f"pools: {LISTED}"),
    (["--pool", "trn1", "--nodes", "3", "--", "train.py"],
     "--nodes 3 is more than pool trn1 (trn1.32xlarge) holds: its nodes.max is 2"),
    (["--pool", "cpu", "--nodes", "3", "--launcher", "none", "--", "python", "train.py"],
     "--nodes 3 is more than pool cpu (m7i.8xlarge) holds: its nodes.max is 2"),
    (["--pool", "cpu", *RECIPE], "--recipe runs the bundled trainer on NeuronCores, and pool "
                                 "cpu is a CPU pool (m7i.8xlarge, no NeuronCores)"),
    (["--pool", "cpu", "--precompile", "--", "train.py"],
     "--precompile runs neuron_parallel_compile, which compiles for NeuronCores, and pool cpu "
     "is a CPU pool (m7i.8xlarge, no NeuronCores)"),
    (["--pool", "cpu", "--precompile-args=--max-steps 2", "--", "train.py"],
     "--precompile runs neuron_parallel_compile"),
    (["--pool", "trn2", "--precompile", "--", "train.py"],
     "--precompile runs neuron_parallel_compile, which extracts the graphs of the XLA stack; "
     "this stack trains on the native stack"),
])
def test_a_bad_pool_is_refused_before_anything_is_uploaded_or_sent(capsys, tmp_path, never_sent,
                                                                   argv, message):
    code, out, err = submit(capsys, tmp_path, *argv)
    assert code == ExitCode.USAGE, out
    assert f"error: {message}" in err, err
    assert "\nfix: " in err


def test_the_fixes_name_what_to_do(capsys, tmp_path, never_sent):
    _, _, err = submit(capsys, tmp_path, "--pool", "trn1", "--nodes", "3", "--", "train.py")
    assert ("fix: run it on 2 nodes or fewer, on a larger pool (--pool NAME; `trn-ultracluster "
            "pools` lists them), or raise the pool's nodes.max in the configuration and deploy "
            "(then `trn-ultracluster scale --pool trn1 --nodes N`") in err
    _, _, err = submit(capsys, tmp_path, "--pool", "cpu", *RECIPE)
    assert ("fix: train on a Trainium pool (--pool trn1, --pool trn2); on pool cpu run a program, "
            "e.g. --launcher none -- python -m trn_train prepare-data ...") in err


@pytest.mark.parametrize("orchestrator", BACKENDS)
def test_a_recipe_on_a_trainium_pool_takes_its_type_stack_and_image(capsys, tmp_path, jobs_made,
                                                                    orchestrator):
    code, out, err = submit(capsys, tmp_path, "--pool", "trn2", "--dry-run", *RECIPE,
                            orchestrator=orchestrator)
    assert code == ExitCode.OK, err
    job, = jobs_made
    assert (job.pool.name, job.nodes, job.image) == ("trn2", 1, IMAGES["native"])
    program = job.launch.program
    assert program[program.index("--backend") + 1] == "native"
    assert program[program.index("--instance-type") + 1] == "trn2.48xlarge"
    assert job.launch.nproc_per_node == 64


def test_the_default_pool_is_the_only_trainium_one(capsys, tmp_path, jobs_made):
    pools = tuple(p for p in MIXED if p[0] != "trn2")
    work = make_workdir(tmp_path / "work")
    code, _, err = run(capsys, "submit", "--outputs-file", mixed_file(tmp_path, pools=pools),
                       "--dry-run", "--workdir", str(work), "--", "train.py")
    assert code == ExitCode.OK, err
    job, = jobs_made
    assert (job.pool.name, job.nodes, job.launch.nproc_per_node) == ("trn1", 1, 32)
    assert job.image == IMAGES["xla"]


def test_image_overrides_the_pools(capsys, tmp_path, jobs_made):
    image = f"{IMAGES['xla'].rsplit(':', 1)[0]}:mine"
    code, _, err = submit(capsys, tmp_path, "--pool", "trn2", "--dry-run", "--image", image,
                          "--", "train.py")
    assert code == ExitCode.OK, err
    assert jobs_made[0].image == image


@pytest.mark.parametrize("argv, nproc", [([], 1), (["--nproc-per-node", "8"], 8)])
def test_torchrun_on_a_cpu_pool_starts_one_process_per_node_by_default(capsys, tmp_path,
                                                                       jobs_made, argv, nproc):
    code, _, err = submit(capsys, tmp_path, "--pool", "cpu", "--nodes", "2", "--dry-run", *argv,
                          "--", "train.py")
    assert code == ExitCode.OK, err
    job, = jobs_made
    assert (job.pool.name, job.nodes, job.launch.launcher) == ("cpu", 2, "torchrun")
    assert job.launch.nproc_per_node == nproc


def _record(script: str) -> dict:
    """The job record (trn-job.json) node 0 writes: the base64 JSON argument of its writer,
    ``python3 -c PROGRAM RECORD "${TRN_OUTPUT_DIR}/trn-job.json" "${TRN_RUN_ID}"``."""
    line = next(ln for ln in script.splitlines() if "/trn-job.json" in ln and "python3 -c" in ln)
    return json.loads(base64.b64decode(shlex.split(line)[3]))


@pytest.mark.parametrize("orchestrator", BACKENDS)
def test_data_preparation_runs_on_the_cpu_pool(capsys, tmp_path, jobs_made, orchestrator):
    """docs/walkthrough.md's job: the program once, with its arguments as given, in the main
    image (which has trn_train), recorded as the cpu pool's job; reading and writing /fsx."""
    code, printed, err = submit(capsys, tmp_path, "--pool", "cpu", "--launcher", "none",
                                "--dry-run", "--", *PREPARE, orchestrator=orchestrator)
    assert code == ExitCode.OK, err
    job, = jobs_made
    assert (job.pool.name, job.pool.accelerated, job.nodes) == ("cpu", False, 1)
    assert (job.image, job.launch.launcher, job.launch.program) == (IMAGES["xla"], "none",
                                                                    tuple(PREPARE))
    script = node_script(orchestrator, printed)
    assert shlex.split(run_line(script)) == PREPARE
    record = _record(script)
    assert (record["pool"], record["program"], record["nodes"]) == ("cpu", PREPARE, 1)


@pytest.mark.parametrize("orchestrator", ["hyperpod-slurm", "eks", "hyperpod-eks"])
def test_the_cpu_job_is_placed_on_the_cpu_pools_nodes(capsys, tmp_path, orchestrator):
    """What the backends make of ``JobRequest.pool`` (their own work, checked here once they
    honour it): Slurm's partition, the TrainJob's node selector and no Neuron resources (a
    CPU node has none, so the pod would never be scheduled). The standalone backend chooses
    the pool's nodes at submit, not in the dry run."""
    code, printed, err = submit(capsys, tmp_path, "--pool", "cpu", "--launcher", "none",
                                "--dry-run", "--", *PREPARE, orchestrator=orchestrator)
    assert code == ExitCode.OK, err
    if orchestrator == "hyperpod-slurm":
        assert "#SBATCH --partition=cpu" in printed.splitlines()
    elif orchestrator in ("eks", "hyperpod-eks"):
        assert "aws.amazon.com/neuron" not in printed
        if orchestrator == "eks":
            assert f"{POOL_LABEL}: cpu" in yaml.safe_dump(yaml.safe_load(printed))


def test_a_hyperpod_job_is_bounded_by_the_instances_its_pool_runs():
    """HyperPod runs a fixed count (the pool's nodes.desired, ``instances`` in the Pools
    output), not up to nodes.max: a job larger is refused before anything is uploaded."""
    from trn_ultracluster.cli.errors import CliError
    from trn_ultracluster.cli.job_args import check_nodes
    from trn_ultracluster.contracts.pools import PoolInfo

    pool = PoolInfo("trn2", "trn2.48xlarge", True, 0, 1, 4, "native", instances=1)
    check_nodes(1, pool)
    with pytest.raises(CliError) as err:
        check_nodes(2, pool)
    assert str(err.value).startswith(
        "--nodes 2 is more than pool trn2 (trn2.48xlarge) runs: its instance groups hold 1 "
        "instance(s) (HyperPod runs the pool's nodes.desired)")
    check_nodes(4, pool, least=0, scaling=True)  # scale is bounded by nodes.max
    eks_pool = PoolInfo("trn2", "trn2.48xlarge", True, 0, 1, 4, "native")
    check_nodes(4, eks_pool)  # nodes that scale: up to nodes.max
