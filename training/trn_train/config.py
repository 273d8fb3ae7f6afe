"""Run configuration of ``python -m trn_train train``, without importing torch.

:mod:`trn_train.cli` reads the defaults of :class:`TrainConfig` for ``--help`` and builds it
from the parsed flags; :mod:`trn_train.train` (which needs torch) runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trn_train.errors import InputError
from trn_ultracluster.contracts.recipes import RECIPES, Recipe, UnknownRecipeError, get_recipe

BACKENDS = ("auto", "xla", "native")
"""``--backend`` values (resolved by :func:`trn_train.runtime_spec.resolve_runtime`)."""
DEVICES = ("auto", "xla", "neuron", "cpu")
"""``--device`` values."""
DATA_PARALLEL = ("auto", "ddp", "fsdp")
"""``--data-parallel`` values (native backend)."""
SWITCHES = ("auto", "on", "off")
"""``--compile`` and ``--zero1`` values."""


@dataclass
class TrainConfig:
    """Everything ``python -m trn_train train`` accepts (see its ``--help`` for each flag).

    ``None`` means "the recipe's default" for batch sizes, sequence length, lr and warm-up.
    """

    recipe: str
    data_dir: Path
    output_dir: Path
    steps: int
    scaling: str = "strong"
    global_batch_size: int | None = None
    per_core_batch_size: int | None = None
    micro_batch_size: int | None = None
    seq_len: int | None = None
    lr: float | None = None
    min_lr_ratio: float = 0.1
    warmup_steps: int | None = None
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    log_every: int = 10
    ckpt_every: int = 0
    keep_last: int = 3
    seed: int = 1234
    precision: str = "auto"
    backend: str = "auto"
    device: str = "auto"
    data_parallel: str = "auto"
    compile: str = "auto"
    activation_checkpointing: str = "auto"
    zero1: str = "auto"
    instance_type: str = "trn1.32xlarge"
    max_steps_this_run: int | None = None
    resume: str = "auto"
    tensorboard: bool = True
    progress: bool = True
    verify_data: bool = True


def recipe_for(name: str) -> Recipe:
    """The recipe called ``name`` (the job CLI and the program share the table).

    Raises:
        InputError: unknown name; the message lists the known recipes.
    """
    try:
        return get_recipe(name)
    except UnknownRecipeError:
        raise InputError("--recipe", name, "one of " + ", ".join(sorted(RECIPES))) from None
