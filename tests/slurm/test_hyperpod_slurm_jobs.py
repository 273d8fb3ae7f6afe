"""The HyperPod job path on a real Slurm (22.05, Debian): two nodes on this machine
(``conftest.py``), the job CLI's own commands, and the training program on CPU.

What is real: the job CLI (``submit``, ``status``, ``logs``, ``cancel`` through
:class:`~trn_ultracluster.cli.backends.slurm.SlurmJobs`, with a transport that runs the controller
script with bash here instead of through SSM); the sbatch script exactly as ``submit``
writes it (compared with ``submit --dry-run``); sbatch, srun, squeue, sacct, scancel and
``scontrol requeue``; the env file in the format of the HyperPod lifecycle scripts
(the HyperPod lifecycle helper ``lcs.py env-file``); torchrun with a c10d rendezvous on the first node of
the allocation, one torchrun per node; the training program's checkpoints and metrics.

What stands in (Debian's Slurm has neither Pyxis nor HyperPod's auto-resume plugin, and
this machine has no Neuron SDK):

- ``shims/srun``, first on the env file's ``PATH``: removes Pyxis's ``--container-*``
  options and ``--auto-resume=1`` and runs ``/usr/bin/srun`` with the rest, so the steps run
  on the host (the project's venv) instead of in the training image. It names what it
  removed in the job log, and the tests check that every step asked for both.
- ``shims/neuron_parallel_compile``: runs its command with ``NEURON_EXTRACT_GRAPHS_ONLY=1``
  (the trial run that writes no checkpoint) and compiles nothing.
- The instance type is the catalog's trn1.32xlarge with 2 NeuronCores instead of 32
  (``dataclasses.replace``), so torchrun starts 2 processes per node on this 2-CPU machine;
  it keeps its EFA interfaces, which is what allows a 2-node job. ``/fsx`` is a link to a
  temporary directory.
- HyperPod's auto-resume (the plugin restarts the failed step after replacing nodes) is
  exercised through Slurm's own restart: ``scontrol requeue`` reruns the whole script.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.slurm.conftest import NODES, SlurmCluster, wait_until
from tests.slurm.harness import (
    CONTAINER_IMAGE,
    DATA_DIR,
    ON_THIS_CPU,
    WORLD_SIZE,
    jobs,
    log_of,
    state_of,
    submit,
    wait_for_end,
)
from trn_ultracluster.cli.backends.slurm import RENDEZVOUS_PORT
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH, JOBS_DIR, RUNS_DIR

pytestmark = pytest.mark.slurm


def events(text: str) -> list[dict]:
    """The training program's JSON-line events in a log."""
    out = []
    for line in text.splitlines():
        if line.startswith('{"event": '):
            out.append(json.loads(line))
    return out


def runs(text: str) -> list[list[dict]]:
    """Events split into the program's runs (each begins with its ``start`` event)."""
    out: list[list[dict]] = []
    for event in events(text):
        if event["event"] == "start":
            out.append([])
        if out:
            out[-1].append(event)
    return out


def steps(run: list[dict], kind: str = "train") -> list[int]:
    return [e["step"] for e in run if e["event"] == kind]


def complete_checkpoints(output_dir: Path) -> list[int]:
    """Steps of the complete checkpoints in ``output_dir``, as the training program finds
    them when it resumes (``trn_train.checkpoint.scan``)."""
    from trn_train import checkpoint

    return [c.step for c in checkpoint.scan(output_dir / "checkpoints", warn=lambda _: None)]


def removed_by_shim(text: str) -> list[str]:
    """What ``shims/srun`` removed, per srun call (``srun shim: removed ...;``)."""
    return re.findall(r"^srun shim: removed (.*?); running srun", text, flags=re.M)


@dataclass(frozen=True)
class FinishedJob:
    """A job ``submit`` sent, after it ended."""

    job_id: int
    name: str
    script: str
    """The script ``submit --dry-run`` printed for the same arguments."""
    state: str


TRAIN_STEPS = 6


@pytest.fixture(scope="module")
def trained(slurm: SlurmCluster, cli) -> FinishedJob:
    """A 2-node job with the precompile pass (2 steps), then 6 training steps with a
    checkpoint every 2, run to its end."""
    name = "slurm-train"
    job_id, script = submit(cli, name, "--recipe", "llama-tiny", "--steps", str(TRAIN_STEPS),
                            "--data-dir", DATA_DIR, "--nodes", "2", "--precompile-steps", "2",
                            "--", *ON_THIS_CPU, "--ckpt-every", "2", "--log-every", "1", "--no-progress")
    return FinishedJob(job_id, name, script, wait_for_end(slurm, job_id))


def test_two_node_job_precompiles_trains_and_writes_where_the_cli_says(slurm, cli, trained):
    job_id, name = trained.job_id, trained.name
    assert trained.state == "COMPLETED", log_of(job_id)
    # sbatch ran the CLI's script, unchanged
    assert Path(JOBS_DIR, f"{name}.sbatch").read_text() == trained.script

    code, log, _ = cli("logs", str(job_id))
    assert code == 0
    assert log.startswith(f"job {job_id} (restart 0): 2 nodes, rendezvous node1:{RENDEZVOUS_PORT}\n")
    expected_removed = (f"--auto-resume=1 --container-image={CONTAINER_IMAGE} "
                        f"--container-mounts={FSX_MOUNT_PATH}:{FSX_MOUNT_PATH} --no-container-mount-home")
    assert removed_by_shim(log) == [expected_removed]  # one step: the node script, on each node
    assert "neuron_parallel_compile shim: NEURON_EXTRACT_GRAPHS_ONLY=1 torchrun " in log

    precompile, train = runs(log)
    assert precompile[0]["compile_only"] is True and train[0]["compile_only"] is False
    for run in (precompile, train):  # one torchrun per node, PROCS_PER_NODE processes each
        assert run[0]["world_size"] == WORLD_SIZE and run[0]["start_step"] == 0
    assert steps(precompile) == [1, 2] and steps(precompile, "checkpoint") == []
    assert steps(train) == list(range(1, TRAIN_STEPS + 1))
    assert steps(train, "checkpoint") == [2, 4, 6]
    assert train[-1]["event"] == "end" and train[-1]["final_step"] == TRAIN_STEPS
    for node in NODES:  # the step (precompile pass, then training) ran on both nodes
        node_log = slurm.logs[f"slurmd {node}"].read_text()
        assert f"launch task StepId={job_id}.0 " in node_log, node

    # checkpoints and metrics under the CLI's default output directory
    output_dir = Path(FSX_MOUNT_PATH, RUNS_DIR, name)
    assert complete_checkpoints(output_dir) == [2, 4, 6]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logged = {e["step"]: e["loss"] for e in train if e["event"] == "train"}
    curves = []
    for path in sorted((output_dir / "tensorboard").glob("events.out.tfevents.*")):
        accumulator = EventAccumulator(str(path))
        accumulator.Reload()
        curves.append({s.step: s.value for s in accumulator.Scalars("train/loss")})
    assert any(curve.keys() == logged.keys() and all(
        curve[s] == pytest.approx(logged[s], rel=1e-6) for s in logged) for curve in curves), curves

    code, out, _ = cli("status", str(job_id))
    assert code == 0 and re.match(rf"{job_id}\s+{name}\s+COMPLETED\s+\S+ nodes=2 ", out), out


def test_status_logs_and_cancel_against_real_slurm(slurm, cli):
    name = "slurm-cancel"
    job_id, _ = submit(cli, name, "--recipe", "llama-tiny", "--steps", "100000",
                       "--data-dir", DATA_DIR, "--nproc-per-node", "1",
                       "--", *ON_THIS_CPU, "--log-every", "1", "--no-progress")

    def listed_running() -> bool:
        code, out, _ = cli("status")
        return code == 0 and re.search(rf"^{job_id}\s+{name}\s+RUNNING\s", out, re.M) is not None

    wait_until(listed_running, 60, f"job {job_id} RUNNING in `status`", slurm.log_tails)
    wait_until(lambda: '{"event": "train"' in log_of(job_id), 120, f"job {job_id} training",
               lambda: log_of(job_id)[-3000:])
    code, out, _ = cli("logs", str(job_id), "--tail", "2")
    assert code == 0 and len(out.splitlines()) == 2, out

    code, out, _ = cli("cancel", str(job_id))
    assert code == 0 and out == f"cancelled {job_id}\n"
    wait_until(lambda: state_of(slurm, job_id) == "CANCELLED", 60, f"job {job_id} CANCELLED",
               slurm.log_tails)
    code, out, _ = cli("status", str(job_id))
    assert code == 0 and re.match(rf"{job_id}\s+{name}\s+CANCELLED\s", out), out
    # seconds after its end slurmctld still has the job (MinJobAge): the row is squeue's
    # (elapsed M:SS), not the job completion log's (sacct: HH:MM:SS)
    assert re.fullmatch(r"\d+:\d\d", jobs(slurm).status(job_id)[0]["elapsed"])
    # its processes are gone: both nodes are free again, and the queue is empty
    wait_until(lambda: slurm.node_states() == {n: "idle" for n in NODES}, 60, "nodes idle again",
               slurm.log_tails)
    code, out, _ = cli("status")
    assert code == 0 and out.startswith("no Slurm jobs of user"), out

    code, _, err = cli("status", "999999")
    assert code == ExitCode.CLUSTER and "Slurm job 999999 not found" in err, err
    code, _, err = cli("logs", "999999")
    assert code == ExitCode.CLUSTER and "no log for job 999999" in err, err


def test_requeued_job_resumes_from_its_last_complete_checkpoint(slurm, cli):
    """``scontrol requeue`` while the job trains, one step after its first checkpoint c:
    Slurm kills it and, after the credential lifetime, runs the script again
    (``SLURM_RESTART_COUNT=1``). The second run resumes from c, the newest complete
    checkpoint (the program's ``resume`` event), records exactly the steps c+1..N, and
    computes the losses the first run had for the steps both ran (its model and optimizer
    came from the checkpoint). The next checkpoint is ``EVERY`` steps away, so the requeue
    lands before it (steps take a fraction of a second with this batch). One process per node
    (``--nproc-per-node 1``): what is tested is the requeue and the resume across the two nodes;
    two processes per node are the other jobs' (a third fewer processes to start, twice)."""
    name = "slurm-requeue"
    total, every = 50, 25
    job_id, _ = submit(cli, name, "--recipe", "llama-tiny", "--steps", str(total),
                       "--data-dir", DATA_DIR, "--nproc-per-node", "1",
                       "--", *ON_THIS_CPU, "--ckpt-every", str(every),
                       "--keep-last", str(total), "--global-batch-size", "64",
                       "--log-every", "1", "--no-progress")
    after_checkpoint = f'{{"event": "train", "step": {every + 1},'
    wait_until(lambda: after_checkpoint in log_of(job_id), 120,
               f"job {job_id} past its first checkpoint", lambda: log_of(job_id)[-3000:])
    slurm.run("scontrol", "requeue", str(job_id))
    # the first run's processes are gone once Slurm has the job pending again
    wait_until(lambda: state_of(slurm, job_id) == "PENDING", 60, f"job {job_id} requeued",
               slurm.log_tails)
    output_dir = Path(FSX_MOUNT_PATH, RUNS_DIR, name)
    assert complete_checkpoints(output_dir) == [every], "the requeue did not land between checkpoints"

    assert wait_for_end(slurm, job_id) == "COMPLETED", log_of(job_id)
    code, log, _ = cli("logs", str(job_id))
    assert code == 0
    restarts = re.findall(rf"^job {job_id} \(restart (\d+)\): 2 nodes", log, flags=re.M)
    assert restarts == ["0", "1"], log[:2000]  # --open-mode=append kept the first run's output
    first, second = runs(log)
    assert first[0]["start_step"] == 0 and steps(first, "checkpoint") == [every]
    assert every < steps(first)[-1] < 2 * every

    resume = next(e for e in second if e["event"] == "resume")
    assert resume["step"] == second[0]["start_step"] == every
    assert resume["path"] == str(output_dir / "checkpoints" / f"step_{every:08d}")
    assert steps(second) == list(range(every + 1, total + 1))  # nothing at or before c again
    assert steps(second, "checkpoint") == list(range(2 * every, total + 1, every))
    assert complete_checkpoints(output_dir) == list(range(every, total + 1, every))
    first_losses = {e["step"]: e["loss"] for e in first if e["event"] == "train"}
    second_losses = {e["step"]: e["loss"] for e in second if e["event"] == "train"}
    for step in range(every + 1, steps(first)[-1] + 1):
        assert second_losses[step] == pytest.approx(first_losses[step], rel=1e-4), step


def test_status_of_a_job_slurmctld_has_forgotten_comes_from_sacct(slurm, cli, trained):
    """Once slurmctld drops an ended job (``MinJobAge``, then its purge pass every 60 s,
    Slurm's ``PURGE_JOB_INTERVAL``), ``squeue`` no longer knows it and ``status`` reads it
    from ``sacct``: from slurmdbd (``sacct -X``), as on HyperPod, where MariaDB and slurmdbd
    run on the controller."""
    def known_to_slurmctld() -> bool:
        done = subprocess.run(["squeue", "-h", "-t", "all", "-j", str(trained.job_id)],
                              capture_output=True, text=True, env=slurm.env, check=False)
        return bool(done.stdout.strip())

    wait_until(lambda: not known_to_slurmctld(), 150, f"slurmctld forgets job {trained.job_id}",
               slurm.log_tails)
    code, out, _ = cli("status", str(trained.job_id))
    assert code == 0 and re.match(rf"{trained.job_id}\s+{trained.name}\s+COMPLETED\s", out), out
