"""Train a tiny Hugging Face Transformers causal language model with data parallelism.

The model is built from a configuration (``AutoModelForCausalLM.from_config``), so nothing is
downloaded from the Hugging Face Hub; the data are synthetic (``data.py``). Run it with
torchrun, one process per NeuronCore (or CPU slot):

    torchrun --nproc-per-node 2 train.py --steps 40

Devices (``--device auto`` picks by what is installed):

- ``xla`` (Trn1, torch-neuronx over PyTorch/XLA): ``import torch_xla.distributed.xla_backend``,
  ``init_process_group('xla')``, the model wrapped in ``DistributedDataParallel`` with
  ``gradient_as_bucket_view=True``, and the lazy graph cut after each optimizer step, as in
  Neuron's "Distributed Data Parallel Training Tutorial", section "Using torchrun"
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/tutorials/training/distributed_data_parallel.html;
  it calls ``xm.mark_step()``, whose PyTorch/XLA 2.x name is ``torch_xla.sync()``:
  https://docs.pytorch.org/xla/release/r2.8/learn/api-guide.html).
- ``neuron`` (Trn2/Trn3, TorchNeuron): ``import torch_neuronx``, process group ``neuron``,
  device ``torch.device("neuron")`` (Neuron, "How to use torch.distributed on Neuron",
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html).
- ``cpu``: process group ``gloo``.

Rank 0 saves the model with ``save_pretrained`` into ``<output dir>/model`` and then writes
``<output dir>/result.json``; the output directory is ``--output-dir``, by default
``$TRN_OUTPUT_DIR`` when the job environment sets it, else ``./output``.

``requirements.txt`` adds ``humanize``, used only to print the parameter count in words; the
script runs the same without it and records in result.json which version it found.
"""

import argparse
import importlib.metadata
import importlib.util
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from transformers import AutoModelForCausalLM, LlamaConfig

from data import counting_batch

try:
    import humanize  # requirements.txt; optional
except ImportError:
    humanize = None

BACKENDS = {"xla": "xla", "neuron": "neuron", "cpu": "gloo"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=8, help="sequences per worker and step")
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--hidden-size", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("auto", *BACKENDS), default="auto")
    p.add_argument("--output-dir", default=os.environ.get("TRN_OUTPUT_DIR", "output"))
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "hidden_size", "layers", "vocab_size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.seq_len < 3:
        p.error(f"--seq-len must be at least 3 (two tokens set the stride), got {args.seq_len}")
    return args


def setup(device_name):
    """Import the device's PyTorch extension, join the process group when torchrun started
    this process, and return ``(device name, torch device)``."""
    if device_name == "auto":
        device_name = ("xla" if importlib.util.find_spec("torch_xla")
                       else "neuron" if importlib.util.find_spec("torch_neuronx") else "cpu")
    if device_name == "xla":
        import torch_xla
        import torch_xla.distributed.xla_backend  # noqa: F401
        device = torch_xla.device()
    elif device_name == "neuron":
        import torch_neuronx  # noqa: F401
        device = torch.device("neuron")
    else:
        device = torch.device("cpu")
    if "RANK" in os.environ:
        dist.init_process_group(BACKENDS[device_name])
    return device_name, device


def tiny_llama(args):
    """A Llama-architecture model of a few hundred thousand parameters."""
    config = LlamaConfig(
        vocab_size=args.vocab_size, hidden_size=args.hidden_size,
        intermediate_size=2 * args.hidden_size, num_hidden_layers=args.layers,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=args.seq_len,
        use_cache=False)
    return AutoModelForCausalLM.from_config(config)


def package_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def main(argv=None):
    args = parse_args(argv)
    device_name, device = setup(args.device)
    rank = dist.get_rank() if dist.is_initialized() else 0
    world_size = dist.get_world_size() if dist.is_initialized() else 1

    torch.manual_seed(args.seed)  # identical initial weights on every worker
    model = tiny_llama(args).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    if dist.is_initialized():
        model = DistributedDataParallel(model, gradient_as_bucket_view=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(args.seed * 1000 + rank)  # each worker its data
    if rank == 0:
        size = humanize.intword(n_params) if humanize else f"{n_params:,}"
        print(f"{size} parameters, {world_size} x {device_name}", flush=True)

    losses = []
    for step in range(1, args.steps + 1):
        ids = counting_batch(args.batch_size, args.seq_len, args.vocab_size, generator).to(device)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if device_name == "xla":
            torch_xla_sync()
        losses.append(loss.detach())
    # The mean loss of the first and the last step over all workers.
    ends = torch.stack([losses[0], losses[-1]]).float()
    if dist.is_initialized():
        dist.all_reduce(ends)
        ends /= world_size
    first_loss, final_loss = ends.tolist()

    if rank == 0:
        out = Path(args.output_dir)
        plain = model.module if isinstance(model, DistributedDataParallel) else model
        plain.to("cpu").save_pretrained(out / "model")
        result = {
            "example": "huggingface",
            "device": device_name,
            "world_size": world_size,
            "steps": args.steps,
            "first_loss": first_loss,
            "final_loss": final_loss,
            "parameters": n_params,
            "transformers": package_version("transformers"),
            "humanize": package_version("humanize") if humanize else None,
        }
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / f".result.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(result, indent=2) + "\n")
        os.replace(tmp, out / "result.json")  # atomic: readers never see half a file
        print(f"loss {first_loss:.3f} -> {final_loss:.3f}; saved {out / 'model'}", flush=True)
    if dist.is_initialized():
        gloo = dist.get_backend() == "gloo"
        # Wait for rank 0's files before leaving: a worker that tears its process group down
        # while another still works can hang both (seen with gloo).
        if device_name == "xla":
            import torch_xla.core.xla_model as xm
            # The xla group's barrier() returns at once (torch_xla/distributed/
            # xla_backend.py, ProcessGroupXla.barrier); xm.rendezvous waits for all.
            xm.rendezvous("done")
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


def torch_xla_sync():
    """Run the step's lazily recorded graph on the NeuronCore."""
    import torch_xla
    torch_xla.sync()


if __name__ == "__main__":
    main()
