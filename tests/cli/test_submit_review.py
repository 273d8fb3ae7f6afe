"""What a new user's review of ``submit -- PROGRAM`` found, each now a behaviour: a script of
the working directory named without ``./``, launchers as PROGRAM, the job's own variables in
``--env``, ``--workdir /``, ``--nproc-per-node`` without torchrun, and Slurm's node 0 that is
not the rendezvous host."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from tests.cli.program_helpers import dry_run, make_workdir, node_script, run_line, submit
from trn_ultracluster.cli.backends.slurm import RANK_ZERO_CHECK
from trn_ultracluster.cli.errors import ExitCode


@pytest.mark.parametrize("launcher, expected", [
    ("none", ["./run.sh", "x"]), ("torchrun", ["--no-python", "./run.sh", "x"])])
def test_a_file_of_the_working_directory_runs_as_dot_slash_name(capsys, tmp_path, launcher,
                                                                expected):
    work = make_workdir(tmp_path / "w", {"run.sh": "#!/bin/bash\necho hi\n"},
                        executable=("run.sh",))
    printed, _ = dry_run(capsys, tmp_path, "standalone", "--workdir", str(work),
                         "--launcher", launcher, "--", "run.sh", "x")
    assert shlex.split(run_line(node_script("standalone", printed)))[-len(expected):] == expected


def test_a_file_of_the_working_directory_must_be_executable(capsys, tmp_path):
    work = make_workdir(tmp_path / "w", {"run.sh": "echo hi\n"})
    code, _, err = submit(capsys, tmp_path, "eks", "--dry-run", "--workdir", str(work),
                          "--launcher", "none", "--", "run.sh")
    assert code == ExitCode.USAGE and "./run.sh" in err and "not executable" in err


@pytest.mark.parametrize("program", [["torchrun", "train.py"], ["neuron_parallel_compile", "x"],
                                     ["/usr/bin/torchrun", "train.py"], ["-c", "print(1)"],
                                     ["--", "train.py"]])
def test_launchers_and_options_as_program_are_refused(capsys, tmp_path, program):
    work = make_workdir(tmp_path / "w")
    code, _, err = submit(capsys, tmp_path, "eks", "--dry-run", "--workdir", str(work), "--",
                          *program)
    assert code == ExitCode.USAGE, err
    assert f"PROGRAM {'is' if 'torchrun' in program[0] or 'neuron' in program[0] else 'starts'}" in err


@pytest.mark.parametrize("name", ["TRN_OUTPUT_DIR", "TRN_NODE_RANK", "MASTER_PORT", "RANK",
                                  "WORLD_SIZE"])
def test_the_jobs_own_variables_cannot_be_set_with_env(capsys, tmp_path, name):
    work = make_workdir(tmp_path / "w")
    code, _, err = submit(capsys, tmp_path, "eks", "--dry-run", "--workdir", str(work),
                          "--env", f"{name}=x", "--", "train.py")
    assert code == ExitCode.USAGE and f"--env {name}: set by the job itself" in err


def test_replacing_the_stacks_compile_flags_is_warned_about(capsys, tmp_path):
    work = make_workdir(tmp_path / "w")
    code, _, err = submit(capsys, tmp_path, "eks", "--dry-run", "--workdir", str(work),
                          "--env", "NEURON_CC_FLAGS=--model-type=transformer", "--", "train.py")
    assert code == 0
    assert "warning: --env NEURON_CC_FLAGS replaces the stack's value" in err
    assert "no --cache_dir" in err


@pytest.mark.parametrize("where", ["/", "home"])
def test_root_and_home_are_not_working_directories(capsys, tmp_path, monkeypatch, where):
    monkeypatch.setenv("HOME", str(tmp_path))
    directory = "/" if where == "/" else str(tmp_path)
    code, _, err = submit(capsys, tmp_path, "eks", "--dry-run", "--workdir", directory, "--",
                          "train.py")
    assert code == ExitCode.USAGE and "the whole directory would be packed" in err


def test_nproc_per_node_needs_torchrun(capsys, tmp_path):
    work = make_workdir(tmp_path / "w", {"run.sh": "#!/bin/bash\n"}, executable=("run.sh",))
    code, _, err = submit(capsys, tmp_path, "eks", "--dry-run", "--workdir", str(work),
                          "--launcher", "none", "--nproc-per-node", "2", "--", "./run.sh")
    assert code == ExitCode.USAGE and "--launcher none starts no torchrun" in err


@pytest.mark.parametrize("node, master, fails", [("node1", "node1", False),
                                                 ("node2", "node1", True)])
def test_slurm_node_zero_that_is_not_the_rendezvous_host_stops_at_once(capsys, tmp_path, node,
                                                                       master, fails):
    work = make_workdir(tmp_path / "w")
    printed, _ = dry_run(capsys, tmp_path, "hyperpod-slurm", "--workdir", str(work), "--",
                         "train.py")
    assert RANK_ZERO_CHECK in node_script("hyperpod-slurm", printed).splitlines()
    done = subprocess.run(["bash", "-c", RANK_ZERO_CHECK + "\necho passed"], capture_output=True,
                          text=True, env={"SLURM_NODEID": "0", "SLURMD_NODENAME": node,
                                          "MASTER_ADDR": master, "PATH": "/usr/bin:/bin"})
    assert (done.returncode != 0) == fails and ("passed" in done.stdout) != fails
    if fails:
        assert "node 0 of this step is node2, not node1" in done.stderr


@pytest.mark.parametrize("orchestrator", ["hyperpod-slurm", "eks"])
def test_a_largest_requirements_file_keeps_the_node_script_one_argument(capsys, tmp_path,
                                                                       orchestrator):
    """Every node runs the node script as one ``bash -c`` argument (srun, the TrainJob's
    command), which Linux caps at 131,072 bytes (MAX_ARG_STRLEN, 32 pages,
    include/uapi/linux/binfmts.h): a requirements file at the cap must fit, base64 and all."""
    from trn_ultracluster.cli.requirements_file import REQUIREMENTS_CAP_BYTES

    work = make_workdir(tmp_path / "w")
    line, lines = "package-{:05d}==1.0.0\n", []
    while sum(map(len, lines)) + len(line.format(0)) <= REQUIREMENTS_CAP_BYTES:
        lines.append(line.format(len(lines)))
    (tmp_path / "req.txt").write_text("".join(lines))
    assert REQUIREMENTS_CAP_BYTES - len(line.format(0)) < (tmp_path / "req.txt").stat().st_size
    printed, _ = dry_run(capsys, tmp_path, orchestrator, "--workdir", str(work), "--requirements",
                         str(tmp_path / "req.txt"), "--setup", "x" * 2000, "--", "train.py")
    assert len(node_script(orchestrator, printed).encode()) < 131072
