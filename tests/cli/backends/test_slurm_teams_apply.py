"""``teams --apply``: the script it runs on the HyperPod Slurm controller (run here against
stubs of aws, scontrol, sacctmgr and systemctl: the lifecycle's own steps), its SendCommand
request (botocore's Stubber: checked against botocore's SSM model), a failing step's error,
and the refusals of the other backends."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from tests.cli.backends.test_slurm_teams import POOLS, TEAMS
from tests.cli.helpers import outputs_values, run, write_outputs
from tests.orchestrators.hyperpod_slurm.test_teams import CONTROLLER_STUBS, DATA
from trn_ultracluster.cli.backends import hyperpod_slurm
from trn_ultracluster.cli.backends.slurm_teams_apply import (
    APPLY_TIMEOUT_S,
    apply_error,
    apply_script,
)
from trn_ultracluster.cli.backends.ssm import send_command_request
from trn_ultracluster.cli.commands import common
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.hyperpod import SLURM_TEAMS_STEPS
from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import LIFECYCLE_ASSETS

BUCKET = "sagemaker-trnuc-abc-123456789012-us-west-2"
TARGET = "sagemaker-cluster:abc123_controller-i-0123456789abcdef0"
COMMAND_ID = "0b3c7e5a-1f2d-4c6b-9a8e-7d6f5e4c3b2a"

# aws: `aws s3 cp [--only-show-errors] [--region R] s3://B/KEY DEST` copies $STUB_BUCKET/KEY
AWS_STUB = """#!/bin/bash
echo "aws $*" >> "$STUB_LOG"
args=(); while (($#)); do case "$1" in --only-show-errors) shift ;; --region) shift 2 ;;
  *) args+=("$1"); shift ;; esac; done
key="${args[2]#s3://*/}"
cp "$STUB_BUCKET/$key" "${args[3]}" 2>/dev/null || { echo "fatal error: 404 $key" >&2; exit 1; }
"""


def controller(tmp_path: Path, **stubs: str):
    """A controller with Slurm stubs and a lifecycle bucket holding what a teams stack uploads
    (:data:`DATA` and the scripts); returns a runner of a script on it as root."""
    bin_dir, bucket = tmp_path / "bin", tmp_path / "bucket" / "lifecycle"
    bin_dir.mkdir()
    bucket.mkdir(parents=True)
    for name in ("slurm_teams.py", SLURM_TEAMS_STEPS):
        (bucket / name).write_text((LIFECYCLE_ASSETS / name).read_text())
    (bucket / "slurm_teams.json").write_text(json.dumps(DATA))
    for name, text in {**CONTROLLER_STUBS, "aws": AWS_STUB, **stubs}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=c\n")
    log = tmp_path / "calls.log"
    log.touch()

    def run_script(script: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log),
               "STUB_BUCKET": str(bucket.parent), "STUB_SLURM_CONF": str(conf)}
        return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                              timeout=60, check=False)

    run_script.calls = lambda name: [ln for ln in log.read_text().splitlines()  # type: ignore[attr-defined]
                                     if ln.startswith(name + " ")]
    run_script.conf = conf  # type: ignore[attr-defined]
    return run_script


def test_the_script_runs_the_lifecycles_steps_from_the_bucket_and_restarts_only_on_change(tmp_path):
    node = controller(tmp_path)
    script = apply_script(BUCKET, "us-west-2")
    done = node(script)
    assert done.returncode == 0, done.stderr
    copies = [c.split()[:7] for c in node.calls("aws")]
    assert copies == [["aws", "s3", "cp", "--only-show-errors", "--region", "us-west-2",
                       f"s3://{BUCKET}/lifecycle/{name}"]
                      for name in ("slurm_teams.json", "slurm_teams.py", SLURM_TEAMS_STEPS)]
    assert node.conf.read_text().splitlines()[-1] == "Include trn_ultracluster_teams.conf"
    assert node.calls("systemctl") == ["systemctl restart slurmctld"]
    assert "restarting slurmctld" in done.stdout
    assert "association ubuntu/alpha/trn: GrpTRES=node=2" in done.stdout  # what apply set
    assert "sacctmgr -i add account alpha" in " ".join(node.calls("sacctmgr"))
    again = node(script)  # nothing changed in the settings: slurmctld keeps running
    assert again.returncode == 0, again.stderr
    assert node.calls("systemctl") == ["systemctl restart slurmctld"]
    assert "has the teams' Slurm settings already; slurmctld keeps running" in again.stdout


def test_the_lifecycle_and_the_apply_script_share_the_steps():
    lifecycle = (LIFECYCLE_ASSETS / "on_init_complete.sh").read_text()
    steps = (LIFECYCLE_ASSETS / SLURM_TEAMS_STEPS).read_text()
    script = apply_script(BUCKET, "us-west-2")
    for text in (lifecycle, script):
        assert f'source "${{LCS_DIR}}/{SLURM_TEAMS_STEPS}"' in text
        assert "\n      setup_slurm_teams\n" in text or text.endswith("setup_slurm_teams\n")
        assert "setup_slurm_teams() {" not in text and "slurm_teams.py\" --teams" not in text
    assert "setup_slurm_teams() {" in steps


@pytest.mark.parametrize("stubs, step, why", [
    ({"systemctl": "#!/bin/bash\nexit 1\n"}, "restart-slurmctld",
     "cannot restart slurmctld after adding the teams' settings to "),
    ({"aws": "#!/bin/bash\necho 'fatal error: An error occurred (403)' >&2\nexit 1\n"}, "fetch",
     f"cannot copy s3://{BUCKET}/lifecycle/slurm_teams.json (was the stack deployed with teams?"),
])
def test_a_failing_step_is_named_in_the_error(tmp_path, stubs, step, why):
    done = controller(tmp_path, **stubs)(apply_script(BUCKET, "us-west-2"))
    assert done.returncode == 1
    # run_command's error for a failed invocation carries its stderr
    err = apply_error(CliError(f"command on the controller ({TARGET}) Failed: "
                               f"{done.stderr.strip()[-500:]}", "", ExitCode.CLUSTER))
    assert err.message.startswith(f"teams --apply failed on the controller at step {step}: {why}")
    assert err.exit_code == ExitCode.CLUSTER
    other = CliError("the controller cannot take SSM commands", "wait", ExitCode.CLUSTER)
    assert apply_error(other) is other


def test_a_bad_bucket_in_the_outputs_is_refused_before_it_reaches_a_shell():
    with pytest.raises(CliError) as err:
        apply_script('b"; rm -rf /; "', "us-west-2")
    assert err.value.exit_code == ExitCode.STACK


# --- through the CLI ---------------------------------------------------------------------

def teams_stack(tmp_path, orchestrator="hyperpod-slurm", teams=True):
    values = outputs_values(orchestrator)
    values["Pools"] = json.dumps([{**p, "image_uri": values["TrainingImageUri"]} for p in POOLS])
    if orchestrator.startswith("hyperpod"):
        values["HyperPodLifecycleBucketName"] = BUCKET
    if teams:
        values["Teams"] = json.dumps(TEAMS)
    return str(write_outputs(tmp_path, values))


@pytest.fixture
def ssm(monkeypatch):
    """The controller's SSM client, stubbed (every request checked against botocore's SSM
    model); the backend reaches it through its session."""
    client = boto3.client("ssm", region_name="us-west-2", aws_access_key_id="k",
                          aws_secret_access_key="s")
    stubber = Stubber(client)

    class Session:
        region_name = "us-west-2"

        def client(self, name):
            assert name == "ssm"
            return client

    monkeypatch.setattr(common, "stack_session", lambda args, outputs: Session())
    monkeypatch.setattr(hyperpod_slurm, "controller_target", lambda *a: TARGET)
    with stubber:
        yield stubber


def expect_run(stubber, status, stdout="", stderr=""):
    """One SendCommand of the apply script as root, then its invocation (twice: the waiter and
    run_command's read)."""
    request = send_command_request([TARGET], apply_script(BUCKET, "us-west-2"), user=None,
                                   timeout_s=APPLY_TIMEOUT_S)
    stubber.add_response("send_command", {"Command": {"CommandId": COMMAND_ID}}, request)
    for _ in range(2):
        stubber.add_response("get_command_invocation", {
            "Status": status, "StandardOutputContent": stdout, "StandardErrorContent": stderr},
            {"CommandId": COMMAND_ID, "InstanceId": TARGET})
    return request


def test_apply_sends_the_script_as_root_and_prints_what_it_set(capsys, tmp_path, ssm):
    request = expect_run(ssm, "Success", "[trn-ultracluster] Slurm enforces the teams\n")
    code, out, err = run(capsys, "teams", "--outputs-file", teams_stack(tmp_path), "--apply")
    assert code == 0, err
    assert out == "[trn-ultracluster] Slurm enforces the teams\n"
    ssm.assert_no_pending_responses()
    command = request["Parameters"]["commands"][0]
    assert command.endswith("| base64 -d | bash")  # as root: no sudo -u
    assert base64.b64decode(command.split()[1]).decode() == apply_script(BUCKET, "us-west-2")
    assert request["Parameters"]["executionTimeout"] == [str(APPLY_TIMEOUT_S)]


def test_apply_names_the_step_that_failed(capsys, tmp_path, ssm):
    expect_run(ssm, "Failed", stderr="teams --apply: step wait-slurmdbd failed: Slurm "
                                     "accounting (slurmdbd) does not answer after 300s\n")
    code, _, err = run(capsys, "teams", "--outputs-file", teams_stack(tmp_path), "--apply")
    assert code == ExitCode.CLUSTER
    assert "teams --apply failed on the controller at step wait-slurmdbd: Slurm accounting" in err


def test_dry_run_prints_the_script_and_reaches_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(common, "stack_session", lambda *a: pytest.fail("no AWS on --dry-run"))
    code, out, err = run(capsys, "teams", "--outputs-file", teams_stack(tmp_path), "--apply",
                         "--dry-run")
    assert code == 0, err
    assert out == apply_script(BUCKET, "us-west-2")
    code, _, err = run(capsys, "teams", "--outputs-file", teams_stack(tmp_path), "--dry-run")
    assert code == ExitCode.USAGE and "--dry-run goes with --apply" in err


@pytest.mark.parametrize("orchestrator, teams, says", [
    ("eks", True, "on eks `cdk deploy` applies the teams itself (Kueue's ClusterQueues"),
    ("hyperpod-eks", True, "on hyperpod-eks `cdk deploy` applies the teams itself (HyperPod "
                           "task governance"),
    ("standalone", False, "not available with the standalone job backend"),
    ("hyperpod-slurm", False, "has no teams: nothing to apply"),
])
def test_apply_is_refused_where_there_is_nothing_to_apply(capsys, tmp_path, orchestrator,
                                                         teams, says):
    path = teams_stack(tmp_path, orchestrator, teams)
    code, _, err = run(capsys, "teams", "--outputs-file", path, "--apply", "--dry-run")
    assert code == ExitCode.USAGE
    assert says in err


def test_the_doc_names_every_step_an_error_can_name():
    import re

    from tests.cli.test_teams_doc import _section

    section = _section("## hyperpod-slurm: Slurm accounting")
    steps = re.findall(r"TEAMS_STEP=(\S+)", (LIFECYCLE_ASSETS / SLURM_TEAMS_STEPS).read_text()
                       + apply_script(BUCKET, "us-west-2"))
    assert set(steps) == {"fetch", "wait-slurmdbd", "find-slurm-conf", "install",
                          "restart-slurmctld", "apply"}
    for step in steps:
        assert f"`{step}`" in section
    assert "trn-ultracluster teams --apply" in section
