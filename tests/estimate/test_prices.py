"""Prices: the offline table, and the AWS Price List API through a botocore Stubber (the
requests are checked against botocore's pricing model)."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber

from trn_ultracluster.contracts.catalog import CPU_CATALOG
from trn_ultracluster.estimate.prices import OFFLINE, OfflinePrices, PriceListPrices


def product(usagetype: str, usd: str, unit: str = "Hrs") -> str:
    """One PriceList entry as GetProducts returns it (a JSON string per product)."""
    return json.dumps({
        "product": {"productFamily": "Compute Instance", "sku": "SKU1",
                    "attributes": {"usagetype": usagetype, "regionCode": "us-west-2"}},
        "serviceCode": "AmazonEC2",
        "terms": {"OnDemand": {"SKU1.JRTCKXETXF": {
            "offerTermCode": "JRTCKXETXF", "sku": "SKU1", "effectiveDate": "2026-11-01T00:00:00Z",
            "termAttributes": {},
            "priceDimensions": {"SKU1.JRTCKXETXF.6YS6EN2CT7": {
                "unit": unit, "pricePerUnit": {"USD": usd}, "description": "per hour",
                "rateCode": "SKU1.JRTCKXETXF.6YS6EN2CT7", "beginRange": "0", "endRange": "Inf",
                "appliesTo": []}}}}},
        "version": "20261101000000", "publicationDate": "2026-11-01T00:00:00Z"})


@pytest.fixture
def live():
    session = boto3.Session(aws_access_key_id="x", aws_secret_access_key="y",
                            region_name="us-west-2")
    prices = PriceListPrices(session, "us-west-2")
    with Stubber(prices._client) as stub:
        yield prices, stub
        stub.assert_no_pending_responses()


def test_every_offline_price_names_its_source_and_unit():
    for key, price in OFFLINE.items():
        assert price.usd > 0 and price.unit in {"hour", "GB-month"} and len(price.source) > 20, key


def test_ec2_instance_price_from_the_price_list(live):
    prices, stub = live
    stub.add_response("get_products", {"PriceList": [
        product("USW2-UnusedBox:trn1.32xlarge", "9.9"),
        product("USW2-BoxUsage:trn1.32xlarge", "21.5000000000")], "FormatVersion": "aws_v1"},
        {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "Filters": ANY})
    price = prices.price(("ec2", "trn1.32xlarge"))
    assert (price.usd, price.unit, price.verified) == (21.5, "hour", True)
    assert prices.price(("ec2", "trn1.32xlarge")) is price  # cached: no second request


@pytest.mark.parametrize("instance_type", sorted(CPU_CATALOG))
def test_every_cpu_pool_type_has_an_offline_price_and_a_live_one(live, instance_type):
    """The CPU catalog's types are priced like the Trainium ones: an offline us-east-1 row
    (third-party tables, unverified) and the Price List API's On-Demand Linux product, asked
    for with the instance type's own filter."""
    offline = OFFLINE[("ec2", instance_type)]
    assert offline.unit == "hour" and not offline.verified and 0.5 < offline.usd < 5
    prices, stub = live
    filters = [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in (
        ("regionCode", "us-west-2"), ("instanceType", instance_type),
        ("operatingSystem", "Linux"), ("tenancy", "Shared"), ("preInstalledSw", "NA"),
        ("capacitystatus", "Used"), ("licenseModel", "No License required"))]
    stub.add_response("get_products", {"PriceList": [
        product(f"USW2-BoxUsage:{instance_type}", "1.2345")]},
        {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "Filters": filters})
    price = prices.price(("ec2", instance_type))
    assert (price.usd, price.verified) == (1.2345, True)


def test_eks_and_nat_gateway_prices_pick_their_usage_type(live):
    prices, stub = live
    stub.add_response("get_products", {"PriceList": [
        product("USW2-AmazonEKS-Hours:perCluster", "0.1000000000")]},
        {"ServiceCode": "AmazonEKS", "FormatVersion": "aws_v1", "Filters": ANY})
    stub.add_response("get_products", {"PriceList": [
        product("USW2-NatGateway-Bytes", "0.045", unit="GB"),
        product("USW2-RegionalNatGateway-Hours", "0.99"),
        product("USW2-NatGateway-Hours", "0.0450000000")]},
        {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "Filters": ANY})
    assert prices.price(("eks", "cluster")).usd == 0.1
    assert prices.price(("nat-gateway", "hour")).usd == 0.045


def test_what_the_price_list_does_not_answer_comes_from_the_table(live):
    prices, stub = live
    stub.add_response("get_products", {"PriceList": []},
                      {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "Filters": ANY})
    assert prices.price(("ec2", "trn1.2xlarge")) == OFFLINE[("ec2", "trn1.2xlarge")]
    fsx = ("fsx-lustre", "PERSISTENT_2/250")
    assert prices.price(fsx) == OFFLINE[fsx]  # no request: FSx products are not matched


def test_price_list_errors_reach_the_caller(live):
    prices, stub = live
    stub.add_client_error("get_products", "AccessDeniedException", http_status_code=400)
    with pytest.raises(ClientError):
        prices.price(("ec2", "trn1.32xlarge"))


def test_offline_source_says_when_the_stack_is_elsewhere():
    assert "us-west-2" in OfflinePrices("us-west-2").name
    assert OfflinePrices("us-east-1").price(("ec2", "trn2.48xlarge")) is None


def test_a_whole_estimate_from_the_price_list(live, default):
    """The default stack priced through the Stubber: one request per live-priced item, in
    the template's order; FSx from the table."""
    from trn_ultracluster.estimate import estimate

    prices, stub = live
    answers = {"nat-gateway": ("AmazonEC2", "USW2-NatGateway-Hours", "0.05"),
               "eks": ("AmazonEKS", "USW2-AmazonEKS-Hours:perCluster", "0.11"),
               "m6i.xlarge": ("AmazonEC2", "USW2-BoxUsage:m6i.xlarge", "0.2"),
               "trn1.32xlarge": ("AmazonEC2", "USW2-BoxUsage:trn1.32xlarge", "22")}
    from trn_ultracluster.estimate import bill_of_materials

    for item in bill_of_materials(default.template).items:
        name = item.key[1] if item.key[0] == "ec2" else item.key[0]
        if name in answers:
            service, usage, usd = answers.pop(name)
            stub.add_response("get_products", {"PriceList": [product(usage, usd)]},
                              {"ServiceCode": service, "FormatVersion": "aws_v1", "Filters": ANY})
    assert not answers
    est = estimate(default.template, prices)
    live_lines = [line for line in est.lines if line.price.source == "AWS Price List API"]
    assert len(live_lines) == 4
    assert est.running_usd == pytest.approx(
        0.05 * default.config.nat_gateways + 0.11 + 2 * 0.2 + 22 * default.config.nodes.max
        + default.config.fsx.storage_capacity_gib * 0.210 / 730)
