"""The command line: ``--help`` of every command (with the exit codes in plain text and each
job backend's options), argument ranges, a closed output pipe, the console script and the
module entry point, and what the CLI imports."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import outputs_values, write_outputs
from tests.conftest import REPO_ROOT
from trn_ultracluster.cli import main as cli
from trn_ultracluster.cli.backends import BACKENDS
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.cli.launch import PRECOMPILE_STEPS
from trn_ultracluster.cli.smoke import MIN_EFA_RATIO

CLI_DIR = REPO_ROOT / "trn_ultracluster" / "cli"


def test_help_for_every_command(capsys):
    for command in cli.COMMANDS:
        with pytest.raises(SystemExit) as done:
            cli.main([command, "--help"])
        assert done.value.code == 0
        # estimate reads the synthesized template (--cdk-out), config the configuration:
        # no stack
        assert ("--stack-name" in capsys.readouterr().out) is (command not in ("estimate",
                                                                               "config"))
    with pytest.raises(SystemExit):
        cli.main(["submit", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {PRECOMPILE_STEPS}); implies --precompile" in help_text
    with pytest.raises(SystemExit):
        cli.main(["smoke-test", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"(default {MIN_EFA_RATIO:g})" in help_text and "--kube-context" in help_text


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        cli.main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", [[], ["submit"], ["preflight"], ["logs"]])
def test_help_lists_the_exit_codes_in_plain_text(capsys, command):
    text = _help(capsys, *command)
    assert "exit codes:" in text
    for code in ExitCode:
        assert re.search(rf"^\s+{int(code)}\s+\S", text, re.M), (code, text)
    assert not re.search(r":(class|func|data|mod):|``", text), text


def test_no_hint_points_at_a_message_above():
    for path in sorted(CLI_DIR.rglob("*.py")):
        text = path.read_text()
        assert not re.search(r"message above|see the message|read the message", text), path


@pytest.mark.parametrize("argv, says", [
    (["logs", "job-a", "--tail", "0"], "argument --tail: must be at least 1, got 0"),
    (["smoke-test", "--timeout", "-5"], "argument --timeout: must be more than 0 seconds"),
    (["smoke-test", "--min-ratio", "0"], "argument --min-ratio: must be more than 0 and at most 1"),
    (["smoke-test", "--min-ratio", "1.5"], "argument --min-ratio: must be more than 0 and at most 1"),
    (["logs", "job-a", "--tail", "ten"], "argument --tail: must be an integer, got 'ten'"),
    (["smoke-test", "--timeout", "soon"], "argument --timeout: must be a number of seconds, got 'soon'"),
    (["smoke-test", "--min-ratio", "most"], "argument --min-ratio: must be a number, got 'most'"),
])
def test_out_of_range_numbers_are_usage_errors(capsys, argv, says):
    """`logs --tail 0` printed the whole Slurm log; `--min-ratio 0` passed any bandwidth."""
    with pytest.raises(SystemExit) as done:
        cli.main([*argv, "--outputs-file", "/nonexistent/outputs.json"])  # never read
    assert done.value.code == ExitCode.USAGE
    assert says in capsys.readouterr().err


def test_outputs_json_into_a_pipe_closed_early(tmp_path):
    """`outputs --json | head -n 1`: no BrokenPipeError traceback, exit 141 like a process
    stopped by SIGPIPE (what `seq 1 1000000 | head -n 1` gives under pipefail)."""
    values = outputs_values("eks")
    values.update({f"Extra{i:05d}": "x" * 60 for i in range(3000)})  # far more than a pipe holds
    path = write_outputs(tmp_path, values)
    script = (f"set -o pipefail; {sys.executable} -m trn_ultracluster outputs --json "
              f"--outputs-file {path} 2>{tmp_path / 'err'} | head -n 1")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=REPO_ROOT,
                          timeout=120)
    assert done.stdout == "{\n"
    assert done.returncode == ExitCode.PIPE_CLOSED == 141
    assert (tmp_path / "err").read_text() == ""


SCRIPT = Path(sys.executable).parent / "trn-ultracluster"


@pytest.mark.skipif(not SCRIPT.exists(), reason="project not installed: run `make setup`")
def test_console_script_runs_the_cli():
    result = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for command in ("preflight", "outputs", "data", "submit", "status", "logs", "cancel", "smoke-test"):
        assert command in result.stdout


def test_module_entry_point_matches():
    result = subprocess.run([sys.executable, "-m", "trn_ultracluster", "submit", "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "--dry-run" in result.stdout


def test_every_backend_option_and_text_is_in_the_help(capsys):
    text = " ".join(_help(capsys, "status").split())
    for backend in BACKENDS.values():
        for option in backend.options:
            assert option.flag in text
        assert f"{backend.texts.label}: {backend.texts.job}" in text
    text = " ".join(_help(capsys, "submit").split())
    for backend in BACKENDS.values():
        for part in ("dry_run", "time_limit", "env"):
            assert f"{backend.texts.label}: {getattr(backend.texts, part)}" in text


def test_every_command_has_a_function():
    parser = cli.build_parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps them here
    assert set(commands) == set(cli.COMMANDS)


def test_a_dry_run_imports_no_cdk_boto3_or_kubernetes(tmp_path):
    """The CLI starts fast on a laptop: a dry run from an outputs file needs none of them."""
    code = (
        "import sys\n"
        "from trn_ultracluster.cli.main import main\n"
        "for orchestrator in ('eks', 'hyperpod-slurm'):\n"
        f"    path = {str(tmp_path)!r} + '/' + orchestrator + '.json'\n"
        "    assert main(['smoke-test', '--outputs-file', path, '--dry-run']) == 0\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('aws_cdk', 'constructs', 'boto3', 'botocore', 'kubernetes', 'jsii'))\n"
        "print(heavy, file=sys.stderr)\n"
        "sys.exit(1 if heavy else 0)\n")
    for orchestrator in ("eks", "hyperpod-slurm"):
        (tmp_path / orchestrator).mkdir()
        write_outputs(tmp_path / orchestrator, outputs_values(orchestrator)).rename(
            tmp_path / f"{orchestrator}.json")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
