"""Rules of FSx for Lustre: capacity, throughput, Lustre version, data repository,
what ``data_removal_policy: retain`` needs."""

from __future__ import annotations

import pytest

from tests.config import check_one_error, load, warnings_about

DRA_PATH_RULE = ": must be '/' (the whole file system) or an absolute directory path like '/s3': levels of letters, digits and '_.-', none of them '.' or '..', no trailing '/', at most 4096 characters (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)"

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    # zero capacity: one error, no division by zero in the throughput-per-node rule
    ('FSx capacity zero', {'fsx.storage_capacity_gib': '0'},
     'error: fsx.storage_capacity_gib = 0: must be 1200, 2400 or a multiple of 2400 GiB for PERSISTENT_2 (see https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-fsx-filesystem.html#cfn-fsx-filesystem-storagecapacity)'),
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
     "error: fsx.data_repository = 'default link': must be null unless fsx.deployment_type is 'SCRATCH_2', 'PERSISTENT_1' or 'PERSISTENT_2' and fsx.lustre_version is '2.12' or '2.15' (got SCRATCH_1, 2.15) (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)"),
    ('DRA bad S3 path', {'fsx.data_repository.s3_path': 'my-bucket/data'},
     "error: fsx.data_repository.s3_path = 'my-bucket/data': must be an S3 URI like 's3://my-bucket/prefix/' or null for the stack's data bucket (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)"),
    ('DRA relative path', {'fsx.data_repository.file_system_path': 's3'},
     "error: fsx.data_repository.file_system_path = 's3'" + DRA_PATH_RULE),
    ('DRA path escaping the root', {'fsx.data_repository.file_system_path': '/a/../..'},
     "error: fsx.data_repository.file_system_path = '/a/../..'" + DRA_PATH_RULE),
    ('DRA path with a dot level', {'fsx.data_repository.file_system_path': '/s3/./data'},
     "error: fsx.data_repository.file_system_path = '/s3/./data'" + DRA_PATH_RULE),
    ('DRA path with a trailing slash', {'fsx.data_repository.file_system_path': '/s3/'},
     "error: fsx.data_repository.file_system_path = '/s3/'" + DRA_PATH_RULE),
    ('DRA path too long', {'fsx.data_repository.file_system_path': '/' + 'a' * 4096},
     "error: fsx.data_repository.file_system_path = '/" + "a" * 115 + "... (4099 characters)"
     + DRA_PATH_RULE),
    ('retain without a data repository', {'fsx.data_repository': 'null'},
     "error: data_removal_policy = 'retain': must be 'destroy' when fsx.data_repository is null: 'retain' exports the file system to S3 before cdk destroy deletes it, and without a data repository there is nowhere to export to. Link one (the default) to keep the file system's contents, or set 'destroy' to delete them with the stack (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)"),
    ('FSx beyond the API maximum', {'fsx.storage_capacity_gib': '2400000000000'},
     "error: fsx.storage_capacity_gib = 2400000000000: must be at most 2147483647 GiB (the FSx API's maximum) (see https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-fsx-filesystem.html#cfn-fsx-filesystem-storagecapacity)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


# (case, context overrides, field, the exact warning about it; the configuration stays valid)
WARNINGS = [
    ('storage above the default quota', {'fsx.storage_capacity_gib': '105600'}, 'fsx.storage_capacity_gib',
     'warning: fsx.storage_capacity_gib = 105600: should be at most the default FSx for Lustre storage quota of 100800 GiB per account and Region (25,200 in smaller Regions) unless yours was raised: otherwise the file system fails to create (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/limits.html)'),
    ('retain with part of the file system linked', {'fsx.data_repository.file_system_path': '/s3'}, 'fsx.data_repository.file_system_path',
     "warning: fsx.data_repository.file_system_path = '/s3': should be '/' with data_removal_policy 'retain': files outside the linked path (e.g. the Neuron compile cache) are not exported and are deleted with the file system on cdk destroy (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html)"),
]


@pytest.mark.parametrize("case, overrides, field, message", WARNINGS, ids=[c[0] for c in WARNINGS])
def test_warning_gives_one_exact_message(case, overrides, field, message):
    assert warnings_about(overrides, field) == [message]


def test_storage_above_the_default_quota_warns():
    loaded = load({"fsx.storage_capacity_gib": "105600"})
    (warning,) = [w for w in loaded.warnings if w.field == "fsx.storage_capacity_gib"]
    assert "default FSx for Lustre storage quota of 100800 GiB" in warning.message
