"""Device, process group and optimizer plumbing for the two back ends.

- **XLA** (torch-xla present and ``--device`` is ``auto`` or ``xla``): NeuronCores through
  torch-neuronx in the cluster, CPU through ``PJRT_DEVICE=CPU`` here. Uses the current
  PyTorch/XLA 2.x APIs (https://docs.pytorch.org/xla/release/r2.8/learn/api-guide.html):
  ``torch_xla.device()``, ``torch_xla.runtime.world_size()`` / ``global_ordinal()``,
  ``torch_xla.sync()`` to cut the lazy graph (the older
  ``xm.mark_step()``; ``xm.xrt_world_size``/``xm.get_ordinal`` are deprecated), the ``xla``
  process group via ``dist.init_process_group("xla", init_method="xla://")`` after importing
  ``torch_xla.distributed.xla_backend``, and ZeRO-1 through
  ``torch_xla.distributed.zero_redundancy_optimizer.ZeroRedundancyOptimizer`` (it
  reduce-scatters gradients, clips, steps its shard and all-gathers parameters). BF16 is
  ``torch.autocast("xla", dtype=torch.bfloat16)``; the deprecated ``XLA_USE_BF16`` is not used.
- **CPU** (plain PyTorch): one process, or torchrun with the ``gloo`` process group and
  ``DistributedDataParallel``. Used by the tests for cross-process correctness because
  collectives across several XLA:CPU processes deadlock in torch-xla 2.9 (measured
  2026-11-21 on 2 cores: ``rendezvous ... Expected 2 threads``).
"""

from __future__ import annotations

import contextlib
import datetime
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import torch
import torch.distributed as dist

from trn_train.errors import InputError, LaunchError


def xla_available() -> bool:
    """True when ``torch_xla`` can be imported."""
    try:
        import torch_xla  # noqa: F401
    except ImportError:
        return False
    return True


def extracting_graphs_only() -> bool:
    """True under ``neuron_parallel_compile``'s trial run, which sets
    ``NEURON_EXTRACT_GRAPHS_ONLY`` and returns zero outputs: results are not real, so no
    checkpoint may be written (Neuron docs, "PyTorch NeuronX Environment Variables",
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/api-reference-guide/training/torch-neuron-envvars.html).
    """
    return os.environ.get("NEURON_EXTRACT_GRAPHS_ONLY", "") not in ("", "0")


@dataclass
class Runtime:
    """The process's place in the job and the device it trains on.

    Attributes:
        kind: ``"xla"`` or ``"cpu"``.
        device: the torch device tensors go to.
        rank / world_size: from the XLA runtime or torchrun's environment.
        distributed: a process group is initialised (torchrun launched us).
    """

    kind: str
    device: torch.device
    rank: int = 0
    world_size: int = 1
    distributed: bool = False
    _xm: Any = field(default=None, repr=False)

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that logs, writes TensorBoard and finalises checkpoints."""
        return self.rank == 0

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    def init(cls, device: str = "auto") -> "Runtime":
        """Pick the back end and join the process group when launched by torchrun.

        Args:
            device: ``"auto"`` (XLA if importable, else CPU), ``"xla"`` or ``"cpu"``.

        Raises:
            InputError: unknown ``device``, or ``"xla"`` without torch-xla installed.
            LaunchError: under torchrun, the XLA runtime's world size or ordinal is not
                torchrun's ``WORLD_SIZE`` / ``RANK`` (see :func:`_check_xla_matches_torchrun`).
        """
        if device not in ("auto", "xla", "cpu"):
            raise InputError("--device", device, "'auto', 'xla' or 'cpu'")
        use_xla = device == "xla" or (device == "auto" and xla_available())
        launched = "WORLD_SIZE" in os.environ and "RANK" in os.environ
        if use_xla:
            if not xla_available():
                raise InputError("--device", device, "'cpu' or 'auto' here", hint="torch_xla is not installed")
            import torch_xla
            import torch_xla.core.xla_model as xm
            import torch_xla.runtime as xr

            if launched and not dist.is_initialized():
                import torch_xla.distributed.xla_backend  # noqa: F401  registers the "xla" backend

                dist.init_process_group("xla", init_method="xla://")
            world, rank = xr.world_size(), xr.global_ordinal()
            if launched:
                _check_xla_matches_torchrun(world, rank, os.environ)
            return cls(
                kind="xla", device=torch_xla.device(), rank=rank,
                world_size=world, distributed=dist.is_initialized(), _xm=xm,
            )
        if launched and not dist.is_initialized():
            dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=10))
        if dist.is_initialized():
            return cls(kind="cpu", device=torch.device("cpu"), rank=dist.get_rank(),
                       world_size=dist.get_world_size(), distributed=True)
        return cls(kind="cpu", device=torch.device("cpu"))

    def resolve_zero1(self, flag: str) -> bool:
        """Whether to shard the optimizer state (ZeRO-1) for ``--zero1 flag`` on this back end.

        ZeRO-1 here is torch-xla's ``ZeroRedundancyOptimizer``: ``auto`` and ``on`` use it on
        XLA; on CPU ``auto`` means off (plain DDP with replicated AdamW state).

        Raises:
            InputError: ``on`` on the CPU device (it would be ignored), or an unknown value.
        """
        if flag not in ("auto", "on", "off"):
            raise InputError("--zero1", flag, "'auto', 'on' or 'off'")
        if self.kind != "xla":
            if flag == "on":
                raise InputError("--zero1", flag, f"'auto' or 'off' on the {self.kind} device",
                                  hint="ZeRO-1 is torch-xla's ZeroRedundancyOptimizer: XLA/NeuronCores only")
            return False
        return flag != "off"

    def shutdown(self) -> None:
        """Leave the process group (if any)."""
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()

    # ---------------------------------------------------------------- collectives

    def barrier(self) -> None:
        """All ranks wait here (no-op for one process)."""
        if self.world_size <= 1:
            return
        if self.kind == "xla":
            self._xm.rendezvous("trn_train")
        else:
            dist.barrier()

    def sync(self) -> None:
        """Cut and run the pending XLA graph (``torch_xla.sync()``); no-op on CPU."""
        if self.kind == "xla":
            import torch_xla

            torch_xla.sync()

    def mean_across_ranks(self, t: torch.Tensor) -> torch.Tensor:
        """Mean of a tensor over all ranks (for logged scalars)."""
        if self.world_size <= 1:
            return t
        if self.kind == "xla":
            return self._xm.all_reduce(self._xm.REDUCE_SUM, t) / self.world_size
        t = t.clone()
        dist.all_reduce(t)
        return t / self.world_size

    def count_true(self, flag: bool) -> int:
        """How many ranks passed ``flag=True`` (a collective: every rank must call it, also
        when its own flag is False, or the others wait forever)."""
        if self.world_size <= 1:
            return int(flag)
        t = torch.tensor(float(flag), device=self.device)
        if self.kind == "xla":
            t = self._xm.all_reduce(self._xm.REDUCE_SUM, t)
        else:
            dist.all_reduce(t)
        return int(round(float(t.item())))

    # ---------------------------------------------------------------- model/optimizer

    def autocast(self, precision: str) -> contextlib.AbstractContextManager[Any]:
        """BF16 autocast for ``precision == "bf16"`` on this device type, else a no-op."""
        if precision != "bf16":
            return contextlib.nullcontext()
        return torch.autocast(self.kind, dtype=torch.bfloat16)

    def wrap_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """DDP on CPU with several ranks; the model itself otherwise (XLA reduces gradients
        in the optimizer step)."""
        if self.kind == "cpu" and self.world_size > 1:
            return torch.nn.parallel.DistributedDataParallel(model)
        return model

    @contextlib.contextmanager
    def no_grad_sync(self, model: torch.nn.Module, active: bool) -> Iterator[None]:
        """Skip DDP's gradient all-reduce for accumulation micro-steps (``active``)."""
        if active and isinstance(model, torch.nn.parallel.DistributedDataParallel):
            with model.no_sync():
                yield
        else:
            yield

    def make_optimizer(
        self, params: list[torch.nn.Parameter], lr: float, weight_decay: float,
        betas: tuple[float, float], max_grad_norm: float, zero1: bool,
    ) -> torch.optim.Optimizer:
        """AdamW; wrapped in torch-xla's ZeRO-1 optimizer on XLA when ``zero1``.

        Parameters with ``ndim < 2`` (norms, biases) get no weight decay.
        """
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        if self.kind == "xla" and zero1:
            from torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer

            return ZeroRedundancyOptimizer(
                groups, torch.optim.AdamW, lr=lr, betas=betas, weight_decay=weight_decay,
                optimizer_dtype=torch.float32, grad_clipping=max_grad_norm > 0,
                max_norm=max_grad_norm if max_grad_norm > 0 else 1.0, pin_layout=False,
                save_master_weights=True,
            )
        return torch.optim.AdamW(groups, lr=lr, betas=betas, weight_decay=weight_decay)

    def optimizer_step(self, optimizer: torch.optim.Optimizer, model: torch.nn.Module,
                       max_grad_norm: float) -> torch.Tensor:
        """Reduce gradients (if not done already), clip, step; return the global grad norm
        (a 0-d tensor on the device, computed before clipping).
        """
        if self.kind == "xla" and type(optimizer).__name__ == "ZeroRedundancyOptimizer":
            optimizer.step()
            norm = getattr(optimizer, "grad_norm", None)
            if norm is None:
                norm = torch.zeros((), device=self.device)
            return norm
        if self.kind == "xla" and self.world_size > 1:
            self._xm.reduce_gradients(optimizer)
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        if max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        else:
            norm = torch.nn.utils.get_total_norm([p.grad for p in params])
        optimizer.step()
        return norm

    # ---------------------------------------------------------------- RNG

    def rng_state(self) -> dict[str, Any]:
        """Python, NumPy, torch CPU and (on XLA) the XLA RNG state of this process."""
        import random

        import numpy as np

        state: dict[str, Any] = {
            "python": random.getstate(),
            "numpy": np.random.get_state(),
            "torch": torch.get_rng_state(),
        }
        if self.kind == "xla":
            state["xla"] = int(self._xm.get_rng_state())
        return state

    def set_rng_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`rng_state` returned."""
        import random

        import numpy as np

        random.setstate(state["python"])
        np.random.set_state(state["numpy"])
        torch.set_rng_state(state["torch"])
        if self.kind == "xla" and "xla" in state:
            self._xm.set_rng_state(int(state["xla"]))

    def to_cpu(self, obj: Any) -> Any:
        """Copy every tensor in a nested structure to CPU (after an XLA sync)."""
        self.sync()
        return _map_tensors(obj, lambda t: t.detach().to("cpu"))


def _check_xla_matches_torchrun(world: int, rank: int, env: Mapping[str, str]) -> None:
    """Stop when the XLA runtime's view of the job is not torchrun's.

    torch-xla 2.9 on XLA:CPU under torchrun with 2 processes was seen reporting world size 1
    in every process (measured 2026-11-22 on XLA:CPU; ``make test-xla`` reproduces it): each process then trains alone as a duplicate of the
    others, on the same batches, and all write the same checkpoint files.

    Args:
        world / rank: ``torch_xla.runtime.world_size()`` / ``global_ordinal()``.
        env: torchrun's environment (``WORLD_SIZE``, ``RANK``).

    Raises:
        LaunchError: they differ.
    """
    want_world, want_rank = int(env["WORLD_SIZE"]), int(env["RANK"])
    if world != want_world:
        raise LaunchError(
            f"the XLA runtime reports world size {world}, but torchrun started WORLD_SIZE={want_world} "
            "processes: each would train as a duplicate on the same batches and write the same checkpoint. "
            "Check the launch: torchrun --nproc_per_node (one process per NeuronCore), PJRT_DEVICE and any "
            "NEURON_RT_* core settings in the environment")
    if rank != want_rank:
        raise LaunchError(
            f"the XLA runtime reports ordinal {rank} for the process torchrun started as RANK={want_rank}: "
            "ranks would read the wrong batches and overwrite each other's checkpoint files")


def _map_tensors(obj: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map_tensors(v, fn) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_map_tensors(v, fn) for v in obj)
    return obj
