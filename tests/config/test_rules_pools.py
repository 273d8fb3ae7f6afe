"""Rules of ``pools`` (trn_ultracluster.config.rules.pools and the HyperPod rules of pools):
names, types, the main pool, what a CPU pool cannot have, the top-level keys pools replace;
and the bad pool inputs of the other rules (addresses that do not fit, a Capacity Block with a
placement group). Each bad input gives one exact error."""

from __future__ import annotations

import pytest

from tests.config import (
    CAPACITY_BLOCK,
    CPU_POOL,
    STYLE,
    TRN1_POOL,
    TRN2_POOL,
    check_one_error,
    load,
    with_pools,
)

POOLS_DOC = "docs/pools.md"
TRAINIUM = ("'trn1.2xlarge', 'trn1.32xlarge', 'trn1n.32xlarge', 'trn2.3xlarge', 'trn2.48xlarge' "
            "or 'trn2u.48xlarge'")
CPU = "'c6i.8xlarge', 'm7i.16xlarge', 'm7i.4xlarge', 'm7i.8xlarge' or 'r7i.8xlarge'"
NAME_RULE = ("must be 1 to 20 lowercase letters, digits and hyphens, starting with a letter and "
             "not ending with a hyphen (it names the pool's Slurm partition, EKS node groups, "
             "Kubernetes label and HyperPod instance groups)")
TRAINIUM_SETTING = "it is a Trainium setting (EFA, placement group, Neuron stack)"


def test_the_mixed_pools_are_valid_on_every_orchestrator():
    for orchestrator in ("eks", "hyperpod-slurm", "hyperpod-eks", "standalone"):
        config = load(with_pools(TRN1_POOL, TRN2_POOL, CPU_POOL,
                                 orchestrator=orchestrator)).config
        assert [p.name for p in config.node_pools] == ["trn1", "trn2", "cpu"]
        assert config.instance_type == "trn1.32xlarge" and config.nodes_max == 8


BAD_INPUTS = [
    ("duplicate name", with_pools(TRN1_POOL, {**TRN2_POOL, "name": "trn1"}),
     f"error: pools[1].name = 'trn1': must be unique: 'trn1' is already a pool name "
     f"(see {POOLS_DOC})"),
    ("names that make the same resource names",
     with_pools({**TRN1_POOL, "name": "a-b"}, {**TRN2_POOL, "name": "ab"}),
     "error: pools[1].name = 'ab': must be unique: 'a-b' is already a pool name (the two make "
     f"the same resource names) (see {POOLS_DOC})"),
    ("upper-case name", with_pools({**TRN1_POOL, "name": "Trn1"}),
     f"error: pools[0].name = 'Trn1': {NAME_RULE} (see {POOLS_DOC})"),
    ("name ending with a hyphen", with_pools(TRN1_POOL, {**CPU_POOL, "name": "cpu-"}),
     f"error: pools[1].name = 'cpu-': {NAME_RULE} (see {POOLS_DOC})"),
    ("name starting with a digit", with_pools(TRN1_POOL, {**CPU_POOL, "name": "2cpu"}),
     f"error: pools[1].name = '2cpu': {NAME_RULE} (see {POOLS_DOC})"),
    ("name of 21 characters", with_pools({**TRN1_POOL, "name": "a" * 21}),
     f"error: pools[0].name = '{'a' * 21}': {NAME_RULE} (see {POOLS_DOC})"),
    ("unknown type", with_pools(TRN1_POOL, {**CPU_POOL, "instance_type": "m5.large"}),
     f"error: pools[1].instance_type = 'm5.large': must be a Trainium type ({TRAINIUM}) or a "
     f"CPU type ({CPU}) (see {POOLS_DOC})"),
    ("CPU type first", with_pools(CPU_POOL, TRN1_POOL),
     f"error: pools[0].instance_type = 'm7i.8xlarge': must be a Trainium type ({TRAINIUM}): "
     "the first pool is the cluster's main Trainium pool; put CPU pools after it "
     f"(see {POOLS_DOC})"),
    ("CPU pool with a placement group", with_pools(TRN1_POOL, {**CPU_POOL, "placement_group": True}),
     "error: pools[1].placement_group = True: must be left out for the CPU type m7i.8xlarge: "
     f"{TRAINIUM_SETTING} (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/"
     "placement-strategies.html)"),
    ("CPU pool with an EFA layout",
     with_pools(TRN1_POOL, {**CPU_POOL, "efa_interface_layout": "efa-only"}),
     "error: pools[1].efa_interface_layout = 'efa-only': must be left out for the CPU type "
     f"m7i.8xlarge: {TRAINIUM_SETTING} (see {POOLS_DOC})"),
    ("CPU pool with a Neuron stack", with_pools(TRN1_POOL, {**CPU_POOL, "neuron_stack": "xla"}),
     "error: pools[1].neuron_stack = 'xla': must be left out for the CPU type m7i.8xlarge: "
     f"{TRAINIUM_SETTING} (see {POOLS_DOC})"),
    ("CPU pool on its own Capacity Block",
     with_pools(TRN1_POOL, {**CPU_POOL, "capacity": CAPACITY_BLOCK}),
     "error: pools[1].capacity.type = 'capacity-block': must not be capacity-block for the CPU "
     "pool 'cpu' (m7i.8xlarge): Capacity Blocks for ML hold accelerated instances only; set it "
     "to on-demand (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/"
     "capacity-blocks-launch.html)"),
    ("CPU pool on the top-level Capacity Block",
     with_pools({**TRN1_POOL, "nodes": {"min": 0, "desired": 0, "max": 2}}, CPU_POOL,
                **{"capacity.type": "capacity-block",
                   "capacity.reservation_id": "cr-0123456789abcdef0",
                   "placement_group": "false"}),
     "error: capacity.type = 'capacity-block': must not be capacity-block for the CPU pool "
     "'cpu' (m7i.8xlarge): Capacity Blocks for ML hold accelerated instances only; give the "
     "pool its own capacity: {type: on-demand} (see https://docs.aws.amazon.com/AWSEC2/latest/"
     "UserGuide/capacity-blocks-launch.html)"),
    ("top-level instance_type other than the first pool's",
     with_pools(TRN1_POOL, CPU_POOL, instance_type="trn1n.32xlarge"),
     "error: instance_type = 'trn1n.32xlarge': must be left out with pools (the first pool's "
     f"type, 'trn1.32xlarge', is the main one) (see {POOLS_DOC})"),
    ("top-level nodes other than the first pool's",
     with_pools(TRN1_POOL, CPU_POOL, **{"nodes.max": "3"}),
     "error: nodes = {'min': 0, 'desired': 1, 'max': 3}: must be left out with pools (each "
     f"pool has its own nodes) (see {POOLS_DOC})"),
    ("HyperPod worker groups with pools",
     with_pools(TRN1_POOL, CPU_POOL, orchestrator="hyperpod-slurm",
                **{"hyperpod.worker_groups": [{"name": "w", "partition": "p"}]}),
     "error: hyperpod.worker_groups = ['w']: must be left out with pools: each pool is one "
     f"HyperPod worker group and a Slurm partition of its name (see {POOLS_DOC})"),
    ("a pool named dev on hyperpod-slurm",
     with_pools(TRN1_POOL, {**CPU_POOL, "name": "dev"}, orchestrator="hyperpod-slurm"),
     "error: pools[1].name = 'dev': must not be 'dev' with orchestrator 'hyperpod-slurm': a "
     "pool is a Slurm partition of its name, and HyperPod puts every node in that partition "
     "itself (see https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html)"),
    ("a Capacity Block pool with a placement group",
     with_pools(TRN1_POOL, {**TRN2_POOL, "capacity": CAPACITY_BLOCK}),
     "error: pools[1].placement_group = True: must be false with pools[1].capacity.type "
     "'capacity-block' (Capacity Blocks are already placed close together and cannot be "
     "combined with a cluster placement group) (see https://docs.aws.amazon.com/AWSEC2/latest/"
     "UserGuide/capacity-blocks-launch.html)"),
    ("pools whose addresses do not fit the VPC plan",
     with_pools(TRN1_POOL, {**CPU_POOL, "nodes": {"min": 0, "desired": 0, "max": 400}},
                vpc_cidr="10.0.0.0/20", vpc_secondary_cidrs="100.64.0.0/28"),
     "error: vpc_secondary_cidrs = ['100.64.0.0/28']: must address every pool "
     "(pools[0].nodes.max = 2 nodes of 24 addresses (8 EFA interfaces with an address + 16 "
     "pods); pools[1].nodes.max = 400 nodes of 17 addresses (one interface (no EFA) + 16 "
     "pods)): the pools' 2 x 24 addresses + 400 x 17 addresses do not fit 10.0.0.0/20 and the "
     "secondary blocks given in vpc_secondary_cidrs: at most 81 nodes of 24 addresses; lower "
     "the pools' nodes.max or add blocks (see https://docs.aws.amazon.com/vpc/latest/userguide/"
     "amazon-vpc-limits.html)"),
    ("pools past the NAU one VPC may have",
     with_pools(TRN1_POOL, {**TRN2_POOL, "nodes": {"min": 0, "desired": 0, "max": 9000}},
                **{"quotas.vpc_network_address_usage": "256000"}),
     "error: pools = {'trn1': 2, 'trn2': 9000}: must fit one VPC with their nodes.max: 9002 "
     "nodes (2 x 32 NAU (8 EFA interfaces with an address + 16 pods) + 9,000 x 33 NAU (1 ENA "
     "address + 16 EFA-only interfaces + 16 pods)) need 298,088 NAU units, above the 256,000 "
     "one VPC may have (Network Address Usage, quota L-BB24F6E5, at its maximum): 42,088 too "
     "many, e.g. 1,276 fewer nodes in pool 'trn2' (33 NAU each) (see https://docs.aws.amazon."
     "com/vpc/latest/userguide/network-address-usage.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_pool_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)
    assert STYLE.match(message)


def test_the_nau_excess_names_a_count_that_fits():
    """The pool that takes the most NAU, lowered by the count the message names, fits."""
    trn2 = {**TRN2_POOL, "nodes": {"min": 0, "desired": 0, "max": 9000 - 1276}}
    plan = load(with_pools(TRN1_POOL, trn2, **{"quotas.vpc_network_address_usage": "256000"})
                ).config.address_plan
    assert plan.nau <= 256_000
    one_more = {**trn2, "nodes": {"min": 0, "desired": 0, "max": 9000 - 1275}}
    with pytest.raises(Exception, match="too many"):
        load(with_pools(TRN1_POOL, one_more))


def test_a_pool_placed_past_the_primary_block_takes_a_secondary_block():
    """What does not fit the primary block goes to a derived secondary /16, pool by pool in
    order: the CPU pool's groups follow the Trainium pool's."""
    config = load(with_pools(TRN1_POOL, {**CPU_POOL, "nodes": {"min": 0, "desired": 0,
                                                              "max": 400}},
                             vpc_cidr="10.0.0.0/20")).config
    plan = config.address_plan
    assert plan.secondary_blocks == ("10.1.0.0/16",)
    trn1, cpu = plan.pool("trn1"), plan.pool("cpu")
    assert [g.subnet for g in trn1.groups] == [0]
    assert cpu.groups[-1].subnet > 0 and sum(g.nodes for g in cpu.groups) == 400
