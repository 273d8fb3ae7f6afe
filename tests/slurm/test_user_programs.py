"""Users' own programs on the real two-node Slurm (``make test-slurm``): ``submit -- PROGRAM
ARGS`` packs the working directory, uploads it (moto's S3), the stand-in for the data
repository association shows it under ``/fsx``, and every node unpacks nothing but runs the
snapshot node 0 unpacked, with the requirements node 0 installed once, as the sbatch script
``submit`` wrote says (compared with ``--dry-run``).

The program imports a module from its own directory, reads its arguments and an ``--env``
value and all-reduces across the 4 ranks (2 nodes x 2 processes, gloo on CPU); each rank
writes what it saw, so the test can compare every rank's view with what was given.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zipfile
from pathlib import Path

import pytest

from tests.examples.helpers import (check_huggingface, check_pytorch_distributed,
                                    check_tutorial_run, check_tutorial_trial, examples_commands,
                                    program_argv)
from tests.slurm.conftest import SlurmCluster
from tests.slurm.harness import WORLD_SIZE, log_of, submit, wait_for_end
from trn_ultracluster.contracts.shared_storage import CODE_DIR, FSX_MOUNT_PATH, JOB_RECORD_FILE

pytestmark = pytest.mark.slurm

ARGS = ["--msg", "it's $HOME `id` *; echo no", "naïve 日本", "", "--", "two  spaces"]
"""Arguments no shell on the way may touch: quotes, ``$``, backquotes, ``*``, ``;``,
non-ASCII, an empty one, a ``--`` of the program's own, and a double space."""
ENV_VALUE = "a b $PATH `x` 'q'"

TRAIN_PY = '''\
"""A user's program: no import of the project, only its own module and torch."""
import json
import os
import sys

import torch
import torch.distributed as dist

import helper  # from the working directory

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
import tinypkg  # installed from --requirements

seen = {"rank": rank, "world": world, "argv": sys.argv[1:], "env": os.environ.get("MY_VALUE"),
        "cwd": os.getcwd(), "code": os.environ.get("TRN_CODE_SHA256"),
        "node": os.environ.get("TRN_NODE_RANK"), "sum": total.item(),
        "helper": helper.MARK, "tinypkg": tinypkg.VERSION}
out = os.path.join(os.environ["TRN_OUTPUT_DIR"], f"rank-{rank}.json")
with open(out + ".tmp", "w") as f:
    json.dump(seen, f)
os.replace(out + ".tmp", out)
print("program rank", rank, "sum", total.item(), flush=True)
dist.destroy_process_group()
'''


def wheel(directory: Path, name: str, version: str, module: str) -> Path:
    """A minimal pure-Python wheel (PEP 427: the package, ``METADATA``, ``WHEEL``,
    ``RECORD`` with each file's urlsafe-base64 SHA-256)."""
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": module,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The user's working directory (with what must not be shipped) and a requirements file
    that installs a wheel from a directory on ``/fsx`` (no index: CI may lack PyPI)."""
    root = tmp_path_factory.mktemp("project")
    (root / "train.py").write_text(TRAIN_PY)
    (root / "helper.py").write_text("MARK = 'helper from the snapshot'\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "checkpoints").mkdir()
    (root / "checkpoints" / "big.bin").write_bytes(b"\0" * 1024)
    (root / ".trnignore").write_text("checkpoints/\n")
    wheels = Path(FSX_MOUNT_PATH, "wheels")
    wheels.mkdir(parents=True, exist_ok=True)
    wheel(wheels, "tinypkg", "1.0", "VERSION = '1.0'\n")
    (root / "requirements.txt").write_text(f"--no-index\n--find-links {wheels}\ntinypkg==1.0\n")
    return root


def test_a_users_program_runs_on_every_rank_with_its_snapshot_args_and_env(
        slurm: SlurmCluster, cli, project: Path):
    name = "user-program"
    job_id, script = submit(cli, name, "--workdir", str(project), "--nodes", "2",
                            "--nproc-per-node", "2", "--requirements",
                            str(project / "requirements.txt"), "--env", f"MY_VALUE={ENV_VALUE}",
                            "--", "python", "train.py", *ARGS)
    code, status, _ = cli("status", str(job_id))
    sha = re.search(r"TRN_CODE_SHA256=([0-9a-f]{64})", script).group(1)
    assert code == 0 and f"code={sha[:12]}" in status, status
    assert wait_for_end(slurm, job_id) == "COMPLETED", log_of(job_id)[-4000:]

    output = Path(FSX_MOUNT_PATH, "runs", name)
    seen = [json.loads((output / f"rank-{r}.json").read_text()) for r in range(4)]
    for rank, view in enumerate(seen):
        assert view["rank"] == rank and view["world"] == 4 and view["sum"] == 10.0
        assert view["argv"] == ARGS and view["env"] == ENV_VALUE
        # the current directory is the snapshot (/fsx is a link here: compare resolved)
        assert view["code"] == sha and view["cwd"] == str(Path(CODE_DIR, sha).resolve())
        assert view["helper"] == "helper from the snapshot" and view["tinypkg"] == "1.0"
        assert view["node"] == str(rank // 2)  # static rendezvous: node 0 runs ranks 0 and 1
    snapshot = Path(CODE_DIR, sha)
    # no .git, no checkpoints/; the program's own imports may cache their bytecode beside them
    # (Python's default; a machine that sets PYTHONDONTWRITEBYTECODE gets no __pycache__)
    assert sorted(p.name for p in snapshot.iterdir() if p.name != "__pycache__") == [
        ".trnignore", "helper.py", "requirements.txt", "train.py"]

    log = log_of(job_id)
    assert log.count("Successfully installed tinypkg-1.0") == 1  # once, on node 0, for both
    assert log.index("Successfully installed tinypkg") < log.index("program rank")
    assert f"code {sha}" in log  # every node names the snapshot in the job's log
    record = json.loads((output / JOB_RECORD_FILE).read_text())
    assert record["program"] == ["train.py", *ARGS] and record["code_sha256"] == sha
    assert record["nodes"] == 2 and record["started"] and record["run_id"] == f"{job_id}-0"

    # the same tree again: the same snapshot, already in the bucket and unpacked
    code, _, err = cli("submit", "--name", f"{name}-again", "--workdir", str(project),
                       "--dry-run", "--", "train.py")
    assert code == 0 and f"snapshot {sha}" in err, err


def test_a_failing_setup_fails_the_job_before_the_program(slurm: SlurmCluster, cli,
                                                          project: Path):
    job_id, _ = submit(cli, "user-setup-fails", "--workdir", str(project), "--nodes", "2",
                       "--setup", "echo preparing; exit 7", "--", "train.py")
    assert wait_for_end(slurm, job_id) == "FAILED"
    log = log_of(job_id)
    assert "preparing" in log and "--setup failed with exit status 7" in log
    assert "program rank" not in log


def test_a_requirement_pip_cannot_install_fails_the_job_with_pips_error(
        slurm: SlurmCluster, cli, project: Path, tmp_path: Path):
    bad = tmp_path / "requirements.txt"
    bad.write_text(f"--no-index\n--find-links {FSX_MOUNT_PATH}/wheels\nnot-there==9.9\n")
    job_id, _ = submit(cli, "user-pip-fails", "--workdir", str(project), "--nodes", "2",
                       "--requirements", str(bad), "--", "train.py")
    assert wait_for_end(slurm, job_id) == "FAILED"
    log = log_of(job_id)
    assert "No matching distribution found for not-there==9.9" in log
    assert "requirements" in log and "failed" in log and "program rank" not in log


EXAMPLE_CHECKS = {
    "pytorch-distributed": (check_pytorch_distributed,),
    "huggingface": (check_huggingface,),
    "ultracluster-tutorial": (check_tutorial_trial, check_tutorial_run),
}
"""What each example writes into its output directory, checked as tests/examples checks its
run on CPU (the job of ``submit --precompile`` runs the tutorial's trial, then its run)."""


@pytest.mark.parametrize("example, argv", examples_commands(),
                         ids=[e.name for e, _ in examples_commands()])
def test_each_example_runs_as_its_readme_says(slurm: SlurmCluster, cli, example: Path,
                                              argv: list[str], monkeypatch):
    """The README's command from the example's directory, with only a job name and, for pip,
    a local wheel directory instead of PyPI (``--env PIP_NO_INDEX``, ``PIP_FIND_LINKS``: pip's
    own variables, which the node script exports before the install). The instance here has
    2 NeuronCores, so torchrun starts 2 processes on each of the 2 nodes."""
    monkeypatch.chdir(example)
    wheels = Path(FSX_MOUNT_PATH, "wheels")
    wheels.mkdir(parents=True, exist_ok=True)
    wheel(wheels, "humanize", "4.17.0", "def intword(n):\n    return f'{n:,} (stand-in)'\n")
    name = f"example-{example.name}"
    at = argv.index("--")
    job_id, _ = submit(cli, name, *argv[1:at], "--env", "PIP_NO_INDEX=1",
                       "--env", f"PIP_FIND_LINKS={wheels}", *argv[at:])
    assert wait_for_end(slurm, job_id) == "COMPLETED", log_of(job_id)[-4000:]
    output = Path(FSX_MOUNT_PATH, "runs", name)
    log = log_of(job_id)
    written = [check(output, program_argv(argv), WORLD_SIZE, log)
               for check in EXAMPLE_CHECKS[example.name]]
    record = json.loads((output / JOB_RECORD_FILE).read_text())
    assert record["program"][:len(argv) - at - 1] == argv[at + 1:]
    if example.name == "huggingface":
        assert written[0]["humanize"] == "4.17.0"  # installed from --requirements
    if example.name == "ultracluster-tutorial":
        assert "neuron_parallel_compile shim: NEURON_EXTRACT_GRAPHS_ONLY=1 torchrun " in log
        assert log.index("wrote " + str(output / "precompile-trial.json")) < log.index(
            "wrote " + str(output / "result.json"))  # the trial first, then the run
