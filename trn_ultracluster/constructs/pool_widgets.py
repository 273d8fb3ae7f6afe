"""The dashboard's per-pool row: what of the node metrics tells node pools apart, and a note of
what does not.

Which node metrics carry a dimension that tells pools apart (none names the pool; the instance
type does, for pools of different types):

- Container Insights (``eks``, ``hyperpod-eks``): the per-node sets of the Neuron and EFA node
  metrics are ``ClusterName, InstanceId, NodeName`` (what the per-node graphs read), but
  ``node_neuroncore_utilization`` is also published per NeuronCore with ``ClusterName,
  InstanceType, InstanceId, NodeName, NeuronDevice, NeuronCore``, and ``node_efa_rx_bytes`` /
  ``node_efa_tx_bytes`` per interface with ``ClusterName, NodeName, InstanceId, InstanceType,
  NetworkInterfaceId`` (aws/amazon-cloudwatch-agent,
  ``translator/translate/otel/exporter/awsemf/kubernetes.go``, ``getAwsNeuronMetricDeclarations``
  and ``getEFAMetricDeclarations``). So per instance type: the average NeuronCore utilization
  (``AVG`` over the type's per-core series) and the EFA bytes received and sent (``SUM`` over
  its per-interface series). Device memory, execution errors, ECC events and the node count
  have no set with ``InstanceType`` and stay cluster-wide. Two pools of one type are one line.
- The stack's node exporter (``hyperpod-slurm``, ``standalone``): every value has
  ``ClusterName, InstanceId, NodeName`` or ``ClusterName`` only
  (:data:`~trn_ultracluster.contracts.metrics.NODE_DIMENSIONS`), so nothing is per pool; the
  row is a note saying so (publishing an ``InstanceType`` set too would be a change of the
  node scripts, ``node_metrics/scripts/neuron_metrics.py``, which every node runs).
- CPU pools publish no Neuron or EFA metrics (no NeuronCores, no EFA): none of these graphs
  has them.

A SEARCH returns one series per dimension combination; metric math's ``AVG`` / ``SUM`` of
such an array is one series, each point the average / sum across them at that time (CloudWatch
user guide, "Using math expressions with CloudWatch metrics"; the dashboard's node count already
uses ``SUM(SEARCH(...))``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw

from trn_ultracluster.contracts.metrics import CONTAINER_INSIGHTS_NAMESPACE, NodeMetric

__all__ = ["EFA_TYPE_DIMENSIONS", "NEURONCORE_TYPE_DIMENSIONS", "PoolView", "pool_rows"]

NEURONCORE_TYPE_DIMENSIONS = ("ClusterName", "InstanceType", "InstanceId", "NodeName",
                              "NeuronDevice", "NeuronCore")
"""Container Insights' per-NeuronCore set of ``node_neuroncore_utilization`` (module doc)."""
EFA_TYPE_DIMENSIONS = ("ClusterName", "NodeName", "InstanceId", "InstanceType",
                       "NetworkInterfaceId")
"""Container Insights' per-interface set of ``node_efa_rx_bytes`` / ``node_efa_tx_bytes``."""


@dataclass(frozen=True)
class PoolView:
    """What the dashboard needs of one node pool: its name, instance type and whether it is a
    Trainium pool (``False``: a CPU pool, which publishes no Neuron or EFA metrics)."""

    name: str
    instance_type: str
    accelerated: bool


def _by_type(pools: Sequence[PoolView]) -> dict[str, list[str]]:
    """Trainium instance type -> its pools' names, in pool order."""
    types: dict[str, list[str]] = {}
    for pool in pools:
        if pool.accelerated:
            types.setdefault(pool.instance_type, []).append(pool.name)
    return types


def _per_type(namespace: str, dimensions: tuple[str, ...], cluster: dict[str, str],
              metric: str, function: str, instance_type: str, names: list[str],
              period: Duration) -> cw.MathExpression:
    schema = ",".join((namespace, *dimensions))
    filters = " ".join(f'{k}="{v}"' for k, v in cluster.items())
    search = (f"SEARCH('{{{schema}}} MetricName=\"{metric}\" {filters} "
              f"InstanceType=\"{instance_type}\"', 'Average', {int(period.to_seconds())})")
    label = f"{instance_type} (pool{'s' if len(names) > 1 else ''} {', '.join(names)})"
    return cw.MathExpression(expression=f"{function}({search})", using_metrics={},
                             label=label, period=period)


def pool_rows(pools: Sequence[PoolView], namespace: str | None, cluster: dict[str, str],
              width: int, period: Duration) -> list[list[cw.IWidget]]:
    """The dashboard rows that tell ``pools`` apart: nothing for one pool (the cluster-wide
    graphs are the pool's); with several, per instance type on Container Insights (module
    doc), else a note that the node metrics are not per pool.

    Args:
        pools: the node pools, main first.
        namespace: the node metrics' namespace (``None``: no node metrics).
        cluster: the cluster dimensions (``{"ClusterName": ...}``; values may be tokens).
        width: the width of one graph (two per row).
        period: the graphs' period.
    """
    if len(pools) < 2 or namespace is None:
        return []
    types = _by_type(pools)
    cpu = [p.name for p in pools if not p.accelerated]
    cpu_note = (f" CPU pool{'s' if len(cpu) > 1 else ''} {', '.join(cpu)}: no Neuron or EFA "
                "metrics." if cpu else "")
    if namespace != CONTAINER_INSIGHTS_NAMESPACE:
        return [[cw.TextWidget(
            width=2 * width, height=2,
            markdown=(f"Pools: {', '.join(f'{p.name} ({p.instance_type})' for p in pools)}. "
                      "This orchestrator's node metrics carry no pool or instance type "
                      "dimension (ClusterName, InstanceId, NodeName), so the per-node graphs "
                      f"above show every pool's nodes together.{cpu_note}"))]]

    def graph(title: str, metric: str, function: str, dimensions: tuple[str, ...],
              percent: bool = False, wide: bool = False) -> cw.GraphWidget:
        return cw.GraphWidget(
            title=title, width=2 * width if wide else width,
            left=[_per_type(namespace, dimensions, cluster, metric, function, t, names, period)
                  for t, names in types.items()],
            left_y_axis=cw.YAxisProps(min=0, max=100) if percent else cw.YAxisProps(min=0))

    note = cw.TextWidget(
        width=2 * width, height=2,
        markdown=("Per instance type (Container Insights publishes these per NeuronCore and per "
                  "EFA interface with InstanceType); pools of one type share a line. Device "
                  "memory, errors, ECC events and the node count have no InstanceType "
                  f"dimension: they stay cluster-wide above.{cpu_note}"))
    return [
        [note],
        [graph("NeuronCore utilization per instance type (%)",
               NodeMetric.NEURONCORE_UTILIZATION, "AVG", NEURONCORE_TYPE_DIMENSIONS, True,
               wide=True)],
        [graph("EFA received per instance type (bytes/s)", NodeMetric.EFA_RX_BYTES, "SUM",
               EFA_TYPE_DIMENSIONS),
         graph("EFA sent per instance type (bytes/s)", NodeMetric.EFA_TX_BYTES, "SUM",
               EFA_TYPE_DIMENSIONS)],
    ]
