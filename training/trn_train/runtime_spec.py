"""Which back end and device a ``train`` run uses: :func:`resolve_runtime` turns ``--backend``,
``--device``, ``--data-parallel``, ``--compile`` and ``--zero1`` into a :class:`RuntimeSpec`
before any process group exists, with the probes (torch-xla importable, a NeuronCore seen) and
the TorchNeuron facts it decides by. :mod:`trn_train.runtime` sets the spec up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from trn_train.config import BACKENDS, DATA_PARALLEL, DEVICES, SWITCHES
from trn_train.errors import InputError, LaunchError

NEURON_PACKAGE = "torch_neuronx"
"""TorchNeuron's module: importing it "Registers the Neuron device and distributed backend"
(Neuron docs, "How to use torch.distributed on Neuron",
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html;
PyTorch >= 2.9 would also autoload it, the docs' FAQ says, but importing it is the safe way).
Package torch-neuronx 2.13.3.0 / 2.14.3.0 on PyTorch 2.13 / 2.14, Trn2 and Trn3 only (Neuron
2.33.0 TorchNeuron release notes, release-notes/components/torchneuron.rst)."""

NEURON_DEVICE = "neuron"
"""TorchNeuron's device type: it "adds the ``neuron`` device through the PyTorch
``PrivateUse1`` extension" (TorchNeuron release notes); autocast is
``torch.autocast(device_type="neuron")`` (Neuron docs, torch/index.rst). Every process uses
``torch.device("neuron")`` without an index, as the torch.distributed guide's example does.
NOT VERIFIED: that torch-neuronx binds each torchrun process to its own NeuronCore (by
``LOCAL_RANK``) without a ``set_device`` call here."""

NEURON_DEVICE_MODULE_API = ("is_available", "get_rng_state", "set_rng_state")
"""NOT VERIFIED (no Neuron page read here says it): torch-neuronx registers a device module,
``torch.get_device_module("neuron")`` (``torch.neuron``), with these functions, the PrivateUse1
convention ``torch.cuda`` follows. ``is_available()`` decides ``--device auto``; the RNG state
goes into checkpoints (dropout on the device). If it is missing, ``--device neuron`` and
``auto`` with torch-neuronx installed stop with a :class:`LaunchError` that names this
assumption, instead of silently training on the CPU."""


def xla_available() -> bool:
    """True when ``torch_xla`` can be imported."""
    try:
        import torch_xla  # noqa: F401
    except ImportError:
        return False
    return True


def neuron_device_module() -> Any:
    """TorchNeuron's device module (see :data:`NEURON_DEVICE_MODULE_API`), after importing
    :data:`NEURON_PACKAGE`.

    Raises:
        ImportError: torch-neuronx is not installed.
        LaunchError: it is, but the device module lacks a function of
            :data:`NEURON_DEVICE_MODULE_API`.
    """
    __import__(NEURON_PACKAGE)
    try:
        mod = torch.get_device_module(NEURON_DEVICE)
    except RuntimeError:
        mod = None
    missing = [f for f in NEURON_DEVICE_MODULE_API if not callable(getattr(mod, f, None))]
    if missing:
        raise LaunchError(
            f"{NEURON_PACKAGE} is installed, but torch.get_device_module({NEURON_DEVICE!r}) has no "
            f"{', '.join(missing)}: trn_train assumed (not verified) that TorchNeuron's device module follows "
            "torch.cuda's (trn_train.runtime_spec.NEURON_DEVICE_MODULE_API). Use --device cpu, or adapt that code")
    return mod


def neuron_available() -> bool:
    """True when TorchNeuron is installed and reports a usable NeuronCore.

    Raises:
        LaunchError: see :func:`neuron_device_module`.
    """
    try:
        mod = neuron_device_module()
    except ImportError:
        return False
    return bool(mod.is_available())


def extracting_graphs_only() -> bool:
    """True under ``neuron_parallel_compile``'s trial run, which sets
    ``NEURON_EXTRACT_GRAPHS_ONLY`` and returns zero outputs: results are not real, so no
    checkpoint may be written (Neuron docs, "PyTorch NeuronX Environment Variables",
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/api-reference-guide/training/torch-neuron-envvars.html).
    """
    return os.environ.get("NEURON_EXTRACT_GRAPHS_ONLY", "") not in ("", "0")


@dataclass(frozen=True)
class RuntimeSpec:
    """What the flags resolve to (:func:`resolve_runtime`), before any process group exists.

    Attributes:
        backend: ``"xla"`` or ``"native"``.
        device_type: ``"xla"`` (xla backend), ``"neuron"`` or ``"cpu"`` (native backend).
        data_parallel: ``"fsdp"`` or ``"ddp"`` on the native backend; ``None`` on xla (it
            reduces gradients with torch-xla, and shards AdamW with ``zero1``).
        compile: compile each transformer block with ``torch.compile`` (native only).
        zero1: torch-xla's ZeRO-1 optimizer (xla only).
    """

    backend: str
    device_type: str
    data_parallel: str | None = None
    compile: bool = False
    zero1: bool = False


def _choice(flag: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise InputError(flag, value, ", ".join(f"'{a}'" for a in allowed[:-1]) + f" or '{allowed[-1]}'")


CLUSTER_STACK_VARIABLE = "TRN_NEURON_STACK"
"""Set by the cluster (the job environment of every orchestrator and the training image):
its Neuron training stack, which ``--backend auto`` follows."""


def resolve_runtime(backend: str = "auto", device: str = "auto", data_parallel: str = "auto",
                    compile: str = "auto", zero1: str = "auto", *,
                    xla_importable: Callable[[], bool] = xla_available,
                    neuron_present: Callable[[], bool] = neuron_available,
                    cluster_stack: str | None = None) -> RuntimeSpec:
    """Resolve ``--backend``, ``--device``, ``--data-parallel``, ``--compile`` and ``--zero1``.

    ``auto`` means: backend ``cluster_stack`` when the cluster names one (the stack's job
    environment and training image set ``TRN_NEURON_STACK``, :data:`CLUSTER_STACK_VARIABLE`)
    and ``--device`` is ``auto``; else ``xla`` when torch_xla is importable and ``--device`` is
    not ``neuron``/``cpu``, else ``native``; on native, device ``neuron`` when TorchNeuron reports a
    NeuronCore, else ``cpu``; data parallel ``fsdp``; compile on for ``neuron``, off on ``cpu``;
    ZeRO-1 on for xla.

    Args:
        xla_importable / neuron_present: probes (the tests replace them); called only when the
            answer matters.
        cluster_stack: the cluster's Neuron training stack; default: ``$TRN_NEURON_STACK``
            (empty or unset: none).

    Raises:
        InputError: an unknown value, a contradiction (``--backend xla`` with ``--device
            neuron``/``cpu``, ``--backend native`` with ``--device xla``, a native-only flag set
            on xla, ``--zero1 on`` on native), or a back end or device that is not installed.
        LaunchError: see :func:`neuron_device_module`.
    """
    _choice("--backend", backend, BACKENDS)
    _choice("--device", device, DEVICES)
    _choice("--data-parallel", data_parallel, DATA_PARALLEL)
    _choice("--compile", compile, SWITCHES)
    _choice("--zero1", zero1, SWITCHES)
    if backend == "xla" and device in ("neuron", "cpu"):
        raise InputError("--device", device, "'auto' or 'xla' with --backend xla",
                          hint="the xla backend runs on XLA devices (Trn1 NeuronCores through torch-neuronx, or "
                               "PJRT_DEVICE=CPU); --device neuron and cpu are the native backend's")
    if backend == "native" and device == "xla":
        raise InputError("--device", device, "'auto', 'neuron' or 'cpu' with --backend native",
                          hint="XLA devices are the xla backend's (torch-xla, Trn1)")
    if cluster_stack is None:
        cluster_stack = os.environ.get(CLUSTER_STACK_VARIABLE) or None
    if cluster_stack is not None and cluster_stack not in ("xla", "native"):
        raise InputError(f"${CLUSTER_STACK_VARIABLE}", cluster_stack, "'xla' or 'native'",
                          hint="the stack's job environment sets it; unset it or redeploy")
    if backend == "auto" and device == "auto" and cluster_stack is not None:
        backend = cluster_stack
    if backend == "xla" and not xla_importable():
        raise InputError("--backend", backend, "'native' or 'auto' here", hint="torch_xla is not installed")
    if backend == "auto":
        if device == "xla" and not xla_importable():
            raise InputError("--device", device, "'cpu' or 'auto' here", hint="torch_xla is not installed")
        backend = "xla" if device == "xla" or (device == "auto" and xla_importable()) else "native"
    if backend == "xla":
        for flag, value, why in (
                ("--data-parallel", data_parallel, "it picks the native backend's DDP or FSDP2; xla reduces "
                                                   "gradients with torch-xla and shards AdamW with --zero1"),
                ("--compile", compile, "it is the native backend's torch.compile; torch-xla compiles every graph")):
            if value != "auto":
                raise InputError(flag, value, "'auto' with the xla backend", hint=why)
        return RuntimeSpec("xla", "xla", None, False, zero1 != "off")
    if zero1 == "on":
        raise InputError("--zero1", zero1, "'auto' or 'off' with the native backend",
                          hint="ZeRO-1 is torch-xla's ZeroRedundancyOptimizer; on the native backend "
                               "--data-parallel fsdp shards the AdamW state (and the weights and gradients)")
    if device == "auto":
        device = "neuron" if neuron_present() else "cpu"
    elif device == "neuron" and not neuron_present():
        raise InputError("--device", device, "'cpu' or 'auto' here",
                          hint=f"TorchNeuron ({NEURON_PACKAGE}, Trn2/Trn3) is not installed or sees no NeuronCore")
    return RuntimeSpec("native", device, "fsdp" if data_parallel == "auto" else data_parallel,
                       compile == "on" or (compile == "auto" and device == "neuron"), False)

