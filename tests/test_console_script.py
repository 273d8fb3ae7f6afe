"""The job CLI is installed as a console script by the set-up (pip install -e .)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
