"""``estimate`` and the estimate in ``preflight``: the synthesized stack's itemized hourly
cost and deploy time; the Price List API when credentials exist, the offline table
otherwise or when the API fails; the budget warning."""

from __future__ import annotations

import json

import moto
import pytest
from botocore.exceptions import ClientError

from tests.cli.helpers import Session, bootstrap, docker_ok, quota_client, run
from tests.conftest import REPO_ROOT
from trn_ultracluster.cli.commands.estimate import estimate_text
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.estimate import prices


def test_estimate_offline_prints_every_item_and_the_deploy_time(capsys, default):
    code, out, err = run(capsys, "estimate", "--offline", "--cdk-out", str(default.outdir))
    assert code == 0, err
    assert "prices: offline table of" in out
    assert f"EKS node group EksClusterNodegroupTrainiumNodes: {default.config.instance_type}" in out
    assert "total per hour: idle $" in out and "first deploy: about" in out
    # without the configuration, the reason the stack wrote in the FsxEfa output
    assert ("\n  EFA: off (auto): the file system's throughput is not above 10,000 MB/s, "
            "from which AWS recommends EFA\n") in out
    assert "\n  smallest EFA-enabled size at 250 MB/s/TiB: 19,200 GiB" in out


def write_assembly(outdir, template, stack="TrnUltraCluster"):
    """A cloud assembly with one stack: its manifest entry and template."""
    (outdir / "manifest.json").write_text(json.dumps({"artifacts": {stack: {
        "type": "aws:cloudformation:stack",
        "properties": {"templateFile": f"{stack}.template.json"}}}}))
    (outdir / f"{stack}.template.json").write_text(json.dumps(template))


def test_estimate_without_a_synthesized_stack_says_what_to_run(capsys, tmp_path):
    code, _, err = run(capsys, "estimate", "--cdk-out", str(tmp_path))
    assert code == ExitCode.USAGE
    assert f"no synthesized stack in {tmp_path} (no manifest.json)" in err and "make synth" in err


def test_estimate_refuses_another_template(capsys, tmp_path):
    write_assembly(tmp_path, {"Resources": {}})
    code, _, err = run(capsys, "estimate", "--cdk-out", str(tmp_path))
    assert code == ExitCode.USAGE and "not a TrnUltraCluster template" in err


def test_estimate_falls_back_to_the_table_when_the_price_list_fails(capsys, default, monkeypatch):
    def denied(self, key):
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}},
                          "GetProducts")

    monkeypatch.setattr(prices.PriceListPrices, "_live", denied)
    code, out, err = run(capsys, "estimate", "--cdk-out", str(default.outdir))
    assert code == 0
    assert "the AWS Price List API failed" in err and "prices: offline table of" in out


def test_estimate_uses_the_price_list_with_credentials(default, monkeypatch):
    monkeypatch.setattr(prices.PriceListPrices, "_live",
                        lambda self, key: prices.Price(1.0, "hour", "AWS Price List API", True))
    text, running = estimate_text(default.template, offline=False,
                                  session=Session(pricing=object()))
    assert "prices: AWS Price List API (us-west-2)" in text
    assert "$1.00/hour" in text


@moto.mock_aws
@pytest.mark.parametrize("budget, warned", [("1", True), ("100000", False)])
def test_preflight_prints_the_estimate_and_warns_over_budget(capsys, monkeypatch, default,
                                                             budget, warned):
    from trn_ultracluster.cli import preflight

    bootstrap()
    real = preflight.run_preflight
    monkeypatch.setattr(preflight, "run_preflight", lambda s, c, r, **kw: real(
        Session(**{"service-quotas": quota_client(c)}), c, docker_ok, **kw))
    monkeypatch.chdir(REPO_ROOT)
    code, out, err = run(capsys, "preflight", "--offline", "--cdk-out", str(default.outdir),
                         "--max-hourly-usd", budget)
    assert code == 0, out + err
    assert "total per hour: idle $" in out
    # the configuration's reason (FsxEfaPlan.reason), not the template's
    assert ("\n  EFA: off (auto): the file system's throughput is not above 10,000 MB/s, from "
            "which AWS recommends EFA\n") in out
    # the configuration's quota needs reach the estimate: the Trn vCPU default is per account
    assert "quota increase: ec2 L-2C3B7624 Running On-Demand Trn instances: need 128 vCPUs" in out
    assert ("more than --max-hourly-usd" in err) is warned


@moto.mock_aws
def test_preflight_skips_an_estimate_of_another_configuration(capsys, monkeypatch, default):
    from trn_ultracluster.cli import preflight

    bootstrap()
    real = preflight.run_preflight
    monkeypatch.setattr(preflight, "run_preflight", lambda s, c, r, **kw: real(
        Session(**{"service-quotas": quota_client(c)}), c, docker_ok, **kw))
    monkeypatch.chdir(REPO_ROOT)
    code, out, _ = run(capsys, "preflight", "-c", "nodes.max=2", "-c", "nodes.desired=2",
                       "--cdk-out", str(default.outdir))
    assert code == 0
    assert "was synthesized from another configuration: NodeCountMax" in out


@pytest.mark.parametrize("bad", ["0", "-3", "nan", "inf", "lots"])
def test_the_budget_must_be_a_positive_number(capsys, bad):
    with pytest.raises(SystemExit) as done:
        run(capsys, "preflight", "--max-hourly-usd", bad)
    assert done.value.code == ExitCode.USAGE
    assert "argument --max-hourly-usd: " in capsys.readouterr().err


def test_estimate_of_a_broken_template_is_a_clear_error(capsys, tmp_path):
    template = {"Outputs": {"Region": {"Value": "us-west-2"}},
                "Resources": {"Nodes": {"Type": "AWS::EKS::Nodegroup", "Properties": {}}}}
    write_assembly(tmp_path, template)
    code, _, err = run(capsys, "estimate", "--offline", "--cdk-out", str(tmp_path))
    assert code == ExitCode.USAGE
    assert "cannot be priced" in err and "Traceback" not in err


@moto.mock_aws
def test_preflight_skips_an_estimate_of_another_efa_setting(capsys, monkeypatch, default,
                                                           tmp_path):
    """A template whose file system is EFA-enabled is not the configuration's (fsx.efa auto,
    off at 293 MB/s): EFA decides the file system, so its estimate would be another's."""
    from trn_ultracluster.cli import preflight

    template = json.loads(json.dumps(default.template))
    (fsx,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::FSx::FileSystem"]
    fsx["Properties"]["LustreConfiguration"]["EfaEnabled"] = True
    write_assembly(tmp_path, template)
    bootstrap()
    real = preflight.run_preflight
    monkeypatch.setattr(preflight, "run_preflight", lambda s, c, r, **kw: real(
        Session(**{"service-quotas": quota_client(c)}), c, docker_ok, **kw))
    monkeypatch.chdir(REPO_ROOT)
    code, out, _ = run(capsys, "preflight", "--offline", "--cdk-out", str(tmp_path))
    assert code == 0
    assert ("was synthesized from another configuration: EfaEnabled true (configuration: "
            "false)") in out
    assert "total per hour" not in out


@moto.mock_aws
def test_preflight_skips_an_estimate_of_other_pools(capsys, monkeypatch, default):
    """The same main pool, but the configuration has a CPU pool the template has not: the
    pools of the Pools output are compared too."""
    from trn_ultracluster.cli import preflight

    bootstrap()
    real = preflight.run_preflight
    monkeypatch.setattr(preflight, "run_preflight", lambda s, c, r, **kw: real(
        Session(**{"service-quotas": quota_client(c)}), c, docker_ok, **kw))
    monkeypatch.chdir(REPO_ROOT)
    pools = ("[{name: trainium, instance_type: trn1.32xlarge}, "
             "{name: cpu, instance_type: m7i.8xlarge}]")
    code, out, _ = run(capsys, "preflight", "-c", f"pools={pools}", "--cdk-out",
                       str(default.outdir))
    assert code == 0, out
    assert "preflight: trn1.32xlarge x 1 + m7i.8xlarge x 1 in usw2-az4" in out
    assert ("was synthesized from another configuration: Pools trainium: trn1.32xlarge x 1 "
            "(configuration: trainium: trn1.32xlarge x 1, cpu: m7i.8xlarge x 1)") in out
