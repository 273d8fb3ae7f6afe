#!/usr/bin/env python3
"""Publish a Trainium node's Neuron and EFA metrics, and the training program's tokens/s and
MFU, to CloudWatch. Standard library only: it runs with the node's ``python3``; the calls go
through the node's AWS CLI (``aws cloudwatch put-metric-data``), with the node's credentials.

Modes (``neuron_metrics.sh`` installs them as systemd services):

``nodes``
    Reads neuron-monitor's reports, one JSON document per line, on stdin
    (``neuron-monitor -c <config> | neuron_metrics.py nodes ...``) and the EFA devices' counters
    under ``/sys/class/infiniband``; every ``--interval`` seconds publishes, under the names
    Container Insights uses on EKS, one value per metric for the node (dimensions
    ``ClusterName, InstanceId, NodeName``) and one for the cluster (``ClusterName``):

    - ``node_neuroncore_utilization`` (Percent): the NeuronCores' utilization averaged over
      all the node's NeuronCores (cores no application uses count as 0) and over the reports;
    - ``node_neurondevice_runtime_memory_used_bytes`` (Bytes): device memory the Neuron
      applications use, summed over applications, averaged over the reports;
    - ``node_neuron_execution_errors_total`` (Count): the applications' execution errors of
      every type (generic, numerical, transient, model, runtime, hardware), summed;
    - ``node_neurondevice_hw_ecc_events_total`` (Count): corrected and uncorrected ECC events
      of the devices' DRAM and SRAM, summed. neuron-monitor reports it even when no
      application runs, so it also tells that the node is up;
    - ``node_efa_rx_bytes``, ``node_efa_tx_bytes`` (Bytes/Second): all EFA devices.

    neuron-monitor's JSON (``neuron_runtime_data[].report.neuroncore_counters.neuroncores_in_use
    .<core>.neuroncore_utilization``, ``memory_used.neuron_runtime_used_bytes.neuron_device``,
    ``execution_stats.error_summary``, ``system_data.neuron_hw_counters.neuron_devices[]``
    ``mem_ecc_corrected``/``mem_ecc_uncorrected``/``sram_ecc_corrected``/``sram_ecc_uncorrected``,
    ``neuron_hardware_info.neuron_device_count``/``neuroncore_per_device_count``,
    ``instance_info.instance_id``): Neuron documentation, "Neuron Monitor User Guide"
    (aws-neuron/aws-neuron-sdk ``tools/neuron-sys-tools/neuron-monitor-user-guide.rst``). EFA
    counters: ``/sys/class/infiniband/<device>/ports/<port>/hw_counters/{rx_bytes,tx_bytes}``
    (the EFA driver's port counters, as prometheus/procfs ``sysfs`` reads them for Amazon
    EFA devices). Whether ``neuron_hw_counters`` and ``error_summary`` are counts per
    captured period (summed here) or running totals is not stated in the guide; we read them
    as per-period counts like ``execution_stats`` ("error counts for the captured period").

``training``
    Follows the job logs under ``--jobs-dir`` (the job CLI's ``sbatch --output`` files,
    ``*.out``) from their current end and publishes the training program's ``TokensPerSecond``
    and ``MFU`` from its ``{"event": "train", "tokens_per_s": ..., "mfu": ...}`` lines
    (``training/trn_train/metrics.py``), without dimensions, in the cluster's training
    namespace. Run it on one node that sees every job log (the Slurm controller).

Nothing here stops on a failed call: it is logged on stderr and the next interval tries
again. Exit status 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

CLUSTER_DIMENSION = "ClusterName"
NEURONCORE_UTILIZATION = "node_neuroncore_utilization"
DEVICE_MEMORY_USED = "node_neurondevice_runtime_memory_used_bytes"
EXECUTION_ERRORS = "node_neuron_execution_errors_total"
ECC_EVENTS = "node_neurondevice_hw_ecc_events_total"
EFA_RX_BYTES = "node_efa_rx_bytes"
EFA_TX_BYTES = "node_efa_tx_bytes"
TOKENS_PER_SECOND = "TokensPerSecond"
MFU = "MFU"
TRAIN_FIELDS = {TOKENS_PER_SECOND: "tokens_per_s", MFU: "mfu"}
TRAIN_EVENT = "train"
"""Names as in ``trn_ultracluster/contracts/metrics.py`` (a test checks they agree)."""
ECC_FIELDS = ("mem_ecc_corrected", "mem_ecc_uncorrected", "sram_ecc_corrected",
              "sram_ecc_uncorrected")
MAX_DATUMS = 20
"""MetricData entries per PutMetricData request: the CloudWatch API reference's limit has
been 20 (SDK references of PutMetricDataInput: "no more than 20 metrics per call") and is
higher today; 20 works under either."""


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} [neuron-metrics] {message}",
          file=sys.stderr, flush=True)


def _number(value: Any) -> float | None:
    """``value`` as a finite float, else ``None`` (bools, strings, NaN and None are not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


# --- nodes ---------------------------------------------------------------------------------

class NodeAggregate:
    """The reports of one interval, reduced to the values :meth:`datums` publishes."""

    def __init__(self) -> None:
        self.utilization: list[float] = []
        self.memory: list[float] = []
        self.errors = 0.0
        self.ecc = 0.0
        self.reports = 0
        self.instance_id: str | None = None

    def add(self, report: dict[str, Any]) -> None:
        """Take one neuron-monitor report (the JSON document of one line)."""
        self.reports += 1
        instance_id = (report.get("instance_info") or {}).get("instance_id")
        if isinstance(instance_id, str) and instance_id:
            self.instance_id = instance_id
        hardware = report.get("neuron_hardware_info") or {}
        devices = _number(hardware.get("neuron_device_count"))
        per_device = _number(hardware.get("neuroncore_per_device_count"))
        cores: dict[str, float] = {}
        memory = 0.0
        for runtime in report.get("neuron_runtime_data") or []:
            data = (runtime or {}).get("report") or {}
            in_use = (data.get("neuroncore_counters") or {}).get("neuroncores_in_use") or {}
            for core, counters in in_use.items():
                value = _number((counters or {}).get("neuroncore_utilization"))
                if value is not None:
                    cores[core] = cores.get(core, 0.0) + value
            used = ((data.get("memory_used") or {}).get("neuron_runtime_used_bytes") or {})
            memory += _number(used.get("neuron_device")) or 0.0
            summary = (data.get("execution_stats") or {}).get("error_summary") or {}
            self.errors += sum(_number(v) or 0.0 for v in summary.values())
        total_cores = devices * per_device if devices and per_device else len(cores)
        if total_cores:
            self.utilization.append(min(100.0, sum(cores.values()) / total_cores))
        elif not report.get("neuron_runtime_data"):
            self.utilization.append(0.0)
        self.memory.append(memory)
        hw = (report.get("system_data") or {}).get("neuron_hw_counters") or {}
        for device in hw.get("neuron_devices") or []:
            self.ecc += sum(_number((device or {}).get(f)) or 0.0 for f in ECC_FIELDS)

    def datums(self, cluster: str, node_name: str,
               efa: dict[str, float] | None = None) -> list[dict[str, Any]]:
        """PutMetricData ``MetricData`` entries: each value for the node and for the cluster.
        Empty when no report came in."""
        if not self.reports:
            return []
        values: list[tuple[str, float, str]] = [
            (DEVICE_MEMORY_USED, sum(self.memory) / len(self.memory), "Bytes"),
            (EXECUTION_ERRORS, self.errors, "Count"),
            (ECC_EVENTS, self.ecc, "Count"),
        ]
        if self.utilization:
            values.insert(0, (NEURONCORE_UTILIZATION,
                              sum(self.utilization) / len(self.utilization), "Percent"))
        if efa:
            values += [(EFA_RX_BYTES, efa["rx_bytes"], "Bytes/Second"),
                       (EFA_TX_BYTES, efa["tx_bytes"], "Bytes/Second")]
        node = [{"Name": CLUSTER_DIMENSION, "Value": cluster},
                {"Name": "InstanceId", "Value": self.instance_id or "unknown"},
                {"Name": "NodeName", "Value": node_name}]
        whole = [{"Name": CLUSTER_DIMENSION, "Value": cluster}]
        return [{"MetricName": name, "Dimensions": dims, "Value": round(value, 6), "Unit": unit}
                for name, value, unit in values for dims in (node, whole)]


def efa_counters(sys_root: Path) -> dict[str, float]:
    """Sum of ``rx_bytes`` and ``tx_bytes`` over every EFA device and port under
    ``<sys_root>/class/infiniband``; ``{}`` without EFA devices."""
    totals: dict[str, float] = {}
    for counters in sorted((sys_root / "class" / "infiniband").glob("*/ports/*/hw_counters")):
        for name in ("rx_bytes", "tx_bytes"):
            try:
                value = float(int((counters / name).read_text().strip(), 0))
            except (OSError, ValueError):
                continue
            totals[name] = totals.get(name, 0.0) + value
    return totals if {"rx_bytes", "tx_bytes"} <= totals.keys() else {}


def efa_rates(before: dict[str, float], after: dict[str, float],
              seconds: float) -> dict[str, float] | None:
    """Bytes per second between two :func:`efa_counters` readings; ``None`` when one is
    missing or a counter went back (a device was reset)."""
    if not before or not after or seconds <= 0:
        return None
    rates = {k: (after[k] - before[k]) / seconds for k in ("rx_bytes", "tx_bytes")}
    return rates if min(rates.values()) >= 0 else None


# --- training ------------------------------------------------------------------------------

def train_values(line: str) -> dict[str, float]:
    """``{TokensPerSecond: ..., MFU: ...}`` from one log line of the training program; ``{}``
    for any other line (not JSON, another event, a missing or non-finite value)."""
    text = line.strip()
    if not text.startswith("{"):
        return {}
    try:
        event = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(event, dict) or event.get("event") != TRAIN_EVENT:
        return {}
    return {name: value for name, field in TRAIN_FIELDS.items()
            if (value := _number(event.get(field))) is not None}


class JobLogFollower:
    """New complete lines of the files matching ``pattern`` (a glob relative to
    ``directory``: ``*.out`` for sbatch output files, ``*/node-0.log`` for standalone jobs'
    first nodes), file by file. Files present at the first :meth:`poll` are read from their
    end (their past is not republished after a restart), files that appear later from their
    start."""

    def __init__(self, directory: Path, pattern: str = "*.out") -> None:
        self.directory = directory
        self.pattern = pattern
        self.offsets: dict[tuple[int, int], int] = {}
        self.first = True

    def poll(self) -> Iterator[str]:
        try:
            paths = sorted(self.directory.glob(self.pattern))
        except OSError:
            paths = []
        for path in paths:
            try:
                stat = path.stat()
            except OSError:
                continue
            key = (stat.st_dev, stat.st_ino)
            offset = self.offsets.get(key, stat.st_size if self.first else 0)
            if stat.st_size < offset:  # truncated: start over
                offset = 0
            if stat.st_size > offset:
                with path.open("rb") as f:
                    f.seek(offset)
                    data = f.read(stat.st_size - offset)
                complete = data.rfind(b"\n") + 1
                offset += complete
                yield from data[:complete].decode("utf-8", "replace").splitlines()
            self.offsets[key] = offset
        self.first = False


def training_datums(values: Iterable[dict[str, float]]) -> list[dict[str, Any]]:
    """One ``StatisticValues`` entry per metric over the lines of an interval."""
    series: dict[str, list[float]] = {}
    for line in values:
        for name, value in line.items():
            series.setdefault(name, []).append(value)
    units = {TOKENS_PER_SECOND: "Count/Second", MFU: "None"}
    return [{"MetricName": name, "Unit": units[name], "StatisticValues": {
        "SampleCount": float(len(v)), "Sum": sum(v), "Minimum": min(v), "Maximum": max(v)}}
        for name, v in sorted(series.items())]


# --- publishing ----------------------------------------------------------------------------

Runner = Callable[..., subprocess.CompletedProcess]


def publish(namespace: str, region: str, datums: list[dict[str, Any]],
            run: Runner = subprocess.run) -> bool:
    """``aws cloudwatch put-metric-data`` in requests of at most :data:`MAX_DATUMS`; logs a
    failure and returns ``False`` instead of raising."""
    ok = True
    for start in range(0, len(datums), MAX_DATUMS):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(datums[start:start + MAX_DATUMS], f)
        try:
            result = run(["aws", "cloudwatch", "put-metric-data", "--namespace", namespace,
                          "--region", region, "--metric-data", f"file://{f.name}"],
                         capture_output=True, text=True, timeout=60)
            if result.returncode != 0:
                log(f"put-metric-data failed: {(result.stderr or '').strip()[-500:]}")
                ok = False
        except (OSError, subprocess.TimeoutExpired) as err:
            log(f"put-metric-data failed: {err}")
            ok = False
        finally:
            os.unlink(f.name)
    return ok


def run_nodes(args: argparse.Namespace, lines: Iterable[str],
              clock: Callable[[], float] = time.monotonic, run: Runner = subprocess.run) -> None:
    """The ``nodes`` loop over neuron-monitor's lines; when they end, publishes what came in
    since the last publish and returns."""
    node_name = args.node_name or socket.gethostname()
    sys_root = Path(args.sys_root)
    aggregate, started = NodeAggregate(), clock()
    counters = efa_counters(sys_root)
    for line in lines:
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict):
            aggregate.add(report)
        now = clock()
        if now - started >= args.interval:
            after = efa_counters(sys_root)
            rates = efa_rates(counters, after, now - started)
            publish(args.namespace, args.region,
                    aggregate.datums(args.cluster, node_name, rates), run)
            counters, aggregate, started = after, NodeAggregate(), now
    if aggregate.reports:  # what came in since the last publish
        publish(args.namespace, args.region, aggregate.datums(args.cluster, node_name), run)
    log("neuron-monitor's output ended")


def run_training(args: argparse.Namespace, rounds: int | None = None,
                 sleep: Callable[[float], None] = time.sleep, run: Runner = subprocess.run) -> None:
    """The ``training`` loop: poll the job logs, publish every ``--interval`` seconds
    (``rounds`` bounds it for tests)."""
    follower = JobLogFollower(Path(args.jobs_dir), args.log_glob)
    while rounds is None or rounds > 0:
        datums = training_datums(v for line in follower.poll() if (v := train_values(line)))
        if datums:
            publish(args.namespace, args.region, datums, run)
        if rounds is not None:
            rounds -= 1
            if rounds == 0:
                break
        sleep(args.interval)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    for mode in ("nodes", "training"):
        p = sub.add_parser(mode)
        p.add_argument("--region", required=True)
        p.add_argument("--namespace", required=True)
        p.add_argument("--interval", type=float, default=60.0, help="seconds between publishes")
        if mode == "nodes":
            p.add_argument("--cluster", required=True, help="the ClusterName dimension")
            p.add_argument("--node-name", default=None, help="default: the host name")
            p.add_argument("--sys-root", default="/sys")
        else:
            p.add_argument("--jobs-dir", required=True)
            p.add_argument("--log-glob", default="*.out",
                           help="job logs under --jobs-dir (glob, default *.out)")
    args = parser.parse_args(argv)
    if not args.interval > 0:
        parser.error(f"--interval must be positive, got {args.interval}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log(f"{args.mode}: publishing to {args.namespace} in {args.region} every {args.interval:g}s")
    if args.mode == "nodes":
        run_nodes(args, sys.stdin)
        return 1  # neuron-monitor stopped: let systemd restart the pipeline
    run_training(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
