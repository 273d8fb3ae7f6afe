"""Data-parallel training of a small MLP with plain PyTorch, written the way Neuron's docs teach.

Run it with torchrun, one process per NeuronCore (or CPU slot):

    torchrun --nproc-per-node 2 train.py --epochs 3

It picks its device by what is installed (``--device`` overrides):

- ``xla``: Trn1 (torch-neuronx over PyTorch/XLA). As in Neuron's "Multi-Layer Perceptron
  Training Tutorial", section "Multi-worker data-parallel MLP training using torchrun"
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/tutorials/training/mlp.html;
  script aws-neuron-samples torch-neuronx/training/mnist_mlp/train_torchrun.py): import
  ``torch_xla.distributed.xla_backend``, ``torch.distributed.init_process_group('xla')``, wrap
  the loader in ``MpDeviceLoader`` (it marks each step, so no ``xm.mark_step()`` /
  ``torch_xla.sync()`` is needed), and ``xm.optimizer_step(optimizer)`` all-reduces the
  gradients and steps. Same seed on every worker, learning rate scaled by the number of
  workers, a DistributedSampler: the tutorial's "best-practice changes".
- ``neuron``: Trn2/Trn3 with TorchNeuron, PyTorch's native ``neuron`` device. As in Neuron's
  "How to use torch.distributed on Neuron"
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html):
  ``import torch_neuronx`` registers the device and the process-group backend,
  ``dist.init_process_group(backend="neuron", init_method="env://")``, tensors on
  ``torch.device("neuron")``, and DDP as on any PyTorch device.
- ``cpu``: the ``gloo`` backend and DDP, for a laptop or a CPU cluster. Neuron's own
  distributed tutorial runs the same script on CPU with Gloo first, then on Neuron
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/tutorials/tutorial-torch-distributed.html).

Rank 0 writes ``result.json`` (losses, world size, device) into ``--output-dir``, default
``$TRN_OUTPUT_DIR`` when the job environment sets it, else ``./output``.
"""

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from model import MLP, synthetic_dataset


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32, help="per worker")
    p.add_argument("--lr", type=float, default=0.2, help="per worker; scaled by the world size")
    p.add_argument("--samples", type=int, default=2048, help="size of the synthetic data set")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("auto", "xla", "neuron", "cpu"), default="auto")
    p.add_argument("--output-dir", default=os.environ.get("TRN_OUTPUT_DIR", "output"))
    args = p.parse_args(argv)
    for name in ("epochs", "batch_size", "samples"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    return args


def pick_device(requested):
    """``auto``: xla when torch-xla is installed (Trn1 images), neuron when TorchNeuron is
    (Trn2/Trn3 images), else cpu."""
    if requested != "auto":
        return requested
    if importlib.util.find_spec("torch_xla"):
        return "xla"
    if importlib.util.find_spec("torch_neuronx"):
        return "neuron"
    return "cpu"


def start(kind):
    """Join the process group (under torchrun) and return the device to train on."""
    under_torchrun = "RANK" in os.environ
    if kind == "xla":
        import torch_xla
        import torch_xla.distributed.xla_backend  # noqa: F401  registers the 'xla' backend
        if under_torchrun:
            dist.init_process_group("xla")
        return torch_xla.device()
    if kind == "neuron":
        import torch_neuronx  # noqa: F401  registers the 'neuron' device and backend
        if under_torchrun:
            dist.init_process_group(backend="neuron", init_method="env://")
        return torch.device("neuron")
    if under_torchrun:
        dist.init_process_group(backend="gloo")
    return torch.device("cpu")


def world():
    """(rank, world size); (0, 1) outside torchrun."""
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def mean_over_workers(value, device):
    """The mean of a float over all workers."""
    t = torch.tensor([value], device=device)
    if dist.is_initialized():
        dist.all_reduce(t)
        t /= dist.get_world_size()
    return t.item()


def replica_spread(model, device):
    """Largest difference between workers of the sum of all weights: 0 when every replica
    holds the same model, as data parallel training must keep them."""
    total = float(sum(p.detach().cpu().double().sum() for p in model.parameters()))
    both = torch.tensor([total, -total], device=device)
    if dist.is_initialized():
        dist.all_reduce(both, op=dist.ReduceOp.MAX)
    return (both[0] + both[1]).item()


def write_json_atomically(path, data):
    """Readers see the old file or the whole new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv=None):
    args = parse_args(argv)
    kind = pick_device(args.device)
    device = start(kind)
    rank, world_size = world()
    torch.manual_seed(args.seed)  # the same initial weights on every worker

    model = MLP().to(device)
    dataset = synthetic_dataset(args.samples, seed=args.seed)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True,
                                 seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    if kind == "xla":
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.parallel_loader as pl
        batches = pl.MpDeviceLoader(loader, device)
        step = xm.optimizer_step  # all-reduces the gradients, then optimizer.step()
    else:
        batches = loader
        if dist.is_initialized():
            model = DistributedDataParallel(model)
        def step(opt):
            opt.step()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * world_size)
    loss_fn = torch.nn.NLLLoss()

    if rank == 0:
        print(f"training on {world_size} x {kind} ({device}), {len(loader)} steps per epoch",
              flush=True)
    epoch_losses = []
    start_time = time.time()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = torch.zeros((), device=device)
        for x, y in batches:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            step(optimizer)
            total += loss.detach()
        epoch_losses.append(mean_over_workers(total.item() / len(loader), device))
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: loss {epoch_losses[-1]:.4f}", flush=True)

    spread = replica_spread(model, device)
    if rank == 0:
        result = {
            "example": "pytorch-distributed",
            "device": kind,
            "world_size": world_size,
            "epochs": args.epochs,
            "steps_per_epoch": len(loader),
            "epoch_losses": epoch_losses,
            "final_loss": epoch_losses[-1],
            "replica_spread": spread,
            "seconds": round(time.time() - start_time, 3),
            "code_sha256": os.environ.get("TRN_CODE_SHA256"),
        }
        out = Path(args.output_dir) / "result.json"
        write_json_atomically(out, result)
        print(f"final loss {result['final_loss']:.4f}; wrote {out}", flush=True)
    if dist.is_initialized():
        gloo = dist.get_backend() == "gloo"
        # Leave together: a worker that tears its process group down while rank 0 still
        # writes can hang (seen with gloo). The xla group's barrier() returns at once
        # (torch_xla/distributed/xla_backend.py, ProcessGroupXla.barrier), so the xla path
        # meets at xm.rendezvous.
        if kind == "xla":
            import torch_xla.core.xla_model as xm
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


if __name__ == "__main__":
    main()
