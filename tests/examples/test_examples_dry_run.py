"""Each example's README command as a dry run on every orchestrator: the same program,
arguments and snapshot everywhere, the TrainJob valid against the vendored Trainer CRD, the
scripts clean under ``bash -n`` and shellcheck (``make test-slurm`` runs the Slurm one for real,
``tests/slurm/test_user_programs.py``)."""

from __future__ import annotations

import re
import shlex

import pytest
import yaml

from tests.crds import trainjob_validator
from tests.cli.program_helpers import dry_run, node_script, run_line
from tests.cli.test_submit_backends import check_script
from tests.examples.helpers import examples_commands

ORCHESTRATORS = ("hyperpod-slurm", "eks", "hyperpod-eks", "standalone")


@pytest.mark.parametrize("example, argv", examples_commands(),
                         ids=[e.name for e, _ in examples_commands()])
def test_each_example_dry_runs_the_same_on_every_orchestrator(capsys, tmp_path, monkeypatch, example, argv):
    monkeypatch.chdir(example)
    program = argv[argv.index("--") + 1:]
    seen = set()
    for orchestrator in ORCHESTRATORS:
        printed, err = dry_run(capsys, tmp_path, orchestrator, "--name", "ex", *argv[1:])
        sha = re.search(r"-> snapshot ([0-9a-f]{64}) ", err).group(1)
        script = node_script(orchestrator, printed)
        check_script(tmp_path, orchestrator, printed, script)
        words = shlex.split(run_line(script))
        assert words[-len(program):] == program, (orchestrator, words)
        assert f"TRN_CODE_SHA256={sha} " in script
        if "--precompile" in argv:
            precompile = shlex.split(script.rstrip("\n").splitlines()[-2])
            assert precompile[0] == "neuron_parallel_compile"
            assert precompile[-len(program) - 2:] == [*program, *shlex.split(
                argv[argv.index("--precompile-args") + 1])]
        if orchestrator in ("eks", "hyperpod-eks"):
            trainjob_validator().validate(yaml.safe_load(printed))
        seen.add(sha)
    assert len(seen) == 1  # one snapshot of the example's directory for all four
