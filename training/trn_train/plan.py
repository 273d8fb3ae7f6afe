"""What the flags of a ``train`` run resolve to before the model is built: the checks of the
flags that need neither data nor device, the batch plan (``--scaling`` strong or weak), the lr
schedule, activation checkpointing, and whether the recipe fits the back end.

Scaling (``--scaling``): ``strong`` keeps ``--global-batch-size`` fixed when the node count
changes (each core gets fewer sequences); ``weak`` keeps ``--per-core-batch-size`` fixed (the
global batch grows with the cores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trn_train.config import TrainConfig
from trn_train.errors import InputError
from trn_train.runtime_spec import RuntimeSpec
from trn_ultracluster.contracts.recipes import Recipe


@dataclass(frozen=True)
class BatchPlan:
    """Resolved batch geometry: ``global_batch_size = world_size * micro_batch_size * grad_accum``."""

    global_batch_size: int
    per_core_batch_size: int
    micro_batch_size: int
    grad_accum: int
    world_size: int


def plan_batches(cfg: TrainConfig, recipe: Recipe, world_size: int) -> BatchPlan:
    """Resolve global / per-core / micro batch and accumulation for ``world_size`` ranks.

    Raises:
        InputError: the global batch is not divisible by the world size, the per-core batch
            not by the micro batch, a size is not positive, or the flag that the chosen
            ``--scaling`` needs is contradicted.
    """
    if cfg.scaling not in ("strong", "weak"):
        raise InputError("--scaling", cfg.scaling, "'strong' (fixed global batch) or 'weak' (fixed per-core batch)")
    for name, v in (("--global-batch-size", cfg.global_batch_size), ("--per-core-batch-size", cfg.per_core_batch_size),
                    ("--micro-batch-size", cfg.micro_batch_size)):
        if v is not None and v < 1:
            raise InputError(name, v, "a positive integer")
    if cfg.scaling == "strong":
        if cfg.per_core_batch_size is not None:
            raise InputError("--per-core-batch-size", cfg.per_core_batch_size,
                              "unset with --scaling strong", hint="use --global-batch-size, or --scaling weak")
        gbs = cfg.global_batch_size or recipe.global_batch_size
        if gbs % world_size:
            raise InputError("--global-batch-size", gbs, f"divisible by the world size {world_size}",
                              hint=f"e.g. {max(world_size, gbs // world_size * world_size)}")
        per_core = gbs // world_size
    else:
        if cfg.global_batch_size is not None:
            raise InputError("--global-batch-size", cfg.global_batch_size, "unset with --scaling weak",
                              hint="use --per-core-batch-size, or --scaling strong")
        per_core = cfg.per_core_batch_size or recipe.micro_batch_size
        gbs = per_core * world_size
    if cfg.micro_batch_size is not None:
        micro = cfg.micro_batch_size
        if per_core % micro:
            raise InputError("--micro-batch-size", micro,
                              f"a divisor of the per-core batch {per_core} (= global batch {gbs} / world size {world_size})")
    else:
        micro = max(d for d in range(1, min(recipe.micro_batch_size, per_core) + 1) if per_core % d == 0)
    return BatchPlan(gbs, per_core, micro, per_core // micro, world_size)


def lr_lambda(warmup: int, total: int, min_ratio: float):
    """Linear warm-up to 1 over ``warmup`` steps, then cosine decay to ``min_ratio`` at ``total``."""

    def f(step: int) -> float:
        if warmup > 0 and step < warmup:
            return (step + 1) / warmup
        span = max(1, total - warmup)
        progress = min(1.0, (step - warmup) / span)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return f


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate_flags(cfg: TrainConfig, recipe: Recipe) -> None:
    """Check the flags that need neither the data nor the device.

    Raises:
        InputError: the first bad flag; 0, negative, NaN and infinite values are named, never
            replaced by a default.
    """
    if cfg.steps < 1:
        raise InputError("--steps", cfg.steps, "a positive integer")
    if cfg.log_every < 1:
        raise InputError("--log-every", cfg.log_every, "a positive integer")
    if cfg.ckpt_every < 0:
        raise InputError("--ckpt-every", cfg.ckpt_every, "0 (only at the end) or a positive integer")
    if cfg.keep_last < 1:
        raise InputError("--keep-last", cfg.keep_last, "a positive integer")
    if cfg.precision not in ("auto", "bf16", "fp32"):
        raise InputError("--precision", cfg.precision, "'auto', 'bf16' or 'fp32'")
    if cfg.max_steps_this_run is not None and cfg.max_steps_this_run < 1:
        raise InputError("--max-steps-this-run", cfg.max_steps_this_run, "a positive integer")
    if not 0 <= cfg.min_lr_ratio <= 1:
        raise InputError("--min-lr-ratio", cfg.min_lr_ratio, "a number in [0, 1]")
    if cfg.lr is not None and not (_finite(cfg.lr) and cfg.lr > 0):
        raise InputError("--lr", cfg.lr, "a positive finite number")
    if cfg.warmup_steps is not None and not 0 <= cfg.warmup_steps <= cfg.steps:
        raise InputError("--warmup-steps", cfg.warmup_steps, f"an integer in 0..--steps ({cfg.steps})")
    if not (_finite(cfg.weight_decay) and cfg.weight_decay >= 0):
        raise InputError("--weight-decay", cfg.weight_decay, "a finite number >= 0")
    if not (_finite(cfg.max_grad_norm) and cfg.max_grad_norm >= 0):
        raise InputError("--max-grad-norm", cfg.max_grad_norm, "a finite number >= 0 (0 disables clipping)")
    if not 0 <= cfg.seed < 2**64:  # numpy's default_rng takes no negative seed, torch.manual_seed < 2**64
        raise InputError("--seed", cfg.seed, "an integer in 0..2**64-1")


def resolve_activation_checkpointing(flag: str, recipe: Recipe, spec: RuntimeSpec) -> bool:
    """``--activation-checkpointing``: ``auto`` is on for a recipe that needs model
    parallelism on Trn1 (llama-8b: its per-layer activations at sequence length 8192 do not
    fit a NeuronCore next to its FSDP2 shards, docs/llama-8b.md) on the native backend.

    Raises:
        InputError: an unknown value, or ``on`` with the xla backend (its model-parallel
            recipes run through NxD Training, which has its own setting).
    """
    if flag not in ("auto", "on", "off"):
        raise InputError("--activation-checkpointing", flag, "'auto', 'on' or 'off'")
    if spec.backend != "native":
        if flag == "on":
            raise InputError("--activation-checkpointing", flag, "'auto' or 'off' with the xla backend",
                              hint="NxD Training recipes set it in their own configuration")
        return False
    return flag == "on" or (flag == "auto" and recipe.needs_model_parallel)


def check_recipe_fits(recipe: Recipe, spec: RuntimeSpec) -> None:
    """Refuse a model-parallel recipe (``recipe.needs_model_parallel``, e.g. llama-8b) where
    every core would hold the whole model: on the xla backend (it runs through NxD Training)
    and with DDP. FSDP2 on the native backend shards weights, gradients and AdamW state over
    all cores, which is what lets such a model fit.

    Raises:
        InputError: naming ``--recipe`` (xla) or ``--data-parallel`` (native DDP).
    """
    if not recipe.needs_model_parallel:
        return
    if spec.backend == "xla":
        raise InputError(
            "--recipe", recipe.name, "a data-parallel recipe for `train` on the xla backend",
            hint=f"{recipe.name} needs TP={recipe.tensor_parallel} PP={recipe.pipeline_parallel}: run it through "
                 "NxD Training with `python -m trn_train nxd-config`, or on Trn2/Trn3 with --backend native "
                 "--data-parallel fsdp")
    if spec.data_parallel == "ddp":
        raise InputError(
            "--data-parallel", "ddp", f"'fsdp' or 'auto' for {recipe.name}",
            hint="DDP keeps the whole model, its gradients and its AdamW state on every core (16 bytes per "
                 "parameter, 128 GB for 8B parameters); FSDP2 shards them over all cores")

