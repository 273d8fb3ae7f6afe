"""Slurm on HyperPod: every sbatch script the CLI prints passes ``bash -n``, shellcheck and
an ``#SBATCH`` option check, and runs the stack's current image with the stack's Neuron
environment; the Slurm commands of submit, status (squeue, then sacct, then the job
completion log), logs and cancel, with stand-in transports."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.cli.helpers import dry_run, outputs_values, run, shellcheck, write_outputs
from trn_ultracluster.cli.backends.slurm import SlurmJobs
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.catalog import get_instance
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.shared_storage import ENV_FILE, JOBS_DIR

ENV_VALUE = "it's \"quoted\" $HOME `date` \\ end"


SBATCH_OPTIONS = {
    # option -> takes a value; the sbatch options the CLI writes (Slurm sbatch man page,
    # https://slurm.schedmd.com/sbatch.html).
    "job-name": True, "nodes": True, "ntasks-per-node": True, "exclusive": False,
    "output": True, "open-mode": True, "requeue": False, "partition": True, "time": True,
}


def parse_sbatch_options(script: str) -> dict[str, str | None]:
    """The ``#SBATCH --name[=value]`` options of a script (before the first command).

    Raises:
        ValueError: an option the CLI does not write, a missing or unexpected value, or an
            ``#SBATCH`` line after the first command (sbatch ignores those).
    """
    options: dict[str, str | None] = {}
    in_header = True
    for line in script.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#SBATCH"):
            if not in_header:
                raise ValueError(f"#SBATCH after the first command is ignored by sbatch: {line!r}")
            match = re.fullmatch(r"#SBATCH --([a-z-]+)(?:=(\S+))?", stripped)
            if not match:
                raise ValueError(f"malformed #SBATCH line: {line!r}")
            name, value = match.group(1), match.group(2)
            if name not in SBATCH_OPTIONS:
                raise ValueError(f"unknown sbatch option --{name}")
            if SBATCH_OPTIONS[name] != (value is not None):
                raise ValueError(f"--{name} {'needs' if SBATCH_OPTIONS[name] else 'takes no'} value")
            options[name] = value
        elif stripped and not stripped.startswith("#"):
            in_header = False
    return options


@pytest.mark.parametrize("command, extra", [
    ("submit", ()), ("submit", ("--precompile",)), ("submit", ("--nodes", "16", "--time", "2-00:00:00")),
    ("submit", ("--", "--lr", "3e-4", "--ckpt-every", "100")), ("smoke-test", ()),
])
def test_every_sbatch_script_passes_bash_n_shellcheck_and_options(capsys, tmp_path, command, extra):
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", *extra, command=command)
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
    done = subprocess.run([shellcheck(), "-s", "bash", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    options = parse_sbatch_options(script)
    assert options["job-name"] == "job-a"
    assert "exclusive" in options and options["exclusive"] is None
    assert options["ntasks-per-node"] == "1"
    assert options["output"] == f"{JOBS_DIR}/%x-%j.out" == "/fsx/.trn-ultracluster/jobs/%x-%j.out"
    expected_nodes = extra[extra.index("--nodes") + 1] if "--nodes" in extra else "2"
    assert options["nodes"] == expected_nodes
    assert options["open-mode"] == "append"  # a requeued run keeps the earlier output
    assert "requeue" in options and options["requeue"] is None
    assert f"source {ENV_FILE}" in script and ENV_FILE == "/fsx/.trn-ultracluster/env"
    srun_lines = [ln for ln in script.splitlines() if ln.startswith("srun ")]
    assert srun_lines == [  # one step: the node script on every node, in the container
        'srun --auto-resume=1 --kill-on-bad-exit=1 --container-image="${TRN_CONTAINER_IMAGE}" '
        '--container-mounts="${TRN_FSX_MOUNT_POINT}:${TRN_FSX_MOUNT_POINT}" '
        '--no-container-mount-home bash -c "${TRN_NODE_SCRIPT}"']
    assert ('--node-rank="${SLURM_NODEID}" --master-addr="${MASTER_ADDR}" '
            '--master-port="${MASTER_PORT}"') in script  # static rendezvous: node 0 has rank 0
    assert "(restart ${SLURM_RESTART_COUNT:-0})" in script


def test_sbatch_relies_on_the_env_file_for_the_neuron_environment(capsys, tmp_path):
    """The env file exports neuron_environment(spec); the script sets none of it again and
    stops early when an older env file lacks it."""
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", "--precompile")
    for name in neuron_environment(get_instance("trn1.32xlarge"), "xla"):
        assert f"{name}=" not in script
    assert ': "${TRN_NEURON_CACHE_DIR:?is not set by /fsx/.trn-ultracluster/env' in script
    fake_env = tmp_path / "env"
    fake_env.write_text("export TRN_CONTAINER_IMAGE=x\n")
    done = subprocess.run(["bash", "-c", script.replace(ENV_FILE, str(fake_env))],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "TRN_NEURON_CACHE_DIR: is not set by" in done.stderr
    assert len([ln for ln in script.splitlines() if ln.startswith("srun ")]) == 1
    node_lines = script.split("<<'TRN_NODE_SCRIPT_EOF'\n")[1].split("\nTRN_NODE_SCRIPT_EOF")[0]
    runs = [ln for ln in node_lines.splitlines() if "torchrun " in ln]
    assert len(runs) == 2  # precompile pass, then the run, both in the container's node script
    assert runs[0].startswith("neuron_parallel_compile torchrun ") and runs[1].startswith("torchrun ")


@pytest.mark.parametrize("command", ["submit", "smoke-test"])
def test_sbatch_runs_the_stacks_current_image_not_the_env_files(capsys, tmp_path, command):
    """The env file is written when a node is created; after a deploy that rebuilt the image,
    the job must still run the stack's current TrainingImageUri (in Pyxis form)."""
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", command=command)
    current = "123456789012.dkr.ecr.us-west-2.amazonaws.com#trn:abc"
    assert f"export TRN_CONTAINER_IMAGE='{current}'" in script.splitlines()
    fake_env = tmp_path / "env"
    fake_env.write_text("export TRN_CONTAINER_IMAGE=old#trn:stale TRN_NEURON_CACHE_DIR=x\n")
    head = script.split("MASTER_ADDR=")[0].replace(ENV_FILE, str(fake_env))
    done = subprocess.run(["bash", "-c", head + 'echo "$TRN_CONTAINER_IMAGE"'],
                          capture_output=True, text=True)
    assert done.stdout.strip() == current, done.stderr


def test_image_option_on_hyperpod(capsys, tmp_path):
    other = "123456789012.dkr.ecr.us-west-2.amazonaws.com/mine:v2"
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", "--image", other)
    assert "export TRN_CONTAINER_IMAGE='123456789012.dkr.ecr.us-west-2.amazonaws.com#mine:v2'" in script
    path = write_outputs(tmp_path, outputs_values("hyperpod-slurm", "trn1.32xlarge"))
    code, _, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--recipe",
                       "llama-1b", "--steps", "1", "--data-dir", "/fsx/d", "--image", "ubuntu")
    assert code == ExitCode.USAGE and "image 'ubuntu' must be <registry>/<repository>:<tag>" in err


@pytest.mark.parametrize("bad, message", [
    ("#!/bin/bash\n#SBATCH --gpus=8\n", "unknown sbatch option --gpus"),
    ("#!/bin/bash\n#SBATCH --nodes\n", "--nodes needs value"),
    ("#!/bin/bash\n#SBATCH --exclusive=yes\n", "--exclusive takes no value"),
    ("#!/bin/bash\necho hi\n#SBATCH --nodes=2\n", "#SBATCH after the first command"),
])
def test_sbatch_option_checker_rejects(bad, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_sbatch_options(bad)


def test_env_is_exported_in_the_sbatch_script(capsys, tmp_path):
    """HyperPod honours --env: exported after the stack's env file, quoted for bash, so srun
    passes it into the container like the Neuron environment."""
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", "--env", f"MY_VAR={ENV_VALUE}",
                     "--env", "NEURON_RT_LOG_LEVEL=INFO")
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
    checked = subprocess.run([shellcheck(), "-s", "bash", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


class FakeTransport:
    def __init__(self, *answers: str):
        self.answers, self.scripts = list(answers), []

    def run(self, script: str) -> str:
        self.scripts.append(script)
        return self.answers.pop(0)


def test_slurm_status_logs_cancel():
    jobs = SlurmJobs(FakeTransport(
        "17|job-a|RUNNING|1:02|2|ip-10-0-0-1|trainium|\n", "step 10 loss 7.1\n", "", ""))
    assert jobs.status(17) == [{"id": "17", "name": "job-a", "state": "RUNNING", "elapsed": "1:02",
                                "nodes": "2", "reason": "ip-10-0-0-1", "partition": "trainium",
                                "code": ""}]
    assert jobs.logs(17, 5) == "step 10 loss 7.1\n"
    jobs.cancel(17)
    assert jobs.status() == []
    scripts = jobs.transport.scripts
    assert "squeue -h -t all -j 17" in scripts[0] and "sacct -n -P -X -j 17" in scripts[0]
    assert "sacct -c -n -P -X -j 17" in scripts[0]
    assert "tail -n 5" in scripts[1] and "-17.out" in scripts[1]
    assert scripts[2] == "scancel 17\n"
    assert "squeue -h -u ubuntu " in scripts[3] and "-t all" not in scripts[3]


def test_slurm_status_user_is_a_field():
    transport = FakeTransport("")
    SlurmJobs(transport, user="root").status()
    assert "squeue -h -u root " in transport.scripts[0]


STATUS_FIELDS = "JobID,JobName,State,Elapsed,NNodes,Reason,Partition"


@pytest.mark.parametrize("squeue, sacct, sacct_c, expected", [
    # squeue -t all knows the job (running, or ended less than MinJobAge ago): sacct not asked
    ("17|job-a|COMPLETED|0:20|2|None|trn|", "fail", "fail", "COMPLETED"),
    # slurmctld forgot it, accounting (slurmdbd) has it
    ("", "17|job-a|FAILED|00:00:20|2|None|trn", "fail", "FAILED"),
    # no accounting ("accounting storage is disabled"): the jobcomp/filetxt log, newest run last
    ("", "fail", "17|job-a|PENDING|00:00:04|2||trn\n17|job-a|COMPLETED|00:00:20|2||trn",
     "COMPLETED"),
    # nothing knows it
    ("", "fail", "fail", None),
])
def test_slurm_status_sources_in_order(tmp_path, squeue, sacct, sacct_c, expected):
    """The remote status script with stand-ins for squeue and sacct that print what a real
    Slurm prints in each case (tests/slurm runs it against a real one)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"

    def stub(name: str, body: str) -> None:
        (bin_dir / name).write_text(f"#!/bin/bash\necho \"{name} $*\" >> {calls}\n{body}\n")
        (bin_dir / name).chmod(0o755)

    def answer(text: str) -> str:
        return "echo 'error' >&2; exit 1" if text == "fail" else f"printf '%s\\n' '{text}'"

    stub("squeue", answer(squeue) if squeue else "exit 0")
    stub("sacct", f'if [ "$1" = -c ]; then {answer(sacct_c)}; else {answer(sacct)}; fi')

    class BashTransport:
        script = ""

        def run(self, script: str) -> str:
            BashTransport.script = script
            done = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                                  env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
            assert done.returncode == 0, done.stderr
            return done.stdout

    rows = SlurmJobs(BashTransport()).status(17)
    assert [r["state"] for r in rows] == ([expected] if expected else [])
    assert [r["partition"] for r in rows] == (["trn"] if expected else [])
    asked = calls.read_text().splitlines()
    assert asked[0] == "squeue -h -t all -j 17 -o %i|%j|%T|%M|%D|%R|%P|%k"
    if squeue:
        assert len(asked) == 1
    else:
        assert asked[1] == f"sacct -n -P -X -j 17 -o {STATUS_FIELDS}"
        assert asked[2:] == ([] if sacct != "fail" else [f"sacct -c -n -P -X -j 17 -o {STATUS_FIELDS}"])
    path = tmp_path / "status.sh"
    path.write_text("#!/bin/bash\n" + BashTransport.script)
    done = subprocess.run([shellcheck(), "-s", "bash", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_sbatch_without_job_id_is_a_cluster_error():
    with pytest.raises(CliError) as err:
        SlurmJobs(FakeTransport("sbatch: error: Batch job submission failed\n")).submit("j", "")
    assert err.value.exit_code == ExitCode.CLUSTER
