"""``data``: staging a dataset in the stack's bucket (moto S3) and where jobs see it; sources
and buckets that do not work are clean errors."""

from __future__ import annotations

import boto3
import moto

from tests.cli.helpers import REGION, outputs_values, run, write_outputs
from trn_ultracluster.cli.errors import ExitCode


@moto.mock_aws
def test_data_upload_and_cluster_path(capsys, tmp_path):
    boto3.client("s3", region_name=REGION).create_bucket(
        Bucket="trn-data-bucket", CreateBucketConfiguration={"LocationConstraint": REGION})
    src = tmp_path / "wiki"
    (src / "shards").mkdir(parents=True)
    (src / "manifest.json").write_text("{}")
    (src / "shards" / "0.bin").write_bytes(b"\0" * 1000)
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, out, _ = run(capsys, "data", "--outputs-file", str(path), str(src), "--no-progress")
    assert code == 0
    assert "uploaded 2 files (1002 bytes) to s3://trn-data-bucket/datasets/wiki/" in out
    assert "on the cluster: /fsx/datasets/wiki" in out  # the whole file system is linked
    keys = sorted(o["Key"] for o in boto3.client("s3", region_name=REGION).list_objects_v2(
        Bucket="trn-data-bucket")["Contents"])
    assert keys == ["datasets/wiki/manifest.json", "datasets/wiki/shards/0.bin"]


def test_data_missing_source(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "data", "--outputs-file", str(path), str(tmp_path / "nope"))
    assert code == ExitCode.USAGE and "does not exist" in err


def test_data_source_that_is_not_a_file_or_directory(capsys, tmp_path):
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "data", "--outputs-file", str(outputs), "/dev/null")
    assert code == ExitCode.USAGE
    assert "error: /dev/null is not a regular file or directory" in err


@moto.mock_aws
def test_data_to_a_missing_bucket(capsys, tmp_path):
    """boto3 raises S3UploadFailedError (not a ClientError) from upload_file."""
    src = tmp_path / "wiki"
    src.mkdir()
    (src / "manifest.json").write_text("{}")
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "data", "--outputs-file", str(outputs), str(src), "--no-progress")
    assert code == ExitCode.STACK
    assert "error: upload to s3://trn-data-bucket/datasets/wiki: bucket trn-data-bucket does not exist" in err
    assert "fix: the outputs are of a deleted stack" in err
