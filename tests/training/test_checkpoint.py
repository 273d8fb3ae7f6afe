"""Checkpoints carry a manifest of SHA-256 checksums; a damaged one is never loaded: the run
falls back to the previous complete checkpoint, says so in an event, and stops with a clear
error when none is usable. (Here one process on the native backend: the DCP layout, FSDP2 in
a one-rank group; tests/training/test_native.py runs two.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trn_train import checkpoint as ckpt
from trn_train.cli import main
from trn_train.errors import CheckpointError
from trn_train.train import TrainConfig, run

from training_helpers import read_events, train_losses


SHARD = "dcp/__0_0.distcp"  # rank 0's DCP file (model and optimizer state)
METADATA = "dcp/.metadata"


def cfg(data: Path, out: Path, **kw) -> TrainConfig:
    base = dict(recipe="llama-tiny", data_dir=data, output_dir=out, steps=10, log_every=1, ckpt_every=5,
                progress=False, tensorboard=False, global_batch_size=8, micro_batch_size=4, device="cpu")
    base.update(kw)
    return TrainConfig(**base)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory, clm_data) -> Path:
    """A run of 10 steps with complete checkpoints at steps 5 and 10 (copy before changing it)."""
    out = tmp_path_factory.mktemp("ckpt_template") / "run"
    run(cfg(clm_data, out))
    return out


def _copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _flip_byte(p: Path) -> None:
    raw = bytearray(p.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    p.write_bytes(bytes(raw))


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def test_manifest_lists_every_file_with_size_and_sha256(two_checkpoints):
    d = two_checkpoints / "checkpoints" / "step_00000010"
    manifest = json.loads((d / ckpt.MANIFEST).read_text())
    assert manifest["format"] == ckpt.FORMAT and manifest["step"] == 10 and manifest["world_size"] == 1
    on_disk = {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()} - {ckpt.MANIFEST, ckpt.MARKER}
    assert set(manifest["files"]) == on_disk == {SHARD, METADATA, "rng_rank00000.pt", "trainer.json"}
    assert json.loads((d / "trainer.json").read_text())["layout"] == "dcp"
    import hashlib

    for name, entry in manifest["files"].items():
        data = (d / name).read_bytes()
        assert entry == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


@pytest.mark.parametrize("name, damage", [
    (SHARD, _flip_byte),
    (METADATA, _truncate),
    ("rng_rank00000.pt", Path.unlink),
    ("trainer.json", _flip_byte),
    (ckpt.MANIFEST, _truncate),
])
def test_damaged_newest_checkpoint_falls_back_to_the_previous_one(tmp_path, two_checkpoints, clm_data, capsys,
                                                                   name, damage):
    out = _copy_run(two_checkpoints, tmp_path / "run")
    bad = out / "checkpoints" / "step_00000010"
    damage(bad / name)
    capsys.readouterr()
    run(cfg(clm_data, out, steps=12))
    events = read_events(capsys.readouterr().out)
    corrupt = [e for e in events if e["event"] == "checkpoint_corrupt"]
    assert len(corrupt) == 1, events
    assert corrupt[0]["path"] == str(bad) and corrupt[0]["step"] == 10
    assert name in corrupt[0]["reason"]
    assert corrupt[0]["fallback"] == str(out / "checkpoints" / "step_00000005")
    assert next(e for e in events if e["event"] == "resume")["step"] == 5
    assert min(train_losses(events)) == 6
    # the run went on from step 5 and wrote a good step 10 and 12 again
    for step in (10, 12):
        opened = ckpt.open_checkpoint(ckpt.CheckpointInfo(out / "checkpoints" / f"step_{step:08d}", step))
        for name in opened.files:
            opened.verify(name)


def test_checkpoint_from_before_checksums_resumes_unverified(tmp_path, two_checkpoints, clm_data, capsys):
    """A checkpoint without manifest.json (written by a trn_train without checksums) still
    resumes, with an event that says it was not verified."""
    out = _copy_run(two_checkpoints, tmp_path / "run")
    old = out / "checkpoints" / "step_00000010"
    (old / ckpt.MANIFEST).unlink()
    assert not ckpt.open_checkpoint(ckpt.CheckpointInfo(old, 10)).verified
    capsys.readouterr()
    run(cfg(clm_data, out, steps=12))
    events = read_events(capsys.readouterr().out)
    (unverified,) = [e for e in events if e["event"] == "checkpoint_unverified"]
    assert unverified["path"] == str(old) and unverified["step"] == 10
    assert not [e for e in events if e["event"] == "checkpoint_corrupt"]
    assert next(e for e in events if e["event"] == "resume")["step"] == 10
    assert ckpt.open_checkpoint(ckpt.CheckpointInfo(out / "checkpoints" / "step_00000012", 12)).verified


def test_no_usable_checkpoint_stops_with_a_clear_error(tmp_path, two_checkpoints, clm_data, capsys):
    """Starting from step 0 over a run's checkpoints would silently throw its compute away (and
    rotate the evidence out): stop and say what to do instead."""
    out = _copy_run(two_checkpoints, tmp_path / "run")
    _flip_byte(out / "checkpoints" / "step_00000010" / SHARD)
    _truncate(out / "checkpoints" / "step_00000005" / METADATA)
    with pytest.raises(CheckpointError, match="no usable checkpoint") as e:
        run(cfg(clm_data, out, steps=12))
    msg = str(e.value)
    assert "step_00000010" in msg and SHARD in msg and "step_00000005" in msg and METADATA in msg
    assert "--output-dir" in msg
    # nothing was written over the damaged run
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_00000005", "step_00000010"]


def test_cli_exits_2_without_traceback_when_no_checkpoint_is_usable(tmp_path, two_checkpoints, clm_data, capsys):
    out = _copy_run(two_checkpoints, tmp_path / "run")
    for step in (5, 10):
        _flip_byte(out / "checkpoints" / f"step_{step:08d}" / SHARD)
    code = main(["train", "--recipe", "llama-tiny", "--data-dir", str(clm_data), "--output-dir", str(out),
                 "--steps", "12", "--global-batch-size", "8", "--micro-batch-size", "4", "--device", "cpu",
                 "--no-progress", "--no-tensorboard"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: no usable checkpoint") and "Traceback" not in err


def test_explicit_resume_of_a_damaged_checkpoint_is_an_error_not_a_fallback(tmp_path, two_checkpoints, clm_data):
    out = _copy_run(two_checkpoints, tmp_path / "run")
    bad = out / "checkpoints" / "step_00000010"
    _truncate(bad / SHARD)
    with pytest.raises(CheckpointError, match=r"__0_0\.distcp .*truncated"):
        run(cfg(clm_data, tmp_path / "other", steps=12, resume=str(bad)))


def test_rotation_keeps_the_checkpoint_just_written_when_a_newer_one_is_damaged(tmp_path, two_checkpoints,
                                                                                clm_data, capsys):
    out = _copy_run(two_checkpoints, tmp_path / "run")
    _flip_byte(out / "checkpoints" / "step_00000010" / SHARD)
    run(cfg(clm_data, out, steps=12, ckpt_every=1, keep_last=1, max_steps_this_run=2))
    events = read_events(capsys.readouterr().out)
    assert [e["step"] for e in events if e["event"] == "checkpoint"] == [6, 7]
    # the damaged step 10 is replaced when the run reaches it again, never kept instead of step 7
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_00000007", "step_00000010"]


def test_resume_honours_a_new_lr_and_says_so(tmp_path, two_checkpoints, clm_data, capsys):
    """The optimizer and scheduler state in a checkpoint hold the old peak lr and weight decay:
    a new --lr / --weight-decay on resume used to be ignored silently."""
    from trn_train.plan import lr_lambda

    out = _copy_run(two_checkpoints, tmp_path / "run")
    capsys.readouterr()
    run(cfg(clm_data, out, steps=12, lr=1e-4, weight_decay=0.05))
    events = read_events(capsys.readouterr().out)
    changed = next(e for e in events if e["event"] == "resume")["changed"]
    assert changed["lr"][1] == 1e-4 and changed["weight_decay"] == [0.01, 0.05]
    lam = lr_lambda(1, 12, 0.1)
    lrs = {e["step"]: e["lr"] for e in events if e["event"] == "train"}
    assert lrs[11] == pytest.approx(1e-4 * lam(11))


@pytest.mark.parametrize("this_rank_fails", [False, True])
def test_ranks_agree_to_fall_back_when_a_file_fails_on_one_rank_only(tmp_path, two_checkpoints, clm_data, capsys,
                                                                     monkeypatch, this_rank_fails):
    """Each rank verifies only its share of the files (and its RNG state), so a damaged file
    can fail on one rank only: every rank must still pick the same checkpoint.
    Here rank 0's view is run with another rank's verdict faked into the collective."""
    from trn_train.runtime import Runtime

    out = _copy_run(two_checkpoints, tmp_path / "run")
    if this_rank_fails:
        _truncate(out / "checkpoints" / "step_00000010" / "rng_rank00000.pt")
    verdicts = []

    def count_true(self, flag):
        other_fails = not this_rank_fails and not verdicts  # the other rank fails on step 10 only
        verdicts.append(flag)
        return int(flag) + int(other_fails)

    monkeypatch.setattr(Runtime, "count_true", count_true)
    capsys.readouterr()
    run(cfg(clm_data, out, steps=12))
    events = read_events(capsys.readouterr().out)
    assert verdicts == [this_rank_fails, False]
    corrupt = next(e for e in events if e["event"] == "checkpoint_corrupt")
    assert corrupt["failed_ranks"] == 1
    if this_rank_fails:
        assert "rng_rank00000.pt is truncated" in corrupt["reason"]
    else:
        assert "failed verification on 1 other rank(s)" in corrupt["reason"]
    assert next(e for e in events if e["event"] == "resume")["step"] == 5
