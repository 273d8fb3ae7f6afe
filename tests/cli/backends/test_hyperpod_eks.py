"""The ``hyperpod-eks`` job backend through the CLI: TrainJobs for the HyperPod nodes (the same
manifest as on ``eks``, valid against the Trainer CRD, naming the stack's runtime), and
submit, status, logs, cancel and smoke-test against a local Kubernetes API server; ``scale``
is refused. A team's job: test_hyperpod_eks_teams.py, and with the synthesized stack's
``Teams`` output tests/orchestrators/hyperpod_eks/test_task_governance.py."""

from __future__ import annotations

import pytest
import yaml

from tests.crds import trainjob_validator
from tests.cli.backends.test_eks import ALLREDUCE, PODS, TRAINJOBS, fake_cluster
from tests.cli.helpers import dry_run, outputs_values, run, write_outputs
from trn_ultracluster.cli.backends import BACKENDS
from trn_ultracluster.cli.backends.eks import EksBackend
from trn_ultracluster.cli.backends.hyperpod_eks import HyperPodEksBackend
from trn_ultracluster.cli.errors import ExitCode


@pytest.fixture
def kube(tmp_path, monkeypatch):
    """The fake API server and the CLI arguments that reach it, for a hyperpod-eks stack."""
    yield from fake_cluster(tmp_path, monkeypatch, "hyperpod-eks")


def test_the_backend_is_the_eks_one_for_hyperpod_stacks():
    assert BACKENDS["hyperpod-eks"] is HyperPodEksBackend
    assert issubclass(HyperPodEksBackend, EksBackend)
    assert HyperPodEksBackend.options == EksBackend.options  # --kube-context


@pytest.mark.parametrize("command, extra", [("submit", ()), ("submit", ("--nodes", "2")),
                                            ("smoke-test", ())])
def test_trainjob_validates_and_names_the_stacks_runtime(capsys, tmp_path, command, extra):
    manifest = yaml.safe_load(dry_run(capsys, tmp_path, "hyperpod-eks", *extra, command=command))
    trainjob_validator().validate(manifest)
    assert manifest["spec"]["runtimeRef"]["name"] == "neuron-torch-distributed"
    assert manifest["metadata"]["namespace"] == "training"
    trainer = manifest["spec"]["trainer"]
    assert trainer["numProcPerNode"] == 32  # every NeuronCore of a trn1.32xlarge
    assert trainer["resourcesPerNode"]["limits"] == {"aws.amazon.com/neuron": "16",
                                                     "vpc.amazonaws.com/efa": "8"}


def test_the_manifest_is_the_eks_backends(capsys, tmp_path, monkeypatch):
    """Node selection, tolerations and restarts are the runtime's; the TrainJob is the same
    (both submitted at one instant: the run id and the job record hold the submit second)."""
    from datetime import datetime, timezone

    from trn_ultracluster.cli import job_args

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2026, 11, 27, 10, 45, 59, tzinfo=timezone.utc)

    monkeypatch.setattr(job_args, "datetime", Frozen)
    on_eks = dry_run(capsys, tmp_path, "eks")
    assert dry_run(capsys, tmp_path, "hyperpod-eks") == on_eks


def test_submit_status_logs_cancel(capsys, kube):
    code, out, err = run(capsys, "submit", *kube.args, "--name", "job-a", "--recipe", "llama-1b",
                         "--steps", "10", "--data-dir", "/fsx/datasets/wiki")
    assert code == 0, err
    assert kube.requests[-1][:2] == ("POST", TRAINJOBS)
    assert kube.jobs["job-a"]["spec"]["runtimeRef"]["name"] == "neuron-torch-distributed"
    code, out, err = run(capsys, "status", *kube.args, "job-a")
    assert code == 0, err
    assert out.split()[:2] == ["job-a", "Complete"]  # the fake API server completes jobs at once
    kube.logs["job-a-node-0-0-x7k2p"] = b"step 1 loss 7.25\n"
    code, out, err = run(capsys, "logs", *kube.args, "job-a")
    assert (code, out) == (0, "step 1 loss 7.25\n"), err
    code, out, err = run(capsys, "cancel", *kube.args, "job-a")
    assert code == 0, err
    assert "job-a" not in kube.jobs


def test_smoke_test_passes_with_the_api_servers_log(capsys, kube):
    kube.logs["smoke-a-node-0-0-x7k2p"] = f"[rank0]: starting\n{ALLREDUCE}\n".encode()
    code, out, err = run(capsys, "smoke-test", *kube.args, "--name", "smoke-a")
    assert code == 0, out + err
    assert "PASS: EFA carries the collectives" in out
    assert ("GET", f"{PODS}/smoke-a-node-0-0-x7k2p/log") in [r[:2] for r in kube.requests]


def test_scale_is_refused(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("hyperpod-eks"))
    code, out, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "1")
    assert code == ExitCode.USAGE and out == ""
    assert "error: scale changes EKS node groups; the HyperPod instance groups" in err
    assert "fix: set nodes.desired" in err
