"""The smoke test: all-reduce over every NeuronCore of 2 nodes, bus bandwidth vs EFA.

The job runs :data:`ALLREDUCE_SCRIPT` under torchrun (one process per logical NeuronCore,
like training). Rank 0 prints one JSON line per message size:
``{"event": "allreduce", "bytes": B, "ranks": n, "time_s": t, "correct": bool}``.

Bandwidth, as NCCL-tests defines it (NVIDIA/nccl-tests ``doc/PERFORMANCE.md``,
https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):

- algorithm bandwidth ``algbw = bytes / time``;
- bus bandwidth of all-reduce ``busbw = algbw * 2 * (n - 1) / n`` for ``n`` ranks: the
  bytes each rank must move over its slowest link, comparable to the hardware's peak.

Across 2 nodes the slowest link is the network between them, so the report compares the
largest message's bus bandwidth with the instance's network bandwidth from the catalog
(``network_bandwidth_gbps``, Gbit/s). Without EFA (TCP fallback) the ratio is far lower;
:data:`MIN_EFA_RATIO` is this project's threshold for "EFA works", not an AWS figure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from trn_ultracluster.cli.launch import Launch
from trn_ultracluster.contracts.catalog import InstanceSpec

__all__ = [
    "ALLREDUCE_SCRIPT",
    "NATIVE_ALLREDUCE_SCRIPT",
    "SCRIPTS",
    "AllReduceResult",
    "SmokeReport",
    "bus_bandwidth_gbps",
    "network_ratio",
    "parse_results",
    "smoke_launch",
    "smoke_report",
]

SMOKE_NODES = 2
MIN_EFA_RATIO = 0.25
"""Bus bandwidth / network bandwidth below which the smoke test fails (project heuristic)."""
MESSAGE_BYTES = (1 << 20, 16 << 20, 128 << 20, 512 << 20)
"""All-reduce sizes: 1 MiB to 512 MiB of float32 (the largest is the one compared)."""
SCRIPT_PATH = "/tmp/trn_ultracluster_allreduce.py"

ALLREDUCE_SCRIPT = '''\
"""All-reduce benchmark over every NeuronCore (torch-xla; written by trn-ultracluster)."""
import json
import sys
import time

import torch
import torch.distributed as dist
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" backend)

dist.init_process_group("xla", init_method="xla://")
rank, world = dist.get_rank(), dist.get_world_size()
device = xm.xla_device()
sizes = [int(s) for s in sys.argv[1].split(",")]
warmup, iters = int(sys.argv[2]), int(sys.argv[3])
for size in sizes:
    t = torch.ones(size // 4, dtype=torch.float32, device=device)
    for _ in range(warmup):
        t = xm.all_reduce(xm.REDUCE_SUM, t, scale=1.0 / world)
    xm.mark_step()
    xm.wait_device_ops()
    start = time.perf_counter()
    for _ in range(iters):
        t = xm.all_reduce(xm.REDUCE_SUM, t, scale=1.0 / world)
        xm.mark_step()
    xm.wait_device_ops()
    elapsed = (time.perf_counter() - start) / iters
    correct = bool(torch.allclose(t.cpu()[:1024], torch.ones(1024)))
    if rank == 0:
        print(json.dumps({"event": "allreduce", "bytes": size, "ranks": world,
                          "time_s": elapsed, "correct": correct}), flush=True)
dist.destroy_process_group()
'''
"""Benchmark program: ``python script <sizes,comma,separated> <warmup> <iters>``.
torch-xla API: ``xm.all_reduce(reduce_type, inputs, scale=...)``, ``xm.mark_step``,
``xm.wait_device_ops`` and the ``xla://`` init method (PyTorch/XLA docs, "Distributed").
Not run by the tests (they have no Trainium, and XLA:CPU collectives across processes
deadlock)."""
NATIVE_ALLREDUCE_SCRIPT = '''\
"""All-reduce benchmark over every NeuronCore (TorchNeuron; written by trn-ultracluster)."""
import json
import sys
import time

import torch
import torch.distributed as dist
import torch_neuronx  # noqa: F401  (registers the "neuron" device and process group)

dist.init_process_group("neuron")
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("neuron")
sizes = [int(s) for s in sys.argv[1].split(",")]
warmup, iters = int(sys.argv[2]), int(sys.argv[3])
for size in sizes:
    t = torch.ones(size // 4, dtype=torch.float32, device=device)
    for _ in range(warmup):
        dist.all_reduce(t)
        t /= world
    t[:1].cpu()  # a copy to the host waits for the queued collectives
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
        t /= world
    t[:1].cpu()
    elapsed = (time.perf_counter() - start) / iters
    correct = bool(torch.allclose(t[:1024].cpu(), torch.ones(1024)))
    if rank == 0:
        print(json.dumps({"event": "allreduce", "bytes": size, "ranks": world,
                          "time_s": elapsed, "correct": correct}), flush=True)
dist.destroy_process_group()
'''
"""The same benchmark on the native stack: ``torch.distributed`` with the ``neuron`` process
group on the ``neuron`` device, as Neuron's guide writes it ("How to use torch.distributed on
Neuron", torch/guides/torch-distributed.html: ``import torch_neuronx``,
``init_process_group(backend="neuron")``, ``dist.all_reduce`` on ``torch.device("neuron")``).
That a host copy waits for the collectives queued before it is standard eager PyTorch device
semantics, not verified on Neuron. Not run by the tests (no Trainium)."""
SCRIPTS = {"xla": ALLREDUCE_SCRIPT, "native": NATIVE_ALLREDUCE_SCRIPT}
"""Neuron training stack -> its all-reduce benchmark (the stack's image has only that stack's
libraries)."""


def smoke_launch(stack: str, warmup: int = 5, iters: int = 20,
                 script_path: str = SCRIPT_PATH) -> Launch:
    """The smoke job's program: write the all-reduce benchmark of the Neuron training
    ``stack`` (:data:`SCRIPTS`) to ``script_path`` and run it.

    ``script_path`` must be visible to every process of a node (EKS: the pod's /tmp) or of
    the job (Slurm: a path on FSx, since the batch host writes it once).
    """
    setup = f"cat > {script_path} <<'TRN_ALLREDUCE_EOF'\n{SCRIPTS[stack]}TRN_ALLREDUCE_EOF"
    sizes = ",".join(str(b) for b in MESSAGE_BYTES)
    return Launch((script_path, sizes, str(warmup), str(iters)), None, setup)


def bus_bandwidth_gbps(size_bytes: int, time_s: float, ranks: int) -> float:
    """All-reduce bus bandwidth in GB/s (10**9 bytes/s): ``2 (n-1)/n * bytes / time``.

    Raises:
        ValueError: ``time_s`` <= 0 or ``ranks`` < 1.
    """
    if time_s <= 0 or ranks < 1:
        raise ValueError(f"need time_s > 0 and ranks >= 1, got {time_s}, {ranks}")
    return 2 * (ranks - 1) / ranks * size_bytes / time_s / 1e9


@dataclass(frozen=True)
class AllReduceResult:
    """One message size: bytes, ranks, seconds per all-reduce, and whether values were right."""

    bytes: int
    ranks: int
    time_s: float
    correct: bool

    @property
    def algbw_gbytes(self) -> float:
        """Algorithm bandwidth, GB/s."""
        return self.bytes / self.time_s / 1e9

    @property
    def busbw_gbytes(self) -> float:
        """Bus bandwidth, GB/s."""
        return bus_bandwidth_gbps(self.bytes, self.time_s, self.ranks)


def parse_results(log: str | Iterable[str]) -> list[AllReduceResult]:
    """The ``allreduce`` JSON lines of a job log (other lines are ignored).

    Raises:
        ValueError: an ``allreduce`` line lacks a field or has a non-positive time.
    """
    lines = log.splitlines() if isinstance(log, str) else log
    results = []
    for line in lines:
        start = line.find("{")
        if start < 0 or '"allreduce"' not in line:
            continue
        try:
            record = json.loads(line[start:])
        except json.JSONDecodeError:
            continue
        if record.get("event") != "allreduce":
            continue
        try:
            result = AllReduceResult(int(record["bytes"]), int(record["ranks"]),
                                     float(record["time_s"]), bool(record["correct"]))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"malformed allreduce record {record}: {err}") from None
        if result.time_s <= 0:
            raise ValueError(f"allreduce record with time_s <= 0: {record}")
        results.append(result)
    return results


@dataclass(frozen=True)
class SmokeReport:
    """Verdict of a smoke test."""

    results: tuple[AllReduceResult, ...]
    expected_ranks: int
    network_gbps: float
    ok: bool
    reasons: tuple[str, ...]
    min_ratio: float = MIN_EFA_RATIO
    """The pass threshold the report was judged with (``smoke-test --min-ratio``)."""

    @property
    def ratio(self) -> float:
        """Largest message's bus bandwidth (Gbit/s) / network bandwidth (Gbit/s)."""
        return network_ratio(self.results, self.network_gbps)

    def table(self) -> str:
        """A table like NCCL-tests' output plus the verdict."""
        rows = [f"{'size (B)':>12} {'ranks':>6} {'time (us)':>11} {'algbw (GB/s)':>13} "
                f"{'busbw (GB/s)':>13} {'ok':>4}"]
        for r in self.results:
            rows.append(f"{r.bytes:>12} {r.ranks:>6} {r.time_s * 1e6:>11.1f} "
                        f"{r.algbw_gbytes:>13.2f} {r.busbw_gbytes:>13.2f} "
                        f"{'yes' if r.correct else 'NO':>4}")
        if self.results:
            rows.append(f"bus bandwidth {self.results[-1].busbw_gbytes * 8:.1f} Gbit/s = "
                        f"{self.ratio:.0%} of the instance's {self.network_gbps:.0f} Gbit/s "
                        f"(pass at >= {self.min_ratio:.0%})")
        rows.append("PASS: EFA carries the collectives" if self.ok
                    else "FAIL: " + "; ".join(self.reasons))
        return "\n".join(rows)


def network_ratio(results: Sequence[AllReduceResult], network_gbps: float) -> float:
    """The last (largest) result's bus bandwidth in Gbit/s over ``network_gbps``; 0 without
    results or bandwidth."""
    if not results or not network_gbps:
        return 0.0
    return results[-1].busbw_gbytes * 8 / network_gbps


def smoke_report(results: list[AllReduceResult], spec: InstanceSpec, nodes: int = SMOKE_NODES,
                 min_ratio: float = MIN_EFA_RATIO) -> SmokeReport:
    """Judge the results: every size correct, all ranks took part, bandwidth >= min_ratio."""
    expected = nodes * spec.logical_neuron_cores
    reasons = []
    if not results:
        reasons.append("the job printed no all-reduce results (read `logs`)")
    if any(not r.correct for r in results):
        reasons.append("all-reduce returned wrong values")
    if any(r.ranks != expected for r in results):
        reasons.append(f"expected {expected} ranks ({nodes} x {spec.logical_neuron_cores} "
                       f"NeuronCores), got {sorted({r.ranks for r in results})}")
    ratio = network_ratio(results, spec.network_bandwidth_gbps)
    if results and ratio < min_ratio:
        reasons.append(f"bus bandwidth is {ratio:.0%} of {spec.network_bandwidth_gbps:.0f} "
                       "Gbit/s: EFA is probably not used (check FI_PROVIDER=efa, the EFA device "
                       "plugin / interfaces and the security group)")
    return SmokeReport(tuple(results), expected, spec.network_bandwidth_gbps, not reasons,
                       tuple(reasons), min_ratio)
