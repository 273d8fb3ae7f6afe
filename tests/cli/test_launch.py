"""What a job runs: job names, the ``trn_train train`` program and its precompile pass."""

from __future__ import annotations

import pytest

from tests.cli.helpers import outputs_values, run, write_outputs
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.cli.launch import default_job_name, trn_train_launch


def test_job_names():
    assert default_job_name("Llama_1B", __import__("datetime").datetime(2026, 11, 21, 9, 30)) == \
        "llama-1b-20261121-093000"
    with pytest.raises(ValueError, match="--steps must be at least 1, got: 0"):
        trn_train_launch(recipe="x", data_dir="/d", output_dir="/o", steps=0, instance_type="t")
    from trn_ultracluster.cli.launch import validate_job_name

    with pytest.raises(ValueError, match="must be 1-63 lower-case"):
        validate_job_name("9-starts-with-digit")


@pytest.mark.parametrize("steps", ["0", "-1"])
def test_precompile_steps_below_one_are_rejected(capsys, tmp_path, steps):
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--recipe",
                       "llama-tiny", "--steps", "10", "--data-dir", "/fsx/d", "--precompile",
                       "--precompile-steps", steps)
    assert code == ExitCode.USAGE
    assert f"error: --precompile-steps must be at least 1, got: {steps}" in err
