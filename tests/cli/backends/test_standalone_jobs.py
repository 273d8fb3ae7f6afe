"""The standalone job path for real on CPU: the job CLI's ``submit``, ``status``, ``logs`` and
``cancel`` with two "nodes" on this machine (:class:`~tests.cli.backends.local_nodes.LocalNodes`:
the backend's Run Command scripts run with bash here, systemd-run/systemctl shims, ``/fsx`` a
temporary directory), and the job script exactly as ``submit --dry-run`` prints it: one
torchrun per node with the static rendezvous on the first, the training program
(``llama-tiny``, CPU/gloo) in the ``dlami-venv`` runtime (this test's venv standing in for the
DLAMI's). A user's program too: its working directory uploaded to a moto bucket, shown on the
stand-in ``/fsx`` by :func:`~tests.cli.fake_dra.auto_import`.

The instance type is the catalog's trn1.32xlarge with 1 NeuronCore
(``dataclasses.replace``), so each node's torchrun starts 1 process and the job has 2.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.cli.backends.local_nodes import REPO, LocalNodes
from tests.cli.fake_dra import auto_import
from tests.cli.helpers import REGION, outputs_values, run, write_outputs
from tests.cli.program_helpers import AWKWARD_ARGS, make_workdir
from trn_ultracluster.cli.backends.standalone import Node, StandaloneBackend, StandaloneNodes
from trn_ultracluster.cli.stack_outputs import StackOutputs
from trn_ultracluster.contracts.catalog import get_instance
from trn_ultracluster.contracts.hyperpod import JobEnv
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.neuron_stack import NATIVE, compile_cache_dir
from trn_ultracluster.contracts.standalone import job_dir, job_unit

pytestmark = pytest.mark.jobs  # trains twice on CPU: about a minute

SPEC = replace(get_instance("trn1.32xlarge"), neuron_cores=1)
NODES = [Node("i-0000000000000000a", "127.0.0.1"), Node("i-0000000000000000b", "127.0.0.1")]
TIMEOUT_S = 240
TRAIN_ARGS = ["--", "--device", "cpu", "--global-batch-size", "2", "--micro-batch-size", "1",
              "--log-every", "1", "--no-progress"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two local nodes, a tiny prepared dataset and the env file on the stand-in /fsx, a
    stand-in DLAMI venv (this interpreter's), and the stack outputs."""
    from trn_train.prepare import prepare_data
    from trn_train.tokenizer import train_tokenizer

    tmp = tmp_path_factory.mktemp("standalone")
    nodes = LocalNodes(tmp, [n.instance_id for n in NODES], env={"OMP_NUM_THREADS": "1"})
    nodes.mark_ready()
    # the env file as the node scripts write it (lcs.py env-file)
    cluster_json = tmp / "trn_ultracluster.json"
    # The native stack: its program runs here on CPU (the XLA one needs torch-xla).
    cluster_json.write_text(json.dumps({"env": {
        **neuron_environment(SPEC, NATIVE), JobEnv.NEURON_CACHE_DIR.value: compile_cache_dir(NATIVE),
        JobEnv.NEURON_STACK.value: NATIVE}}))
    env_file = nodes.fsx / ".trn-ultracluster/env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text(subprocess.run(
        [sys.executable, str(REPO / "trn_ultracluster/orchestrators/node_scripts/lcs.py"),
         "--cluster", str(cluster_json), "env-file"], capture_output=True, text=True,
        check=True).stdout)
    licenses = Path("/usr/share/common-licenses")
    corpus = [str(licenses)] if licenses.is_dir() else [str(Path(json.__file__).parent)]
    tokenizer = train_tokenizer(corpus, tmp / "tokenizer", "bpe", 500)
    prepare_data(nodes.fsx / "datasets/tiny", str(tokenizer), 64, inputs=corpus, progress=False)
    venv = tmp / "dlami-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/activate").write_text(f'export PATH="{Path(sys.executable).parent}:$PATH"\n')
    values = outputs_values("standalone", neuron_stack=NATIVE)
    values.update({"StandaloneRuntime": "dlami-venv", "StandaloneDlamiVenv": str(venv),
                   "NodeCountDesired": "2", "NodeCountMax": "2"})
    nodes.outputs = write_outputs(tmp, values)
    return nodes


@pytest.fixture
def cli(cluster, capsys, monkeypatch):
    monkeypatch.setattr(StandaloneBackend, "connect",
                        lambda self: StandaloneNodes(list(NODES), cluster))
    monkeypatch.setattr(StackOutputs, "instance_spec", lambda self: SPEC)

    def call(command: str, *argv: str) -> tuple[int, str, str]:
        return run(capsys, command, "--outputs-file", str(cluster.outputs), *argv)

    return call


def wait_for(cli, name: str, states: tuple[str, ...]) -> str:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        code, out, err = cli("status", name)
        assert code == 0, err
        state = out.split()[1]
        if state in states:
            return out
        assert time.monotonic() < deadline, f"{name} still {state}: {out}"
        time.sleep(1)


def test_two_nodes_train_together_and_the_cli_follows_the_job(cli, cluster):
    args = ["--name", "cpu-two", "--recipe", "llama-tiny", "--steps", "3",
            "--data-dir", "/fsx/datasets/tiny", *TRAIN_ARGS]
    code, printed, err = cli("submit", "--dry-run", *args)
    assert code == 0, err
    code, out, err = cli("submit", *args)
    assert code == 0, err
    assert out.startswith("submitted cpu-two (2 x trn1.32xlarge)")
    directory = Path(str(cluster.fsx) + job_dir("cpu-two").removeprefix("/fsx"))
    # the nodes run exactly what --dry-run printed (with this machine's paths and port)
    assert (directory / "job.sh").read_text() == cluster.localize(printed, NODES[0].instance_id)
    meta = json.loads((directory / "job.json").read_text())
    assert meta["nodes"] == 2 and meta["instances"] == [n.instance_id for n in NODES]
    starts = [(i, s) for i, s in cluster.scripts if "systemd-run" in s]
    assert [i for i, _ in starts] == [n.instance_id for n in NODES]
    assert [f"job.sh {rank} 127.0.0.1" in s for rank, (_, s) in enumerate(starts)] == [True] * 2

    final = wait_for(cli, "cpu-two", ("COMPLETED", "FAILED"))
    assert final.split()[1] == "COMPLETED", (final, (directory / "node-0.log").read_text()[-3000:],
                                             (directory / "node-1.log").read_text()[-3000:])
    assert [(directory / f"node-{r}.exit").read_text().strip() for r in (0, 1)] == ["0", "0"]
    code, log, err = cli("logs", "cpu-two")
    assert code == 0, err
    assert log.startswith("job cpu-two: node 0 of 2 on ")
    events = [json.loads(ln) for ln in log.splitlines() if ln.startswith('{"event": ')]
    start = next(e for e in events if e["event"] == "start")
    assert start["world_size"] == 2  # both nodes' processes in one job
    assert [e["step"] for e in events if e["event"] == "train"] == [1, 2, 3]
    code, tail, _ = cli("logs", "cpu-two", "--tail", "2")
    assert tail.splitlines() == log.splitlines()[-2:]
    checkpoints = Path(str(cluster.fsx) + "/runs/cpu-two/checkpoints")
    assert sorted(p.name for p in checkpoints.iterdir() if p.is_dir()) == ["step_00000003"]
    code, listing, _ = cli("status")
    assert code == 0 and "cpu-two" in listing and "COMPLETED" in listing


def test_a_cancelled_job_stops_on_every_node(cli, cluster):
    code, _, err = cli("submit", "--name", "cpu-cancel", "--recipe", "llama-tiny", "--steps",
                       "100000", "--data-dir", "/fsx/datasets/tiny", "--time", "30", *TRAIN_ARGS)
    assert code == 0, err
    assert "--property=RuntimeMaxSec=1800" in (
        cluster.state[NODES[0].instance_id] / "systemd-run.options").read_text()
    log = Path(str(cluster.fsx) + job_dir("cpu-cancel").removeprefix("/fsx")) / "node-0.log"
    deadline = time.monotonic() + TIMEOUT_S
    while '"event": "train"' not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
        time.sleep(1)
    assert "RUNNING" in wait_for(cli, "cpu-cancel", ("RUNNING",))
    code, out, err = cli("cancel", "cpu-cancel")
    assert (code, out) == (0, "cancelled cpu-cancel\n"), err
    assert "CANCELLED" in wait_for(cli, "cpu-cancel", ("CANCELLED",))
    for node in NODES:
        done = subprocess.run([str(cluster.shims / "systemctl"), "is-active", "--quiet",
                               job_unit("cpu-cancel")],
                              env={"SHIM_STATE": str(cluster.state[node.instance_id]),
                                   "PATH": "/usr/bin:/bin"})
        assert done.returncode != 0  # nothing of the job runs any more


USER_PROGRAM = """\
import json, os, sys

import torch
import torch.distributed as dist

import helper  # beside this script in the working directory

dist.init_process_group("gloo")
rank = dist.get_rank()
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
seen = {"rank": rank, "world_size": dist.get_world_size(), "sum": total.item(),
        "node": os.environ["TRN_NODE_RANK"], "args": sys.argv[1:], "cwd": os.getcwd(),
        "value": os.environ.get("TRN_TEST_VALUE"), "sha": os.environ.get("TRN_CODE_SHA256"),
        "helper": helper.__file__, "greeting": helper.GREETING}
path = os.path.join(os.environ["TRN_OUTPUT_DIR"], f"rank-{rank}.json")
with open(path + ".tmp", "w", encoding="utf-8") as out:
    json.dump(seen, out)
os.replace(path + ".tmp", path)
dist.destroy_process_group()
"""
ENV_VALUE = "it's \"q\" $HOME `date` * naïve 日本\tend"


def test_a_users_program_runs_its_snapshot_on_every_rank(cli, cluster):
    """The issue's "done when", on standalone nodes: a script importing a module of its
    working directory, reading its arguments and an --env value, all-reducing over 2 nodes x
    2 processes; every rank sees the same snapshot and directory, the arguments as given."""
    import boto3
    import moto

    work = make_workdir(cluster.fsx.parent / "user-work",
                        {"train.py": USER_PROGRAM, "helper.py": "GREETING = 'hi'\n"})
    with moto.mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="trn-data-bucket",
                         CreateBucketConfiguration={"LocationConstraint": REGION})
        with auto_import(s3, "trn-data-bucket", cluster.fsx):
            code, out, err = cli("submit", "--name", "user-program", "--workdir", str(work),
                                 "--nproc-per-node", "2", "--env", f"TRN_TEST_VALUE={ENV_VALUE}",
                                 "--no-progress", "--", "python", "train.py", *AWKWARD_ARGS)
            assert code == 0, err
            sha = re.search(r" -> snapshot ([0-9a-f]{64}) ", err).group(1)
            assert out.startswith(f"submitted user-program (2 x trn1.32xlarge; code {sha[:12]})")
            final = wait_for(cli, "user-program", ("COMPLETED", "FAILED"))
    directory = Path(str(cluster.fsx) + job_dir("user-program").removeprefix("/fsx"))
    assert final.split()[1] == "COMPLETED", [(directory / f"node-{r}.log").read_text()[-3000:]
                                             for r in (0, 1)]
    assert f"code={sha[:12]}" in final.split()
    outputs = cluster.fsx / "runs/user-program"
    ranks = [json.loads((outputs / f"rank-{r}.json").read_text()) for r in range(4)]
    code_dir = str(cluster.fsx / ".trn-ultracluster/code" / sha)
    for rank, seen in enumerate(ranks):
        assert seen == {"rank": rank, "world_size": 4, "sum": 10.0, "node": str(rank // 2),
                        "args": AWKWARD_ARGS, "cwd": code_dir, "value": ENV_VALUE, "sha": sha,
                        "helper": f"{code_dir}/helper.py", "greeting": "hi"}
    record = json.loads((outputs / "trn-job.json").read_text())
    assert (record["program"], record["code_sha256"]) == (["train.py", *AWKWARD_ARGS], sha)
    code, log, _ = cli("logs", "user-program")
    assert f"trn: code snapshot {sha[:12]}" in log
