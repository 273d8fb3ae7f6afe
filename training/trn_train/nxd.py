"""Thin adapter to NeuronX Distributed Training (NxD Training, NxDT) for TP/PP recipes.

Models too large for data parallel alone (``llama-8b`` and up) run through the Neuron SDK's
own tensor/pipeline-parallel library, which the pinned Neuron training image ships
(``neuronx_distributed`` + ``neuronx_distributed_training``). This module only

1. generates NxDT's YAML config (the format of ``examples/conf/hf_llama3_8B_config.yaml`` in
   github.com/aws-neuron/neuronx-distributed-training; keys documented at
   https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-training/general/config_overview.html)
   and the Hugging Face ``config.json`` its ``model.model_config`` points to, from our recipe;
2. builds the launch command of NxDT's entry point, as its ``examples/train.sh`` does:
   ``[neuron_parallel_compile] torchrun ... training_orchestrator.py --config-path=DIR
   --config-name=NAME`` (``COMPILE=1`` makes the orchestrator run a 10-step trial);
3. exports our packed shards to the Hugging Face ``datasets`` directory NxDT's
   ``HFDataModule`` reads with ``datasets.load_from_disk(data.train_dir)``.

CI checks the generated config (shapes, TP/PP/DP consistent with the world size, the
hyperparameters of NxDT's own Llama-3-8B config) and the command; only a Trainium cluster
runs it.

Which NxDT (checked 2026-11-22):

- The base image ``pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04`` is
  built from github.com/aws-neuron/deep-learning-containers tag ``2.30.0`` (its README row for
  that image links ``blob/2.30.0/pytorch/training/2.9.0/Dockerfile.neuronx``), whose Dockerfile
  pins ``ARG NEURONX_DISTRIBUTED_TRAINING_VERSION=1.7.0``. The Neuron containers release notes
  (aws-neuron-sdk ``release-notes/components/containers.rst``, Neuron 2.29.0 callout) say the
  same: the DLC "has been pinned to include neuronx_distributed_training-1.7.0", NxDT being in
  maintenance mode from Neuron 2.30 (``announce-maintenance-nxdt-nxd-core-training.rst``).
- github.com/aws-neuron/neuronx-distributed-training has no 1.7.0 source: its newest release
  commit is :data:`NXDT_EXAMPLES_COMMIT` ("Neuron SDK Release 2.26.0 changes", 2025-09-22,
  ``src/neuronx_distributed_training/_version.py`` = ``1.6.0``); no later release commit on any
  branch, and the repository has no tags (as mirrored on 2026-11-22; the previous pin, ff83d7b,
  was 1.0.0 of Neuron 2.20). Its ``examples/`` therefore are the
  newest published ones; that they run unchanged with the 1.7.0 wheel is NOT verified here
  (it needs a Trainium run).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trn_train.config import recipe_for
from trn_train.errors import InputError
from trn_train.flops import instance_spec
from trn_ultracluster.contracts.shared_storage import NEURON_COMPILE_CACHE_DIR


NXDT_EXAMPLES_COMMIT = "9169aa03f39efd4eb02da63891a7ed98defb1714"
"""neuronx-distributed-training commit whose ``examples/`` the image ADDs (``training/Dockerfile``
``ARG NXDT_EXAMPLES_COMMIT``, kept equal by a test) and whose
``examples/conf/hf_llama3_8B_config.yaml`` the Llama-3-8B hyperparameters below are copied
from: NxDT 1.6.0, the newest published source (see the module docstring)."""

# examples/conf/hf_llama3_8B_config.yaml at NXDT_EXAMPLES_COMMIT: model.optim and the
# trainer/precision/compiler keys a recipe does not decide. lr 1.5e-4 and warmup 100 are the
# llama-8b recipe's (trn_ultracluster/contracts/recipes.py), equal to that file's.
NXDT_LLAMA3_8B_OPTIM = {"name": "adamw_fp32OptState", "weight_decay": 0.01, "capturable": False,
                        "betas": [0.9, 0.999], "sched": "LinearAnnealingWithWarmUp"}
# the same file's compiler_flags; NxDT 1.2.0 (Neuron 2.22) "Removes --llm-training flag by default
# in all configs, except llama2" (aws-neuron-sdk release-notes/components/nxd-training.rst)
NXDT_COMPILER_FLAGS = "--model-type transformer"


@dataclass(frozen=True)
class NxdRun:
    """What to run through NxD Training.

    Attributes:
        recipe: a Llama recipe name (NxDT's ``model_source: hf`` Llama path).
        nodes: instances; world size = ``nodes * logical NeuronCores per node`` (catalog).
        data_dir: Hugging Face ``datasets`` directory (see :func:`export_packed_to_hf`).
        steps: optimizer steps. global_batch_size / seq_len / tp / pp: ``None`` = recipe's.
        compile_cache: shared Neuron compile cache (FSx), NxDT ``compiler_cache_url``;
            default: the cluster's (``trn_ultracluster.contracts.shared_storage``), which the EKS
            runtime and the HyperPod env file also put in ``NEURON_CC_FLAGS``.
        log_dir: NxDT ``exp_manager.explicit_log_dir`` (checkpoints + TensorBoard).
    """

    recipe: str = "llama-8b"
    nodes: int = 1
    instance_type: str = "trn1.32xlarge"
    data_dir: str = "/fsx/data/nxdt"
    steps: int = 1000
    global_batch_size: int | None = None
    seq_len: int | None = None
    tp: int | None = None
    pp: int | None = None
    compile_cache: str = NEURON_COMPILE_CACHE_DIR
    log_dir: str | None = None
    micro_batch_size: int = 1


def build_config(spec: NxdRun) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return ``(nxdt_yaml_dict, hf_config_dict)`` for ``spec``.

    Raises:
        InputError: not a Llama recipe; ``nodes`` < 1; TP larger than a node's cores or not
            dividing the attention heads; PP not dividing the layers; TP*PP not dividing the
            world size; global batch not divisible by DP x micro batch.
    """
    recipe = recipe_for(spec.recipe)
    if recipe.model_type != "llama" or "vocab_size" not in recipe.model_config:
        raise InputError("--recipe", spec.recipe, "a full-size Llama recipe (llama-1b, llama-8b)")
    if spec.nodes < 1:
        raise InputError("--nodes", spec.nodes, "a positive integer")
    if spec.steps < 1:
        raise InputError("--steps", spec.steps, "a positive integer")
    inst = instance_spec(spec.instance_type)
    cores = inst.logical_neuron_cores
    world = spec.nodes * cores
    mc = recipe.model_config
    tp = spec.tp if spec.tp is not None else recipe.tensor_parallel
    pp = spec.pp if spec.pp is not None else recipe.pipeline_parallel
    heads, kv, layers = mc["num_attention_heads"], mc["num_key_value_heads"], mc["num_hidden_layers"]
    if tp < 1 or tp > cores or cores % tp:
        raise InputError("--tp", tp, f"a divisor of the {cores} NeuronCores of one {inst.name} (TP stays in a node)")
    if heads % tp:
        raise InputError("--tp", tp, f"a divisor of the {heads} attention heads")
    if tp % kv and kv % tp:
        raise InputError("--tp", tp, f"a divisor or multiple of the {kv} key/value heads")
    if pp < 1 or layers % pp:
        raise InputError("--pp", pp, f"a divisor of the {layers} layers")
    if world % (tp * pp):
        raise InputError("--tp x --pp", tp * pp, f"a divisor of the world size {world} ({spec.nodes} x {cores})")
    dp = world // (tp * pp)
    gbs = spec.global_batch_size if spec.global_batch_size is not None else recipe.global_batch_size
    if gbs < 1:
        raise InputError("--global-batch-size", gbs, "a positive integer")
    if gbs % (dp * spec.micro_batch_size):
        raise InputError("--global-batch-size", gbs,
                          f"divisible by data-parallel degree {dp} x micro batch {spec.micro_batch_size}")
    seq = spec.seq_len if spec.seq_len is not None else recipe.seq_len
    if not 1 <= seq <= mc["max_position_embeddings"]:
        raise InputError("--seq-len", seq, f"an integer in 1..{mc['max_position_embeddings']}")
    name = f"trn_train_{recipe.name.replace('-', '_')}"
    hf = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **mc, "torch_dtype": "bfloat16"}
    cfg: dict[str, Any] = {
        "name": name,
        "model_source": "hf",
        "seed": 1234,
        "trainer": {
            "devices": cores, "num_nodes": spec.nodes, "max_epochs": -1, "max_steps": spec.steps,
            "log_every_n_steps": 1, "val_check_interval": spec.steps + 1, "check_val_every_n_epoch": None,
            "num_sanity_val_steps": 0, "limit_val_batches": 0.0, "limit_test_batches": 0.0,
            "gradient_clip_val": 1.0,
        },
        "exp_manager": {
            "log_local_rank_0_only": True, "create_tensorboard_logger": True,
            "explicit_log_dir": spec.log_dir, "exp_dir": None, "name": name,
            "resume_if_exists": True, "resume_ignore_no_checkpoint": True, "create_checkpoint_callback": True,
            "checkpoint_callback_params": {
                "monitor": "step", "save_top_k": 2, "mode": "max", "save_last": False,
                "filename": f"{name}--{{step}}-{{consumed_samples}}", "model_parallel_size": tp * pp,
                # our checkpoint policy, not NxDT's example's (save_top_k 1, every 10 steps): a
                # full 8B checkpoint every 10 steps would cost more time than it saves
                "every_n_train_steps": 100, "use_master_weights_in_ckpt": False,
            },
            "log_parameter_norm": True, "log_gradient_norm": True,
            "enable_recovery_time_instrumentation": False, "save_xser": True, "load_xser": True,
            "save_bf16": False, "async_checkpointing": False, "resume_from_checkpoint": None,
        },
        "distributed_strategy": {
            "tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp,
            "virtual_pipeline_model_parallel_size": 1, "context_parallel_size": 1, "zero1": True,
            "sequence_parallel": tp > 1, "kv_replicator": max(1, tp // kv),
        },
        "data": {"micro_batch_size": spec.micro_batch_size, "global_batch_size": gbs, "train_dir": spec.data_dir},
        "model": {
            "model_config": None,  # set by write_config to the written config.json
            "encoder_seq_length": seq, "max_position_embeddings": mc["max_position_embeddings"],
            "num_layers": layers, "hidden_size": mc["hidden_size"], "qkv_linear": tp > kv, "fuse_qkv": True,
            "rope_theta": mc["rope_theta"], "use_cpu_initialization": True,
            "activations_checkpoint_granularity": "selective", "activations_checkpoint_recompute": ["CoreAttention"],
            "fusions": {"softmax": True, "flash_attention": True}, "do_layer_norm_weight_decay": True,
            "optim": {
                "name": NXDT_LLAMA3_8B_OPTIM["name"], "lr": recipe.lr,
                "weight_decay": NXDT_LLAMA3_8B_OPTIM["weight_decay"],
                "capturable": NXDT_LLAMA3_8B_OPTIM["capturable"], "betas": list(NXDT_LLAMA3_8B_OPTIM["betas"]),
                "sched": {"name": NXDT_LLAMA3_8B_OPTIM["sched"], "warmup_steps": recipe.warmup_steps,
                          "max_steps": spec.steps},
            },
        },
        "precision": {"type": "mixed_precision", "master_weights": False, "fp32_grad_acc": False,
                      "xla_use_bf16": "0", "xla_downcast_bf16": "0", "neuron_rt_stochastic_rounding_en": "0"},
        "compiler_flags": NXDT_COMPILER_FLAGS,
        "compiler_cache_url": spec.compile_cache,
        "aync_exec_max_inflight_requests": 5,  # sic: NxDT's key name
        "bucket_size_collectives": 1024,
        "neuron_rt_exec_timeout": 100,
        "neuron_experimental_compress_rg": False,
    }
    return cfg, hf


def write_config(spec: NxdRun, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``<name>.yaml`` and ``config.json`` into ``out_dir`` (atomically).

    Returns:
        ``{"yaml": path, "model_config": path}``.
    """
    import yaml

    from trn_train.atomic import atomic_write_bytes, atomic_write_json

    cfg, hf = build_config(spec)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hf_path = out / "config.json"
    atomic_write_json(hf_path, hf)
    cfg["model"]["model_config"] = str(hf_path.resolve())
    y = out / f"{cfg['name']}.yaml"
    atomic_write_bytes(y, yaml.safe_dump(cfg, sort_keys=False).encode())
    return {"yaml": y, "model_config": hf_path}


def launch_command(yaml_path: str | os.PathLike[str], spec: NxdRun, examples_dir: str,
                   compile_only: bool = False, env: dict[str, str] | None = None) -> list[str]:
    """The command NxDT's ``examples/train.sh`` runs, for this node.

    Node rank, master address and port come from ``env`` (default ``os.environ``):
    ``NODE_RANK`` (or ``SLURM_NODEID``), ``MASTER_ADDR`` (default ``localhost``),
    ``MASTER_PORT`` (default 41000, as in NxDT's ``train_setup.sh``).
    """
    env = dict(os.environ if env is None else env)
    y = Path(yaml_path)
    cmd = ["neuron_parallel_compile"] if compile_only else []
    cmd += ["torchrun", "--nproc_per_node", str(instance_spec(spec.instance_type).logical_neuron_cores),
            "--nnodes", str(spec.nodes), "--node_rank", env.get("NODE_RANK", env.get("SLURM_NODEID", "0")),
            "--master_addr", env.get("MASTER_ADDR", "localhost"), "--master_port", env.get("MASTER_PORT", "41000"),
            str(Path(examples_dir) / "training_orchestrator.py"),
            f"--config-path={y.parent.resolve()}", f"--config-name={y.stem}"]
    return cmd


def launch(yaml_path: str | os.PathLike[str], spec: NxdRun, examples_dir: str, compile_only: bool = False) -> int:
    """Run :func:`launch_command` (Trainium only); returns its exit status.

    Raises:
        InputError: NxDT's ``training_orchestrator.py`` is not in ``examples_dir``.
    """
    orchestrator = Path(examples_dir) / "training_orchestrator.py"
    if not orchestrator.is_file():
        raise InputError("--nxdt-examples", examples_dir, "a directory with NxDT's training_orchestrator.py",
                          hint="the container has it in /opt/nxdt/examples")
    env = dict(os.environ)
    env.setdefault("COMPILE", "1" if compile_only else "0")
    env.setdefault("HYDRA_FULL_ERROR", "1")
    cmd = launch_command(yaml_path, spec, examples_dir, compile_only, env)
    print(json.dumps({"event": "nxd-launch", "command": shlex.join(cmd)}), flush=True)
    return subprocess.call(cmd, env=env, cwd=str(Path(examples_dir)))


def export_packed_to_hf(packed_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> int:
    """Write our packed shards as a Hugging Face ``datasets`` directory with ``input_ids``,
    ``attention_mask`` and ``labels`` columns (what NxDT's ``HFDataModule`` loads).

    Needs the ``datasets`` package (in the Neuron image; not in the CPU test env).

    Returns:
        number of sequences written.
    """
    import datasets  # type: ignore[import-not-found]

    from trn_train.data import PackedDataset

    ds = PackedDataset(packed_dir)
    t = ds.seq_len

    def rows():
        for i in range(len(ds)):
            ids = ds.get([i])[0].tolist()
            yield {"input_ids": ids, "attention_mask": [1] * t, "labels": ids}

    datasets.Dataset.from_generator(rows).save_to_disk(str(out_dir))
    return len(ds)
