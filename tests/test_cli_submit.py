"""`submit` checks everything it can before anything is sent (issue 10): node count within
the stack, a recipe that runs with `train`, data and output directories on the shared file
system, and options each orchestrator honours (`--env` and `--time` on both)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from tests.test_cli import fake_aws_env, outputs_values, run, write_outputs  # noqa: F401
from trn_ultracluster.cli import main as cli
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.contracts.recipes import RECIPES

GOOD = {"--recipe": "llama-1b", "--steps": "10", "--data-dir": "/fsx/datasets/wiki"}


@pytest.fixture
def never_sent(monkeypatch):
    """Fail the test if the CLI tries to reach the cluster."""
    def refuse(*_):
        raise AssertionError("the job was sent to the cluster")

    monkeypatch.setattr(cli, "_job_client", refuse)


def submit(capsys, tmp_path, orchestrator="eks", *extra, dry_run=True, **options):
    path = write_outputs(tmp_path, outputs_values(orchestrator))
    args = {**GOOD, **options}
    argv = ["submit", "--outputs-file", str(path), "--name", "job-a"]
    argv += [x for kv in args.items() for x in kv if kv[1] is not None]
    return run(capsys, *argv, *(["--dry-run"] if dry_run else []), *extra)


@pytest.mark.parametrize("orchestrator", ["eks", "hyperpod-slurm"])
@pytest.mark.parametrize("options, message", [
    ({"--nodes": "17"}, "--nodes must be between 1 and the stack's NodeCountMax (16), got 17"),
    ({"--nodes": "0"}, "--nodes must be between 1 and the stack's NodeCountMax (16), got 0"),
    ({"--recipe": "gpt-5"}, "--recipe must be one of bert-large, bert-tiny, llama-1b, llama-8b, "
                            "llama-tiny, got: 'gpt-5'"),
    ({"--recipe": "llama-8b"}, "recipe llama-8b uses tensor parallelism 32 / pipeline "
                               "parallelism 1: it runs with `python -m trn_train nxd-config`, "
                               "not `train`"),
    ({"--data-dir": "datasets/wiki"}, "--data-dir datasets/wiki must be an absolute path under "
                                      "/fsx (the shared file system every node mounts)"),
    ({"--data-dir": "/data/wiki"}, "--data-dir /data/wiki must be an absolute path under /fsx"),
    ({"--data-dir": "/fsx"}, "--data-dir /fsx must be an absolute path under /fsx"),
    ({"--data-dir": "/fsxdata/wiki"}, "--data-dir /fsxdata/wiki must be an absolute path under /fsx"),
    ({"--data-dir": "/fsx/../etc"}, "--data-dir /fsx/../etc must be an absolute path under /fsx"),
    ({"--output-dir": "/tmp/out"}, "--output-dir /tmp/out must be an absolute path under /fsx"),
    ({"--time": "soon"}, "--time 'soon' is not a Slurm time"),
    ({"--time": "0"}, "--time must be more than 0"),
    ({"--env": "1X=a"}, "--env '1X=a': the name must be letters, digits and '_', not starting "
                        "with a digit"),
])
def test_submit_rejects_before_sending(capsys, tmp_path, never_sent, orchestrator, options, message):
    code, out, err = submit(capsys, tmp_path, orchestrator, dry_run=False, **options)
    assert code == ExitCode.USAGE, out
    assert f"error: {message}" in err, err
    assert "\nfix: " in err


def test_unknown_recipe_error_lists_the_recipes(capsys, tmp_path, never_sent):
    _, _, err = submit(capsys, tmp_path, **{"--recipe": "nope"})
    for name in RECIPES:
        assert name in err


def test_every_data_parallel_recipe_is_accepted(capsys, tmp_path):
    for name, recipe in RECIPES.items():
        code, _, err = submit(capsys, tmp_path, **{"--recipe": name})
        assert (code == 0) is (not recipe.needs_model_parallel), (name, err)


def test_default_nodes_of_a_stack_scaled_to_zero_is_one(capsys, tmp_path):
    values = outputs_values("eks")
    values["NodeCountDesired"] = "0"
    path = write_outputs(tmp_path, values)
    code, out, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run",
                         *[x for kv in GOOD.items() for x in kv])
    assert code == 0, err
    assert yaml.safe_load(out)["spec"]["trainer"]["numNodes"] == 1


ENV_VALUE = "it's \"quoted\" $HOME `date` \\ end"


def test_env_is_exported_in_the_sbatch_script(capsys, tmp_path):
    """HyperPod honours --env: exported after the stack's env file, quoted for bash, so srun
    passes it into the container like the Neuron environment."""
    code, script, err = submit(capsys, tmp_path, "hyperpod-slurm", "--env", f"MY_VAR={ENV_VALUE}",
                               "--env", "NEURON_RT_LOG_LEVEL=INFO")
    assert code == 0, err
    lines = script.splitlines()
    exports = [ln for ln in lines if ln.startswith("export MY_VAR=") or
               ln.startswith("export NEURON_RT_LOG_LEVEL=")]
    assert len(exports) == 2
    assert lines.index(exports[0]) > next(i for i, ln in enumerate(lines) if ln.startswith("source "))
    done = subprocess.run(["bash", "-c", "\n".join(exports) + '\nprintf %s "$MY_VAR"'],
                          capture_output=True, text=True)
    assert done.stdout == ENV_VALUE
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    shellcheck = shutil.which("shellcheck") or str(__import__("pathlib").Path(
        __import__("sys").executable).parent / "shellcheck")
    checked = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


def test_env_on_eks_is_in_the_trainer(capsys, tmp_path):
    code, out, err = submit(capsys, tmp_path, "eks", "--env", f"MY_VAR={ENV_VALUE}")
    assert code == 0, err
    assert yaml.safe_load(out)["spec"]["trainer"]["env"] == [{"name": "MY_VAR", "value": ENV_VALUE}]


@pytest.mark.parametrize("value, seconds", [
    ("90", 5400), ("90:30", 5430), ("2:00:00", 7200), ("2-00:00:00", 172800), ("1-12", 129600),
    ("1-0:30", 88200),
])
def test_time_on_eks_is_the_trainjobs_deadline(capsys, tmp_path, value, seconds):
    """Slurm's --time formats (sbatch man page); TrainJob spec.activeDeadlineSeconds."""
    code, out, err = submit(capsys, tmp_path, "eks", "--time", value)
    assert code == 0, err
    assert yaml.safe_load(out)["spec"]["activeDeadlineSeconds"] == seconds
    code, script, err = submit(capsys, tmp_path, "hyperpod-slurm", "--time", value)
    assert code == 0, err
    assert re.search(rf"^#SBATCH --time={re.escape(value)}$", script, re.M)


def test_smoke_test_time_on_eks(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, out, err = run(capsys, "smoke-test", "--outputs-file", str(path), "--dry-run",
                         "--time", "30")
    assert code == 0, err
    assert yaml.safe_load(out)["spec"]["activeDeadlineSeconds"] == 1800
