"""TrainJob manifests (Kubeflow Trainer 2.3.0 CRD): every manifest the CLI prints validates
against the CRD; command, node count, processes and resources per node from the catalog,
the same as the stack's runtime; environment and time limit."""

from __future__ import annotations

import re
import shlex
import subprocess

import jsonschema
import pytest
import yaml

from trn_ultracluster.contracts.pools import POOL_LABEL

from tests.crds import trainjob_validator
from tests.cli.helpers import dry_run, outputs_values, run, write_outputs
from trn_ultracluster.contracts.catalog import CATALOG, get_instance
from trn_ultracluster.orchestrators.eks.manifests import PROJECT_LABEL, TRAINER_API_VERSION, neuron_resource_requirements

EFA_TYPES = sorted(n for n, s in CATALOG.items() if s.supports_efa)
ENV_VALUE = "it's \"quoted\" $HOME `date` \\ end"


@pytest.mark.parametrize("command, extra", [
    ("submit", ()), ("submit", ("--precompile",)), ("submit", ("--nodes", "4", "--env", "A=1")),
    ("submit", ("--", "--lr", "3e-4")), ("submit", ("--time", "2-00:00:00")), ("smoke-test", ()),
])
@pytest.mark.parametrize("instance_type", EFA_TYPES)
def test_every_trainjob_validates_against_the_crd(capsys, tmp_path, command,
                                                  extra, instance_type):
    manifest = yaml.safe_load(dry_run(capsys, tmp_path, "eks", *extra, command=command,
                                      instance_type=instance_type))
    trainjob_validator().validate(manifest)
    # CEL rules of the CRD that jsonschema does not evaluate:
    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", manifest["metadata"]["name"])
    assert manifest["spec"]["runtimeRef"]["name"] == "neuron-torch-distributed"
    assert manifest["metadata"]["namespace"] == "training"


def test_broken_trainjob_fails_the_crd():
    bad = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "x"}, "spec": {"trainer": {"numNodes": "two"}}}
    with pytest.raises(jsonschema.ValidationError):
        trainjob_validator().validate(bad)


def _run_lines(command: list[str]) -> list[str]:
    """The launcher lines of a TrainJob's node script (``bash -c``)."""
    assert command[:2] == ["bash", "-c"]
    return [ln for ln in command[2].splitlines()
            if ln.startswith(("torchrun ", "neuron_parallel_compile "))]


def test_trainjob_command_and_resources(capsys, tmp_path):
    job = yaml.safe_load(dry_run(capsys, tmp_path, "eks", "--", "--lr", "3e-4"))
    trainer = job["spec"]["trainer"]
    assert [shlex.split(ln) for ln in _run_lines(trainer["command"])] == [[
        "torchrun", "-m", "trn_train", "train", "--backend", "xla", "--recipe", "llama-1b", "--data-dir",
        "/fsx/datasets/wiki", "--output-dir", "/fsx/runs/job-a", "--steps", "100",
        "--instance-type", "trn1.32xlarge", "--lr", "3e-4"]]
    script = trainer["command"][2]
    assert script.startswith("set -euo pipefail\n")
    assert 'TRN_NODE_RANK="${PET_NODE_RANK}"' in script  # Trainer's torch plugin names the rank
    assert trainer["numNodes"] == 2  # NodeCountDesired
    assert trainer["image"] == "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc"


@pytest.mark.parametrize("instance_type, procs, neuron, efa", [
    ("trn1.32xlarge", 32, "16", "8"), ("trn1n.32xlarge", 32, "16", "16"),
    ("trn2.48xlarge", 64, "16", "16"), ("trn2.3xlarge", 4, "1", "1"),
])
def test_resources_follow_the_instance_type(capsys, tmp_path, instance_type, procs, neuron, efa):
    job = yaml.safe_load(dry_run(capsys, tmp_path, "eks", instance_type=instance_type))
    trainer = job["spec"]["trainer"]
    spec = get_instance(instance_type)
    assert trainer["numProcPerNode"] == procs == spec.logical_neuron_cores
    assert trainer["resourcesPerNode"]["limits"] == {"aws.amazon.com/neuron": neuron,
                                                     "vpc.amazonaws.com/efa": efa}
    # the same requirements as the stack's ClusterTrainingRuntime container:
    assert trainer["resourcesPerNode"] == neuron_resource_requirements(spec)
    assert job["apiVersion"] == TRAINER_API_VERSION
    # the stack's one pool (its Pools output): status --pool finds the job by it
    assert job["metadata"]["labels"] == {PROJECT_LABEL: "trn-ultracluster",
                                         POOL_LABEL: "trainium"}
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", instance_type=instance_type)
    assert f"--nproc-per-node={procs} " in script


def test_precompile_runs_neuron_parallel_compile_first(capsys, tmp_path):
    job = yaml.safe_load(dry_run(capsys, tmp_path, "eks", "--precompile", "--precompile-steps", "5"))
    command = job["spec"]["trainer"]["command"]
    lines = _run_lines(command)
    assert len(lines) == 2 and command[2].splitlines()[-2:] == lines  # the last two lines
    assert lines[0].startswith("neuron_parallel_compile torchrun -m trn_train train ")
    assert lines[0].endswith("--max-steps-this-run 5")
    assert lines[1].startswith("torchrun -m trn_train train ") and "--max-steps-this-run" not in lines[1]
    assert subprocess.run(["bash", "-n", "-c", command[2]]).returncode == 0


def test_env_on_eks_is_exported_by_the_node_script(capsys, tmp_path):
    """As on every orchestrator: the node script exports --env last, value as given."""
    out = dry_run(capsys, tmp_path, "eks", "--env", f"MY_VAR={ENV_VALUE}")
    trainer = yaml.safe_load(out)["spec"]["trainer"]
    assert "env" not in trainer
    exports = [ln for ln in trainer["command"][2].splitlines() if ln.startswith("export MY_VAR=")]
    done = subprocess.run(["bash", "-c", exports[0] + '\nprintf %s "$MY_VAR"'],
                          capture_output=True, text=True)
    assert len(exports) == 1 and done.stdout == ENV_VALUE


def test_smoke_test_time_on_eks(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, out, err = run(capsys, "smoke-test", "--outputs-file", str(path), "--dry-run",
                         "--time", "30")
    assert code == 0, err
    assert yaml.safe_load(out)["spec"]["activeDeadlineSeconds"] == 1800


# --- Trn2 UltraServers: a job's pods placed by UltraServer (Neuron EKS UltraServer guide) ----

def _affinity(job: dict) -> dict | None:
    patches = job["spec"].get("runtimePatches")
    if patches is None:
        return None
    (patch,) = patches
    (replicated,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert replicated["name"] == "node"  # the runtime's replicated job
    return replicated["template"]["spec"]["template"]["spec"]["affinity"]


@pytest.mark.parametrize("nodes, key, required", [
    ("4", "neuron.amazonaws.com/ultraserver-server-id-4", True),
    ("2", "neuron.amazonaws.com/ultraserver-server-id-2", True),
    ("8", "neuron.amazonaws.com/ultraserver-server-id-4", False),
])
def test_ultraserver_jobs_keep_their_pods_together_and_others_out(
        capsys, tmp_path, nodes, key, required):
    job = yaml.safe_load(dry_run(capsys, tmp_path, "eks", "--nodes", nodes,
                                 instance_type="trn2u.48xlarge"))
    trainjob_validator().validate(job)
    affinity = _affinity(job)
    own = {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "In", "values": ["job-a"]}
    terms = affinity["podAffinity"]
    if required:
        (term,) = terms["requiredDuringSchedulingIgnoredDuringExecution"]
    else:  # several UltraServers: one group cannot hold them all
        (weighted,) = terms["preferredDuringSchedulingIgnoredDuringExecution"]
        term = weighted["podAffinityTerm"]
    assert term == {"labelSelector": {"matchExpressions": [own]}, "topologyKey": key}
    (anti,) = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["topologyKey"] == key
    # other TrainJobs' pods only: a selector that also matched DaemonSet pods (no JobSet
    # label) would keep the job off every node
    assert {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"} in (
        anti["labelSelector"]["matchExpressions"])


def test_a_job_that_splits_an_ultraserver_is_refused(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("eks", "trn2u.48xlarge"))
    code, _, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--name", "job-a",
                       "--recipe", "llama-1b", "--steps", "10", "--data-dir", "/fsx/d", "--nodes", "6")
    assert code == 2 and "--nodes 6 on trn2u.48xlarge: must be 1, 2, 4 or a multiple of 4" in err


@pytest.mark.parametrize("instance_type, nodes", [("trn2.48xlarge", "4"), ("trn2u.48xlarge", "1")])
def test_no_placement_patch_without_an_ultraserver_to_share(capsys, tmp_path, instance_type, nodes):
    job = yaml.safe_load(dry_run(capsys, tmp_path, "eks", "--nodes", nodes, instance_type=instance_type))
    assert "runtimePatches" not in job["spec"]
