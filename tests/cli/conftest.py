"""Every job CLI test runs with fake AWS credentials (moto) and no AWS config files."""

from __future__ import annotations

import pytest

from tests.cli.helpers import REGION


@pytest.fixture(autouse=True)
def fake_aws_env(monkeypatch, tmp_path):
    """Fake credentials for moto; no real AWS config is read."""
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))


@pytest.fixture(autouse=True)
def no_synthesized_stack(monkeypatch, tmp_path):
    """``preflight`` and ``estimate`` read ``cdk.out`` of the working directory by default:
    point the default at an empty place, so a developer's own ``make synth`` does not change
    what the tests see (tests that want a template pass ``--cdk-out``)."""
    from trn_ultracluster.cli.commands import estimate

    monkeypatch.setattr(estimate, "DEFAULT_CDK_OUT", tmp_path / "cdk.out")
