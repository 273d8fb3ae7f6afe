"""What the orchestrators' nodes share (orchestrators/nodes.py, node_scripts/): lcs.py's
``get`` and ``log-events``, which the standalone setup uses (the HyperPod lifecycle tests
cover the rest of lcs.py and fsx.sh)."""

from __future__ import annotations

import json
import sys

import pytest

from trn_ultracluster.orchestrators.nodes import NODE_SCRIPTS, efa_node_settings

sys.path.insert(0, str(NODE_SCRIPTS))
import lcs  # noqa: E402


def test_section_values_as_the_shell_reads_them():
    cluster = {"node": {"runtime": "container", "venv": None, "on": True}}
    assert lcs.section_value(cluster, "node", "runtime") == "container"
    assert lcs.section_value(cluster, "node", "venv") == ""
    assert lcs.section_value(cluster, "node", "on") == "true"
    assert lcs.section_value(cluster, "node", "missing") == ""
    assert lcs.section_value(cluster, "nothing", "x") == ""


def test_get_from_the_command_line(tmp_path, capsys):
    path = tmp_path / "trn_ultracluster.json"
    path.write_text(json.dumps({"node": {"log_group": "g"}, "fsx": {"data_repository": False}}))
    assert lcs.main(["--cluster", str(path), "get", "node", "log_group"]) == 0
    assert lcs.main(["--cluster", str(path), "fsx-get", "data_repository"]) == 0
    assert capsys.readouterr().out == "g\nfalse\n"


def test_log_events_keep_the_newest_lines_within_one_batch():
    events = lcs.log_events("a\n\nb\nc\n", 1000)
    assert events == [{"timestamp": 1000, "message": m} for m in ("a", "b", "c")]
    many = lcs.log_events("".join(f"{n}\n" for n in range(20_000)), 5)
    assert len(many) == lcs.MAX_BATCH_EVENTS and many[-1]["message"] == "19999"
    long_line = "x" * 100_000
    big = lcs.log_events("\n".join([long_line] * 20), 5)
    size = sum(len(e["message"]) + lcs.EVENT_OVERHEAD_BYTES for e in big)
    assert size <= lcs.MAX_BATCH_BYTES and len(big) == 10
    assert lcs.log_events("", 5) == []


def test_log_events_of_a_missing_file_is_an_empty_batch(tmp_path, capsys):
    assert lcs.main(["log-events", str(tmp_path / "none.log")]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_fsx_efa_settings_as_one_line_for_the_shell(tmp_path, capsys):
    required = {"fsx": {"efa": efa_node_settings("required", 2)}}
    assert lcs.efa_settings(required) == (
        "required 2 256 TrnUltraCluster/Neuron node_fsx_lustre_over_efa")
    assert lcs.efa_settings({"fsx": {"efa": efa_node_settings("off", 0)}}) == "off 0 0 - -"
    assert lcs.efa_settings({"fsx": {"tag_key": "k"}}) == "off 0 0 - -"  # an older stack's file
    path = tmp_path / "trn_ultracluster.json"
    path.write_text(json.dumps(required))
    assert lcs.main(["--cluster", str(path), "fsx-efa"]) == 0
    assert capsys.readouterr().out.split() == ["required", "2", "256", "TrnUltraCluster/Neuron",
                                               "node_fsx_lustre_over_efa"]


@pytest.mark.parametrize("efa, match", [
    ({"mode": "on"}, "not one of off, preferred, required"),
    ({**efa_node_settings("preferred", 2), "interfaces": 0}, "positive interfaces"),
    ({**efa_node_settings("preferred", 2), "metric": {"namespace": "a b", "name": "m"}},
     "without spaces"),
])
def test_fsx_efa_settings_that_the_shell_cannot_use_are_errors(efa, match):
    with pytest.raises(lcs.LifecycleError, match=match):
        lcs.efa_settings({"fsx": {"efa": efa}})
