"""``submit -- PROGRAM [ARGS]`` on every backend: the arguments and ``--env`` values reach the
program exactly as given, through each backend's wrapping (Slurm's here-document and
``bash -c``, the TrainJob's container command, the standalone job script), run here with
bash and a stand-in ``torchrun``; the dry runs of the four backends carry the same program,
arguments and snapshot; the TrainJob validates against the Trainer CRD and the scripts pass
``bash -n`` and shellcheck."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from tests.crds import trainjob_validator
from tests.cli.helpers import shellcheck
from tests.cli.program_helpers import (
    AWKWARD_ARGS as ARGS,
    BACKENDS,
    dry_run,
    make_workdir,
    node_script,
    recorder,
    run_line,
    run_with_stubs,
)

ENV = {"TRN_TEST_QUOTES": "it's \"q\" $HOME `date` * end\\", "TRN_TEST_LINES": "x\ny\tz",
       "TRN_TEST_TEXT": "naïve 日本", "TRN_TEST_EMPTY": ""}
LAUNCHER_OPTIONS = re.compile(r"^--(nnodes|nproc-per-node|node-rank|master-addr|master-port)=")
NODE_ENV = {  # what the backends' wrappers give the node script
    "hyperpod-slurm": {"SLURM_JOB_NUM_NODES": "2", "SLURM_NODEID": "1", "SLURM_JOB_ID": "7",
                       "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"},
    "eks": {"PET_NNODES": "2", "PET_NODE_RANK": "1", "PET_MASTER_ADDR": "10.0.0.1",
            "PET_MASTER_PORT": "29500"},
    "standalone": {"NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1",
                   "MASTER_PORT": "29500"},
}
NODE_ENV["hyperpod-eks"] = NODE_ENV["eks"]


def env_options() -> list[str]:
    return [f"--env={k}={v}" for k, v in ENV.items()]


def exports_and_run(script: str) -> list[str]:
    """The ``--env`` exports (with their shellcheck notes) and the run line of a node
    script: what puts the arguments and values in front of the program."""
    lines = script.rstrip("\n").splitlines()
    keep = [ln for ln in lines[:-1] if ln.startswith(tuple(f"export {k}=" for k in ENV))]
    return keep + [lines[-1]]


def program_argv(start: dict) -> list[str]:
    """A recorded ``torchrun`` start's program words (its launcher options removed)."""
    argv = list(start["argv"])
    while argv and LAUNCHER_OPTIONS.match(argv[0]):
        argv.pop(0)
    return argv


@pytest.mark.parametrize("orchestrator", BACKENDS)
def test_arguments_and_env_reach_the_program_as_given(capsys, tmp_path, orchestrator):
    work = make_workdir(tmp_path / "work")
    printed, _ = dry_run(capsys, tmp_path, orchestrator, "--workdir", str(work), "--name",
                         "job-a", "--nproc-per-node", "1", *env_options(), "--", "train.py",
                         *ARGS)
    script = node_script(orchestrator, printed)
    starts = run_with_stubs(exports_and_run(script), tmp_path, NODE_ENV[orchestrator])
    assert [s["name"] for s in starts] == ["torchrun"]
    assert program_argv(starts[0]) == ["train.py", *ARGS]
    assert {k: starts[0]["env"].get(k) for k in ENV} == ENV
    if orchestrator not in ("eks", "hyperpod-eks"):  # there torchrun reads PET_* itself
        assert starts[0]["argv"][:3] == ["--nnodes=2", "--nproc-per-node=1", "--node-rank=1"]


@pytest.mark.parametrize("orchestrator", BACKENDS)
def test_a_program_run_once_per_node_gets_its_arguments_too(capsys, tmp_path, orchestrator):
    work = make_workdir(tmp_path / "work", {"tool.py": "#!/usr/bin/env python3\n"},
                        executable=("tool.py",))
    printed, _ = dry_run(capsys, tmp_path, orchestrator, "--workdir", str(work), "--name",
                         "job-a", "--launcher", "none", "--", "tool.py", *ARGS)
    script = node_script(orchestrator, printed)
    assert "torchrun" not in run_line(script)
    recorder(tmp_path / "node-cwd", "tool.py")  # the snapshot's tool.py, as the node sees it
    starts = run_with_stubs([run_line(script)], tmp_path, NODE_ENV[orchestrator],
                            cwd=tmp_path / "node-cwd")
    assert [(s["name"], s["argv"]) for s in starts] == [("tool.py", ARGS)]


def _sha_and_archive(script: str) -> tuple[str, str]:
    sha = re.search(r"^export TRN_CODE_SHA256=([0-9a-f]{64}) ", script, re.M).group(1)
    archive = re.search(r"^trn_once .* trn_unpack (\S+) ", script, re.M).group(1)
    return sha, archive


def test_every_backend_runs_the_same_program_arguments_and_snapshot(capsys, tmp_path):
    """The issue's "done when": one working directory and command line, four dry runs."""
    work = make_workdir(tmp_path / "work")
    argv = ["--workdir", str(work), "--name", "job-a", "--nproc-per-node", "2",
            "--setup", "echo $HOSTNAME `hostname`", "--output-dir", "/fsx/runs/$x y",
            *env_options(), "--", "python", "train.py", *ARGS]
    seen = {}
    for orchestrator in BACKENDS:
        printed, err = dry_run(capsys, tmp_path, orchestrator, *argv)
        sha = re.search(r"^code: \S+ -> snapshot ([0-9a-f]{64}) \(2 files, ", err, re.M).group(1)
        script = node_script(orchestrator, printed)
        starts = run_with_stubs(exports_and_run(script), tmp_path, NODE_ENV[orchestrator])
        seen[orchestrator] = (sha, _sha_and_archive(script), program_argv(starts[0]))
        check_script(tmp_path, orchestrator, printed, script)
        if orchestrator in ("eks", "hyperpod-eks"):
            manifest = yaml.safe_load(printed)
            trainjob_validator().validate(manifest)
            assert manifest["metadata"]["annotations"]["trn-ultracluster/code-sha256"] == sha
            assert manifest["spec"]["trainer"]["numProcPerNode"] == 2
        if orchestrator == "hyperpod-slurm":
            assert f"#SBATCH --comment=code:{sha[:12]}" in printed.splitlines()
    sha = seen["eks"][0]
    expected = (sha, (sha, f"/fsx/trn-ultracluster/code/{sha}.tar.gz"), ["train.py", *ARGS])
    assert seen == {o: expected for o in BACKENDS}


def check_script(tmp_path, orchestrator: str, printed: str, script: str) -> None:
    """``bash -n`` and shellcheck: the printed script (Slurm, standalone) and the node script
    (every backend; on Slurm it is inside a here-document that shellcheck does not read)."""
    texts = {"node": script}
    if orchestrator in ("hyperpod-slurm", "standalone"):
        texts["printed"] = printed
    for kind, text in texts.items():
        path = tmp_path / f"{orchestrator}-{kind}.sh"
        path.write_text(text if text.startswith("#!") else "#!/bin/bash\n" + text,
                        encoding="utf-8")
        subprocess.run(["bash", "-n", str(path)], check=True)
        done = subprocess.run([shellcheck(), "-s", "bash", str(path)], capture_output=True,
                              text=True)
        assert done.returncode == 0, (kind, done.stdout)
