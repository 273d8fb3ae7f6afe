"""The node script of a user-program job, for real: two "nodes" (two bash processes with
Slurm's ``SLURM_NODEID`` 0 and 1, the script taken from the sbatch script as Slurm's
``bash -c`` gets it) on a temporary directory standing in for ``/fsx``, with a stand-in
``torchrun`` that records where and how it started and what it could import.

What is proved: node 0 waits for the archive, checks its SHA-256 and unpacks it once while
node 1 waits; both run in the snapshot's directory; a requirements file is installed once
(node 0, from a wheel built here) and both nodes import the package; a failure on node 0
(corrupt archive, pip) stops node 1 at once with "failed on node 0", and no program starts;
a failing ``--setup`` ends the node with its status; the job record is written whole.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from tests.cli.backends.local_nodes import free_port
from tests.cli.program_helpers import make_workdir, node_script, recorded
from trn_ultracluster.cli.backends.slurm import sbatch_script
from trn_ultracluster.cli.job_args import job_request
from trn_ultracluster.cli.launch import CodeSnapshot, program_launch
from trn_ultracluster.cli.workdir import pack_workdir
from trn_ultracluster.contracts.catalog import get_instance
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH, JOB_RECORD_FILE, fsx_path

SPEC = get_instance("trn1.32xlarge")
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc"
ARGS = ["--steps", "3", "a b", "$HOME"]
OUTPUT_DIR = f"{FSX_MOUNT_PATH}/runs/job-a"
TORCHRUN = """#!{python}
# Stand-in for torchrun: records its arguments, directory and what it can import.
import json, os, sys
try:
    import tinypkg
    pkg = [tinypkg.VERSION, tinypkg.__file__]
except ImportError:
    pkg = None
with open(os.environ["RECORDER_OUT"], "a", encoding="utf-8") as out:
    out.write(json.dumps({{"name": "torchrun", "argv": sys.argv[1:], "cwd": os.getcwd(),
                          "pkg": pkg, "env": dict(os.environ)}}) + "\\n")
"""
TAR = """#!/bin/bash
# tar, counting the unpacks.
echo "node ${{TRN_NODE_RANK}}: tar $*" >> "${{TAR_LOG}}"
exec {tar} "$@"
"""


def build_wheel(directory: Path) -> Path:
    """``tinypkg-1.0-py3-none-any.whl``: a module and the three metadata files a wheel
    needs (PEP 427: ``WHEEL``, ``METADATA``, ``RECORD`` with each file's urlsafe-base64
    SHA-256 without padding)."""
    files = {
        "tinypkg/__init__.py": 'VERSION = "1.0"\n',
        "tinypkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        "tinypkg-1.0.dist-info/WHEEL": ("Wheel-Version: 1.0\nGenerator: test\n"
                                        "Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    record = ""
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record += f"{name},sha256={digest.decode()},{len(text.encode())}\n"
    files["tinypkg-1.0.dist-info/RECORD"] = record + "tinypkg-1.0.dist-info/RECORD,,\n"
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / "tinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return wheel


class Nodes:
    """Two nodes of one job on this machine: its node script (from the sbatch script) with
    ``/fsx/`` under ``tmp``, the snapshot of a working directory, and the stand-ins."""

    def __init__(self, tmp: Path, *, requirements: str | None = None, setup: str | None = None):
        self.tmp, self.fsx = tmp, tmp / "fsx"
        self.fsx.mkdir()
        self.snapshot = pack_workdir(make_workdir(tmp / "work"))
        code = CodeSnapshot(self.snapshot.sha256, fsx_path("/", self.snapshot.key))
        launch = program_launch(["train.py", *ARGS], nproc_per_node=1, code=code,
                                requirements=requirements, user_setup=setup)
        job = job_request(name="job-a", nodes=2, spec=SPEC, launch=launch, image=IMAGE,
                          env={"TRN_TEST_VALUE": "it's $x"}, output_dir=OUTPUT_DIR,
                          data_bucket="trn-data-bucket")
        self.script = self.local(node_script("hyperpod-slurm", sbatch_script(job, SPEC)))
        self.archive = Path(self.local(code.archive))
        self.code_dir = Path(self.local(code.directory))
        self.output_dir = Path(self.local(OUTPUT_DIR))
        self.stubs = tmp / "stubs"
        self.stubs.mkdir()
        for name, text in (("torchrun", TORCHRUN.format(python=sys.executable)),
                           ("tar", TAR.format(tar=shutil.which("tar")))):
            (self.stubs / name).write_text(text)
            (self.stubs / name).chmod(0o755)
        self.port = free_port()

    def local(self, text: str) -> str:
        return text.replace(f"{FSX_MOUNT_PATH}/", f"{self.fsx}/")

    def place_archive(self, data: bytes | None = None, delay_s: float = 0.0) -> threading.Timer:
        """Put the archive (or ``data``) where the data repository association would show
        it, after ``delay_s``, whole at once (written aside, then renamed)."""
        def place() -> None:
            self.archive.parent.mkdir(parents=True, exist_ok=True)
            partial = self.archive.with_name(self.archive.name + ".importing")
            partial.write_bytes(self.snapshot.archive.read_bytes() if data is None else data)
            partial.rename(self.archive)

        timer = threading.Timer(delay_s, place)
        timer.start()
        return timer

    def run(self) -> list[tuple[int, str, float]]:
        """Both nodes at once; each node's (exit status, output, seconds)."""
        env = {**os.environ, "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_ID": "7",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(self.port),
               "RECORDER_OUT": str(self.tmp / "torchrun.jsonl"),
               "TAR_LOG": str(self.tmp / "tar.log"),
               "PATH": f"{self.stubs}:{Path(sys.executable).parent}:{os.environ['PATH']}"}
        start = time.monotonic()
        procs = [subprocess.Popen(["bash", "-c", self.script], env={**env, "SLURM_NODEID": str(r)},
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for r in (0, 1)]
        results = []
        for proc in procs:
            out, _ = proc.communicate(timeout=90)
            results.append((proc.returncode, out, time.monotonic() - start))
        self.snapshot.cleanup()
        return results

    def starts(self) -> list[dict]:
        return recorded(self.tmp / "torchrun.jsonl")

    def unpacks(self) -> list[str]:
        log = self.tmp / "tar.log"
        return [ln for ln in (log.read_text().splitlines() if log.exists() else [])
                if " -xzf " in ln]


def test_two_nodes_share_one_unpack_and_one_install(tmp_path):
    wheels = tmp_path / "wheels"
    build_wheel(wheels)
    nodes = Nodes(tmp_path, requirements=f"--no-index\n--find-links {wheels}\ntinypkg==1.0\n",
                  setup='echo "setup on node ${TRN_NODE_RANK} in ${PWD}"')
    nodes.output_dir.mkdir(parents=True)  # a record left by an earlier run, hard-linked
    witness = tmp_path / "witness"
    witness.write_text("earlier run\n")
    os.link(witness, nodes.output_dir / JOB_RECORD_FILE)
    nodes.place_archive(delay_s=2.5)  # the import finishes after the job started
    (code0, out0, _), (code1, out1, _) = nodes.run()
    assert (code0, code1) == (0, 0), (out0, out1)

    sha = nodes.snapshot.sha256
    assert nodes.unpacks() == [f"node 0: tar -xzf {nodes.archive} -C "
                               f"{nodes.unpacks()[0].split(' -C ')[1]}"]  # once, on node 0
    assert f"trn: code snapshot {sha[:12]}" in out0 and "code snapshot" not in out1
    assert out0.count("Successfully installed tinypkg-1.0") == 1
    assert "Successfully installed" not in out1 and "trn: requirements" not in out1
    assert [p.name for p in nodes.code_dir.parent.iterdir()] == [sha]  # no partial unpack
    starts = sorted(nodes.starts(), key=lambda s: s["env"]["TRN_NODE_RANK"])
    assert [s["env"]["TRN_NODE_RANK"] for s in starts] == ["0", "1"]
    for rank, start in enumerate(starts):
        assert start["cwd"] == str(nodes.code_dir)
        assert start["argv"][-5:] == ["train.py", *ARGS]
        assert f"--node-rank={rank}" in start["argv"] and "--nproc-per-node=1" in start["argv"]
        assert start["env"]["TRN_CODE_SHA256"] == sha
        assert start["env"]["TRN_TEST_VALUE"] == "it's $x"
        version, where = start["pkg"]  # installed under the shared prefix, not the venv
        assert version == "1.0" and where.startswith(f"{nodes.fsx}/.trn-ultracluster/pip/")
        assert f"setup on node {rank} in {nodes.code_dir}" in (out0, out1)[rank]

    record = json.loads((nodes.output_dir / JOB_RECORD_FILE).read_text())
    assert {k: record[k] for k in ("program", "code_sha256", "image", "nodes", "run_id")} == {
        "program": ["train.py", *ARGS], "code_sha256": sha, "image": IMAGE, "nodes": 2,
        "run_id": "7-0"}
    assert record["started"] >= record["submitted"]
    # written aside and renamed over the old record: the old file's other name keeps its text
    assert witness.read_text() == "earlier run\n"
    assert sorted(p.name for p in nodes.output_dir.iterdir()) == [JOB_RECORD_FILE]


def test_a_corrupt_archive_fails_node_0_and_stops_node_1(tmp_path):
    nodes = Nodes(tmp_path)
    nodes.place_archive(data=b"not the archive").join()
    (code0, out0, _), (code1, out1, seconds1) = nodes.run()
    sha = nodes.snapshot.sha256
    assert code0 != 0 and f"trn: {nodes.archive} does not match its SHA-256" in out0
    assert code1 != 0 and f"trn: code snapshot {sha[:12]} failed on node 0: see its log" in out1
    assert seconds1 < 20  # not PREPARE_TIMEOUT_S
    assert nodes.starts() == [] and not nodes.code_dir.exists()


@pytest.mark.nodes
def test_a_failing_install_stops_both_nodes_before_the_program(tmp_path):
    wheels = tmp_path / "wheels"
    build_wheel(wheels)
    nodes = Nodes(tmp_path, requirements=f"--no-index\n--find-links {wheels}\nnopkg==9\n")
    nodes.place_archive().join()
    (code0, out0, _), (code1, out1, seconds1) = nodes.run()
    assert (code0, code1) == (1, 1)
    lines = out0.splitlines()
    pip_error = next(i for i, ln in enumerate(lines) if ln.startswith(
        "ERROR: Could not find a version that satisfies the requirement nopkg==9"))
    failed = next(i for i, ln in enumerate(lines) if ln.endswith(") failed (above)"))
    assert lines[failed].startswith("trn: requirements (") and pip_error < failed == len(lines) - 1
    assert out1.splitlines()[-1].endswith(") failed on node 0: see its log")
    assert seconds1 < 20
    assert nodes.starts() == []


@pytest.mark.nodes
def test_a_failing_setup_ends_the_node_with_its_status(tmp_path):
    """Also an empty requirements file: installed (nothing) and the job goes on to --setup."""
    nodes = Nodes(tmp_path, requirements="", setup="echo broken >&2; exit 7")
    nodes.place_archive().join()
    results = nodes.run()
    for rank, (code, out, _) in enumerate(results):
        assert code == 7, out
        assert out.splitlines()[-2:] == [
            "broken", f"trn: --setup failed with exit status 7 on node {rank}; the program "
            "was not started"]
    assert nodes.starts() == [] and not nodes.output_dir.exists()


@pytest.fixture(autouse=True)
def _no_stray_timers():
    yield
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()
