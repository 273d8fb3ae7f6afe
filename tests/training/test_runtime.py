"""Runtime: the XLA runtime must agree with torchrun about the job's shape. XLA is faked here
(what torch_xla.runtime reports), so this runs without torch-xla. (Flag resolution and the
native backend: test_native.py.)"""

from __future__ import annotations

import sys
import types

import pytest
import torch
import torch.distributed as dist

from trn_train.errors import LaunchError
from trn_train.runtime import Runtime
from trn_train.runtime_spec import RuntimeSpec

XLA = RuntimeSpec("xla", "xla", zero1=True)


@pytest.fixture
def fake_xla(monkeypatch):
    """Install a fake ``torch_xla`` whose runtime reports ``state["world_size"]`` and
    ``state["ordinal"]``, and a no-op ``xla`` process group."""
    state = {"world_size": 1, "ordinal": 0, "pg_inits": 0}
    root = types.ModuleType("torch_xla")
    root.device = lambda: torch.device("cpu")
    root.sync = lambda: None
    xr = types.ModuleType("torch_xla.runtime")
    xr.world_size = lambda: state["world_size"]
    xr.global_ordinal = lambda: state["ordinal"]
    modules = {
        "torch_xla": root,
        "torch_xla.core": types.ModuleType("torch_xla.core"),
        "torch_xla.core.xla_model": types.ModuleType("torch_xla.core.xla_model"),
        "torch_xla.runtime": xr,
        "torch_xla.distributed": types.ModuleType("torch_xla.distributed"),
        "torch_xla.distributed.xla_backend": types.ModuleType("torch_xla.distributed.xla_backend"),
    }
    for name, mod in modules.items():
        monkeypatch.setitem(sys.modules, name, mod)
    initialized = {"v": False}

    def init_process_group(backend, init_method=None, **kw):
        assert backend == "xla" and init_method == "xla://"
        state["pg_inits"] += 1
        initialized["v"] = True

    monkeypatch.setattr(dist, "init_process_group", init_process_group)
    monkeypatch.setattr(dist, "is_initialized", lambda: initialized["v"])
    return state


def _torchrun_env(monkeypatch, world: int, rank: int) -> None:
    monkeypatch.setenv("WORLD_SIZE", str(world))
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("LOCAL_RANK", str(rank))


def test_xla_world_size_that_differs_from_torchrun_stops(fake_xla, monkeypatch):
    """torch-xla 2.9 on XLA:CPU under torchrun with 2 processes can report world size 1 in
    every process (measured on XLA:CPU, torch-xla 2.9.0): each would train alone on the same data and write the same
    checkpoint."""
    _torchrun_env(monkeypatch, world=2, rank=1)
    fake_xla.update(world_size=1, ordinal=0)
    with pytest.raises(LaunchError) as e:
        Runtime.init(XLA)
    msg = str(e.value)
    assert "world size 1" in msg and "WORLD_SIZE=2" in msg and "duplicate" in msg


def test_xla_rank_that_differs_from_torchrun_stops(fake_xla, monkeypatch):
    _torchrun_env(monkeypatch, world=2, rank=1)
    fake_xla.update(world_size=2, ordinal=0)
    with pytest.raises(LaunchError, match="ordinal 0.*RANK=1"):
        Runtime.init(XLA)


def test_xla_runtime_that_agrees_with_torchrun(fake_xla, monkeypatch):
    _torchrun_env(monkeypatch, world=4, rank=3)
    fake_xla.update(world_size=4, ordinal=3)
    rt = Runtime.init(XLA)
    assert (rt.backend, rt.device_type, rt.world_size, rt.rank, rt.distributed) == ("xla", "xla", 4, 3, True)
    assert fake_xla["pg_inits"] == 1


def test_xla_without_torchrun_is_one_process(fake_xla, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    rt = Runtime.init(XLA)
    assert (rt.world_size, rt.rank, rt.distributed) == (1, 0, False)
    assert fake_xla["pg_inits"] == 0
