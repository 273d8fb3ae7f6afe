"""What the Slurm job tests share: the stack values of the test cluster, the env file its
nodes source, the job CLI reaching it (with the data bucket in moto and a stand-in for the
data repository association's automatic import, so ``submit`` of a program uploads its
working directory as it would to AWS and the nodes find it under ``/fsx``), and helpers
that submit and wait."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.cli.fake_dra import auto_import
from tests.cli.helpers import outputs_values, write_outputs
from tests.slurm.conftest import (
    CPU_NODES,
    CPU_PARTITION,
    NODES,
    PARTITION,
    PARTITIONS,
    REPO,
    SHIMS,
    SlurmCluster,
    wait_until,
)
from trn_ultracluster.cli.backends.hyperpod_slurm import HyperPodSlurmBackend
from trn_ultracluster.cli.backends.slurm import ENDED_STATES as ENDED  # the CLI's terminal states
from trn_ultracluster.cli.backends.slurm import SlurmJobs, pyxis_image
from trn_ultracluster.cli.stack_outputs import StackOutputs
from trn_ultracluster.contracts.catalog import get_instance
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.shared_storage import (
    ENV_FILE,
    FSX_MOUNT_PATH,
    JOBS_DIR,
    NEURON_COMPILE_CACHE_DIR,
)

INSTANCE_TYPE = "trn1.32xlarge"
PROCS_PER_NODE = 2
SPEC = replace(get_instance(INSTANCE_TYPE), neuron_cores=PROCS_PER_NODE)
WORLD_SIZE = PROCS_PER_NODE * len(NODES)
DATA_DIR = f"{FSX_MOUNT_PATH}/datasets/tiny"
ENV_FILE_IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com#trn-ultracluster:created-with"
"""The image the env file names (the one nodes were created with)."""
CONTAINER_IMAGE = pyxis_image(outputs_values("hyperpod-slurm", INSTANCE_TYPE)["TrainingImageUri"])
"""The stack's current image, which the job CLI exports in the script (and which wins)."""
CPU_TYPE = "m7i.8xlarge"
POOLS = [
    {"name": PARTITION, "instance_type": INSTANCE_TYPE, "accelerated": True,
     "nodes": {"min": 0, "desired": len(NODES), "max": len(NODES)}, "neuron_stack": "xla",
     "partition": PARTITION, "instance_groups": PARTITION},
    {"name": CPU_PARTITION, "instance_type": CPU_TYPE, "accelerated": False,
     "nodes": {"min": 0, "desired": len(CPU_NODES), "max": len(CPU_NODES)},
     "neuron_stack": "", "partition": CPU_PARTITION, "instance_groups": CPU_PARTITION},
]
"""The stack output ``Pools`` of this cluster: one pool per partition, each pool's
``nodes.max`` its partition's nodes (the HyperPod Slurm stack's shape:
``HyperPodSlurmOrchestrator.pool_details``)."""
JOB_TIMEOUT_S = 240
ON_THIS_CPU = ("--backend", "native", "--device", "cpu")
"""Extra ``train`` flags of every job here: the stack is trn1's (``NeuronStack`` xla, so the
CLI writes ``--backend xla`` and the precompile pass), whose program needs torch-xla; a later
``--backend`` wins, and the native backend on CPU is the stand-in that runs on this machine."""


@pytest.fixture(scope="session")
def cluster_files(slurm: SlurmCluster) -> Path:
    """The env file the lifecycle scripts would write (``lcs.py env-file`` of a
    ``trn_ultracluster.json`` with this test's values) and a tiny prepared dataset, both on
    ``/fsx``. Returns the env file."""
    from trn_train.prepare import prepare_data
    from trn_train.tokenizer import train_tokenizer

    env = {
        "TRN_CONTAINER_IMAGE": ENV_FILE_IMAGE,
        "TRN_FSX_MOUNT_POINT": FSX_MOUNT_PATH,
        "TRN_NEURON_CACHE_DIR": NEURON_COMPILE_CACHE_DIR,
        "TRN_DEFAULT_PARTITION": PARTITION,
        "TRN_PARTITIONS": ",".join(PARTITIONS),
        "TRN_INSTANCE_TYPE": INSTANCE_TYPE,
        **neuron_environment(SPEC, "xla"),
        # what the test needs on the nodes: the shims first, then the project's venv
        "PATH": f"{SHIMS}:{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:"
                "/usr/sbin:/usr/bin:/sbin:/bin",
        "PYTHONPATH": f"{REPO}:{REPO / 'training'}",
        "OMP_NUM_THREADS": "1",
    }
    cluster_json = slurm.root / "trn_ultracluster.json"
    cluster_json.write_text(json.dumps({"env": env}))
    env_file = Path(ENV_FILE)
    env_file.parent.mkdir(parents=True)
    done = subprocess.run([sys.executable, str(REPO / "trn_ultracluster/orchestrators/node_scripts/lcs.py"), "--cluster",
                           str(cluster_json), "env-file"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    env_file.write_text(done.stdout)

    licenses = Path("/usr/share/common-licenses")
    corpus = [str(licenses)] if licenses.is_dir() else [str(Path(json.__file__).parent)]
    tokenizer = train_tokenizer(corpus, slurm.root / "tokenizer", "bpe", 500)
    prepare_data(Path(DATA_DIR), str(tokenizer), 64, inputs=corpus, progress=False)
    return env_file


def stack_values() -> dict[str, str]:
    """The outputs of the HyperPod Slurm stack of this cluster, with :data:`POOLS`."""
    values = outputs_values("hyperpod-slurm", INSTANCE_TYPE)
    image = values["TrainingImageUri"]
    values["Pools"] = json.dumps([{**pool, "image_uri": image} for pool in POOLS])
    return values


@contextmanager
def cli_on(slurm: SlurmCluster, values: dict[str, str], outputs_dir: Path) -> Iterator[Any]:
    """``run(command, *argv) -> (exit code, stdout, stderr)``: the job CLI on the stack
    outputs ``values``, reaching this cluster through the local transport (root's jobs), with
    the 2-core instance spec, the data bucket in moto and its automatic import to ``/fsx``."""
    from trn_ultracluster.cli import main

    outputs = write_outputs(outputs_dir, values)

    def run(command: str, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main.main([command, "--outputs-file", str(outputs), *argv])
        return code, out.getvalue(), err.getvalue()

    with mock_aws(), pytest.MonkeyPatch.context() as patch:
        for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                           ("AWS_DEFAULT_REGION", values["Region"])):
            patch.setenv(key, value)
        s3 = boto3.client("s3", region_name=values["Region"])
        s3.create_bucket(Bucket=values["DataBucketName"],
                         CreateBucketConfiguration={"LocationConstraint": values["Region"]})
        patch.setattr(HyperPodSlurmBackend, "connect", lambda self: jobs(slurm))
        patch.setattr(StackOutputs, "instance_spec", lambda self: SPEC)
        with auto_import(s3, values["DataBucketName"], Path(FSX_MOUNT_PATH)):
            yield run


@pytest.fixture(scope="module")
def cli(slurm: SlurmCluster, cluster_files: Path, tmp_path_factory):
    """The job CLI (:func:`cli_on`) on the outputs of a stack without teams
    (:func:`stack_values`): its jobs run in root's default account, the default team of the
    cluster's teams (``accounting.py``), as a user's plain ``sbatch`` would."""
    with cli_on(slurm, stack_values(), tmp_path_factory.mktemp("outputs")) as run:
        yield run


def jobs(slurm: SlurmCluster) -> SlurmJobs:
    return SlurmJobs(slurm.transport(), user="root")


def submit(cli, name: str, *argv: str) -> tuple[int, str]:
    """Submit with the CLI; returns the job id and the script ``submit --dry-run`` prints
    for the same arguments."""
    code, script, err = cli("submit", "--dry-run", "--name", name, *argv)
    assert code == 0, err
    code, out, err = cli("submit", "--name", name, *argv)
    assert code == 0, err
    match = re.match(rf"submitted (\d+) \(2 x {INSTANCE_TYPE}[;)]", out)
    assert match, out
    return int(match.group(1)), script


def state_of(slurm: SlurmCluster, job_id: int) -> str:
    rows = jobs(slurm).status(job_id)
    return rows[0]["state"].split()[0] if rows else "UNKNOWN"


def wait_for_end(slurm: SlurmCluster, job_id: int) -> str:
    """The job's final state, polled through the CLI's status call."""
    wait_until(lambda: state_of(slurm, job_id) in ENDED, JOB_TIMEOUT_S, f"job {job_id} ended",
               lambda: log_of(job_id)[-3000:] + "\n" + slurm.log_tails())
    return state_of(slurm, job_id)


def log_of(job_id: int) -> str:
    found = sorted(Path(JOBS_DIR).glob(f"*-{job_id}.out"))
    return found[0].read_text(errors="replace") if found else ""


