"""Loader throughput: tokens/s that one process reads from prepared shards.

Prepares real text (Python standard library sources on this machine) with a BPE tokenizer
trained on it, then times what the training loop does per micro-batch: global-batch indices
for a rank, ``PackedDataset.get`` (memory-mapped shards), ``torch.from_numpy``. Also times the
SHA-256 verification done once when a run opens the data.

Target: >= 100x the published per-node rate of Llama-3.1-8B pretraining on trn1.32xlarge,
47.95 seq/s x 8192 tokens / 32 nodes = 12,275 tokens/s/node (Neuron "Trn1/Trn1n Training
Performance"), i.e. >= 1.23M tokens/s, so data loading never limits a node (one process
reads for itself; 32 processes per node read in parallel).

Usage: PYTHONPATH=.:training python benchmarks/loader.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "training")]

import torch  # noqa: E402

from trn_train.data import GlobalBatchSampler, PackedDataset  # noqa: E402
from trn_train.prepare import prepare_data  # noqa: E402
from trn_train.tokenizer import train_tokenizer  # noqa: E402
from trn_ultracluster.contracts.recipes import get_recipe  # noqa: E402

PUBLISHED_TOKENS_PER_S_PER_NODE = get_recipe("llama-8b").published.tokens_per_s_per_node


def corpus(max_bytes: int) -> list[str]:
    """Standard-library .py files up to ``max_bytes`` (real text, offline)."""
    files, total = [], 0
    for p in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        if "test" in p.parts:
            continue
        files.append(str(p))
        total += p.stat().st_size
        if total >= max_bytes:
            break
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--corpus-mb", type=float, default=8.0)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--micro-batch", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = corpus(int(args.corpus_mb * 1e6))
        tok = train_tokenizer(files[:200], Path(tmp) / "tok", "bpe", 8000)
        t0 = time.perf_counter()
        r = prepare_data(Path(tmp) / "data", str(tok), args.seq_len, inputs=files, shard_sequences=256,
                         progress=False)
        prep_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        ds = PackedDataset(Path(tmp) / "data", verify=True)
        verify_s = time.perf_counter() - t0
        world, per_rank = 32, args.micro_batch
        sampler = GlobalBatchSampler(len(ds), world * per_rank, seed=0)
        tokens, step = 0, 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            idx = sampler.rank_indices(step, step % world, world)
            batch = torch.from_numpy(ds.get(idx, args.seq_len))
            tokens += batch.numel()
            step += 1
        dt = time.perf_counter() - t0
    rate = tokens / dt
    ratio = rate / PUBLISHED_TOKENS_PER_S_PER_NODE
    print(f"prepared {r.num_tokens:,} tokens ({r.num_sequences} x {args.seq_len}) in {prep_s:.1f} s "
          f"= {r.num_tokens / prep_s:,.0f} tokens/s tokenize+pack")
    print(f"open+verify (SHA-256 of all shards): {verify_s:.3f} s = {r.num_tokens / max(verify_s, 1e-9):,.0f} tokens/s")
    print(f"loader: {rate:,.0f} tokens/s ({step} micro-batches of {per_rank} x {args.seq_len}, warm page cache)")
    print(f"published trn1.32xlarge Llama-3.1-8B rate: {PUBLISHED_TOKENS_PER_S_PER_NODE:,.0f} tokens/s/node")
    print(f"ratio loader / published per-node rate: {ratio:,.0f}x (target >= 100x): {'PASS' if ratio >= 100 else 'FAIL'}")
    return 0 if ratio >= 100 else 1


if __name__ == "__main__":
    sys.exit(main())
