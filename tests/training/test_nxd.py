"""The NxD Training adapter: generated config is consistent; the run itself needs Trainium."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from trn_train.errors import InputError
from trn_train.nxd import NxdRun, build_config, launch_command, write_config

from training_helpers import subprocess_env


def test_llama8b_on_32_nodes_matches_the_published_topology(tmp_path):
    """Neuron's published run: 32 x trn1.32xlarge, TP=32 DP=32 PP=1 ZeRO-1, GBS 1024, seq 8192."""
    paths = write_config(NxdRun(recipe="llama-8b", nodes=32, data_dir="/fsx/d", steps=100), tmp_path)
    cfg = yaml.safe_load(paths["yaml"].read_text())
    ds = cfg["distributed_strategy"]
    assert (ds["tensor_model_parallel_size"], ds["pipeline_model_parallel_size"], ds["zero1"]) == (32, 1, True)
    world = cfg["trainer"]["devices"] * cfg["trainer"]["num_nodes"]
    assert world == 1024 and world // (ds["tensor_model_parallel_size"] * ds["pipeline_model_parallel_size"]) == 32
    assert ds["kv_replicator"] == 4  # 32-way TP over 8 KV heads, as in NxDT's hf_llama3_8B_config.yaml
    assert cfg["data"] == {"micro_batch_size": 1, "global_batch_size": 1024, "train_dir": "/fsx/d"}
    m = cfg["model"]
    assert (m["num_layers"], m["hidden_size"], m["encoder_seq_length"]) == (32, 4096, 8192)
    assert cfg["exp_manager"]["checkpoint_callback_params"]["model_parallel_size"] == 32
    hf = json.loads(paths["model_config"].read_text())
    assert m["model_config"] == str(paths["model_config"].resolve())
    assert (hf["num_attention_heads"], hf["num_key_value_heads"], hf["intermediate_size"], hf["vocab_size"]) == (
        32, 8, 14336, 128256)
    from transformers import LlamaConfig

    assert LlamaConfig(**{k: v for k, v in hf.items() if k != "architectures"}).head_dim == 128


def test_pipeline_parallel_and_dp_degree(tmp_path):
    cfg, _ = build_config(NxdRun(recipe="llama-8b", nodes=4, tp=8, pp=4, global_batch_size=64))
    assert cfg["distributed_strategy"]["pipeline_model_parallel_size"] == 4
    # world 128 / (8 x 4) = DP 4; 64 % 4 == 0
    assert cfg["data"]["global_batch_size"] == 64 and cfg["distributed_strategy"]["kv_replicator"] == 1


@pytest.mark.parametrize("kw, match", [
    (dict(tp=64), "--tp must be a divisor of the 32 NeuronCores"),
    (dict(tp=3), "--tp"),
    (dict(pp=5), "--pp must be a divisor of the 32 layers"),
    (dict(nodes=1, global_batch_size=1023, tp=8), "divisible by data-parallel degree 4"),
    (dict(recipe="bert-large"), "Llama recipe"),
    (dict(recipe="llama-tiny"), "Llama recipe"),
    (dict(nodes=0), "--nodes"),
    (dict(instance_type="trn9.huge"), "--instance-type"),
    (dict(seq_len=100_000), "--seq-len"),
    # 0 and negative values never fall back to the recipe's default or pass silently
    (dict(tp=0), "--tp must be a divisor of the 32 NeuronCores .*got: 0"),
    (dict(pp=0), "--pp must be a divisor of the 32 layers, got: 0"),
    (dict(seq_len=0), r"--seq-len must be an integer in 1\.\.8192, got: 0"),
    (dict(seq_len=-8), r"--seq-len must be an integer in 1\.\.8192, got: -8"),
    (dict(global_batch_size=0), "--global-batch-size must be a positive integer, got: 0"),
    (dict(global_batch_size=-1024), "--global-batch-size must be a positive integer, got: -1024"),
    (dict(steps=0), "--steps must be a positive integer, got: 0"),
])
def test_inconsistent_parallelism_is_rejected(kw, match):
    with pytest.raises(InputError, match=match):
        build_config(NxdRun(**kw))


def test_launch_command_is_nxdt_train_sh_equivalent(tmp_path):
    y = write_config(NxdRun(nodes=2), tmp_path)["yaml"]
    env = {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "41000"}
    cmd = launch_command(y, NxdRun(nodes=2), "/opt/nxdt/examples", compile_only=True, env=env)
    assert cmd[:2] == ["neuron_parallel_compile", "torchrun"]
    assert cmd[cmd.index("--nproc_per_node") + 1] == "32" and cmd[cmd.index("--node_rank") + 1] == "1"
    assert "/opt/nxdt/examples/training_orchestrator.py" in cmd
    assert f"--config-name={y.stem}" in cmd and f"--config-path={tmp_path.resolve()}" in cmd


def test_cli_writes_config_and_rejects_bad_tp(tmp_path):
    env = subprocess_env()
    base = [sys.executable, "-m", "trn_train", "nxd-config", "--data-dir", "/fsx/d", "--out", str(tmp_path)]
    ok = subprocess.run(base + ["--nodes", "2"], capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout.splitlines()[-1])["event"] == "nxd-config"
    bad = subprocess.run(base + ["--tp", "7"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "--tp must be" in bad.stderr


NXDT_REPO = "https://github.com/aws-neuron/neuronx-distributed-training"


def test_dockerfile_pins_the_nxdt_examples_the_adapter_was_checked_against():
    """One pin: the commit trn_train.nxd documents (and copies the Llama-3-8B hyperparameters
    from) is the one the image downloads, and only its examples/ are extracted."""
    import re

    from trn_train.nxd import NXDT_EXAMPLES_COMMIT
    from training_helpers import REPO

    dockerfile = (REPO / "training" / "Dockerfile").read_text()
    pinned = re.findall(r"^ARG NXDT_EXAMPLES_COMMIT=([0-9a-f]{40})$", dockerfile, re.M)
    assert pinned == [NXDT_EXAMPLES_COMMIT]
    assert f"{NXDT_REPO}/archive/${{NXDT_EXAMPLES_COMMIT}}.tar.gz" in dockerfile
    assert '"neuronx-distributed-training-${NXDT_EXAMPLES_COMMIT}/examples"' in dockerfile
    assert not re.search(r"^# *syntax=", dockerfile, re.M)  # no frontend from Docker Hub


def test_llama8b_hyperparameters_are_nxdt_hf_llama3_8b_config():
    """Values of examples/conf/hf_llama3_8B_config.yaml at the pinned commit
    (9169aa03f39efd4eb02da63891a7ed98defb1714, neuronx-distributed-training 1.6.0)."""
    cfg, _ = build_config(NxdRun(recipe="llama-8b", nodes=32, steps=10000))
    optim = cfg["model"]["optim"]
    assert optim == {"name": "adamw_fp32OptState", "lr": 1.5e-4, "weight_decay": 0.01, "capturable": False,
                     "betas": [0.9, 0.999],
                     "sched": {"name": "LinearAnnealingWithWarmUp", "warmup_steps": 100, "max_steps": 10000}}
    assert cfg["trainer"]["gradient_clip_val"] == 1.0 and cfg["model"]["do_layer_norm_weight_decay"] is True
    assert cfg["compiler_flags"] == "--model-type transformer"
    assert cfg["distributed_strategy"]["context_parallel_size"] == 1
    assert cfg["precision"]["type"] == "mixed_precision"
