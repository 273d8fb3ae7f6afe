"""The real CDK CLI (pinned in package.json) synthesizes offline and refuses bad input."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, cdk_json_context
from trn_ultracluster.config import load_config
from trn_ultracluster.summary import main as summary_main

CDK = REPO_ROOT / "node_modules" / ".bin" / "cdk"
pytestmark = pytest.mark.skipif(not CDK.exists(), reason="node_modules missing: run `make setup`")


def _cdk(*args: str, outdir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for key in [k for k in env if k.startswith("AWS_")]:
        env.pop(key)  # no credentials, no profile: synth must not need them
    env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    return subprocess.run([str(CDK), "synth", "TrnUltraCluster", "--quiet", "-o", str(outdir), *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_cli_synth_offline_and_summary(tmp_path, capsys):
    result = _cdk(outdir=tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = load_config(cdk_json_context(), base_dir=REPO_ROOT).warnings
    assert warnings, "the default config warns about the open EKS endpoint"
    for warning in warnings:  # shown once, as a CDK annotation
        assert result.stderr.count(warning.message) == 1, warning.message
    assert (tmp_path / "TrnUltraCluster.template.json").exists()
    assert summary_main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "instance type:  trn1.32xlarge" in out
    assert "compute AZ ID:  usw2-az4" in out
    assert "EFA per node:   8 interfaces" in out
    assert "FSx over EFA:   off (auto): the file system's throughput is not above" in out
    assert "Neuron stack:   xla (python -m trn_train train --backend xla" in out
    assert "AWS::EC2::LaunchTemplate" in out


def test_cli_bad_input_exits_non_zero_and_writes_no_template(tmp_path):
    result = _cdk("-c", "fsx.per_unit_storage_throughput=300", outdir=tmp_path)
    assert result.returncode != 0
    assert ("error: fsx.per_unit_storage_throughput = 300: must be 125, 250, 500 or 1000 "
            "MB/s/TiB for PERSISTENT_2") in result.stderr
    assert not (tmp_path / "TrnUltraCluster.template.json").exists()


def test_cli_synth_of_a_second_stack_name(tmp_path, capsys):
    """`-c stack_name=TrnTwo` gives a stack TrnTwo, found by the summary as `make synth`
    runs it (`cdk synth` with no stack named: the app's one)."""
    result = subprocess.run([str(CDK), "synth", "--quiet", "-o", str(tmp_path),
                             "-c", "stack_name=TrnTwo"], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=300,
                            env={**os.environ, "PATH": f"{Path(sys.executable).parent}"
                                                      f"{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "TrnTwo.template.json").exists()
    assert not (tmp_path / "TrnUltraCluster.template.json").exists()
    assert summary_main([str(tmp_path)]) == 0
    assert "stack:          TrnTwo" in capsys.readouterr().out


def test_summary_without_synth_says_what_to_do(tmp_path, capsys):
    assert summary_main([str(tmp_path)]) == 1
    assert "run `make synth` first" in capsys.readouterr().err


def test_cdk_cli_is_pinned():
    import json

    pinned = json.loads((REPO_ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/aws-cdk"]["version"] == pinned == "2.1148.1"
    assert shutil.which("node")


@pytest.mark.parametrize("target, command", [
    ("synth", "cdk synth --quiet"), ("deploy", "cdk deploy --all"),
    ("destroy", "cdk destroy --all"), ("diff", "cdk diff  -c eks.deployer_principal_arn=")])
def test_make_targets_address_the_one_stack_whatever_its_name(target, command):
    """stack_name may be anything: no target names TrnUltraCluster (`cdk synth` and `cdk diff`
    take every stack when none is named; deploy and destroy need --all, which synth would
    ignore with a warning)."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    recipe = subprocess.run(["make", "--no-print-directory", "-n", "-o", "setup", target],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    assert command in recipe and "TrnUltraCluster" not in recipe
