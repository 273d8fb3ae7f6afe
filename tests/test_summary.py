"""``python -m trn_ultracluster.summary``: the line on FSx for Lustre over EFA, read from the
template (the rest of the summary: tests/test_app.py, through the CDK CLI)."""

from __future__ import annotations

import copy
import json

from trn_ultracluster.contracts.outputs import fsx_efa_description
from trn_ultracluster.summary import summarize


def efa_line(text: str) -> str:
    (line,) = [row for row in text.splitlines() if row.startswith("FSx over EFA:")]
    return line


def test_the_default_file_system_is_not_efa_enabled(default):
    assert efa_line(summarize(default.outdir)) == (
        "FSx over EFA:   off (auto): the file system's throughput is not above 10,000 MB/s, "
        "from which AWS recommends EFA (docs/lustre-over-efa.md)")


def test_an_efa_enabled_file_system_says_what_a_node_on_tcp_does(default, tmp_path):
    template = copy.deepcopy(default.template)
    (fsx,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::FSx::FileSystem"]
    fsx["Properties"]["LustreConfiguration"]["EfaEnabled"] = True
    template["Outputs"]["FsxEfa"] = {"Value": "required",
                                     "Description": fsx_efa_description("on: fsx.efa is true")}
    (tmp_path / "manifest.json").write_text(json.dumps({"artifacts": {"TrnUltraCluster": {
        "type": "aws:cloudformation:stack",
        "properties": {"templateFile": "TrnUltraCluster.template.json"}}}}))
    (tmp_path / "TrnUltraCluster.template.json").write_text(json.dumps(template))
    assert efa_line(summarize(tmp_path)) == (
        "FSx over EFA:   on: fsx.efa is true; a node that cannot set up LNet over EFA at boot "
        "powers off before it joins (its node group replaces it); one found on TCP after it "
        "joined logs an ERROR and reports 0 in node_fsx_lustre_over_efa (a joined Kubernetes "
        "node is not failed) (docs/lustre-over-efa.md)")


def test_the_summary_lists_each_pool_with_its_cost(default, tmp_path):
    """Three pools in the Pools output: one line each (type, node counts, EFA interfaces from
    the catalog, Neuron stack, and the hourly cost of its billed nodes: only the default's
    node group, which is the trn1.32xlarge pool's by its type)."""
    from tests.estimate import pools_output

    template = copy.deepcopy(default.template)
    template["Outputs"]["Pools"] = pools_output({})
    (tmp_path / "manifest.json").write_text(json.dumps({"artifacts": {"TrnUltraCluster": {
        "type": "aws:cloudformation:stack",
        "properties": {"templateFile": "TrnUltraCluster.template.json"}}}}))
    (tmp_path / "TrnUltraCluster.template.json").write_text(json.dumps(template))
    lines = summarize(tmp_path).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("pools:"))
    assert lines[start:start + 3] == [
        "pools:          trn1: trn1.32xlarge, nodes 0 / 1 / 4, 8 EFA interfaces, $0.00/h idle, "
        "$21.50/h running",
        "                trn2: trn2.48xlarge, nodes 0 / 0 / 2, 16 EFA interfaces",
        "                cpu: m7i.8xlarge, nodes 0 / 1 / 3, no EFA (CPU)"]


def test_the_default_summary_lists_its_one_pool(default):
    (line,) = [row for row in summarize(default.outdir).splitlines()
               if row.startswith("pools:")]
    assert line == ("pools:          trainium: trn1.32xlarge, nodes 0 / 1 / 1, 8 EFA interfaces, "
                    "Neuron stack xla")
