"""The examples under ``examples/`` as a user runs them, on this machine's CPU.

Each example is run from its own directory with ``torchrun --standalone --nnodes 1
--nproc-per-node 2`` and the program arguments its README's ``trn-ultracluster submit`` command
gives (:func:`~tests.examples.helpers.examples_commands`), with ``TRN_OUTPUT_DIR`` set
as a job sets it; the tests read the result files the programs write there. The precompile
example also runs its trial the way ``submit --precompile`` does: with
``NEURON_EXTRACT_GRAPHS_ONLY=1`` (what ``neuron_parallel_compile`` sets, as
``tests/slurm/shims/neuron_parallel_compile`` does) and the README's ``--precompile-args``
appended. The same commands run for real on the two-node Slurm of ``make test-slurm``, whose
tests check what each run wrote with the same functions (``check_*`` in helpers.py).
"""

from __future__ import annotations

import ast
import py_compile
import shlex

import pytest
from packaging.requirements import Requirement

from tests.examples.helpers import (EXAMPLES, EXAMPLES_DIR, check_huggingface,
                                    check_pytorch_distributed, check_tutorial_run,
                                    check_tutorial_trial, examples_commands,
                                    no_temporary_files, option_value, program_argv,
                                    run_example, submit_commands)

PROCESSES = 2
COMMANDS = {path.name: argv for path, argv in examples_commands()}
SCRIPTS = sorted(p for name in EXAMPLES for p in (EXAMPLES_DIR / name).glob("*.py"))

SUBMIT_VALUE_OPTIONS = {"--nodes", "--name", "--workdir", "--requirements", "--setup", "--env",
                        "--output-dir", "--launcher", "--nproc-per-node", "--precompile-args"}
SUBMIT_FLAGS = {"--precompile", "--dry-run"}
"""The options of ``submit`` for a user's program (issue 30), which the READMEs may use."""
OWN_PACKAGES = {"trn_ultracluster", "trn_train"}
IMAGE_PACKAGE_PREFIXES = ("torch", "neuron", "libneuron", "aws-neuron", "transformers")
"""Packages of the training image that an example's requirements must not replace."""


# ---------------------------------------------------------------------------- the READMEs


def test_submit_commands_are_read_as_a_shell_would():
    readme = ('text `trn-ultracluster submit -- not.py` outside a block\n'
              '```bash\ncd x\ntrn-ultracluster submit --nodes 2 --precompile-args "--steps 2" \\\n'
              '    -- train.py --msg "a b"  # comment\n```\n'
              '```text\ntrn-ultracluster status job\n```\n')
    assert submit_commands(readme) == [
        ["submit", "--nodes", "2", "--precompile-args", "--steps 2",
         "--", "train.py", "--msg", "a b"]]


def test_every_example_readme_has_one_submit_command():
    names = [path.name for path, _ in examples_commands()]
    assert names == list(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_readme_command_uses_submits_syntax(name):
    argv = COMMANDS[name]
    options = argv[1:argv.index("--")]
    i = 0
    while i < len(options):
        option = options[i].split("=", 1)[0]
        assert option in SUBMIT_VALUE_OPTIONS | SUBMIT_FLAGS, f"{name}: unknown option {option}"
        if option in SUBMIT_VALUE_OPTIONS and "=" not in options[i]:
            assert i + 1 < len(options), f"{name}: {option} needs a value"
            i += 1
        i += 1
    assert option_value(argv, "--nodes") == "2"


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_readme_command_names_files_of_the_example(name):
    """The program (and a requirements file) are paths inside the example's directory, the
    working directory ``submit`` packs when ``--workdir`` is not given."""
    argv = COMMANDS[name]
    assert option_value(argv, "--workdir") is None
    assert (EXAMPLES_DIR / name / program_argv(argv)[0]).is_file()
    requirements = option_value(argv, "--requirements")
    if requirements is not None:
        assert (EXAMPLES_DIR / name / requirements).is_file()


# ---------------------------------------------------------------------------- the code


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_example_scripts_compile(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "out.pyc"), doraise=True)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_examples_import_nothing_of_this_project(script):
    """Examples are a user's code: they run with only the image's packages and their own
    files."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert not imported & OWN_PACKAGES


def test_huggingface_requirements_are_pinned_and_leave_the_image_alone():
    lines = (EXAMPLES_DIR / "huggingface" / "requirements.txt").read_text().splitlines()
    requirements = [Requirement(line) for line in lines
                    if line.strip() and not line.startswith("#")]
    assert requirements
    for req in requirements:
        assert [spec.operator for spec in req.specifier] == ["=="], f"{req} is not pinned"
        assert not req.name.lower().startswith(IMAGE_PACKAGE_PREFIXES), req.name


# ---------------------------------------------------------------------------- the runs
# make test-slurm submits the same README commands to the two-node Slurm and checks each run's
# output with the same functions; CI runs that tier, so make test-tiers leaves the runs it
# repeats out (marker repeated_on_slurm) and make test-jobs keeps them for a machine without
# root. The tutorial's trial stays in CI: on Slurm the real run follows it into the same
# directory, so only here can a test see that the trial wrote no checkpoint.


@pytest.mark.jobs
@pytest.mark.repeated_on_slurm
def test_pytorch_distributed_runs_as_the_readme_says(tmp_path):
    args = program_argv(COMMANDS["pytorch-distributed"])
    proc = run_example("pytorch-distributed", args, tmp_path, PROCESSES)
    check_pytorch_distributed(tmp_path, args, PROCESSES, proc.stdout)


@pytest.mark.jobs
@pytest.mark.repeated_on_slurm
def test_huggingface_runs_as_the_readme_says(tmp_path):
    args = program_argv(COMMANDS["huggingface"])
    proc = run_example("huggingface", args, tmp_path, PROCESSES)
    # humanize (requirements.txt) is not installed here: the script runs without it.
    assert check_huggingface(tmp_path, args, PROCESSES, proc.stdout)["humanize"] is None


ULTRACLUSTER = COMMANDS["ultracluster-tutorial"]
ULTRACLUSTER_ARGS = program_argv(ULTRACLUSTER)


@pytest.mark.jobs
def test_ultracluster_tutorial_precompile_trial(tmp_path):
    """The trial run of ``submit --precompile``: under ``neuron_parallel_compile``, with the
    README's ``--precompile-args`` after the program's arguments."""
    assert "--precompile" in ULTRACLUSTER
    trial_args = [*ULTRACLUSTER_ARGS, *shlex.split(option_value(ULTRACLUSTER, "--precompile-args"))]
    proc = run_example("ultracluster-tutorial", trial_args, tmp_path, PROCESSES,
                       NEURON_EXTRACT_GRAPHS_ONLY="1")
    check_tutorial_trial(tmp_path, ULTRACLUSTER_ARGS, PROCESSES, proc.stdout)
    assert not (tmp_path / "result.json").exists() and not (tmp_path / "checkpoint.pt").exists()
    assert no_temporary_files(tmp_path) == []


@pytest.mark.jobs
@pytest.mark.repeated_on_slurm
def test_ultracluster_tutorial_real_run(tmp_path):
    proc = run_example("ultracluster-tutorial", ULTRACLUSTER_ARGS, tmp_path, PROCESSES)
    check_tutorial_run(tmp_path, ULTRACLUSTER_ARGS, PROCESSES, proc.stdout)
