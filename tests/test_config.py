"""Configuration: layering, derived values, and the table of bad inputs with exact messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT, cdk_json_context
from trn_ultracluster.config import (
    ConfigError,
    ConfigIssue,
    load_config,
    parse_config,
    region_of_az_id,
)

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('unknown instance type', {'instance_type': 'trn3.48xlarge'},
     "error: instance_type = 'trn3.48xlarge': must be one of 'trn1.2xlarge', 'trn1.32xlarge', 'trn1n.32xlarge', 'trn2.48xlarge' or 'trn2u.48xlarge' (see https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html)"),
    ('trn1.2xlarge multi-node', {'instance_type': 'trn1.2xlarge', 'nodes.max': '2'},
     "error: nodes.max = 2: must be 1 for trn1.2xlarge, which has no EFA (single-node only); for more nodes use 'trn1.32xlarge', 'trn1n.32xlarge', 'trn2.48xlarge' or 'trn2u.48xlarge' (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html)"),
    ('AZ IDs from two regions', {'az_ids': 'usw2-az4,use1-az6'},
     "error: az_ids = ['usw2-az4', 'use1-az6']: must all be in one Region (usw2-az4 is in us-west-2, use1-az6 is in us-east-1) (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('malformed AZ ID', {'az_ids': 'us-west-2a,usw2-az1'},
     "error: az_ids[0] = 'us-west-2a': must be an AZ ID like 'usw2-az4' (AZ IDs name the same zone in every account; AZ names like 'us-west-2a' do not) (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('unknown region code', {'az_ids': 'usw2-az4,xyz9-az2'},
     "error: az_ids[1] = 'xyz9-az2': has an unknown Region code 'xyz9'; known: apne1, apne2, aps1, apse1, apse2, apse4, cac1, euc1, eun1, euw1, euw2, sae1, use1, use2, usw1, usw2 (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('one AZ ID', {'az_ids': 'usw2-az4'},
     "error: az_ids = ['usw2-az4']: must list at least 2 AZ IDs of one Region (first = compute AZ; a second for the services that need two AZs) (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('repeated AZ ID', {'az_ids': 'usw2-az4,usw2-az4'},
     "error: az_ids = ['usw2-az4', 'usw2-az4']: must not repeat an AZ ID (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('FSx capacity not a step', {'fsx.storage_capacity_gib': '3000'},
     'error: fsx.storage_capacity_gib = 3000: must be 1200, 2400 or a multiple of 2400 GiB for PERSISTENT_2 (see https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-fsx-filesystem.html#cfn-fsx-filesystem-storagecapacity)'),
    ('SCRATCH_1 capacity step', {'fsx.deployment_type': 'SCRATCH_1', 'fsx.storage_capacity_gib': '4800', 'fsx.per_unit_storage_throughput': 'null', 'fsx.data_repository': 'null', 'data_removal_policy': 'destroy'},
     'error: fsx.storage_capacity_gib = 4800: must be 1200, 2400 or a multiple of 3600 GiB for SCRATCH_1 (see https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-fsx-filesystem.html#cfn-fsx-filesystem-storagecapacity)'),
    ('throughput not allowed', {'fsx.per_unit_storage_throughput': '300'},
     'error: fsx.per_unit_storage_throughput = 300: must be 125, 250, 500 or 1000 MB/s/TiB for PERSISTENT_2 (see https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-fsx-filesystem-lustreconfiguration.html#cfn-fsx-filesystem-lustreconfiguration-perunitstoragethroughput)'),
    ('throughput on scratch', {'fsx.deployment_type': 'SCRATCH_2', 'fsx.per_unit_storage_throughput': '200'},
     'error: fsx.per_unit_storage_throughput = 200: must be null for SCRATCH_2 (only PERSISTENT_1 and PERSISTENT_2 take a throughput) (see https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-fsx-filesystem-lustreconfiguration.html#cfn-fsx-filesystem-lustreconfiguration-perunitstoragethroughput)'),
    ('Lustre 2.10 on PERSISTENT_2', {'fsx.lustre_version': '2.10'},
     "error: fsx.lustre_version = '2.10': must be '2.12' or '2.15' for PERSISTENT_2 (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-lustre-version.html)"),
    ('DRA on SCRATCH_1', {'fsx.deployment_type': 'SCRATCH_1', 'fsx.per_unit_storage_throughput': 'null'},
     "error: fsx.data_repository = 'default link': needs fsx.deployment_type 'SCRATCH_2', 'PERSISTENT_1' or 'PERSISTENT_2' with fsx.lustre_version '2.12' or '2.15' (got SCRATCH_1, 2.15); set it to null otherwise (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)"),
    ('DRA bad S3 path', {'fsx.data_repository.s3_path': 'my-bucket/data'},
     "error: fsx.data_repository.s3_path = 'my-bucket/data': must be an S3 URI like 's3://my-bucket/prefix/' or null for the stack's data bucket (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)"),
    ('DRA relative path', {'fsx.data_repository.file_system_path': 's3'},
     "error: fsx.data_repository.file_system_path = 's3': must be '/' (the whole file system) or an absolute directory path like '/s3' (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)"),
    ('retain without a data repository', {'fsx.data_repository': 'null'},
     "error: data_removal_policy = 'retain': needs fsx.data_repository: 'retain' exports the file system to S3 before cdk destroy deletes it; without a data repository there is nowhere to export to. Link one (the default), or set data_removal_policy 'destroy' to delete the file system's contents with the stack (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)"),
    ('deployer is an STS session', {'eks.deployer_principal_arn': 'arn:aws:sts::123456789012:assumed-role/Admin/alice'},
     "error: eks.deployer_principal_arn = 'arn:aws:sts::123456789012:assumed-role/Admin/alice': must be an IAM role or user ARN like 'arn:aws:iam::123456789012:role/Admin' (an assumed-role session ARN names its role: arn:aws:iam::<account>:role/<role name>) (see https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html)"),
    ('unknown image build', {'training_image.build': 'docker'},
     "error: training_image.build = 'docker': must be 'codebuild' or 'local' (see README.md#configuration)"),
    ('unknown deployment type', {'fsx.deployment_type': 'PERSISTENT_3'},
     "error: fsx.deployment_type = 'PERSISTENT_3': must be 'SCRATCH_1', 'SCRATCH_2', 'PERSISTENT_1' or 'PERSISTENT_2' (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html)"),
    ('negative node count', {'nodes.min': '-1'},
     'error: nodes.min = -1: must be 0 or more (see README.md#configuration)'),
    ('min > max', {'nodes.min': '3', 'nodes.max': '2'},
     'error: nodes.min = 3: must be at most nodes.max (2) (see README.md#configuration)'),
    ('desired > max', {'nodes.desired': '5', 'nodes.max': '2'},
     'error: nodes.desired = 5: must be between nodes.min (0) and nodes.max (2) (see README.md#configuration)'),
    ('max zero', {'nodes.max': '0', 'nodes.desired': '0'},
     'error: nodes.max = 0: must be at least 1 (use nodes.desired = 0 to idle) (see README.md#configuration)'),
    ('count not a number', {'nodes.max': 'many'},
     "error: nodes.max = 'many': must be a whole number (see README.md#configuration)"),
    ('CIDR too small', {'vpc_cidr': '10.0.0.0/22', 'nodes.max': '16', 'nodes.desired': '16'},
     "error: vpc_cidr = '10.0.0.0/22': is too small: 16 nodes x 118 addresses (8 interfaces + 110 pods) need a /21 private subnet in each of 2 AZs plus a /24 public one; use a /19 or larger (see https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html)"),
    ('CIDR malformed', {'vpc_cidr': '10.0.0.0/33'},
     "error: vpc_cidr = '10.0.0.0/33': must be an IPv4 CIDR block like '10.0.0.0/16' ('10.0.0.0/33' does not appear to be an IPv4 or IPv6 network) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('CIDR host bits', {'vpc_cidr': '10.0.0.1/16'},
     "error: vpc_cidr = '10.0.0.1/16': must be an IPv4 CIDR block like '10.0.0.0/16' (10.0.0.1/16 has host bits set) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('CIDR too large', {'vpc_cidr': '10.0.0.0/8'},
     "error: vpc_cidr = '10.0.0.0/8': must be an IPv4 block between /16 and /28 (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('NAT count', {'nat_gateways': '3'},
     'error: nat_gateways = 3: must be 1 or 2 (one, or one per AZ ID) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-nat-gateway.html)'),
    ('Capacity Block with placement group', {'capacity.type': 'capacity-block', 'capacity.reservation_id': 'cr-0123456789abcdef0'},
     "error: placement_group = True: must be false with capacity.type 'capacity-block' (Capacity Blocks are already placed close together and cannot be combined with a cluster placement group) (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html)"),
    ('reservation without id', {'capacity.type': 'capacity-reservation'},
     "error: capacity.reservation_id = None: must be set (cr-...) when capacity.type is 'capacity-reservation' (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html)"),
    ('malformed reservation id', {'capacity.type': 'capacity-reservation', 'capacity.reservation_id': 'cr-xyz'},
     "error: capacity.reservation_id = 'cr-xyz': must be 'cr-' followed by 8 or 17 hex digits (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html)"),
    ('reservation id on on-demand', {'capacity.reservation_id': 'cr-0123456789abcdef0'},
     "error: capacity.reservation_id = 'cr-0123456789abcdef0': must be null when capacity.type is 'on-demand' (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html)"),
    ('unknown orchestrator', {'orchestrator': 'slurm'},
     "error: orchestrator = 'slurm': must be 'eks' or 'hyperpod-slurm' (see README.md#configuration)"),
    ('hyperpod without ml. type', {'orchestrator': 'hyperpod-slurm', 'instance_type': 'trn1.2xlarge'},
     "error: orchestrator = 'hyperpod-slurm': cannot run trn1.2xlarge: SageMaker HyperPod offers 'trn1.32xlarge', 'trn1n.32xlarge' or 'trn2.48xlarge'; use orchestrator 'eks' or another instance type (see https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod.html)"),
    ('unknown top-level key', {'instance_typo': 'trn1.32xlarge'},
     "error: instance_typo = 'trn1.32xlarge': is not a known key; known keys here: az_ids, capacity, data_removal_policy, efa_interface_layout, eks, fsx, hyperpod, instance_type, nat_gateways, nodes, orchestrator, placement_group, root_volume_gib, tags, training_image, vpc_cidr (see README.md#configuration)"),
    ('unknown nested key', {'fsx.capacity': '1200'},
     'error: fsx.capacity = 1200: is not a known key; known keys here: data_compression, data_repository, deployment_type, lustre_version, per_unit_storage_throughput, storage_capacity_gib (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html)'),
    ('root volume too small', {'root_volume_gib': '8'},
     'error: root_volume_gib = 8: must be between 64 and 16384 GiB (see https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html)'),
    ('reserved tag key', {'trn-ultracluster': {'tags': {'aws:owner': 'me'}}},
     "error: tags.aws:owner = 'me': tag keys must be 1-128 characters and not start with 'aws:' (see https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html)"),
    ('unknown removal policy', {'data_removal_policy': 'snapshot'},
     "error: data_removal_policy = 'snapshot': must be 'retain' or 'destroy' (see README.md#configuration)"),
    ('unknown EFA layout', {'efa_interface_layout': 'ena'},
     "error: efa_interface_layout = 'ena': must be 'efa' or 'efa-only' (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html)"),
    ('dotted key below a number', {'nodes.max.x': '1'},
     "error: nodes.max.x = '1': cannot be set: nodes.max is the int 1, not a mapping of keys (see README.md#configuration)"),
    ('dotted key below a list', {'az_ids.0': 'usw2-az1'},
     "error: az_ids.0 = 'usw2-az1': cannot be set: az_ids is a list, not a mapping of keys; give the whole list: -c az_ids=a,b (see README.md#configuration)"),
    ('public VPC range', {'vpc_cidr': '8.8.0.0/16'},
     "error: vpc_cidr = '8.8.0.0/16': must lie in a private range: 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16 (RFC 1918) or 100.64.0.0/10 (RFC 6598) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('loopback VPC range', {'vpc_cidr': '127.0.0.0/16'},
     "error: vpc_cidr = '127.0.0.0/16': must lie in a private range: 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16 (RFC 1918) or 100.64.0.0/10 (RFC 6598) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('multicast VPC range', {'vpc_cidr': '224.0.0.0/16'},
     "error: vpc_cidr = '224.0.0.0/16': must lie in a private range: 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16 (RFC 1918) or 100.64.0.0/10 (RFC 6598) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('too many nodes', {'nodes.max': '999999'},
     'error: nodes.max = 999999: must be at most 5000 (the largest Kubernetes cluster) (see https://kubernetes.io/docs/setup/best-practices/cluster-large/)'),
    ('more nodes than any VPC holds', {'nodes.max': '400'},
     "error: vpc_cidr = '10.0.0.0/16': is too small: 400 nodes x 118 addresses (8 interfaces + 110 pods) need a /16 private subnet in each of 2 AZs plus a /24 public one; no VPC is that large (at most /16); with 2 AZ IDs at most 138 nodes fit: lower nodes.max (see https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html)"),
    ('FSx beyond the API maximum', {'fsx.storage_capacity_gib': str(2400 * 10 ** 9)},
     'error: fsx.storage_capacity_gib = 2400000000000: must be at most 2147483647 GiB (the FSx API\'s maximum) (see https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-fsx-filesystem.html#cfn-fsx-filesystem-storagecapacity)'),
    ('float-looking Lustre version', {'fsx.lustre_version': 2.150001},
     "error: fsx.lustre_version = '2.150001': must be '2.10', '2.12' or '2.15' (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html)"),
    ('reserved tag key through -c', {'tags.AWS:cost': 'me'},
     "error: tags.AWS:cost = 'me': tag keys must be 1-128 characters and not start with 'aws:' (see https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html)"),
    ('tag value CloudFormation rejects', {'tags.team': 'a;b'},
     "error: tags.team = 'a;b': tag values may hold letters, digits, spaces and + - = . _ : / @ only (see https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html)"),
    ('empty profile name', {'config': ''},
     "error: config = '': must name a YAML profile file, e.g. profiles/dev.yaml (it is empty) (see README.md#configuration)"),
    ('missing profile', {'config': 'profiles/nope.yaml'},
     "error: config = 'profiles/nope.yaml': must name an existing YAML profile file, e.g. profiles/dev.yaml (see README.md#configuration)"),
]


def _load(overrides):
    context = cdk_json_context()
    context.update(overrides)
    return load_config(context, base_dir=REPO_ROOT)


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    with pytest.raises(ConfigError) as err:
        _load(overrides)
    errors = [i for i in err.value.issues if i.severity == "error"]
    assert [str(e) for e in errors] == [message]
    assert message in str(err.value)


def test_bad_input_table_is_distinct_and_large_enough():
    assert len(BAD_INPUTS) >= 20
    assert len({m for _, _, m in BAD_INPUTS}) == len(BAD_INPUTS)
    for _, _, message in BAD_INPUTS:  # field, value, what is allowed, a doc link
        assert message.startswith("error: ") and " = " in message and "(see " in message


def test_az_where_type_was_never_seen_is_a_warning_not_an_error():
    loaded = _load({"az_ids": "usw2-az3,usw2-az1"})
    assert loaded.config.compute_az_id == "usw2-az3"
    (warning,) = [w for w in loaded.warnings if w.field.startswith("az_ids")]
    assert warning.field == "az_ids[0]" and warning.severity == "warning"
    assert "has not been seen offered there" in str(warning)
    assert "preflight" in str(warning)


def test_default_config_is_valid():
    loaded = _load({})
    # orchestrator settings may warn about their defaults; the foundation's are silent
    assert [w for w in loaded.warnings if w.field.split(".")[0] not in ("eks", "hyperpod")] == []
    c = loaded.config
    assert (c.instance_type, c.region, c.compute_az_id) == ("trn1.32xlarge", "us-west-2", "usw2-az4")
    assert (c.fsx.deployment_type, c.fsx.storage_capacity_gib) == ("PERSISTENT_2", 1200)
    assert (c.fsx.per_unit_storage_throughput, c.fsx.data_compression) == (250, "LZ4")
    assert c.fsx.lustre_version == "2.15"


def test_layers_defaults_then_cdk_json_then_profile_then_dash_c():
    context = cdk_json_context()
    context["trn-ultracluster"] = {"root_volume_gib": 200, "nodes": {"max": 4}}
    context["config"] = "profiles/dev.yaml"  # sets nodes {0, 1, 1}
    context["nodes.max"] = "3"
    context["az_ids"] = "usw2-az1,usw2-az4"
    c = load_config(context, base_dir=REPO_ROOT).config
    assert c.root_volume_gib == 200  # cdk.json object, untouched by the profile
    assert c.nodes.max == 3  # -c beats the profile, which beat cdk.json
    assert c.nodes.desired == 1  # from the profile
    assert c.az_ids == ("usw2-az1", "usw2-az4")  # comma list from -c
    assert c.tags["env"] == "dev"
    assert c.fsx.per_unit_storage_throughput == 125


def test_loading_does_not_change_the_given_context():
    context = cdk_json_context()
    before = json.dumps(context, sort_keys=True)
    load_config({**context, "fsx.storage_capacity_gib": "2400"}, base_dir=REPO_ROOT)
    assert json.dumps(context, sort_keys=True) == before


def test_dash_c_values_are_typed_like_yaml():
    c = _load({"placement_group": "false", "nodes.max": "2", "fsx.lustre_version": "2.12",
               "fsx.data_repository": "null", "data_removal_policy": "destroy"}).config
    assert c.placement_group is False and c.nodes.max == 2
    assert c.fsx.lustre_version == "2.12" and c.fsx.data_repository is None


def test_yaml_float_lustre_version_keeps_two_decimals():
    assert parse_config({"fsx": {"lustre_version": 2.12}}).config.fsx.lustre_version == "2.12"


def test_config_is_frozen():
    c = _load({}).config
    with pytest.raises(Exception):
        c.instance_type = "trn2.48xlarge"


def test_cdk_keys_are_not_taken_for_config_keys():
    loaded = _load({"@aws-cdk/core:newStyleStackSynthesis": True, "aws:cdk:enable-path-metadata": True})
    assert loaded.config.instance_type == "trn1.32xlarge"


@pytest.mark.parametrize("text, error", [
    ("instance_type: [unclosed", "must be valid YAML"),
    ("- a\n- list\n", "must hold a YAML mapping of config keys, got list"),
])
def test_bad_profile_file(tmp_path, text, error):
    profile = tmp_path / "p.yaml"
    profile.write_text(text)
    with pytest.raises(ConfigError, match=error):
        _load({"config": str(profile)})


@pytest.mark.parametrize("az_id, region", [
    ("usw2-az4", "us-west-2"), ("use1-az6", "us-east-1"), ("use2-az3", "us-east-2"),
    ("apse4-az1", "ap-southeast-4"), ("aps1-az2", "ap-south-1"),
])
def test_region_from_az_id(az_id, region):
    assert region_of_az_id(az_id) == region


def test_private_subnets_fit_the_node_count():
    big = _load({"nodes.max": "64", "nodes.desired": "64"}).config
    # 64 nodes x (8 EFA interfaces + 110 pods) + 5 reserved = 7557 addresses -> /19
    assert big.ips_per_node == 118 and big.private_subnet_mask == 19
    small = _load({}).config
    assert small.private_subnet_mask == 20  # at least a /20 when the VPC has room
    efa_only = _load({"efa_interface_layout": "efa-only"}).config
    assert efa_only.ips_per_node == 111  # only the ENA primary takes an address


def test_issue_text_names_field_value_allowed_and_doc():
    issue = ConfigIssue("fsx.storage_capacity_gib", 3000, "must be ...", "https://doc")
    assert str(issue) == "error: fsx.storage_capacity_gib = 3000: must be ... (see https://doc)"


def test_app_exits_2_and_writes_no_template(tmp_path):
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path),
           "CDK_CONTEXT_JSON": json.dumps({**cdk_json_context(), "nodes.min": "-1"})}
    result = subprocess.run([sys.executable, "app.py"], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "error: nodes.min = -1: must be 0 or more" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_readme_documents_every_configuration_key():
    from trn_ultracluster.config import CapacityConfig, ClusterConfig, FsxConfig, NodeCounts

    readme = (REPO_ROOT / "README.md").read_text()
    keys = [f"`{k}" for k in ClusterConfig.model_fields]
    keys += [f"`fsx.{k}" for k in FsxConfig.model_fields]
    keys += [f"nodes.{k}" for k in NodeCounts.model_fields]
    keys += [f"`capacity.{k}" for k in CapacityConfig.model_fields]
    missing = [k for k in keys if k not in readme]
    assert not missing, f"README.md does not document {missing}"


def _errors(overrides, tmp_files=None):
    with pytest.raises(ConfigError) as err:
        _load(overrides)
    return [str(e) for e in err.value.issues if e.severity == "error"]


def test_every_problem_is_reported_also_when_a_type_is_wrong():
    errors = _errors({"nodes.max": "many", "fsx.storage_capacity_gib": "3000",
                      "az_ids": "usw2-az4,use1-az6"})
    assert [e.split(" = ")[0] for e in errors] == [
        "error: nodes.max", "error: az_ids", "error: fsx.storage_capacity_gib"]
    # no second-order complaint about the bad field's default (nodes.desired vs nodes.max)
    assert not any("nodes.desired" in e for e in errors)


def test_a_key_set_twice_on_the_command_line_and_below_it_is_reported_not_a_crash():
    errors = _errors({"nodes": "5", "nodes.max": "3"})
    assert "error: nodes.max = '3': cannot be set: nodes is the int 5, not a mapping of keys" in errors[0]
    assert errors[1].startswith("error: nodes = 5: must be a mapping")


def test_tag_keys_with_slashes_and_colons_are_kept():
    tags = _load({"tags.team/owner": "ml", "tags.app:name": "trn", "tags.k8s.io/x": "y"}).config.tags
    assert {"team/owner": "ml", "app:name": "trn", "k8s.io/x": "y"}.items() <= tags.items()


def test_a_long_value_is_cut_in_the_message():
    (error,) = _errors({"instance_type": "x" * 5000})
    assert len(error) < 400 and "... (5002 characters)" in error


def test_known_float_versions_still_read_as_text():
    config = _load({"fsx.lustre_version": 2.1, "fsx.deployment_type": "PERSISTENT_1",
                    "fsx.per_unit_storage_throughput": "200", "fsx.data_repository": "null",
                    "data_removal_policy": "destroy"}).config
    assert config.fsx.lustre_version == "2.10"


def test_storage_above_the_default_quota_warns():
    loaded = _load({"fsx.storage_capacity_gib": "105600"})
    (warning,) = [w for w in loaded.warnings if w.field == "fsx.storage_capacity_gib"]
    assert "default FSx for Lustre storage quota of 100800 GiB" in warning.message


@pytest.mark.parametrize("content, error", [
    (b"", "is empty: a profile holds a YAML mapping of config keys"),
    (b"# only a comment\n", "is empty: a profile holds a YAML mapping of config keys"),
    (b"nodes: {max: 2}\nnodes: {max: 4}\n", "found the key 'nodes' twice"),
    (b"instance_type: trn1.32xlarge\n\xff\xfe\n", "must be UTF-8 text (byte 29 is not)"),
])
def test_bad_profile_files(tmp_path, content, error):
    path = tmp_path / "p.yaml"
    path.write_bytes(content)
    (message,) = _errors({"config": str(path)})
    assert message.startswith(f"error: config = {str(path)!r}: ")
    assert error in message and "\n" not in message
