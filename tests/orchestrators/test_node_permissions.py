"""Every AWS call of the node scripts is granted to the role the nodes run it with, on every
orchestrator (issue 23, "Permissions": the missing ``fsx:DescribeFileSystems`` that made
AWS's HyperPod Lustre client fall back to TCP silently, awslabs/awsome-distributed-ai PR
#1202). How the calls, the scripts each orchestrator's nodes run and the grants are read:
:mod:`tests.orchestrators.node_calls`."""

from __future__ import annotations

import pytest

from tests.conftest import FSX_EFA_PROFILE, REPO_ROOT, profile_path
from tests.orchestrators.node_calls import (
    AwsCall,
    ReadError,
    granted,
    iam_actions,
    node_roles,
    node_scripts,
    python_calls,
    scripts_in_user_data,
    shell_calls,
)
from trn_ultracluster.contracts.metrics import NODE_METRICS_NAMESPACE

EKS_FSX_EFA = {"orchestrator": "eks", "fsx.efa": "true", "fsx.storage_capacity_gib": "19200"}
"""EKS with an EFA-enabled file system: its Trainium launch template carries user data
(the efa-nodes branch's ``tests/orchestrators/eks/test_lustre_efa.py`` synthesizes the same
context, so the session synthesizes it once)."""
CONFIGS = {"eks": None, "eks-fsx-efa": EKS_FSX_EFA, "hyperpod-slurm": "ultracluster-16",
           "hyperpod-eks": "hyperpod-eks", "standalone": "single-node",
           "standalone-dlami-venv": "trn1-2xl", "fsx-efa": FSX_EFA_PROFILE,
           "hyperpod-eks-pools": {"config": str(profile_path("mixed")),
                                  "orchestrator": "hyperpod-eks"},
           "hyperpod-slurm-teams": {"config": str(profile_path("teams")),
                                    "orchestrator": "hyperpod-slurm"}}
"""One synthesized configuration per orchestrator (and the EFA, DLAMI-venv, node-pool and
teams variants, whose nodes run more or other scripts: a HyperPod on EKS CPU pool's entry
script, the Slurm controller's teams set-up)."""
SCRIPT_GLOBS = ("trn_ultracluster/orchestrators/**/scripts/*.sh",
                "trn_ultracluster/orchestrators/node_scripts/*",
                "trn_ultracluster/node_metrics/scripts/*")


def _synth(synth, name):
    config = CONFIGS[name]
    if isinstance(config, dict):
        return synth(**config)
    return synth() if config is None else synth(profile_path(config))


def _calls(script) -> list[AwsCall]:
    return (python_calls if script.python else shell_calls)(script.text, script.source)


def _denied(s) -> list[str]:
    """Each call of a node script that a role running it is not granted, in words."""
    template, roles = s.template, node_roles(s.template)
    missing = []
    for script in node_scripts(template, s.outdir, REPO_ROOT, s.config.stack_name):
        for call in _calls(script):
            for action in iam_actions(call):
                for role in sorted(script.roles):
                    if not granted(template, role, action):
                        missing.append(f"{call} needs {action}, which role {role} "
                                       f"({roles.get(role, 'a node role')}) is not granted")
    return missing


@pytest.mark.parametrize("name", CONFIGS)
def test_every_aws_call_of_the_node_scripts_is_granted_to_the_role_that_runs_it(synth, name):
    s = _synth(synth, name)
    assert node_roles(s.template), f"{name}: no node role found in the template"
    denied = _denied(s)
    assert not denied, "\n".join(denied)


@pytest.mark.parametrize("name, expected", [
    ("hyperpod-slurm", {"fsx:DescribeFileSystems", "fsx:DescribeDataRepositoryAssociations",
                        "fsx:DescribeDataRepositoryTasks", "ecr:GetAuthorizationToken",
                        "cloudwatch:PutMetricData"}),
    ("standalone", {"fsx:DescribeFileSystems", "fsx:DescribeDataRepositoryAssociations",
                    "fsx:DescribeDataRepositoryTasks", "ecr:GetAuthorizationToken",
                    "cloudwatch:PutMetricData", "logs:CreateLogStream", "logs:PutLogEvents",
                    "s3:GetObject"}),
])
def test_the_calls_are_read_from_what_the_stack_ships(synth, name, expected):
    """At least these (the scripts of the other helpers may add calls), so that the test
    above cannot pass by reading nothing."""
    s = _synth(synth, name)
    scripts = node_scripts(s.template, s.outdir, REPO_ROOT, s.config.stack_name)
    actions = {a for script in scripts for call in _calls(script) for a in iam_actions(call)}
    assert expected <= actions
    sources = {script.source for script in scripts}
    assert "trn_ultracluster/orchestrators/node_scripts/fsx.sh" in sources
    assert "trn_ultracluster/node_metrics/scripts/neuron_metrics.py" in sources


def test_every_node_script_of_the_repository_reaches_some_nodes(synth):
    """A script under the globs that no orchestrator ships would escape the check: each one
    is in some configuration's node assets, or (a user data template) its commands are in a
    launch template's user data (comment lines and lines with a ``@@NAME@@`` placeholder
    aside: user data may leave out the first and fills in the second)."""
    shipped, user_data = set(), []
    for name in CONFIGS:
        s = _synth(synth, name)
        for script in node_scripts(s.template, s.outdir, REPO_ROOT, s.config.stack_name):
            (user_data.append(script.text) if script.source.startswith("user data of ")
             else shipped.add(script.source))
    files = sorted({p for g in SCRIPT_GLOBS for p in REPO_ROOT.glob(g) if p.is_file()
                    and p.suffix in (".sh", ".py")})
    assert len(files) >= 7
    for path in files:
        rel = str(path.relative_to(REPO_ROOT))
        lines = [ln for ln in path.read_text().splitlines()
                 if ln.strip() and "@@" not in ln and not ln.lstrip().startswith("#")]
        in_user_data = any(all(ln in text for ln in lines) for text in user_data)
        assert rel in shipped or in_user_data, f"{rel} runs on no orchestrator's nodes"


@pytest.mark.parametrize("name", CONFIGS)
def test_node_roles_may_publish_only_in_the_stacks_metric_namespaces(synth, name):
    """A node role whose scripts publish metrics (the node metrics, node_fsx_lustre_over_efa
    with fsx.efa on) may, limited with ``cloudwatch:namespace`` (CloudWatch user guide, "Using
    condition keys to limit access to CloudWatch namespaces"); one whose scripts publish
    nothing may not (EKS and HyperPod on EKS with fsx.efa off)."""
    s = _synth(synth, name)
    publishing = {role for script in node_scripts(s.template, s.outdir, REPO_ROOT,
                                                  s.config.stack_name)
                  for call in _calls(script) if "cloudwatch:PutMetricData" in iam_actions(call)
                  for role in script.roles}
    for role in node_roles(s.template):
        statements = granted(s.template, role, "cloudwatch:PutMetricData")
        if role not in publishing:
            assert not statements, f"{name}: {role} may publish metrics, its scripts do not"
            continue
        assert statements, f"{name}: {role} may not publish node metrics"
        for statement in statements:
            namespaces = statement["Condition"]["StringEquals"]["cloudwatch:namespace"]
            assert NODE_METRICS_NAMESPACE in namespaces
            assert all(n.startswith("TrnUltraCluster/") for n in namespaces)


# --- the reader itself ---------------------------------------------------------------------

SCRIPT = r'''#!/bin/bash
# aws fsx delete-file-system in a comment is no call
log "fix: aws sagemaker update-cluster-software"   # nor is a message
aws_json() {
  local out="$1" err
  shift
  aws "$@" --region "${REGION}" --output json > "${out}" 2> "${err}"
}
if aws_json "${answer}" fsx describe-file-systems; then :; fi
token="$(aws --region x ecr get-login-password)"
line="password \$(aws sts get-caller-identity)"
cat <<EOF > /etc/unit
ExecStart=$(aws ssm get-parameter --name x)
EOF
aws cloudwatch put-metric-data --namespace "$NS" \
  --metric-name m --value 1 2>/dev/null || true
'''


def test_the_reader_finds_calls_not_comments_or_messages():
    calls = shell_calls(SCRIPT, "s.sh")
    assert [(c.line, c.service, c.command) for c in calls] == [
        (9, "fsx", "describe-file-systems"), (10, "ecr", "get-login-password"),
        (11, "sts", "get-caller-identity"), (13, "ssm", "get-parameter"),
        (15, "cloudwatch", "put-metric-data")]
    assert [iam_actions(c) for c in calls] == [
        ("fsx:DescribeFileSystems",), ("ecr:GetAuthorizationToken",),
        ("sts:GetCallerIdentity",), ("ssm:GetParameter",), ("cloudwatch:PutMetricData",)]


@pytest.mark.parametrize("text", [
    'aws "$service" describe-file-systems\n',
    'aws fsx "${COMMAND}"\n',
    'run() { aws "$@"; }\nrun fsx describe-file-systems\n',  # a wrapper this reader does not know
])
def test_the_reader_refuses_a_call_it_cannot_read(text):
    with pytest.raises(ReadError):
        for call in shell_calls(text, "s.sh"):
            iam_actions(call)


def test_python_calls_through_the_cli_and_boto3():
    text = '''
import boto3, subprocess
fsx = boto3.client("fsx")
fsx.describe_file_systems()
subprocess.run(["aws", "--region", region, "cloudwatch", "put-metric-data", "--namespace", ns])
"""aws ec2 terminate-instances in a docstring is no call"""
'''
    calls = python_calls(text, "n.py")
    assert [(c.line, c.service, c.command) for c in calls] == [
        (4, "fsx", "DescribeFileSystems"), (5, "cloudwatch", "put-metric-data")]
    assert [iam_actions(c) for c in calls] == [("fsx:DescribeFileSystems",),
                                               ("cloudwatch:PutMetricData",)]


def test_cli_commands_map_to_iam_actions_through_the_botocore_model():
    def call(service, command, *args):
        return AwsCall("s", 1, service, command, args)

    assert iam_actions(call("fsx", "describe-data-repository-tasks")) == (
        "fsx:DescribeDataRepositoryTasks",)
    assert iam_actions(call("s3", "cp", "--region", "r", '"$1"', '"${DIR}/$2"')) == (
        "s3:GetObject",)
    assert iam_actions(call("s3", "cp", "/tmp/f", "s3://b/k")) == ("s3:PutObject",)
    for bad in (call("fsx", "describe-everything"), call("elbv2", "describe-rules"),
                call("s3", "sync", "a", "b"), call("s3api", "head-object")):
        with pytest.raises(ReadError):
            iam_actions(bad)


def test_scripts_packed_in_mime_user_data_are_read():
    """EKS user data is a MIME multi-part document whose shell part unpacks a gzip + base64
    script (user data is limited to 16 KB): both are read."""
    import base64
    import gzip

    packed = base64.encodebytes(gzip.compress(
        b"#!/bin/bash\naws cloudwatch put-metric-data --namespace n\n", mtime=0)).decode()
    part = (f"#!/bin/bash\nbase64 -d <<'END' | gunzip > /opt/x.sh\n{packed}END\n"
            "bash /opt/x.sh\naws fsx describe-file-systems\n")
    user_data = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n--B\n'
                 f'Content-Type: text/x-shellscript; charset="us-ascii"\n\n{part}\n--B--\n')
    found = scripts_in_user_data(user_data, "LT", {})
    assert [source for source, _ in found] == ["user data of LT",
                                                "a script packed in the user data of LT"]
    assert [[(c.service, c.command) for c in shell_calls(text, source)]
            for source, text in found] == [[("fsx", "describe-file-systems")],
                                           [("cloudwatch", "put-metric-data")]]
