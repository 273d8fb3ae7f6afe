"""The commands' shared steps: the stack outputs of the command line (and a ``--region``
that contradicts them), the defaults ``submit`` takes from the stack (nodes, output
directory) and the precompile options."""

from __future__ import annotations

import pytest
import yaml

from tests.cli.helpers import dry_run, outputs_values, run, trainjob_argv, write_outputs
from trn_ultracluster.cli.errors import ExitCode


def test_region_that_contradicts_the_outputs_file(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "data", "--outputs-file", str(path), "--region", "eu-west-1",
                       str(path))
    assert code == ExitCode.USAGE
    assert "error: --region eu-west-1 does not match the stack's Region us-west-2" in err


def test_default_output_dir_is_under_the_s3_linked_part_of_fsx(capsys, tmp_path):
    """Checkpoints go where the data repository exports them (kept after cdk destroy)."""
    values = outputs_values("eks")
    for link, expected in (("/", "/fsx/runs/job-a"), ("/s3", "/fsx/s3/runs/job-a"),
                           ("none", "/fsx/runs/job-a")):
        values["FsxDataRepositoryPath"] = link
        path = write_outputs(tmp_path, values)
        code, out, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run",
                             "--name", "job-a", "--recipe", "llama-1b", "--steps", "10",
                             "--data-dir", "/fsx/datasets/wiki")
        assert code == 0, err
        command = trainjob_argv(out)
        assert command[command.index("--output-dir") + 1] == expected, link
        script = yaml.safe_load(out)["spec"]["trainer"]["command"][2]
        assert f"TRN_OUTPUT_DIR={expected} " in script  # the same directory for the record


def test_default_nodes_of_a_stack_scaled_to_zero_is_one(capsys, tmp_path):
    values = outputs_values("eks")
    values["NodeCountDesired"] = "0"
    path = write_outputs(tmp_path, values)
    code, out, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run",
                         "--recipe", "llama-1b", "--steps", "10",
                         "--data-dir", "/fsx/datasets/wiki")
    assert code == 0, err
    assert yaml.safe_load(out)["spec"]["trainer"]["numNodes"] == 1


@pytest.mark.parametrize("extra, precompile_line", [
    (("--precompile-steps", "3"), "--max-steps-this-run 3"),  # implies --precompile
    (("--precompile",), "--max-steps-this-run 10"),             # launch.PRECOMPILE_STEPS
    ((), None),
])
def test_precompile_steps_imply_precompile(capsys, tmp_path, extra, precompile_line):
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", *extra)
    compile_lines = [ln for ln in script.splitlines() if "neuron_parallel_compile" in ln]
    if precompile_line is None:
        assert compile_lines == []
    else:
        assert len(compile_lines) == 1 and compile_lines[0].endswith(precompile_line)
