"""docs/your-code.md, the user's guide to running their own code: its environment table says what
the contracts and torchrun set, and its example commands are the examples' READMEs'."""

from __future__ import annotations

import re

import pytest
import torch.distributed.run

from tests.conftest import REPO_ROOT
from tests.examples.helpers import examples_commands, submit_commands
from trn_ultracluster.contracts.catalog import CATALOG, get_instance
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.neuron_stack import NEURON_STACKS, compile_cache_dir
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH

DOC = REPO_ROOT / "docs" / "your-code.md"
TORCHRUN = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
JOB = ("TRN_JOB_NAME", "TRN_NNODES", "TRN_NODE_RANK", "TRN_OUTPUT_DIR", "TRN_CODE_DIR",
       "TRN_CODE_SHA256", "TRN_DATA_BUCKET", "TRN_FSX_MOUNT_POINT", "TRN_NEURON_CACHE_DIR")
"""The variables every job gets besides the Neuron/EFA ones (issue 30)."""
EFA_VARIABLES = ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA")
ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \| (.*?) \| (.*?) \| (.*?) \|$", re.MULTILINE)


def table() -> dict[str, tuple[str, str, str]]:
    """variable -> (value, set by, where) of the environment table."""
    return {m[0]: m[1:] for m in ROW.findall(DOC.read_text(encoding="utf-8"))}


def test_the_table_has_every_variable_a_job_gets():
    assert set(TORCHRUN) | set(JOB) <= set(table())


def test_torchruns_variables_are_the_ones_torchrun_documents():
    for name in TORCHRUN:
        assert f"``{name}``" in torch.distributed.run.__doc__
        assert "torchrun" in table()[name][1]


def test_every_variable_the_node_script_exports_is_in_the_table():
    """The node script's own variables (cli/node_script.JOB_VARIABLES), each set by `submit`
    on all four orchestrators; and the EKS runtime names the compile cache as the env file
    of the others does."""
    from trn_ultracluster.cli.node_script import JOB_VARIABLES
    from trn_ultracluster.contracts.neuron_stack import compile_cache_dir
    from trn_ultracluster.orchestrators.eks.manifests import neuron_container_env

    rows = table()
    for name in JOB_VARIABLES:
        assert name in rows, f"{name} is missing from docs/your-code.md"
        assert "`submit`" in rows[name][1] and "all four" in rows[name][2], name
    env = {e["name"]: e["value"] for e in neuron_container_env(get_instance("trn2.48xlarge"),
                                                               "native")}
    assert env["TRN_NEURON_CACHE_DIR"] == compile_cache_dir("native")


@pytest.mark.parametrize("instance, stack", [("trn1.32xlarge", "xla"), ("trn2.48xlarge", "native"),
                                             ("trn1.2xlarge", "xla")])
def test_the_neuron_and_efa_rows_are_what_the_stack_sets(instance, stack):
    rows = table()
    for name, value in neuron_environment(get_instance(instance), stack).items():
        assert name in rows, f"{name} is missing from the table"
        assert f"`{value}`" in rows[name][0], f"{name}: {rows[name][0]!r} does not give {value!r}"
        if name not in EFA_VARIABLES:
            assert f"`{stack}` stack" in rows[name][2]


def test_the_efa_rows_name_the_types_without_efa():
    without = sorted(name for name, spec in CATALOG.items() if not spec.supports_efa)
    assert without
    assert f"(all but {', '.join(without)})" in table()["FI_PROVIDER"][2]
    assert all("EFA instance types" in table()[name][2] for name in EFA_VARIABLES)


def test_the_storage_rows_are_the_contracts():
    rows = table()
    assert f"`{FSX_MOUNT_PATH}`" in rows["TRN_FSX_MOUNT_POINT"][0]
    for stack in NEURON_STACKS:
        assert f"`{compile_cache_dir(stack)}` (`{stack}`)" in rows["TRN_NEURON_CACHE_DIR"][0]


def test_the_docs_example_commands_are_the_readmes():
    examples_part = DOC.read_text(encoding="utf-8").split("\n## Examples\n", 1)[1]
    assert submit_commands(examples_part) == [argv for _, argv in examples_commands()]
