"""Prices for :mod:`trn_ultracluster.estimate`: a dated offline table, and the AWS Price List
API when credentials exist.

Every price is in USD. A :class:`PriceKey` names what is priced:

- ``("ec2", "<instance type>")``: an On-Demand Linux EC2 instance, per hour;
- ``("sagemaker-cluster", "ml.<type>")``: a SageMaker HyperPod cluster instance, per hour;
- ``("eks", "cluster")``: an EKS control plane in standard support, per hour;
- ``("eks-pcp", "<tier>")``: an EKS Provisioned Control Plane scaling tier (``tier-xl`` ...),
  per hour, on top of ``("eks", "cluster")``;
- ``("nat-gateway", "hour")``: a NAT gateway, per hour (data processed is extra, per GB);
- ``("fsx-lustre", "<DEPLOYMENT_TYPE>/<MB/s/TiB or ->")``: FSx for Lustre SSD storage, per
  GB-month.

The offline table (:data:`OFFLINE`) holds US East (N. Virginia) list prices as of
:data:`OFFLINE_DATE`. Its figures could not all be read on AWS's own pricing pages from
here; each names its source and ``verified`` says whether that source is AWS's. The Price
List API (:class:`PriceListPrices`) answers for EC2 instances, the EKS control plane and NAT
gateways in the stack's own Region; what it does not answer falls back to the table, and
the estimate says which source each line used.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["HOURS_PER_MONTH", "OFFLINE", "OFFLINE_DATE", "OFFLINE_REGION", "OfflinePrices",
           "Price", "PriceKey", "PriceListPrices", "PriceSource"]

PriceKey = tuple[str, str]

HOURS_PER_MONTH = 730
"""Hours in a billing month as AWS's price examples count them (FSx for Lustre pricing page,
"prorated by the second ... billed for your average usage over a month"; the AWS Pricing
Calculator's 730 hours per month): converts GB-month prices to an hourly rate."""

OFFLINE_DATE = "2026-11-22"
OFFLINE_REGION = "us-east-1"


@dataclass(frozen=True)
class Price:
    """One price.

    Attributes:
        usd: the price in USD per ``unit``.
        unit: ``hour`` or ``GB-month``.
        source: where the figure comes from (``AWS Price List API`` for live prices).
        verified: ``True`` when ``source`` is AWS's own (a pricing page, post or the Price
            List API).
    """

    usd: float
    unit: str
    source: str
    verified: bool = False


_THIRD_PARTY_EC2 = ("On-Demand Linux, us-east-1, as quoted alike by several public price "
                    "tables (found with code search, 2026-11); AWS's instance-type page "
                    "could not be read here")
_THIRD_PARTY_FSX = ("FSx for Lustre SSD, us-east-1, per GB-month, as quoted by public cost "
                    "guides (c3x.dev 'aws_fsx_lustre_file_system'); AWS's pricing page "
                    "(https://aws.amazon.com/fsx/lustre/pricing/) could not be read in full "
                    "here")
_UNCONFIRMED_FSX = ("FSx for Lustre SSD, us-east-1, per GB-month: not confirmed from a "
                    "source readable here; treat as approximate")

_UNVERIFIED_PCP = ("EKS Provisioned Control Plane tier, per hour on top of the $0.10 "
                   "standard support: NOT VERIFIED against https://aws.amazon.com/eks/pricing/ "
                   "(not readable here); the figure is a third-party unit test's. The EKS user "
                   "guide only says \"You will be billed at the hourly rate for the particular "
                   "control plane scaling tier in addition to the standard or extended support "
                   "EKS hourly charges\"")

OFFLINE: dict[PriceKey, Price] = {
    ("ec2", "trn1.2xlarge"): Price(1.34375, "hour", _THIRD_PARTY_EC2),
    ("ec2", "trn1.32xlarge"): Price(21.50, "hour", _THIRD_PARTY_EC2),
    ("ec2", "trn1n.32xlarge"): Price(24.78, "hour", _THIRD_PARTY_EC2),
    ("ec2", "m6i.xlarge"): Price(0.192, "hour", _THIRD_PARTY_EC2),
    ("ec2", "m5.xlarge"): Price(0.192, "hour", _THIRD_PARTY_EC2),
    ("ec2", "m5.4xlarge"): Price(0.768, "hour", _THIRD_PARTY_EC2),
    ("ec2", "c5.xlarge"): Price(0.17, "hour", _THIRD_PARTY_EC2),
    # The CPU pools' types (contracts/catalog.py CPU_CATALOG), same kind of source.
    ("ec2", "m7i.4xlarge"): Price(0.8064, "hour", _THIRD_PARTY_EC2),
    ("ec2", "m7i.8xlarge"): Price(1.6128, "hour", _THIRD_PARTY_EC2),
    ("ec2", "m7i.16xlarge"): Price(3.2256, "hour", _THIRD_PARTY_EC2),
    ("ec2", "c6i.8xlarge"): Price(1.36, "hour", _THIRD_PARTY_EC2),
    ("ec2", "r7i.8xlarge"): Price(2.1168, "hour", _THIRD_PARTY_EC2),
    ("eks", "cluster"): Price(
        0.10, "hour", "AWS Containers blog, 'Amazon EKS extended support for Kubernetes "
        "versions pricing': standard support $0.10 per cluster per hour (extended support "
        "$0.60)", True),
    **{("eks-pcp", tier): Price(usd, "hour", _UNVERIFIED_PCP) for tier, usd in (
        ("tier-xl", 1.65), ("tier-2xl", 3.40), ("tier-4xl", 6.90), ("tier-8xl", 13.90))},
    ("nat-gateway", "hour"): Price(
        0.045, "hour", "NAT gateway hour, us-east-1, as quoted alike by public cost guides "
        "(cloudburn.io, basavytix.com, 2026); plus $0.045 per GB processed"),
    ("fsx-lustre", "PERSISTENT_2/125"): Price(0.145, "GB-month", _THIRD_PARTY_FSX),
    ("fsx-lustre", "SCRATCH_2/-"): Price(
        0.140, "GB-month", "FSx for Lustre Scratch 2, per GB-month, as quoted by "
        "learning-aws.readthedocs.io 'Cost considerations'"),
    ("fsx-lustre", "PERSISTENT_2/250"): Price(0.210, "GB-month", _UNCONFIRMED_FSX),
    ("fsx-lustre", "PERSISTENT_2/500"): Price(0.340, "GB-month", _UNCONFIRMED_FSX),
    ("fsx-lustre", "PERSISTENT_2/1000"): Price(0.600, "GB-month", _UNCONFIRMED_FSX),
}
"""The offline table: :data:`OFFLINE_REGION` list prices as of :data:`OFFLINE_DATE`. The CPU
pools' types (m7i.4xlarge $0.8064, m7i.8xlarge $1.6128, m7i.16xlarge $3.2256, c6i.8xlarge
$1.36, r7i.8xlarge $2.1168 per hour) are quoted alike by several public price tables found
with code search (2026-11-27), not read on AWS's pricing page: unverified, as the Trainium
rows. There is no offline price for trn2 instances or for SageMaker ``ml.`` instances: the estimate then
shows the EC2 price of the same type as a lower bound (``ml.`` instances cost more than the
EC2 instance) or none. For trn2.3xlarge no public price with a source was found (searched
2026-11), and it was not seen offered in us-east-1 at all (catalog ``az_ids_seen``)."""


class PriceSource(Protocol):
    """Where prices come from.

    Attributes:
        name: shown in the estimate (e.g. ``offline table 2026-11-22 (us-east-1)``).
    """

    name: str

    def price(self, key: PriceKey) -> Price | None:
        """The price of ``key``, or ``None`` when this source has none."""
        ...


class OfflinePrices:
    """The offline table (:data:`OFFLINE`), for any Region (its figures are us-east-1's)."""

    def __init__(self, region: str) -> None:
        self.region = region
        note = "" if region == OFFLINE_REGION else f"; the stack is in {region}"
        self.name = f"offline table of {OFFLINE_DATE} ({OFFLINE_REGION} list prices{note})"

    def price(self, key: PriceKey) -> Price | None:
        """:data:`OFFLINE` ``[key]`` or ``None``."""
        return OFFLINE.get(key)


_LOCATION_ENDPOINT = "us-east-1"
"""The Price List Query API is served from us-east-1 (also eu-central-1, ap-south-1) and
answers for every Region (AWS Billing and Cost Management user guide, 'Using the AWS Price
List Query API', https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-price-list-query-api.html)."""


_ZONAL_NAT_HOURS = re.compile(r"^([A-Z0-9]+-)?NatGateway-Hours\Z")


class PriceListPrices:
    """Live On-Demand prices from the AWS Price List Query API (``pricing`` ``GetProducts``)
    for the stack's Region, falling back to :class:`OfflinePrices` for what it does not
    answer (FSx, SageMaker cluster instances: their products' attributes are not matched
    here).

    Args:
        session: a ``boto3.Session`` with credentials (``pricing:GetProducts``).
        region: the stack's Region code, e.g. ``us-west-2``.

    Errors of the API (``botocore`` ``ClientError``, ``BotoCoreError``) propagate: the
    caller decides whether to fall back to the table.
    """

    def __init__(self, session: Any, region: str) -> None:
        self.region = region
        self.name = f"AWS Price List API ({region}), offline table where it has no answer"
        self._client = session.client("pricing", region_name=_LOCATION_ENDPOINT)
        self._fallback = OfflinePrices(region)
        self._cache: dict[PriceKey, Price | None] = {}

    def price(self, key: PriceKey) -> Price | None:
        """The live price of ``key``, else the offline table's."""
        if key not in self._cache:
            self._cache[key] = self._live(key) or self._fallback.price(key)
        return self._cache[key]

    def _live(self, key: PriceKey) -> Price | None:
        kind, name = key
        region = {"Type": "TERM_MATCH", "Field": "regionCode", "Value": self.region}
        # Attribute names and usage types below are those public Price List clients filter
        # on (found with code search: tenancy/operatingSystem/preInstalledSw/capacitystatus
        # for On-Demand Linux instances; '<prefix>-BoxUsage:<type>', '<prefix>-AmazonEKS-
        # Hours:perCluster', '<prefix>-NatGateway-Hours'); no AWS page listing them was
        # readable here. A product they miss falls back to the offline table.
        if kind == "ec2":
            filters = [region] + [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in (
                ("instanceType", name), ("operatingSystem", "Linux"), ("tenancy", "Shared"),
                ("preInstalledSw", "NA"), ("capacitystatus", "Used"),
                ("licenseModel", "No License required"))]
            return self._on_demand("AmazonEC2", filters, lambda usage: "BoxUsage" in usage)
        if kind == "eks":
            return self._on_demand("AmazonEKS", [region],
                                   lambda usage: usage.endswith("AmazonEKS-Hours:perCluster"))
        if kind == "nat-gateway":
            filters = [region, {"Type": "TERM_MATCH", "Field": "productFamily",
                                "Value": "NAT Gateway"}]
            # zonal gateways only ('<prefix>-RegionalNatGateway-Hours' is another product)
            return self._on_demand("AmazonEC2", filters,
                                   lambda usage: _ZONAL_NAT_HOURS.match(usage) is not None)
        return None

    def _on_demand(self, service: str, filters: list[dict[str, str]],
                   usage_matches: Any) -> Price | None:
        """The first hourly On-Demand USD price of ``service`` products matching ``filters``
        whose ``usagetype`` satisfies ``usage_matches``."""
        paginator = self._client.get_paginator("get_products")
        for page in paginator.paginate(ServiceCode=service, Filters=filters,
                                       FormatVersion="aws_v1"):
            for item in page.get("PriceList", []):
                product = json.loads(item) if isinstance(item, str) else item
                usage = product.get("product", {}).get("attributes", {}).get("usagetype", "")
                if not usage_matches(usage):
                    continue
                for term in product.get("terms", {}).get("OnDemand", {}).values():
                    for dimension in term.get("priceDimensions", {}).values():
                        usd = dimension.get("pricePerUnit", {}).get("USD")
                        if usd is not None and dimension.get("unit", "").lower().startswith("hr"):
                            return Price(float(usd), "hour", "AWS Price List API", True)
        return None
