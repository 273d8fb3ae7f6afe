"""The job-backend registry: every orchestrator the configuration allows has a backend, the
stack's ``JobBackend`` output (``Orchestrator`` on older stacks) picks it, and a name this CLI
does not know is a clean STACK error."""

from __future__ import annotations

import enum
import inspect
from importlib import import_module
from typing import get_args

import pytest

from tests.cli.helpers import outputs_values, run, write_outputs
from trn_ultracluster.cli.backends import BACKENDS, JobBackend, backend_class
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.cli.stack_outputs import outputs_from_file
from trn_ultracluster.config import ClusterConfig


def allowed_orchestrators() -> set[str]:
    """The values of the configuration's ``orchestrator`` (a Literal or an Enum)."""
    annotation = ClusterConfig.model_fields["orchestrator"].annotation
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return {member.value for member in annotation}
    return set(get_args(annotation))


def test_every_orchestrator_the_config_allows_has_a_backend():
    """Each orchestrator names its backend in the outputs (its construct's ``job_backend``);
    the CLI has a backend for each name."""
    from trn_ultracluster.orchestrators import ORCHESTRATORS

    allowed = allowed_orchestrators()
    assert allowed and allowed <= set(ORCHESTRATORS)
    for name in allowed:
        module, cls, _ = ORCHESTRATORS[name]
        assert getattr(import_module(module), cls).job_backend in BACKENDS, name


def test_backends_are_complete_and_named_once():
    for name, backend in BACKENDS.items():
        assert issubclass(backend, JobBackend) and backend.name == name
        assert not inspect.isabstract(backend), backend.__abstractmethods__
        assert all(option.flag.startswith("--") for option in backend.options)
        assert backend.texts.label


@pytest.mark.parametrize("values, expected", [
    ({"JobBackend": "hyperpod-slurm", "Orchestrator": "eks"}, "hyperpod-slurm"),
    ({"Orchestrator": "hyperpod-slurm"}, "hyperpod-slurm"),  # a stack older than JobBackend
])
def test_the_job_backend_output_picks_the_backend(tmp_path, values, expected):
    found = outputs_values("eks")
    del found["JobBackend"]
    found.update(values)
    outputs = outputs_from_file(write_outputs(tmp_path, found), "TrnUltraCluster")
    assert backend_class(outputs) is BACKENDS[expected]


@pytest.mark.parametrize("key", ["JobBackend", "Orchestrator"])
@pytest.mark.parametrize("command", [["status"], ["logs", "17"], ["cancel", "17"],
                                     ["scale", "--nodes", "1"], ["smoke-test", "--dry-run"],
                                     ["submit", "--dry-run", "--recipe", "llama-1b", "--steps",
                                      "1", "--data-dir", "/fsx/d"]])
def test_an_unknown_backend_is_a_stack_error(capsys, tmp_path, key, command):
    values = outputs_values("eks")
    if key == "Orchestrator":
        del values["JobBackend"]
    values[key] = "pbs"
    path = write_outputs(tmp_path, values)
    code, out, err = run(capsys, command[0], "--outputs-file", str(path), *command[1:])
    assert code == ExitCode.STACK == 3
    assert (f"error: stack TrnUltraCluster ({path}) names job backend 'pbs' (output {key}), "
            f"which this job CLI does not know (it knows: {', '.join(BACKENDS)})") in err
    assert "fix: use the job CLI of the version that deployed the stack" in err
    assert "Traceback" not in err and out == ""


def test_a_stack_without_either_output_is_a_stack_error(capsys, tmp_path):
    values = outputs_values("eks")
    del values["JobBackend"], values["Orchestrator"]
    code, _, err = run(capsys, "status", "--outputs-file", str(write_outputs(tmp_path, values)))
    assert code == ExitCode.STACK and "has no output 'JobBackend'" in err
