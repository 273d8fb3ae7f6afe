"""Rules of the network: AZ IDs, the VPC blocks (primary and secondary), NAT gateways. The
address plan that fills them is checked by :mod:`.scale`."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import (
    AZ_ID_PREFIX_TO_REGION,
    AZ_ID_RE,
    DOC_AZ_IDS,
    DOC_NAT,
    DOC_VPC_CIDR,
    DOC_VPC_CIDR_RULES,
    PRIVATE_RANGES,
    SHARED_RANGE,
    TEN_0_15,
    TEN_0_16,
    VPC_PREFIX_RANGE,
    region_of_az_id,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.contracts.catalog import CATALOG

__all__ = ["az_ids", "az_offers_instance", "nat_gateways", "valid_blocks", "vpc_cidr"]


def az_ids(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if len(c.az_ids) < 2:
        yield ConfigIssue(
            "az_ids", list(c.az_ids),
            "must list at least 2 AZ IDs of one Region (first = compute AZ; a second for "
            "the services that need two AZs)", DOC_AZ_IDS,
        )
    if len(set(c.az_ids)) != len(c.az_ids):
        yield ConfigIssue("az_ids", list(c.az_ids), "must not repeat an AZ ID", DOC_AZ_IDS)
    regions: dict[str, str] = {}
    for i, az_id in enumerate(c.az_ids):
        match = AZ_ID_RE.match(az_id)
        if not match:
            yield ConfigIssue(f"az_ids[{i}]", az_id,
                              "must be an AZ ID like 'usw2-az4' (AZ IDs name the same zone in "
                              "every account; AZ names like 'us-west-2a' do not)", DOC_AZ_IDS)
        elif match.group("prefix") not in AZ_ID_PREFIX_TO_REGION:
            yield ConfigIssue(f"az_ids[{i}]", az_id,
                              f"must start with a known Region code, not "
                              f"{match.group('prefix')!r}; known: "
                              f"{', '.join(sorted(AZ_ID_PREFIX_TO_REGION))}", DOC_AZ_IDS)
        else:
            regions[az_id] = region_of_az_id(az_id)
    if len(set(regions.values())) > 1:
        by_region = ", ".join(f"{az} is in {region}" for az, region in regions.items())
        yield ConfigIssue("az_ids", list(c.az_ids),
                          f"must all be in one Region ({by_region})", DOC_AZ_IDS)


def az_offers_instance(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Each Trainium pool's type has been seen offered in the compute AZ ID (catalog
    ``az_ids_seen``, a hint: ``preflight`` checks the account), a warning per type that has
    not. CPU pools are left to ``preflight``: the CPU catalog records no AZ IDs, its
    general-purpose types being offered in the AZs that offer Trainium (catalog
    ``CPU_CATALOG``)."""
    if not c.az_ids:
        return
    for itype in dict.fromkeys(p.instance_type for p in c.node_pools):
        spec = CATALOG.get(itype)
        if spec is None or c.az_ids[0] in spec.az_ids_seen:
            continue
        names = [p.name for p in c.node_pools if p.instance_type == itype]
        what = itype if not c.pools else (
            f"{itype} (pool{'s' if len(names) > 1 else ''} {', '.join(names)})")
        yield ConfigIssue(
            "az_ids[0]", c.az_ids[0],
            f"should be an AZ ID where {what} has been seen offered "
            f"({', '.join(spec.az_ids_seen) or 'none recorded'}): run `preflight` to check your "
            "account",
            DOC_AZ_IDS, severity="warning",
        )


def vpc_cidr(c: ClusterConfig) -> Iterator[ConfigIssue]:
    try:
        net = ipaddress.ip_network(c.vpc_cidr, strict=True)
    except ValueError as err:
        yield ConfigIssue("vpc_cidr", c.vpc_cidr,
                          f"must be an IPv4 CIDR block like '10.0.0.0/16' ({err})", DOC_VPC_CIDR)
        return
    lo, hi = VPC_PREFIX_RANGE
    if net.version != 4 or not lo <= net.prefixlen <= hi:
        yield ConfigIssue("vpc_cidr", c.vpc_cidr,
                          f"must be an IPv4 block between /{lo} and /{hi}", DOC_VPC_CIDR)
        return
    if not any(net.subnet_of(r) for r in PRIVATE_RANGES):
        yield ConfigIssue("vpc_cidr", c.vpc_cidr,
                          "must lie in a private range: 10.0.0.0/8, 172.16.0.0/12 or "
                          "192.168.0.0/16 (RFC 1918) or 100.64.0.0/10 (RFC 6598)", DOC_VPC_CIDR)
        return
    for i, block in enumerate(c.vpc_secondary_cidrs or ()):
        yield from _secondary(c, i, block, net)


def _secondary(c: ClusterConfig, i: int, block: str,
               primary: ipaddress.IPv4Network | ipaddress.IPv6Network) -> Iterator[ConfigIssue]:
    where = f"vpc_secondary_cidrs[{i}]"
    try:
        net = ipaddress.ip_network(block, strict=True)
    except ValueError as err:
        yield ConfigIssue(where, block, f"must be an IPv4 CIDR block like '10.1.0.0/16' ({err})",
                          DOC_VPC_CIDR)
        return
    lo, hi = VPC_PREFIX_RANGE
    home = next((r for r in PRIVATE_RANGES if primary.subnet_of(r)), None)  # type: ignore[arg-type]
    allowed = [r for r in (home, SHARED_RANGE) if r is not None]
    earlier = [ipaddress.ip_network(b, strict=False) for b in (c.vpc_secondary_cidrs or ())[:i]
               if _is_net(b)]
    if net.version != 4 or not lo <= net.prefixlen <= hi:
        yield ConfigIssue(where, block, f"must be an IPv4 block between /{lo} and /{hi}",
                          DOC_VPC_CIDR)
    elif not any(net.subnet_of(r) for r in allowed):  # type: ignore[arg-type]
        ranges = " or ".join(str(r) for r in dict.fromkeys(allowed))
        yield ConfigIssue(where, block,
                          f"must lie in {ranges} next to a primary block in "
                          f"{home}: the VPC refuses other RFC 1918 ranges", DOC_VPC_CIDR_RULES)
    elif net.overlaps(primary) or any(net.overlaps(e) for e in earlier):
        yield ConfigIssue(where, block, "must not overlap vpc_cidr or an earlier secondary block",
                          DOC_VPC_CIDR_RULES)
    elif (primary.subnet_of(TEN_0_15) or any(e.subnet_of(TEN_0_15) for e in earlier)) \
            and net.subnet_of(TEN_0_16):  # type: ignore[arg-type]
        yield ConfigIssue(where, block,
                          "must not lie in 10.0.0.0/16 when a block of the VPC is in "
                          "10.0.0.0/15 (the VPC refuses it)", DOC_VPC_CIDR_RULES)


def valid_blocks(c: ClusterConfig) -> bool:
    """Whether ``vpc_cidr`` and ``vpc_secondary_cidrs`` pass :func:`vpc_cidr` (the address
    plan is checked only then)."""
    return not any(vpc_cidr(c))


def _is_net(block: str) -> bool:
    try:
        ipaddress.ip_network(block, strict=True)
    except ValueError:
        return False
    return True


def nat_gateways(c: ClusterConfig) -> Iterator[ConfigIssue]:
    allowed = sorted({1, len(c.az_ids)})
    if c.nat_gateways not in allowed:
        yield ConfigIssue("nat_gateways", c.nat_gateways,
                          f"must be {one_of(allowed)} (one, or one per AZ ID)", DOC_NAT)
