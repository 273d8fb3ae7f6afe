"""Training-loop overhead: ``trn_train.train.run`` vs a bare PyTorch loop, same model and batch.

Both train the same Llama (hidden 128, 2 layers, seq 128; ~0.8M parameters, so
fixed per-step costs weigh as much as they can) on CPU with the
same global batch (8 sequences as 2 micro-batches of 4), AdamW, gradient clipping and fp32.
The bare loop feeds one pre-built tensor and does nothing else; ours reads shards, builds
batches, schedules the LR, logs JSON/TensorBoard every 10 steps and runs a progress bar.
Seconds per step are averaged per 10-step interval; the first interval (warm-up) and the final
checkpoint are excluded and the median interval is kept; each loop runs ``--repeats`` times
interleaved and the best run counts (other processes on a shared 2-core machine add noise that
only ever slows a run down).

Target: ours / bare <= 1.05.

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

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "training")]

import torch  # noqa: E402

from trn_train.data import PackedDataset, prepare_data, train_tokenizer  # noqa: E402
from trn_train.model import build_model, model_config  # noqa: E402
from trn_ultracluster.contracts.recipes import RECIPES, Recipe, get_recipe  # noqa: E402
from trn_train.train import TrainConfig, run  # noqa: E402

BENCH = Recipe(
    name="llama-bench", task="clm", model_type="llama",
    model_config={**get_recipe("llama-tiny").model_config, "hidden_size": 128, "intermediate_size": 352,
                  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2},
    seq_len=128, micro_batch_size=4, global_batch_size=8, lr=1e-3, warmup_steps=5,
)
LOG_EVERY = 10


def ours(data: Path, out: Path, steps: int) -> float:
    cfg = TrainConfig(recipe=BENCH.name, data_dir=data, output_dir=out, steps=steps, log_every=LOG_EVERY,
                      global_batch_size=8, micro_batch_size=4, device="cpu", resume="none", progress=True)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        run(cfg)
    events = [json.loads(x) for x in buf.getvalue().splitlines() if x.startswith('{"event": "train"')]
    return statistics.median(e["step_time_s"] for e in events[1:])  # drop the warm-up interval


def bare(data: Path, steps: int) -> float:
    ds = PackedDataset(data)
    cfg = model_config(BENCH, ds.vocab_size, ds.special_tokens)
    model = build_model(BENCH, cfg, seed=1234)
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
        o, b = [], []
        for i in range(args.repeats):
            b.append(bare(data, args.steps))
            o.append(ours(data, Path(tmp) / f"run{i}", args.steps))
    ratio = min(o) / min(b)
    print(f"bare loop: {min(b) * 1e3:.2f} ms/step   ours: {min(o) * 1e3:.2f} ms/step   "
          f"(best of {args.repeats}, {args.steps} steps, torch threads {torch.get_num_threads()})")
    print(f"ratio ours / bare: {ratio:.3f} (target <= 1.05): {'PASS' if ratio <= 1.05 else 'FAIL'}")
    return 0 if ratio <= 1.05 else 1


if __name__ == "__main__":
    sys.exit(main())
