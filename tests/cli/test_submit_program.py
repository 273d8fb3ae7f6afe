"""``submit -- PROGRAM [ARGS]``: bad input is refused with an error naming the option and
value before anything is uploaded or submitted; what each form of PROGRAM runs (script,
``python script``, ``-m``, ``--launcher none``, a non-Python command); the snapshot's hash
in the output and a content-addressed upload (moto S3)."""

from __future__ import annotations

import functools
import os
import re
import shlex

import boto3
import moto
import pytest
import yaml

from tests.cli.helpers import REGION
from tests.cli.program_helpers import (
    TRAIN,
    dry_run,
    make_workdir,
    node_script,
    outputs_file,
    run_line,
    submit,
)
from trn_ultracluster.cli import workdir
from trn_ultracluster.cli.backends import BACKENDS
from trn_ultracluster.cli.backends.standalone import Node, StandaloneBackend, StandaloneNodes
from trn_ultracluster.cli.commands import common, jobs
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.cli.workdir import SNAPSHOT_PREFIX


@pytest.fixture
def nothing_sent(monkeypatch):
    """Fail the test if ``submit`` uploads, opens an AWS session or submits a job."""
    def forbidden(*_, **__):
        raise AssertionError("submit sent something before its checks passed")

    monkeypatch.setattr(jobs, "upload_snapshot", forbidden)
    monkeypatch.setattr(workdir, "upload_file", forbidden)
    monkeypatch.setattr(common, "stack_session", forbidden)
    for backend in BACKENDS.values():
        monkeypatch.setattr(backend, "submit", forbidden)


def _unreadable_workdir(monkeypatch, work):
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(work.resolve()):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)  # tests run as root: chmod would not do


def _small_cap(monkeypatch, work):
    (work / "big.bin").write_bytes(b"\0" * 4096)
    monkeypatch.setattr(jobs, "pack_workdir", functools.partial(workdir.pack_workdir,
                                                                cap_bytes=1024))


def _requirements(name: str, content: bytes):
    def write(monkeypatch, work):
        (work.parent / name).write_bytes(content)
    return write


W, R = "{work}", "{req}"
BAD_INPUT = {
    # name: (argv, prepare, [expected parts of stderr], exit code)
    "program not in the workdir": (["--", "other.py"], None,
                                   ["error: PROGRAM other.py is not a file in --workdir"]),
    "program outside the workdir": (["--", "../x.py"], None,
                                    ["error: PROGRAM ../x.py is outside --workdir"]),
    "workdir missing": (["--workdir", "{tmp}/nope", "--", "train.py"], None,
                        ["error: --workdir {tmp}/nope does not exist"]),
    "workdir is a file": (["--workdir", W + "/train.py", "--", "train.py"], None,
                          ["error: --workdir {work}/train.py is a file", "--workdir {work}"]),
    "workdir unreadable": (["--", "train.py"], _unreadable_workdir,
                           ["error: --workdir {work}: cannot read the directory {work} "
                            "(permission denied)"]),
    "workdir over the cap": (["--", "train.py"], _small_cap,
                             ["error: --workdir {work} holds 4.0 KiB in 4 files after "
                              "exclusions, over the 1.0 KiB cap; largest: big.bin (4.0 KiB)",
                              ".trnignore"]),
    "requirements missing": (["--requirements", "{tmp}/nope.txt", "--", "train.py"], None,
                             ["error: --requirements {tmp}/nope.txt does not exist"]),
    "requirements binary": (["--requirements", R, "--", "train.py"],
                            _requirements("req.txt", b"numpy\0\x01"),
                            ["error: --requirements {req} is not a text file"]),
    "requirements not UTF-8": (["--requirements", R, "--", "train.py"],
                               _requirements("req.txt", b"numpy\n\xff\xfe\n"),
                               ["error: --requirements {req} is not UTF-8 text"]),
    "requirements naming torch": (["--requirements", R, "--", "train.py"],
                                  _requirements("req.txt", b"numpy\ntorch>=2\n"),
                                  ["error: --requirements {req}: line 2 'torch>=2' would "
                                   "replace torch of the image"]),
    "recipe and a program": (["--recipe", "llama-1b", "--steps", "5", "--data-dir", "/fsx/d",
                              "--", "train.py"], None,
                             ["error: --recipe runs the bundled trainer, and a PROGRAM was "
                              "given too (train.py...)"]),
    "launcher none, .py not executable": (["--launcher", "none", "--", "train.py"], None,
                                          ["error: PROGRAM train.py is run itself, once per "
                                           "node (--launcher none), and it is not executable",
                                           "chmod +x train.py"]),
    "torchrun --no-python, not executable": (["--", "./run.sh"], None,
                                             ["error: PROGRAM ./run.sh is run by torchrun "
                                              "--no-python", "not executable"]),
    "steps without recipe": (["--steps", "10", "--", "train.py"], None,
                             ["error: --steps belongs to --recipe"]),
    "data-dir without recipe": (["--data-dir", "/fsx/d", "--", "train.py"], None,
                                ["error: --data-dir belongs to --recipe"]),
    "no program, no recipe": ([], None, ["error: submit needs a PROGRAM after `--` or --recipe"]),
    "only dashes": (["--"], None, ["error: submit needs a PROGRAM after `--` or --recipe"]),
    "-m without a module": (["--", "-m"], None,
                            ["error: `-m` must be followed by a module name"]),
    "python -m without a module": (["--", "python", "-m", "--x"], None,
                                   ["error: `-m` must be followed by a module name"]),
    "workdir with recipe": (["--workdir", W, "--recipe", "llama-1b", "--steps", "5",
                             "--data-dir", "/fsx/d"], None,
                            ["error: --workdir is for your own program"]),
    "precompile-args unbalanced": (["--precompile-args", "--note 'x", "--", "train.py"], None,
                                   ["error: --precompile-args \"--note 'x\" cannot be split "
                                    "into words as a shell would (No closing quotation)"]),
    "env without =": (["--env", "A", "--", "train.py"], None,
                      ["error: --env 'A' must be NAME=VALUE"]),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_refused_before_anything_is_sent(capsys, tmp_path, monkeypatch,
                                                      nothing_sent, case):
    argv, prepare, expected = BAD_INPUT[case]
    work = make_workdir(tmp_path / "work", {"train.py": TRAIN, "helper.py": "X = 1\n",
                                            "run.sh": "#!/bin/sh\n"})
    monkeypatch.chdir(work)
    if prepare:
        prepare(monkeypatch, work)
    names = {"tmp": str(tmp_path), "work": str(work), "req": str(tmp_path / "req.txt")}
    code, out, err = submit(capsys, tmp_path, "standalone",
                            *[a.format(**names) for a in argv])
    assert code == ExitCode.USAGE, err
    for part in expected:
        assert part.format(**names) in err
    assert "fix: " in err and out == ""


@pytest.mark.parametrize("option", [["--precompile"], ["--precompile-args", "--max-steps 2"]])
def test_precompile_is_refused_on_the_native_stack(capsys, tmp_path, monkeypatch, nothing_sent,
                                                   option):
    monkeypatch.chdir(make_workdir(tmp_path / "work"))
    code, _, err = submit(capsys, tmp_path, "eks", *option, "--", "train.py",
                          NeuronStack="native", InstanceType="trn2.48xlarge")
    assert code == ExitCode.USAGE
    assert ("error: --precompile runs neuron_parallel_compile, which extracts the graphs of "
            "the XLA stack; this stack trains on the native stack") in err


@pytest.mark.parametrize("values", [
    {"DataBucketOnFsx": "none"},  # no link, another bucket or prefix, or no automatic import
    {"DataBucketOnFsx": "", "FsxDataRepositoryPath": "none"},  # a stack older than the output
])
def test_a_stack_whose_bucket_does_not_show_on_fsx_is_refused(capsys, tmp_path, monkeypatch,
                                                              nothing_sent, values):
    """A stack problem (exit STACK), named by its output, before anything is uploaded."""
    monkeypatch.chdir(make_workdir(tmp_path / "work"))
    code, _, err = submit(capsys, tmp_path, "hyperpod-slurm", "--", "train.py", **values)
    assert code == ExitCode.STACK
    assert ("error: new objects of this stack's data bucket do not appear on FSx "
            "(DataBucketOnFsx none") in err


# --- what each form of PROGRAM runs ---------------------------------------------------------

def _eks(capsys, tmp_path, *argv, files=None, executable=()):
    work = make_workdir(tmp_path / "work", files, executable)
    printed, _ = dry_run(capsys, tmp_path, "eks", "--workdir", str(work), *argv)
    return yaml.safe_load(printed), node_script("eks", printed)


@pytest.mark.parametrize("argv, files, executable, run, name", [
    (["python", "train.py", "--lr", "1"], None, (), "torchrun train.py --lr 1", "train"),
    (["python3", "train.py"], None, (), "torchrun train.py", "train"),
    (["train.py"], None, (), "torchrun train.py", "train"),
    (["python", "-m", "pkg.trainer_main", "x"], {"pkg/trainer_main.py": ""}, (),
     "torchrun -m pkg.trainer_main x", "trainer-main"),
    (["-m", "pkg.mod"], {"pkg/mod.py": ""}, (), "torchrun -m pkg.mod", "mod"),
    (["python", "-X", "dev", "train.py"], None, (), "torchrun --no-python python -X dev train.py",
     "train"),
    (["./run.sh", "a"], {"run.sh": "#!/bin/sh\n"}, ("run.sh",),
     "torchrun --no-python ./run.sh a", "run"),
    (["bash", "run.sh"], {"run.sh": ""}, (), "torchrun --no-python bash run.sh", "bash"),
])
def test_what_torchrun_runs(capsys, tmp_path, argv, files, executable, run, name):
    manifest, script = _eks(capsys, tmp_path, "--", *argv, files=files, executable=executable)
    assert run_line(script) == run
    assert re.fullmatch(rf"{name}-\d{{8}}-\d{{6}}", manifest["metadata"]["name"])


@pytest.mark.parametrize("argv, files, run", [
    (["./run.sh", "x"], {"run.sh": "#!/bin/sh\n"}, "./run.sh x"),
    (["tool.py", "x"], {"tool.py": "#!/usr/bin/env python3\n"}, "./tool.py x"),
    (["sub/tool.py"], {"sub/tool.py": "#!/usr/bin/env python3\n"}, "sub/tool.py"),
    (["python", "train.py"], {"train.py": ""}, "python train.py"),  # no exec bit needed
    (["-m", "pkg.launch"], {"pkg/launch.py": ""}, "python3 -m pkg.launch"),
])
def test_launcher_none_runs_the_program_once_per_node(capsys, tmp_path, argv, files, run):
    executable = tuple(f for f in files if f.endswith(("run.sh", "tool.py")))
    manifest, script = _eks(capsys, tmp_path, "--launcher", "none", "--", *argv, files=files,
                            executable=executable)
    assert run_line(script) == run and "torchrun" not in script


def test_an_absolute_program_in_the_workdir_runs_from_the_snapshot(capsys, tmp_path):
    work = make_workdir(tmp_path / "work", {"run.sh": "#!/bin/sh\n"}, ("run.sh",))
    for launcher, run in (("none", "./run.sh"), ("torchrun", "torchrun --no-python ./run.sh")):
        printed, _ = dry_run(capsys, tmp_path, "eks", "--workdir", str(work), "--launcher",
                             launcher, "--", str(work / "run.sh"))
        assert run_line(node_script("eks", printed)) == run  # not run.sh, looked up on PATH


@pytest.mark.parametrize("orchestrator", ["hyperpod-slurm", "standalone", "eks"])
def test_nproc_per_node_reaches_torchrun(capsys, tmp_path, orchestrator):
    work = make_workdir(tmp_path / "work")
    printed, _ = dry_run(capsys, tmp_path, orchestrator, "--workdir", str(work),
                         "--nproc-per-node", "3", "--", "train.py")
    line = run_line(node_script(orchestrator, printed))
    if orchestrator == "eks":  # Trainer gives torchrun PET_NPROC_PER_NODE from it
        assert yaml.safe_load(printed)["spec"]["trainer"]["numProcPerNode"] == 3
        assert line == "torchrun train.py"
    else:
        assert "--nproc-per-node=3 " in line and line.endswith(" train.py")


def test_precompile_args_are_for_the_trial_run_only(capsys, tmp_path):
    work = make_workdir(tmp_path / "work")
    printed, _ = dry_run(capsys, tmp_path, "hyperpod-slurm", "--workdir", str(work),
                         "--precompile-args", "--max-steps 2 --note 'a b'", "--", "train.py",
                         "--lr", "1")
    script = node_script("hyperpod-slurm", printed)
    launch = [ln for ln in script.splitlines() if ln.startswith(("torchrun", "neuron_parallel"))]
    assert len(launch) == 2
    assert shlex.split(launch[0])[0] == "neuron_parallel_compile"
    assert shlex.split(launch[0])[-7:] == ["train.py", "--lr", "1", "--max-steps", "2",
                                           "--note", "a b"]
    assert shlex.split(launch[1])[0] == "torchrun"
    assert shlex.split(launch[1])[-3:] == ["train.py", "--lr", "1"]
    assert "--max-steps" not in launch[1]


# --- the snapshot: printed, uploaded once ---------------------------------------------------

NODES = [Node("i-0000000000000000a", "10.0.1.10"), Node("i-0000000000000000b", "10.0.1.11")]


@pytest.fixture
def s3(monkeypatch):
    """moto S3 with the stack's data bucket, and standalone nodes that answer every script."""
    monkeypatch.setattr(StandaloneBackend, "connect", lambda self: StandaloneNodes(
        list(NODES), lambda ids, script: {i: "ok\n" for i in ids}))
    with moto.mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket="trn-data-bucket",
                             CreateBucketConfiguration={"LocationConstraint": REGION})
        yield client


def _keys(s3) -> list[str]:
    found = s3.list_objects_v2(Bucket="trn-data-bucket", Prefix=SNAPSHOT_PREFIX)
    return sorted(o["Key"] for o in found.get("Contents", []))


def test_the_snapshot_is_printed_uploaded_once_and_new_when_edited(capsys, tmp_path,
                                                                    monkeypatch, s3):
    work = make_workdir(tmp_path / "work")
    outputs = str(outputs_file(tmp_path, "standalone", NodeCountMax="2"))
    puts = []
    real_upload = workdir.upload_file
    monkeypatch.setattr(workdir, "upload_file",
                        lambda *a, **k: puts.append(a) or real_upload(*a, **k))

    def submit_once(name: str) -> tuple[str, str]:
        from tests.cli.helpers import run

        code, out, err = run(capsys, "submit", "--outputs-file", outputs, "--workdir", str(work),
                             "--name", name, "--no-progress", "--", "train.py")
        assert code == 0, err
        sha = re.search(r"^code: \S+ -> snapshot ([0-9a-f]{64}) \(2 files, \d+ bytes\)$",
                        err, re.M).group(1)
        assert out == (f"submitted {name} (2 x trn1.32xlarge; code {sha[:12]}) on pool "
                       f"trainium; watch: trn-ultracluster status {name}; logs: "
                       f"trn-ultracluster logs {name}\n")
        return sha, err

    first, err = submit_once("job-a")
    key = f"{SNAPSHOT_PREFIX}/{first}.tar.gz"
    assert f"code: uploaded to s3://trn-data-bucket/{key}" in err
    assert _keys(s3) == [key] and len(puts) == 1
    again, err = submit_once("job-b")
    assert again == first and f"code: already in s3://trn-data-bucket/{key}" in err
    assert _keys(s3) == [key] and len(puts) == 1  # nothing uploaded
    (work / "helper.py").write_text("X = 2\n")
    edited, err = submit_once("job-c")
    assert edited != first and "code: uploaded to" in err
    assert _keys(s3) == sorted([key, f"{SNAPSHOT_PREFIX}/{edited}.tar.gz"]) and len(puts) == 2
