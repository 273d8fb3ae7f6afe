"""Data-parallel BERT pretraining shaped like AWS's Trn1 ParallelCluster tutorial, tiny model.

The tutorial (aws-neuron/aws-neuron-parallelcluster-samples, examples/jobs/dp-bert-launch-job.md,
which runs Neuron's "Hugging Face BERT Pretraining Tutorial", phase 1,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/tutorials/training/bert.html)
trains BERT-Large with ``dp_bert_large_hf_pretrain_hdf5.py`` in two Slurm jobs:

    sbatch --exclusive --nodes=16 --wrap "srun neuron_parallel_compile ./run_dp_bert_large_hf_pretrain_bf16_s128.sh"
    sbatch --exclusive --nodes=16 --wrap "srun ./run_dp_bert_large_hf_pretrain_bf16_s128.sh"

the first a short trial run under ``neuron_parallel_compile`` that extracts the training graphs
and compiles them into the shared cache, the second the real run, which finds them there. The
run script shortens the trial with ``--steps_this_run``: "The command after
neuron_parallel_compile should match the actual run command, except for the option
--steps_this_run" (BERT tutorial, "Pre-compilation"). This script keeps that contract with
``--steps-this-run``, and what the tutorial's script does in each step: a Hugging Face BERT built
from its configuration, AdamW with ``get_linear_schedule_with_warmup``, gradient accumulation
over ``--grad-accum-usteps`` micro-batches with the all-reduce once, before the optimizer step
(``xm.optimizer_step`` on XLA; DDP with ``no_sync`` elsewhere), a log line per step. The
data are synthetic (no HDF5 data set to download) and the model has 2 layers of 64 units.

Device: ``xla`` (Trn1, torch-neuronx; the tutorial's stack) or, when torch-xla is not installed,
``cpu`` with the gloo backend. Under ``neuron_parallel_compile`` (which sets
``NEURON_EXTRACT_GRAPHS_ONLY``, Neuron docs, "PyTorch NeuronX Environment Variables") the losses
are not real ("The trial run during pre-compilation currently outputs invalid loss numbers"),
so rank 0 then writes only ``precompile-trial.json``; a real run writes ``checkpoint.pt`` and
``result.json`` into ``--output-dir`` (default ``$TRN_OUTPUT_DIR``, else ``./output``).
"""

import argparse
import importlib.util
import json
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from transformers import AutoModelForMaskedLM, BertConfig, get_linear_schedule_with_warmup

MASK_ID = 0
"""Token id of [MASK]; the data use the ids above it."""


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=8, help="sequences per worker and micro-step")
    p.add_argument("--grad-accum-usteps", type=int, default=2,
                   help="micro-batches per optimizer step")
    p.add_argument("--max-steps", type=int, default=40,
                   help="optimizer steps of the whole schedule (warm-up and decay)")
    p.add_argument("--steps-this-run", type=int, default=None,
                   help="stop after this many steps (default: --max-steps); the precompile "
                        "trial's flag, like the tutorial's --steps_this_run")
    p.add_argument("--warmup-steps", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--vocab-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=12349)
    p.add_argument("--device", choices=("auto", "xla", "cpu"), default="auto")
    p.add_argument("--output-dir", default=os.environ.get("TRN_OUTPUT_DIR", "output"))
    args = p.parse_args(argv)
    for name in ("batch_size", "grad_accum_usteps", "max_steps", "seq_len"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.steps_this_run is None:
        args.steps_this_run = args.max_steps
    if not 1 <= args.steps_this_run <= args.max_steps:
        p.error(f"--steps-this-run must be between 1 and --max-steps ({args.max_steps}), "
                f"got {args.steps_this_run}")
    if args.vocab_size < 8:
        p.error(f"--vocab-size must be at least 8, got {args.vocab_size}")
    return args


def choose_device(requested):
    """``xla`` when torch-xla is installed (the Trn1 image), else ``cpu``."""
    if requested != "auto":
        return requested
    if importlib.util.find_spec("torch_xla"):
        return "xla"
    if importlib.util.find_spec("torch_neuronx"):
        raise SystemExit(
            "pretrain.py: torch-neuronx without torch-xla is TorchNeuron (Trn2/Trn3), and this "
            "example follows the Trn1 (PyTorch/XLA) tutorial; use --device cpu, or "
            "examples/pytorch-distributed, which runs on the neuron device")
    return "cpu"


def masked_batch(args, generator):
    """``(input_ids, labels)`` of shape ``(batch, seq_len)``: token ids 1..vocab-1 drawn with
    Zipf's law (id k with probability proportional to 1/k, as word frequencies in text go),
    15% of the positions replaced by [MASK]; labels are the original ids there and -100
    (ignored) elsewhere. A model first learns the frequencies: the loss falls from about
    ln(vocab - 1) within a few dozen steps."""
    n, length = args.batch_size, args.seq_len
    zipf = 1.0 / torch.arange(1, args.vocab_size, dtype=torch.float)
    ids = 1 + torch.multinomial(zipf, n * length, replacement=True, generator=generator)
    ids = ids.view(n, length)
    masked = torch.rand((n, length), generator=generator) < 0.15
    return ids.masked_fill(masked, MASK_ID), ids.masked_fill(~masked, -100)


def tiny_bert(args):
    config = BertConfig(vocab_size=args.vocab_size, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=128,
                        max_position_embeddings=args.seq_len, pad_token_id=MASK_ID)
    return AutoModelForMaskedLM.from_config(config)


def main(argv=None):
    args = parse_args(argv)
    trial = os.environ.get("NEURON_EXTRACT_GRAPHS_ONLY", "") not in ("", "0")
    device_name = choose_device(args.device)
    if device_name == "xla":
        import torch_xla
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.xla_backend  # noqa: F401  registers 'xla'
        device = torch_xla.device()
    else:
        device = torch.device("cpu")
    if "RANK" in os.environ:
        dist.init_process_group("xla" if device_name == "xla" else "gloo")
    rank = dist.get_rank() if dist.is_initialized() else 0
    world_size = dist.get_world_size() if dist.is_initialized() else 1
    if rank == 0:
        print("--------TRAINING CONFIG----------", args, sep="\n", flush=True)

    torch.manual_seed(args.seed)
    model = tiny_bert(args).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scheduler = get_linear_schedule_with_warmup(optimizer, args.warmup_steps, args.max_steps)
    if device_name != "xla" and dist.is_initialized():
        model = DistributedDataParallel(model)
    generator = torch.Generator().manual_seed(args.seed + rank)
    global_batch = args.batch_size * args.grad_accum_usteps * world_size

    losses = []
    for step in range(1, args.steps_this_run + 1):
        started = time.time()
        step_loss = torch.zeros((), device=device)
        for micro in range(args.grad_accum_usteps):
            last = micro == args.grad_accum_usteps - 1
            sync = nullcontext() if last or not isinstance(model, DistributedDataParallel) \
                else model.no_sync()  # all-reduce once, after the last micro-batch
            ids, labels = (t.to(device) for t in masked_batch(args, generator))
            with sync:
                loss = model(input_ids=ids, labels=labels).loss / args.grad_accum_usteps
                loss.backward()
            step_loss += loss.detach()
        if device_name == "xla":
            xm.optimizer_step(optimizer)  # all-reduce of the gradients, then the step
            torch_xla.sync()
        else:
            optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(step_loss)
        if rank == 0:
            print(f"LOG {time.ctime()} - (0, {step}) step_loss : {step_loss.item():.4f}  "
                  f"learning_rate : {scheduler.get_last_lr()[0]:.2e}  throughput : "
                  f"{global_batch / (time.time() - started):.2f}", flush=True)

    ends = torch.stack([losses[0], losses[-1]])
    if dist.is_initialized():
        dist.all_reduce(ends)
        ends /= world_size
    first_loss, final_loss = ends.tolist()
    out = Path(args.output_dir)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
    record = {"example": "ultracluster-tutorial", "device": device_name,
              "world_size": world_size, "steps": args.steps_this_run,
              "max_steps": args.max_steps, "global_batch_size": global_batch}
    if trial:
        name = "precompile-trial.json"  # losses of a graph-extraction run are not real
    else:
        name = "result.json"
        plain = model.module if isinstance(model, DistributedDataParallel) else model
        save_checkpoint(plain.state_dict(), out / "checkpoint.pt", device_name, rank)
        record |= {"first_loss": first_loss, "final_loss": final_loss,
                   "checkpoint": str(out / "checkpoint.pt")}
    if rank == 0:
        tmp = out / f".{name}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(tmp, out / name)  # atomic
        print(f"wrote {out / name}", flush=True)
    if dist.is_initialized():
        gloo = dist.get_backend() == "gloo"
        # All workers end together (the tutorial's fix for a hang at the end of the trial run
        # under torchrun: "add xm.rendezvous at the end of training"; the xla group's barrier()
        # returns at once, torch_xla/distributed/xla_backend.py).
        if device_name == "xla":
            xm.rendezvous("end of training")
        else:
            dist.barrier()
        dist.destroy_process_group()
        if gloo:
            # Leave without destructors, as trn_train does after a divergence: the DDP model's
            # reducer holds the gloo group's last reference, and the group's destructor joins
            # gloo's worker threads while holding the GIL, which a worker still freeing the
            # barrier's work waits for (a hang at exit in about 1 of 3 two-node runs on CPU,
            # stacks taken with py-spy; the pattern of pytorch/pytorch#56297). Everything is
            # written and flushed by now.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)


def save_checkpoint(state, path, device_name, rank):
    """Write ``state`` to ``path`` from rank 0, atomically (a temporary file, then rename).
    On XLA every worker calls ``xm.save``, which moves the tensors to the CPU and writes on the
    master only (Neuron MLP tutorial: "xm.save() ... saves only for the rank-0 worker")."""
    tmp = path.with_name(f".{path.name}.tmp")
    if device_name == "xla":
        import torch_xla.core.xla_model as xm
        xm.save(state, tmp)
    elif rank == 0:
        torch.save(state, tmp)
    if rank == 0:
        os.replace(tmp, path)


if __name__ == "__main__":
    main()
