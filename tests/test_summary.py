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
        "from which AWS recommends EFA (README \"FSx for Lustre over EFA\")")


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
        "node is not failed) (README \"FSx for Lustre over EFA\")")
