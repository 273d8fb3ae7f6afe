"""The ``hyperpod-slurm`` job backend through the CLI: status lines, job ids, the smoke
script on FSx, and ``scale`` (refused: HyperPod instance groups are sized by the stack)."""

from __future__ import annotations

import pytest

from tests.cli.helpers import dry_run, outputs_values, run, write_outputs
from trn_ultracluster.cli.backends.hyperpod_slurm import HyperPodSlurmBackend
from trn_ultracluster.cli.backends.slurm import SlurmJobs
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.cli.smoke import SCRIPT_PATH
from trn_ultracluster.contracts.shared_storage import JOBS_DIR


class Answers:
    """A transport that answers each script with the next text and keeps the scripts."""

    def __init__(self, *answers: str):
        self.answers, self.scripts = list(answers), []

    def run(self, script: str) -> str:
        self.scripts.append(script)
        return self.answers.pop(0)


@pytest.fixture
def controller(monkeypatch):
    """The backend's controller connection, answered by an :class:`Answers` transport."""
    transport = Answers()
    monkeypatch.setattr(HyperPodSlurmBackend, "connect", lambda self: SlurmJobs(transport))
    return transport


def test_slurm_status_without_jobs_says_so(capsys, tmp_path, controller):
    controller.answers.append("")
    path = write_outputs(tmp_path, outputs_values("hyperpod-slurm"))
    code, out, _ = run(capsys, "status", "--outputs-file", str(path))
    assert code == 0
    assert out == "no Slurm jobs of user ubuntu in the queue (`status <job id>` shows ended jobs)\n"


def test_status_lines_and_a_job_not_found(capsys, tmp_path, controller):
    controller.answers += ["17|job-a|RUNNING|1:02|2|ip-10-0-0-1|trainium|code:0123456789ab\n", ""]
    path = write_outputs(tmp_path, outputs_values("hyperpod-slurm"))
    code, out, _ = run(capsys, "status", "--outputs-file", str(path), "17")
    assert code == 0
    assert out.split() == ["17", "job-a", "RUNNING", "1:02", "nodes=2", "partition=trainium",
                           "ip-10-0-0-1", "code=0123456789ab"]
    code, _, err = run(capsys, "status", "--outputs-file", str(path), "18")
    assert code == ExitCode.CLUSTER and "error: Slurm job 18 not found" in err


@pytest.mark.parametrize("command", [["status", "job-a"], ["logs", "job-a"], ["cancel", "job-a"]])
def test_a_job_id_that_is_not_a_number_never_reaches_the_controller(capsys, tmp_path,
                                                                    controller, command):
    path = write_outputs(tmp_path, outputs_values("hyperpod-slurm"))
    code, _, err = run(capsys, command[0], "--outputs-file", str(path), *command[1:])
    assert code == ExitCode.USAGE
    assert "error: Slurm job id must be a number, got 'job-a'" in err
    assert controller.scripts == []


def test_smoke_script_is_written_by_every_node_in_its_container(capsys, tmp_path):
    """Each node's node script writes it to the container's /tmp, which all its processes
    see: no node reads a file another node is still writing on FSx."""
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", command="smoke-test")
    node_lines = script.split("<<'TRN_NODE_SCRIPT_EOF'\n")[1]
    assert f"cat > {SCRIPT_PATH} <<'TRN_ALLREDUCE_EOF'" in node_lines
    assert SCRIPT_PATH.startswith("/tmp/") and JOBS_DIR not in node_lines


def test_scale_is_for_eks(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("hyperpod-slurm"))
    code, _, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "1")
    assert code == ExitCode.USAGE and "HyperPod instance groups are sized by the stack" in err
