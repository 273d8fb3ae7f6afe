"""The dashboard's teams row (only with ``teams``): each team's quota per pool, and where its
use is read, since no per-team metric reaches CloudWatch in this stack.

What exists, and why the row is text, not graphs (checked 2026-11-27):

- Kueue (``eks``; HyperPod task governance on ``hyperpod-eks`` is built on Kueue) exposes
  per-ClusterQueue Prometheus metrics on its controller's ``/metrics`` endpoint:
  ``kueue_pending_workloads``, ``kueue_admitted_active_workloads``, and, only with the
  controller's ``metrics.enableClusterQueueResources: true``,
  ``kueue_cluster_queue_resource_usage`` / ``kueue_cluster_queue_nominal_quota``, each
  labelled ``cluster_queue`` (Kueue docs, "Prometheus Metrics",
  https://kueue.sigs.k8s.io/docs/reference/metrics/). Prometheus metrics, not CloudWatch's.
- Container Insights can copy six of them into CloudWatch: the CloudWatch agent's Kueue
  scraper keeps ``kueue_pending_workloads``, ``kueue_evicted_workloads_total``,
  ``kueue_admitted_active_workloads``, ``kueue_cluster_queue_resource_usage``,
  ``kueue_cluster_queue_nominal_quota`` and ``kueue_cluster_queue_borrowing_limit``
  (amazon-contributing/opentelemetry-collector-contrib,
  ``receiver/awscontainerinsightreceiver/internal/kueuepromscraper``, ``kueueMetricAllowList``)
  when the ``amazon-cloudwatch-observability`` add-on (``v2.4.0-eksbuild.1`` or later) is
  configured with ``agent.config.logs.metrics_collected.kubernetes.kueue_container_insights:
  true`` (CloudWatch user guide, "Install the CloudWatch agent with the Amazon CloudWatch
  Observability EKS add-on", section "Enable Kueue metrics"; the HyperPod console's task
  governance dashboard reads them). This stack's add-on configuration is its tolerations only
  (``orchestrators/eks/observability.py``; ``tests/constructs/test_team_widgets.py`` checks
  it), so no Kueue metric reaches CloudWatch here.
- Slurm (``hyperpod-slurm``) keeps its accounting in slurmdbd (``sacct``); nothing of it is
  published to CloudWatch.

So the row lists the quotas the configuration gives and says where each scheduler's own
records are read: ``trn-ultracluster usage`` and ``status`` (which read them), ``sacct``, or
the Kueue Workloads.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cw

from trn_ultracluster.config.model import Team, TeamQuota

__all__ = ["RECORDS", "TeamsView", "team_rows"]

_KUEUE_NO_METRIC = ("Kueue's per-ClusterQueue metrics are Prometheus metrics, which the "
                    "CloudWatch Observability add-on copies only with "
                    "`kueue_container_insights`, left off in this stack")
_WORKLOADS = ("its Workloads: `kubectl get workloads -n <namespace>` (the namespace "
              "`trn-ultracluster teams` shows)")
RECORDS = {
    "eks": ("Kueue", "Kueue's", _WORKLOADS, _KUEUE_NO_METRIC),
    "hyperpod-eks": ("HyperPod task governance (Kueue)", "Kueue's", _WORKLOADS,
                     _KUEUE_NO_METRIC),
    "hyperpod-slurm": ("Slurm accounting", "Slurm's", "`sacct --accounts <account>` "
                       "(slurmdbd; the account `trn-ultracluster teams` shows)",
                       "Slurm's accounting stays in slurmdbd"),
}
"""Orchestrator -> (what enforces the quotas, whose records hold each team's jobs, how to
read them directly, why CloudWatch has no per-team metric: module doc). ``sacct -A,
--accounts`` selects jobs charged to the given accounts (sacct(1)); a Kueue Workload is the
namespaced object Kueue keeps per job (Kueue docs, "Workload"; ``kubectl get workloads``)."""


@dataclass(frozen=True)
class TeamsView:
    """What the dashboard shows of the teams.

    Attributes:
        orchestrator: ``eks``, ``hyperpod-eks`` or ``hyperpod-slurm`` (a key of
            :data:`RECORDS`; ``standalone`` refuses teams).
        teams: the resolved teams (``ClusterConfig.team_list``), in configuration order.
    """

    orchestrator: str
    teams: tuple[Team, ...]


def _quota(q: TeamQuota) -> str:
    """``2 nodes (64 NeuronCores)``, ``1 node``, ``16 NeuronCores (8 chips)`` or ``-``."""
    if not q.neuron_cores and not q.nodes:
        return "-"
    if q.nodes is None:
        chips = "" if q.neuron_devices is None else f" ({q.neuron_devices} chips)"
        return f"{q.neuron_cores} NeuronCores{chips}"
    nodes = f"{q.nodes} node{'' if q.nodes == 1 else 's'}"
    return f"{nodes} ({q.neuron_cores} NeuronCores)" if q.neuron_cores else nodes


def _markdown(view: TeamsView) -> str:
    enforcer, records, directly, no_metric = RECORDS[view.orchestrator]
    pools = [q.pool for q in view.teams[0].quotas]
    lines = [f"## Teams (quotas enforced by {enforcer})", "",
             "| team | " + " | ".join(f"{p} quota" for p in pools)
             + " | borrow | lend | priority |",
             "|---" * (len(pools) + 4) + "|"]
    for t in view.teams:
        name = f"{t.name} (default)" if t.default else t.name
        lines.append(f"| {name} | " + " | ".join(_quota(q) for q in t.quotas)
                     + f" | {'yes' if t.borrow else 'no'} | {'yes' if t.lend else 'no'} | "
                     f"{t.priority} |")
    lines += ["", f"Each team's use is in {records} own records: `trn-ultracluster usage` "
              "(node-hours, NeuronCore-hours and cost per team and pool) and "
              "`trn-ultracluster status` (use against quota, jobs waiting) read them; "
              f"directly, {directly}. CloudWatch gets no per-team metric here: {no_metric}."]
    return "\n".join(lines)


def team_rows(view: TeamsView | None, width: int) -> list[list[cw.IWidget]]:
    """The dashboard row of the teams: one text widget (two graphs wide), or nothing
    without teams (the dashboard of a configuration without ``teams`` is unchanged).

    Args:
        view: the teams and their orchestrator; ``None`` or no teams: no row.
        width: the width of one graph (the row is two wide).

    Raises:
        KeyError: an orchestrator without a scheduler (not in :data:`RECORDS`).
    """
    if view is None or not view.teams:
        return []
    return [[cw.TextWidget(width=2 * width, height=min(6 + len(view.teams), 20),
                           markdown=_markdown(view))]]

