"""Training-loop overhead: ``trn_train.train.run`` vs a bare PyTorch loop, same model and batch.

Two pairs, one process on CPU each:

- plain: ours with ``--backend native --data-parallel ddp`` (one process: no wrapper) vs a
  bare loop over the plain model;
- FSDP2: ours with ``--backend native --data-parallel fsdp`` (its one-rank gloo group) vs a
  bare loop over the same model wrapped by ``fully_shard`` (each decoder layer, then the root)
  on a one-rank mesh, in a one-rank gloo group of its own.

All train the same Llama (hidden 128, 2 layers, seq 128; ~0.8M parameters, so
fixed per-step costs weigh as much as they can) with the
same global batch (8 sequences as 2 micro-batches of 4), AdamW, gradient clipping and fp32.
The bare loops feed one pre-built tensor and do nothing else; ours reads shards, builds
batches, schedules the LR, logs JSON/TensorBoard every 10 steps and runs a progress bar.
Seconds per step are averaged per 10-step interval; the first interval (warm-up) and the final
checkpoint are excluded and the median interval is kept; each loop runs ``--repeats`` times
interleaved and the best run counts (other processes on a shared 2-core machine add noise that
only ever slows a run down).

Target: ours / bare <= 1.05 for each pair.

Usage: PYTHONPATH=.:training python benchmarks/train_overhead.py [--steps 60]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "training")]

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from trn_train.data import PackedDataset  # noqa: E402
from trn_train.model import build_model, model_config  # noqa: E402
from trn_train.prepare import prepare_data  # noqa: E402
from trn_train.tokenizer import train_tokenizer  # noqa: E402
from trn_ultracluster.contracts.recipes import RECIPES, Recipe, get_recipe  # noqa: E402
from trn_train.train import TrainConfig, run  # noqa: E402

BENCH = Recipe(
    name="llama-bench", task="clm", model_type="llama",
    model_config={**get_recipe("llama-tiny").model_config, "hidden_size": 128, "intermediate_size": 352,
                  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2},
    seq_len=128, micro_batch_size=4, global_batch_size=8, lr=1e-3, warmup_steps=5,
)
LOG_EVERY = 10


def ours(data: Path, out: Path, steps: int, data_parallel: str) -> float:
    cfg = TrainConfig(recipe=BENCH.name, data_dir=data, output_dir=out, steps=steps, log_every=LOG_EVERY,
                      global_batch_size=8, micro_batch_size=4, backend="native", device="cpu",
                      data_parallel=data_parallel, resume="none", progress=True)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        run(cfg)
    events = [json.loads(x) for x in buf.getvalue().splitlines() if x.startswith('{"event": "train"')]
    return statistics.median(e["step_time_s"] for e in events[1:])  # drop the warm-up interval


@contextlib.contextmanager
def one_rank_group() -> Iterator[None]:
    """A gloo process group of this process alone (as ``run`` makes for FSDP2)."""
    store = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def bare(data: Path, steps: int, fsdp: bool) -> float:
    ds = PackedDataset(data)
    cfg = model_config(BENCH, ds.vocab_size, ds.special_tokens)
    model = build_model(BENCH, cfg, seed=1234)
    with one_rank_group() if fsdp else contextlib.nullcontext():
        if fsdp:
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.fsdp import fully_shard

            mesh = init_device_mesh("cpu", (1,))
            for layer in model.model.layers:
                fully_shard(layer, mesh=mesh)
            fully_shard(model, mesh=mesh)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
        batch = torch.from_numpy(ds.get(range(8), BENCH.seq_len))
        micro = batch.view(2, 4, BENCH.seq_len)
        times = []
        for step in range(steps):
            t0 = time.perf_counter()
            for m in range(2):
                loss = model(input_ids=micro[m], labels=micro[m]).loss / 2
                loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - t0)
    intervals = [sum(times[i:i + LOG_EVERY]) / LOG_EVERY for i in range(LOG_EVERY, steps, LOG_EVERY)]
    return statistics.median(intervals)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    RECIPES[BENCH.name] = BENCH
    with tempfile.TemporaryDirectory() as tmp:
        src = ["/usr/share/common-licenses"] if Path("/usr/share/common-licenses").is_dir() else [
            str(Path(json.__file__).parent)]
        tok = train_tokenizer(src, Path(tmp) / "tok", "bpe", 2000)
        data = Path(tmp) / "data"
        prepare_data(data, str(tok), BENCH.seq_len, inputs=src, progress=False)
        times: dict[str, list[float]] = {k: [] for k in ("bare", "ours", "bare_fsdp", "ours_fsdp")}
        for i in range(args.repeats):
            times["bare"].append(bare(data, args.steps, fsdp=False))
            times["ours"].append(ours(data, Path(tmp) / f"run{i}", args.steps, "ddp"))
            times["bare_fsdp"].append(bare(data, args.steps, fsdp=True))
            times["ours_fsdp"].append(ours(data, Path(tmp) / f"fsdp{i}", args.steps, "fsdp"))
    best = {k: min(v) for k, v in times.items()}
    ok = True
    print(f"{args.steps} steps, best of {args.repeats}, torch threads {torch.get_num_threads()}")
    for label, b, o in (("plain (native, ddp, 1 process)", "bare", "ours"),
                        ("FSDP2 (native, fsdp, 1 process)", "bare_fsdp", "ours_fsdp")):
        ratio = best[o] / best[b]
        ok &= ratio <= 1.05
        print(f"{label}: bare loop {best[b] * 1e3:.2f} ms/step   ours {best[o] * 1e3:.2f} ms/step   "
              f"ratio ours / bare: {ratio:.3f} (target <= 1.05): {'PASS' if ratio <= 1.05 else 'FAIL'}")
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
