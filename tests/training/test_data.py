"""prepare-data / PackedDataset: packing is exact, bad input is named, corruption is caught."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from trn_train.data import GlobalBatchSampler, PackedDataset
from trn_train.prepare import prepare_data
from trn_train.errors import InputError, DataError

from training_helpers import subprocess_env


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_packing_is_the_tokenized_corpus_cut_into_rows(tmp_path, corpus, bpe_tokenizer):
    from transformers import AutoTokenizer

    files = sorted(p for p in Path(corpus[0]).rglob("*") if p.is_file())[:2]
    out = tmp_path / "d"
    r = prepare_data(out, str(bpe_tokenizer), 16, inputs=[str(f) for f in files], shard_sequences=7,
                     progress=False)
    tok = AutoTokenizer.from_pretrained(str(bpe_tokenizer))
    expected = []
    for f in files:
        expected += tok(f.read_text(), add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    ds = PackedDataset(out)
    got = ds.get(np.arange(len(ds))).reshape(-1)
    assert r.num_sequences == len(expected) // 16 == len(ds)
    assert r.num_shards == -(-r.num_sequences // 7)
    assert got.tolist() == expected[: r.num_sequences * 16]
    assert r.dropped_tokens == len(expected) % 16


def test_manifest_lists_every_shard_with_checksum(clm_data):
    m = json.loads((clm_data / "manifest.json").read_text())
    assert m["seq_len"] == 64 and m["task_format"] == "clm"
    assert sum(s["num_sequences"] for s in m["shards"]) == m["num_sequences"]
    assert {s["name"] for s in m["shards"]} == {p.name for p in clm_data.glob("shard_*.bin")}
    assert all(len(s["sha256"]) == 64 for s in m["shards"])


def test_mlm_rows_are_framed_by_cls_and_sep(mlm_data):
    ds = PackedDataset(mlm_data)
    rows = ds.get(np.arange(min(50, len(ds))))
    assert (rows[:, 0] == ds.special_tokens["cls"]).all()
    assert (rows[:, -1] == ds.special_tokens["sep"]).all()


def test_flipped_byte_is_reported_by_shard_name(tmp_path, clm_data):
    d = _copy(clm_data, tmp_path / "d")
    shard = sorted(d.glob("shard_*.bin"))[1]
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    shard.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=f"{shard.name} is corrupt") as e:
        PackedDataset(d)
    assert e.value.shard == shard.name


def test_truncated_and_missing_shards_are_reported(tmp_path, clm_data):
    d = _copy(clm_data, tmp_path / "d")
    shard = sorted(d.glob("shard_*.bin"))[0]
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(DataError, match=f"{shard.name} is truncated"):
        PackedDataset(d, verify=False)  # size check does not need the hash
    shard.unlink()
    with pytest.raises(DataError, match=f"{shard.name} is missing"):
        PackedDataset(d)


def test_missing_dir_and_manifest(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        PackedDataset(tmp_path / "nope")
    with pytest.raises(DataError, match="no manifest.json"):
        PackedDataset(tmp_path)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(inputs=["/no/such/file.txt"]), DataError, "does not exist"),
        (dict(inputs=[]), InputError, "exactly one"),
        (dict(seq_len=4), InputError, "--seq-len must be an integer in 8..1048576, got: 4"),
        (dict(task_format="xyz"), InputError, "--format"),
        (dict(shard_sequences=0), InputError, "--shard-sequences"),
        (dict(seq_len=1 << 20), DataError, "fewer than one sequence"),
        (dict(tokenizer="/no/such/tokenizer"), InputError, "--tokenizer"),
        (dict(task_format="mlm"), InputError, r"\[CLS\]"),  # BPE tokenizer has no [MASK]
    ],
)
def test_prepare_data_bad_inputs(tmp_path, corpus, bpe_tokenizer, kwargs, exc, match):
    args = dict(out_dir=tmp_path / "out", tokenizer=str(bpe_tokenizer), seq_len=64, inputs=corpus,
                progress=False)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        prepare_data(**args)
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_non_empty_out_needs_overwrite(tmp_path, corpus, bpe_tokenizer, clm_data):
    d = _copy(clm_data, tmp_path / "d")
    with pytest.raises(InputError, match="--overwrite"):
        prepare_data(d, str(bpe_tokenizer), 32, inputs=corpus, progress=False)
    r = prepare_data(d, str(bpe_tokenizer), 32, inputs=corpus, overwrite=True, progress=False)
    assert PackedDataset(d).seq_len == 32 == r.seq_len
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="refusing"):
        prepare_data(foreign, str(bpe_tokenizer), 32, inputs=corpus, overwrite=True, progress=False)
    assert (foreign / "notes.txt").exists()


def test_non_utf8_input_is_named(tmp_path, bpe_tokenizer):
    bad = tmp_path / "blob.bin"
    bad.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(DataError, match="blob.bin.*not UTF-8"):
        prepare_data(tmp_path / "out", str(bpe_tokenizer), 8, inputs=[str(bad)], progress=False)


def test_sampler_is_a_permutation_per_epoch_and_rank_slices_tile_the_batch():
    s = GlobalBatchSampler(num_sequences=103, global_batch_size=10, seed=3)
    epoch0 = np.concatenate([s.global_indices(k) for k in range(s.steps_per_epoch)])
    assert len(set(epoch0.tolist())) == 100  # no repeats within an epoch
    g = s.global_indices(4)
    assert np.array_equal(np.concatenate([s.rank_indices(4, r, 2) for r in range(2)]), g)
    assert not np.array_equal(s.global_indices(0), s.global_indices(s.steps_per_epoch))  # reshuffled
    with pytest.raises(InputError, match="--global-batch-size"):
        GlobalBatchSampler(5, 10, 0)


def test_cli_prepare_data_errors_exit_2_with_message(tmp_path, bpe_tokenizer):
    env = subprocess_env()
    p = subprocess.run([sys.executable, "-m", "trn_train", "prepare-data", "--input", "/no/such",
                        "--tokenizer", str(bpe_tokenizer), "--out", str(tmp_path / "o"), "--seq-len", "64"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2
    assert "error: --input '/no/such' does not exist" in p.stderr


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.pop("seq_len"), "manifest.json: missing key 'seq_len'"),
    (lambda m: m.pop("shards"), "manifest.json: missing key 'shards'"),
    (lambda m: m["shards"][0].pop("sha256"), r"manifest.json: shards\[0\] is missing key 'sha256'"),
    (lambda m: m.update(seq_len="64"), "manifest.json: seq_len must be a positive integer, got: '64'"),
    (lambda m: m.update(dtype="float64"), "manifest.json: dtype must be 'uint16' or 'uint32', got: 'float64'"),
    (lambda m: m.update(task_format="xyz"), "manifest.json: task_format must be 'clm' or 'mlm', got: 'xyz'"),
    (lambda m: m["shards"][1].update(name="../../etc/passwd"),
     r"manifest.json: shards\[1\]\.name must be a file name in the data directory"),
    (lambda m: m["shards"][0].update(num_sequences=-1), r"shards\[0\]\.num_sequences must be an integer >= 0"),
    (lambda m: m.update(special_tokens=[]), "manifest.json: special_tokens must be an object"),
])
def test_manifest_with_a_missing_or_bad_key_is_named(tmp_path, clm_data, edit, match):
    d = _copy(clm_data, tmp_path / "d")
    m = json.loads((d / "manifest.json").read_text())
    edit(m)
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(DataError, match=match):
        PackedDataset(d, verify=False)


def test_mlm_manifest_without_a_mask_token_is_named(tmp_path, mlm_data):
    d = _copy(mlm_data, tmp_path / "d")
    m = json.loads((d / "manifest.json").read_text())
    del m["special_tokens"]["mask"]
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(DataError,
                       match="special_tokens must be ids of 'cls', 'sep', 'mask' and 'pad' for task_format mlm"):
        PackedDataset(d, verify=False)


def test_cli_train_with_a_broken_manifest_exits_2_without_traceback(tmp_path, clm_data, capsys):
    from trn_train.cli import main

    d = _copy(clm_data, tmp_path / "d")
    m = json.loads((d / "manifest.json").read_text())
    del m["vocab_size"]
    (d / "manifest.json").write_text(json.dumps(m))
    code = main(["train", "--recipe", "llama-tiny", "--data-dir", str(d), "--output-dir", str(tmp_path / "o"),
                 "--steps", "1", "--device", "cpu", "--no-progress", "--no-tensorboard"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "missing key 'vocab_size'" in err, err
