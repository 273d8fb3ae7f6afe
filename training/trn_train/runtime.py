"""Device, process group and optimizer plumbing for the two back ends.

- **xla** (Trn1; ``--backend xla``, or ``auto`` when torch-xla is importable and ``--device``
  is not ``neuron``/``cpu``): NeuronCores through torch-neuronx over PyTorch/XLA in the
  cluster, CPU through ``PJRT_DEVICE=CPU`` here. Uses the current PyTorch/XLA 2.x APIs
  (https://docs.pytorch.org/xla/release/r2.8/learn/api-guide.html): ``torch_xla.device()``,
  ``torch_xla.runtime.world_size()`` / ``global_ordinal()``, ``torch_xla.sync()`` to cut the
  lazy graph (the older ``xm.mark_step()``; ``xm.xrt_world_size``/``xm.get_ordinal`` are
  deprecated), the ``xla`` process group via ``dist.init_process_group("xla",
  init_method="xla://")`` after importing ``torch_xla.distributed.xla_backend``, and ZeRO-1
  through ``torch_xla.distributed.zero_redundancy_optimizer.ZeroRedundancyOptimizer`` (it
  reduce-scatters gradients, clips, steps its shard and all-gathers parameters). BF16 is
  ``torch.autocast("xla", dtype=torch.bfloat16)``; the deprecated ``XLA_USE_BF16`` is not used.
- **native** (plain PyTorch, eager): TorchNeuron's ``neuron`` device on Trn2/Trn3 (Neuron SDK
  2.33, torch-neuronx 2.13/2.14; the constants here and in :mod:`trn_train.runtime_spec` say
  what is verified), or the CPU. Data parallel is FSDP2 (``fully_shard`` of each transformer
  block, then the root, over a 1-D device mesh: parameters, gradients and AdamW state
  sharded) or ``DistributedDataParallel``; the process group is ``gloo`` on CPU and ``neuron``
  on NeuronCores. One process without
  torchrun runs FSDP2 in a private one-rank group (a ``TCPStore`` on 127.0.0.1, any free port),
  so single-process runs take the same code path. ``--compile`` compiles each transformer
  block in place (``nn.Module.compile``: state-dict keys stay those of the eager model, so
  checkpoints do not depend on it). The tests check cross-process correctness here (CPU, gloo)
  because collectives across several XLA:CPU processes deadlock in torch-xla 2.9 (measured
  2026-11-21 on 2 cores: ``rendezvous ... Expected 2 threads``).
"""

from __future__ import annotations

import contextlib
import datetime
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor

from trn_train.errors import LaunchError
from trn_train.runtime_spec import NEURON_DEVICE, RuntimeSpec, neuron_device_module

NEURON_PROCESS_GROUP_BACKEND = "neuron"
"""The ``torch.distributed`` backend for NeuronCores: ``dist.init_process_group(backend="neuron",
init_method="env://", ...)`` (Neuron docs, "How to use torch.distributed on Neuron",
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html;
"TorchNeuron registers a ``neuron`` device and a ``neuron`` process-group backend", TorchTitan
Neuron overview)."""

NEURON_COMPILE_BACKEND = "neuron"
"""``torch.compile`` backend on NeuronCores; only static shapes (``dynamic=True`` "is
rejected") and ``fullgraph=True`` "is recommended" (Neuron docs, reference-torch-compile)."""

CPU_COMPILE_BACKEND = "inductor"
"""``torch.compile`` backend on the CPU (PyTorch's default; a C++ compiler on the machine)."""


@dataclass
class Runtime:
    """The process's place in the job and the device it trains on.

    Attributes:
        backend / device_type / data_parallel / compile: from the :class:`RuntimeSpec`.
        device: the torch device tensors go to.
        rank / world_size: from the XLA runtime or the process group.
        distributed: this process is in a process group (torchrun's, or the private one-rank
            group of a single FSDP2 process).
    """

    backend: str
    device_type: str
    device: torch.device
    rank: int = 0
    world_size: int = 1
    distributed: bool = False
    data_parallel: str | None = None
    compile: bool = False
    _xm: Any = field(default=None, repr=False)
    _private_group: bool = field(default=False, repr=False)

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that logs, writes TensorBoard and finalises checkpoints."""
        return self.rank == 0

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    def init(cls, spec: RuntimeSpec) -> "Runtime":
        """Join the process group when launched by torchrun (or, for FSDP2 in one process,
        create a private one-rank group) and pick the device.

        Raises:
            LaunchError: under torchrun, the XLA runtime's world size or ordinal is not
                torchrun's ``WORLD_SIZE`` / ``RANK`` (see :func:`_check_xla_matches_torchrun`).
        """
        launched = "WORLD_SIZE" in os.environ and "RANK" in os.environ
        if spec.backend == "xla":
            import torch_xla
            import torch_xla.core.xla_model as xm
            import torch_xla.runtime as xr

            if launched and not dist.is_initialized():
                import torch_xla.distributed.xla_backend  # noqa: F401  registers the "xla" backend

                dist.init_process_group("xla", init_method="xla://")
            world, rank = xr.world_size(), xr.global_ordinal()
            if launched:
                _check_xla_matches_torchrun(world, rank, os.environ)
            return cls(backend="xla", device_type="xla", device=torch_xla.device(), rank=rank,
                       world_size=world, distributed=dist.is_initialized(), _xm=xm)
        pg_backend = "gloo"
        device = torch.device("cpu")
        if spec.device_type == "neuron":
            neuron_device_module()  # imports torch_neuronx: registers the device and the "neuron" backend
            pg_backend = NEURON_PROCESS_GROUP_BACKEND
            device = torch.device(NEURON_DEVICE)
        timeout = datetime.timedelta(minutes=10)
        private = False
        if launched and not dist.is_initialized():
            dist.init_process_group(pg_backend, init_method="env://", timeout=timeout)
        elif not dist.is_initialized() and spec.data_parallel == "fsdp":
            # a TCPStore, not a FileStore: nothing is left on disk when the process is killed
            store = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True, timeout=timeout)
            dist.init_process_group(pg_backend, store=store, rank=0, world_size=1, timeout=timeout)
            private = True
        rt = cls(backend="native", device_type=spec.device_type, device=device, data_parallel=spec.data_parallel,
                 compile=spec.compile, _private_group=private)
        if dist.is_initialized():
            rt.rank, rt.world_size, rt.distributed = dist.get_rank(), dist.get_world_size(), True
        return rt

    def shutdown(self, after_error: bool = False) -> None:
        """Leave the process group (if any); safe to call twice.

        Args:
            after_error: the run stopped with an error. A torchrun job's group is then left to
                the process exit: destroying it while the traceback still holds the sharded
                model made a gloo worker abort (SIGABRT instead of exit 3) in 1 of 10 runs of
                the 2-process divergence test, leaving it in 0 of 24. The private one-rank
                group is always destroyed, so the process can train again.
        """
        if self.distributed and dist.is_initialized() and (self._private_group or not after_error):
            dist.destroy_process_group()
        self.distributed = False

    # ---------------------------------------------------------------- collectives

    def barrier(self) -> None:
        """All ranks wait here (no-op for one process)."""
        if self.world_size <= 1:
            return
        if self.backend == "xla":
            self._xm.rendezvous("trn_train")
        else:
            dist.barrier()

    def sync(self) -> None:
        """Cut and run the pending XLA graph (``torch_xla.sync()``); no-op on native (eager)."""
        if self.backend == "xla":
            import torch_xla

            torch_xla.sync()

    def mean_across_ranks(self, t: torch.Tensor) -> torch.Tensor:
        """Mean of a tensor over all ranks (for logged scalars)."""
        if self.world_size <= 1:
            return t
        if self.backend == "xla":
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
        if self.backend == "xla":
            t = self._xm.all_reduce(self._xm.REDUCE_SUM, t)
        else:
            dist.all_reduce(t)
        return int(round(float(t.item())))

    # ---------------------------------------------------------------- model/optimizer

    def autocast(self, precision: str) -> contextlib.AbstractContextManager[Any]:
        """BF16 autocast for ``precision == "bf16"`` on this device type, else a no-op."""
        if precision != "bf16":
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=torch.bfloat16)

    @property
    def init_device(self) -> str:
        """Where this rank builds the model: ``"meta"`` (no memory) on FSDP2 ranks other than
        0, which receive their shards from rank 0 in :meth:`wrap_model`; ``"cpu"`` otherwise."""
        return "meta" if self.data_parallel == "fsdp" and self.rank != 0 else "cpu"

    def wrap_model(self, model: torch.nn.Module, blocks: Sequence[torch.nn.Module]) -> torch.nn.Module:
        """Put the model on the device and make it data parallel; return the module to train.

        - xla: the model itself, moved to the device (gradients are reduced in
          :meth:`optimizer_step` or by ZeRO-1).
        - native: with :attr:`compile`, each of ``blocks`` is compiled in place
          (``nn.Module.compile``, static shapes, full graph); then FSDP2 ``fully_shard`` of each
          block and of the root over a 1-D mesh of all ranks (parameters are moved to the device
          as shards: the full model is never on one NeuronCore). Ranks other than 0 built the
          model on the meta device (:attr:`init_device`): they allocate their shards and rank 0
          broadcasts the weights (``set_model_state_dict(..., broadcast_from_rank0=True)``) and
          every buffer, also the non-persistent ones no state dict holds (Llama's rotary
          ``inv_freq``). DDP: the model on the device, wrapped in ``DistributedDataParallel``
          with several ranks (which broadcasts rank 0's weights).

        Args:
            blocks: the model's transformer blocks (:func:`trn_train.model.transformer_blocks`).
        """
        if self.backend == "xla":
            return model.to(self.device)
        if self.compile:
            backend = NEURON_COMPILE_BACKEND if self.device_type == "neuron" else CPU_COMPILE_BACKEND
            for block in blocks:
                block.compile(backend=backend, fullgraph=True, dynamic=False)
        if self.data_parallel == "ddp":
            model.to(self.device)
            return torch.nn.parallel.DistributedDataParallel(model) if self.world_size > 1 else model
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        full = model.state_dict() if self.world_size > 1 and self.rank == 0 else {}
        mesh = init_device_mesh(self.device_type, (self.world_size,))
        for block in blocks:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        if self.world_size > 1:
            if self.rank != 0:
                model.to_empty(device=self.device)
            set_model_state_dict(model, full, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
            for buf in model.buffers():
                dist.broadcast(buf, src=0)
        return model

    @contextlib.contextmanager
    def no_grad_sync(self, model: torch.nn.Module, active: bool) -> Iterator[None]:
        """Skip DDP's gradient all-reduce for accumulation micro-steps (``active``).

        FSDP2 reduce-scatters every micro-step on purpose: skipping it would keep unsharded
        gradients of the whole model on every rank until the last micro-step, the memory FSDP2
        is there to save."""
        if active and isinstance(model, torch.nn.parallel.DistributedDataParallel):
            with model.no_sync():
                yield
        else:
            yield

    def make_optimizer(
        self, params: list[torch.nn.Parameter], lr: float, weight_decay: float,
        betas: tuple[float, float], max_grad_norm: float, zero1: bool,
    ) -> torch.optim.Optimizer:
        """AdamW; wrapped in torch-xla's ZeRO-1 optimizer on XLA when ``zero1``. Under FSDP2
        ``params`` are the sharded DTensors (so is the AdamW state).

        Parameters with ``ndim < 2`` (norms, biases) get no weight decay.
        """
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        if self.backend == "xla" and zero1:
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
        """Reduce gradients (if not done already: DDP and FSDP2 did in backward), clip, step;
        return the global grad norm (a plain 0-d tensor on the device, computed before
        clipping; under FSDP2 the norm of the sharded gradients is the global one, made a plain
        tensor with ``full_tensor()`` as TorchTitan does).
        """
        if self.backend == "xla" and type(optimizer).__name__ == "ZeroRedundancyOptimizer":
            optimizer.step()
            norm = getattr(optimizer, "grad_norm", None)
            if norm is None:
                norm = torch.zeros((), device=self.device)
            return norm
        if self.backend == "xla" and self.world_size > 1:
            self._xm.reduce_gradients(optimizer)
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        norm = torch.nn.utils.get_total_norm([p.grad for p in params])
        if isinstance(norm, DTensor):
            norm = norm.full_tensor()
        if max_grad_norm > 0:
            torch.nn.utils.clip_grads_with_norm_(params, max_grad_norm, norm)
        optimizer.step()
        return norm

    # ---------------------------------------------------------------- RNG

    def rng_state(self) -> dict[str, Any]:
        """Python, NumPy, torch CPU and the device's RNG state of this process (XLA's, or
        the NeuronCore's through :data:`trn_train.runtime_spec.NEURON_DEVICE_MODULE_API`)."""
        import random

        import numpy as np

        state: dict[str, Any] = {
            "python": random.getstate(),
            "numpy": np.random.get_state(),
            "torch": torch.get_rng_state(),
        }
        if self.backend == "xla":
            state["xla"] = int(self._xm.get_rng_state())
        elif self.device_type == "neuron":
            state["neuron"] = neuron_device_module().get_rng_state()
        return state

    def set_rng_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`rng_state` returned."""
        import random

        import numpy as np

        random.setstate(state["python"])
        np.random.set_state(state["numpy"])
        torch.set_rng_state(state["torch"])
        if self.backend == "xla" and "xla" in state:
            self._xm.set_rng_state(int(state["xla"]))
        elif self.device_type == "neuron" and "neuron" in state:
            neuron_device_module().set_rng_state(state["neuron"])

    def to_cpu(self, obj: Any) -> Any:
        """Copy every tensor in a nested structure to CPU (after an XLA sync)."""
        self.sync()
        return _map_tensors(obj, lambda t: t.detach().to("cpu"))


def local_tensor(t: torch.Tensor) -> torch.Tensor:
    """This rank's shard of a DTensor (FSDP2 parameters); a plain tensor itself."""
    return t.to_local() if isinstance(t, DTensor) else t


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
