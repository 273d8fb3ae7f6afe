"""What a job runs: job names, the ``trn_train train`` program and its precompile pass."""

from __future__ import annotations

import pytest

from tests.cli.helpers import outputs_values, run, trainjob_argv, write_outputs
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.cli.launch import default_job_name, trn_train_launch


def test_job_names():
    assert default_job_name("Llama_1B", __import__("datetime").datetime(2026, 11, 21, 9, 30)) == \
        "llama-1b-20261121-093000"
    with pytest.raises(ValueError, match="--steps must be at least 1, got: 0"):
        trn_train_launch(recipe="x", data_dir="/d", output_dir="/o", steps=0, instance_type="t",
                         backend="xla")
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


def _submit(capsys, tmp_path, stack, *argv, instance_type="trn2.48xlarge", **values):
    path = write_outputs(tmp_path, {**outputs_values("eks", instance_type, neuron_stack=stack),
                                    **values})
    return run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--name", "job-a",
               "--steps", "10", "--data-dir", "/fsx/d", *argv)


@pytest.mark.parametrize("stack", ["xla", "native"])
def test_the_program_runs_on_the_stacks_backend(capsys, tmp_path, stack):
    """submit writes the stack's NeuronStack output as `--backend` (one contract, two
    backends), so a job cannot run the other stack's code path by accident."""
    code, out, _ = _submit(capsys, tmp_path, stack, "--recipe", "llama-tiny")
    assert code == ExitCode.OK
    argv = trainjob_argv(out)
    assert argv[argv.index("train") + 1:argv.index("train") + 3] == ["--backend", stack]


def test_an_older_stack_without_the_output_is_the_xla_stack(tmp_path):
    """Stacks deployed before the NeuronStack output all built the XLA image."""
    from trn_ultracluster.cli.stack_outputs import outputs_from_file

    values = outputs_values("eks")
    del values["NeuronStack"]
    outputs = outputs_from_file(write_outputs(tmp_path, values), "TrnUltraCluster")
    assert outputs.neuron_stack == "xla"


def test_llama_8b_runs_with_train_on_the_native_stack_only(capsys, tmp_path):
    """FSDP2 shards it on TorchNeuron; on the XLA stack it needs NxD Training's TP/PP."""
    code, out, _ = _submit(capsys, tmp_path, "native", "--recipe", "llama-8b")
    assert code == ExitCode.OK and "llama-8b" in trainjob_argv(out)
    code, _, err = _submit(capsys, tmp_path, "xla", "--recipe", "llama-8b",
                           instance_type="trn1.32xlarge")
    assert code == ExitCode.USAGE and "python -m trn_train nxd-config" in err


def test_precompile_is_refused_on_the_native_stack(capsys, tmp_path):
    code, _, err = _submit(capsys, tmp_path, "native", "--recipe", "llama-tiny", "--precompile")
    assert code == ExitCode.USAGE
    assert "error: --precompile runs neuron_parallel_compile, which extracts the graphs of the XLA" in err


def test_an_unknown_neuron_stack_output_is_a_stack_error(capsys, tmp_path):
    """The pool's Neuron stack (output Pools), or on a stack older than that output, the
    stack's (output NeuronStack)."""
    code, _, err = _submit(capsys, tmp_path, "jax", "--recipe", "llama-tiny")
    assert code == ExitCode.STACK
    assert "output Pools: pool trainium's neuron_stack = 'jax' is not one of xla, native" in err
    code, _, err = _submit(capsys, tmp_path, "jax", "--recipe", "llama-tiny", Pools=None)
    assert code == ExitCode.STACK and "output NeuronStack = 'jax' is not one of xla, native" in err
