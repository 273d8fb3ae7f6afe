"""Files the program writes to the shared file system are readable by the cluster's other
users and jobs: created like ``open()`` creates them (0666 minus the umask, so 0644 under the
usual umask 022), directories 0777 minus the umask (0755)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from trn_train.atomic import atomic_write_bytes


@pytest.fixture
def umask():
    """Run with a chosen umask; restore the process's afterwards."""
    saved = os.umask(0o022)
    yield os.umask
    os.umask(saved)


def _wrong_modes(root: Path) -> dict[str, str]:
    """Paths under ``root`` (itself included) whose mode is not 0755 (directory) / 0644 (file)."""
    wrong = {}
    for p in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        if mode != (0o755 if p.is_dir() else 0o644):
            wrong[str(p)] = oct(mode)
    return wrong


def test_atomic_write_respects_the_umask(tmp_path, umask):
    umask(0o022)
    atomic_write_bytes(tmp_path / "a", b"x")
    umask(0o027)
    atomic_write_bytes(tmp_path / "b", b"y")
    umask(0o002)
    atomic_write_bytes(tmp_path / "c", b"z")
    assert {n: stat.S_IMODE((tmp_path / n).stat().st_mode) for n in "abc"} == {"a": 0o644, "b": 0o640, "c": 0o664}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]  # no temporary files left


def test_prepared_data_checkpoints_and_nxd_config_are_world_readable(tmp_path, umask, corpus, bpe_tokenizer):
    from trn_train.prepare import prepare_data
    from trn_train.nxd import NxdRun, write_config
    from trn_train.train import TrainConfig, run

    umask(0o022)
    data = tmp_path / "data"
    prepare_data(data, str(bpe_tokenizer), 64, inputs=corpus, shard_sequences=400, progress=False)
    out = tmp_path / "run"
    run(TrainConfig(recipe="llama-tiny", data_dir=data, output_dir=out, steps=2, ckpt_every=1, keep_last=2,
                    progress=False, tensorboard=False, global_batch_size=8, micro_batch_size=8, device="cpu"))
    write_config(NxdRun(nodes=1), tmp_path / "conf")
    assert (data / "shard_00000.bin").is_file() and (out / "checkpoints" / "step_00000002" / "dcp" / ".metadata").is_file()
    wrong = {**_wrong_modes(data), **_wrong_modes(out), **_wrong_modes(tmp_path / "conf")}
    assert not wrong, wrong
