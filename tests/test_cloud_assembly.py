"""Finding the app's one stack in a cloud assembly, whatever its ``stack_name``."""

from __future__ import annotations

import json

import pytest

from trn_ultracluster.cloud_assembly import AssemblyError, assembly_stack


def test_the_synthesized_default_stack_is_found(default):
    stack = assembly_stack(default.outdir)
    assert stack.name == "TrnUltraCluster"
    assert json.loads(stack.template_path.read_text()) == default.template


def test_another_stack_name_is_found_by_its_manifest(synth):
    two = synth(stack_name="TrnTwo")
    stack = assembly_stack(two.outdir)
    assert (stack.name, stack.template_path.name) == ("TrnTwo", "TrnTwo.template.json")


@pytest.mark.parametrize("manifest, message", [
    (None, "no synthesized stack in {d} (no manifest.json)"),
    ("not json", "manifest.json is not a cloud assembly manifest"),
    ({"artifacts": {}}, "{d} holds 0 stacks (); expected this app's one"),
    (["a list"], "manifest.json is not a cloud assembly manifest (no artifacts object)"),
    ({"artifacts": ["x"]}, "manifest.json is not a cloud assembly manifest (no artifacts object)"),
    ({"artifacts": {n: {"type": "aws:cloudformation:stack"} for n in ("A", "B")}},
     "{d} holds 2 stacks (A, B)"),
])
def test_no_single_stack_is_a_clear_error(tmp_path, manifest, message):
    if manifest is not None:
        (tmp_path / "manifest.json").write_text(
            manifest if isinstance(manifest, str) else json.dumps(manifest))
    with pytest.raises(AssemblyError, match=message.format(d=tmp_path).replace("(", r"\(")
                       .replace(")", r"\)")):
        assembly_stack(tmp_path)


def test_summary_of_an_assembly_without_its_template_is_a_clear_error(tmp_path, capsys):
    from trn_ultracluster.summary import main

    (tmp_path / "manifest.json").write_text(json.dumps({"artifacts": {"TrnTwo": {
        "type": "aws:cloudformation:stack", "properties": {"templateFile": "gone.json"}}}}))
    assert main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "cannot read the synthesized template" in err and "Traceback" not in err
