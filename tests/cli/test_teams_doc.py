"""docs/teams.md says what the code does: its units table is the catalog, each configuration
error it shows is one the rules give (tests/config/test_rules_teams.py), each job CLI error
and console block is what the CLI prints for the teams stack of its examples, each
orchestrator section is there for the scheduler branches to fill, and the hyperpod-eks one
names what the CLI and task governance use."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.cli.doc_helpers import cli_examples, run_example
from tests.cli.helpers import run
from tests.cli.pool_helpers import never_sent  # noqa: F401 (fixture)
from tests.cli.team_helpers import scheduler, teams_file  # noqa: F401 (fixture)
from tests.config.test_rules_teams import BAD_INPUTS
from tests.conftest import REPO_ROOT
from trn_ultracluster.cli.usage import UsageRecord
from trn_ultracluster.contracts.catalog import CATALOG

DOC = (REPO_ROOT / "docs" / "teams.md").read_text(encoding="utf-8")
HOUR = 3600.0


def blocks(fence: str) -> list[str]:
    """The bodies of the doc's code blocks opened with ``fence`` (e.g. ```` ```text ````)."""
    return re.findall(rf"^{re.escape(fence)}\n(.*?)^```$", DOC, flags=re.MULTILINE | re.DOTALL)


def test_the_units_table_is_the_catalog():
    rows = {cells[0]: cells[1:] for cells in (
        [c.strip() for c in line.strip("|").split("|")]
        for line in DOC.splitlines() if re.match(r"\| trn\d", line))}
    assert sorted(rows) == sorted(CATALOG)
    for name, spec in CATALOG.items():
        assert rows[name] == [str(spec.neuron_cores), str(spec.chips),
                              str(spec.neuron_cores // spec.chips)], name


def test_every_configuration_error_shown_is_a_rules_message():
    shown = [line for line in blocks("```text")[0].splitlines() if line]
    messages = {message for _, _, message in BAD_INPUTS}
    assert len(shown) >= 10
    assert [line for line in shown if line not in messages] == []


@pytest.mark.parametrize("command, shown", cli_examples(DOC), ids=lambda x: str(x)[:40])
def test_every_cli_error_shown_is_what_the_cli_prints(capsys, tmp_path, monkeypatch, never_sent,
                                                       command, shown):
    code, err = run_example(capsys, monkeypatch, tmp_path, command, teams_file(tmp_path, "eks"))
    assert code == 2
    assert shown and err == shown


def _console(command: str) -> tuple[list[str], list[str]]:
    """The ``$ trn-ultracluster COMMAND`` console block: its words and output lines."""
    (block,) = [b for b in blocks("```console") if b.startswith(f"$ trn-ultracluster {command}")]
    first, *out = block.splitlines()
    return shlex.split(first[2:]), out


def test_the_teams_listing_is_what_teams_prints(capsys, tmp_path):
    words, shown = _console("teams")
    code, out, _ = run(capsys, "teams", "--outputs-file", teams_file(tmp_path, "eks"))
    assert code == 0
    assert out.splitlines()[1:] == shown[1:]  # the first line names the outputs file


def test_the_usage_table_is_what_usage_prints(capsys, tmp_path, scheduler):
    scheduler.records = [UsageRecord("research", "trn1", "a", 2, 30 * HOUR),
                         UsageRecord("research", "trn1", "b", 1, 12 * HOUR),
                         UsageRecord("research", "cpu", "c", 1, 6 * HOUR),
                         UsageRecord("platform", "trn1", "d", 1, 40 * HOUR)]
    words, shown = _console("usage")
    code, out, _ = run(capsys, "usage", "--outputs-file", teams_file(tmp_path, "eks"),
                       *words[2:])
    assert code == 0
    assert out.splitlines() == shown


def _section(heading: str) -> str:
    section = DOC[DOC.index(f"\n{heading}\n"):]
    return section[:section.find("\n## ", 1) if "\n## " in section[1:] else None]


def test_the_eks_section_names_the_chart_and_what_the_jobs_carry():
    from trn_ultracluster.contracts.teams import KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL
    from trn_ultracluster.orchestrators.eks.versions import KUEUE_CHART

    section = " ".join(_section("## eks: Kueue").split())
    assert "integrator" not in section
    for name in (KUEUE_CHART.version, KUEUE_CHART.namespace, KUEUE_QUEUE_LABEL,
                 KUEUE_PRIORITY_LABEL, "manageJobsWithoutQueueName", "borrowingLimit: 0",
                 "lendingLimit: 0", "withinClusterQueue: LowerPriority"):
        assert name in section, name


def test_the_slurm_section_names_what_slurm_gets():
    section = " ".join(_section("## hyperpod-slurm: Slurm accounting").split())
    assert "integrator" not in section
    for name in ("AccountingStorageEnforce=associations,limits,qos,safe",
                 "PriorityType=priority/multifactor", "GrpTRES", "teams --apply", "sacct"):
        assert name in section, name


def test_the_hyperpod_eks_section_names_what_the_cli_and_task_governance_use():
    from trn_ultracluster.cli.backends.hyperpod_eks import (
        LABELLED_REPLICATED_JOBS,
        TASK_GOVERNANCE_PATCH_MANAGER,
    )
    from trn_ultracluster.orchestrators.hyperpod_eks import task_governance as tg

    section = " ".join(_section("## hyperpod-eks: HyperPod task governance").split())
    assert "integrator" not in section
    for name in (TASK_GOVERNANCE_PATCH_MANAGER, *(f"`{j}`" for j in LABELLED_REPLICATED_JOBS),
                 tg.team_namespace("<team>"), tg.local_queue("<team>"),
                 tg.cluster_queue("<team>"), tg.local_queue("research"),
                 tg.priority_class_name("training"),
                 "kubectl -n kueue-system get cm kueue-manager-config -o yaml",
                 "kubectl get validatingadmissionpolicy "
                 "hyperpod-task-governance-admission-policy -o yaml",
                 "kubectl get workloads -n hyperpod-ns-<team>"):
        assert name in section, name
