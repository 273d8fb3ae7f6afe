"""The checks of ``submit`` and ``smoke-test`` arguments, made once before any backend gets
the job: node count within the pool (and 1 without EFA), a recipe that runs with
``train``, data and output directories on the shared file system, the job name, and options
every backend honours (``--env`` and ``--time``)."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.cli.helpers import outputs_values, run, write_outputs
from trn_ultracluster.cli.backends import BACKENDS
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.contracts.recipes import RECIPES

GOOD = {"--recipe": "llama-1b", "--steps": "10", "--data-dir": "/fsx/datasets/wiki"}


@pytest.fixture
def never_sent(monkeypatch):
    """Fail the test if the CLI tries to reach the cluster, whatever the backend."""
    def refuse(*_):
        raise AssertionError("the job was sent to the cluster")

    for backend in BACKENDS.values():
        monkeypatch.setattr(backend, "connect", refuse)


def submit(capsys, tmp_path, orchestrator="eks", *extra, dry_run=True, **options):
    path = write_outputs(tmp_path, outputs_values(orchestrator))
    args = {**GOOD, **options}
    argv = ["submit", "--outputs-file", str(path), "--name", "job-a"]
    argv += [x for kv in args.items() for x in kv if kv[1] is not None]
    return run(capsys, *argv, *(["--dry-run"] if dry_run else []), *extra)


@pytest.mark.parametrize("orchestrator", ["eks", "hyperpod-slurm"])
@pytest.mark.parametrize("options, message", [
    ({"--nodes": "17"}, "--nodes 17 is more than pool trainium (trn1.32xlarge) holds: its "
                        "nodes.max is 16"),
    ({"--nodes": "0"}, "--nodes must be at least 1, got 0"),
    ({"--recipe": "gpt-5"}, "--recipe must be one of bert-large, bert-tiny, llama-1b, llama-8b, "
                            "llama-tiny, got: 'gpt-5'"),
    ({"--recipe": "llama-8b"}, "recipe llama-8b uses tensor parallelism 32 / pipeline "
                               "parallelism 1: on this stack's XLA training stack it runs with "
                               "`python -m trn_train nxd-config`, not `train`"),
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
    ({"--image": "not an image uri"}, "--image 'not an image uri' is not a container image "
                                      "reference: it must be [registry/]repository[:tag][@digest]"),
    ({"--image": "Registry.example.com/Repo:v1"}, "--image 'Registry.example.com/Repo:v1' is "
                                                  "not a container image reference"),
    ({"--image": "repo:" + "t" * 129}, f"--image 'repo:{'t' * 129}' is not a container image "
                                       "reference"),
    ({"--image": "repo@sha256:abc"}, "--image 'repo@sha256:abc' is not a container image "
                                     "reference"),
    ({"--image": ""}, "--image '' is not a container image reference"),
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


def test_single_node_type_refuses_multi_node(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("eks", "trn1.2xlarge"))
    code, _, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--recipe",
                       "llama-tiny", "--steps", "1", "--data-dir", "/fsx/d", "--nodes", "2")
    assert code == ExitCode.USAGE
    assert "trn1.2xlarge has no EFA: multi-node jobs need an EFA instance type" in err


def test_smoke_test_on_a_type_without_efa_names_every_efa_type(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("standalone", "trn1.2xlarge"))
    code, _, err = run(capsys, "smoke-test", "--outputs-file", str(path), "--dry-run")
    assert code == ExitCode.USAGE
    assert "trn1.2xlarge has no EFA: the 2-node smoke test needs an EFA type" in err
    assert ("use one of trn1.32xlarge, trn1n.32xlarge, trn2.3xlarge, trn2.48xlarge, "
            "trn2u.48xlarge") in err  # the catalog's EFA types, trn2.3xlarge's one interface too


@pytest.mark.parametrize("orchestrator", ["eks", "hyperpod-slurm"])
@pytest.mark.parametrize("command", ["submit", "smoke-test"])
def test_a_bad_job_name_is_refused_the_same_on_every_backend(capsys, tmp_path, never_sent,
                                                             orchestrator, command):
    path = write_outputs(tmp_path, outputs_values(orchestrator))
    argv = [command, "--outputs-file", str(path), "--name", "Job_A"]
    if command == "submit":
        argv += [x for kv in GOOD.items() for x in kv]
    code, _, err = run(capsys, *argv)
    assert code == ExitCode.USAGE
    assert "error: job name 'Job_A' must be 1-63 lower-case letters, digits and '-'" in err
    assert "fix: fix the arguments (trn-ultracluster submit --help)" in err


@pytest.mark.parametrize("image", [
    "ubuntu",
    "ubuntu:24.04",
    "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04",
    "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn-ultracluster:0123abcd",
    "localhost:5000/team/train__v2:latest",
    "registry.example.com/a/b@sha256:" + "0" * 64,
])
def test_image_references_of_the_grammar_are_accepted(image):
    from trn_ultracluster.cli.job_args import check_image

    assert check_image(image) == image


def test_an_image_name_over_255_characters_is_refused():
    from trn_ultracluster.cli.errors import CliError
    from trn_ultracluster.cli.job_args import check_image

    check_image("r/" + "a" * 253)
    with pytest.raises(CliError, match="at most 255 characters"):
        check_image("r/" + "a" * 254 + ":tag")
