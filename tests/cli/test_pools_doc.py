"""docs/pools.md says what the code does: its CPU table is the CPU catalog, and each job CLI
error it shows is what the CLI prints for that command on the stack of profiles/mixed.yaml."""

from __future__ import annotations

import re

import pytest

from tests.cli.doc_helpers import cli_examples, run_example
from tests.cli.pool_helpers import mixed_file, never_sent  # noqa: F401 (fixture)
from tests.conftest import REPO_ROOT
from trn_ultracluster.contracts.catalog import CPU_CATALOG
from trn_ultracluster.contracts.quotas import QUOTAS

DOC = (REPO_ROOT / "docs" / "pools.md").read_text(encoding="utf-8")


def test_the_cpu_table_is_the_catalog():
    quota = QUOTAS["standard_vcpus"].code
    rows = {cells[0]: cells for cells in (
        [c.strip() for c in line.strip("|").split("|")]
        for line in DOC.splitlines() if re.match(r"\| [mcr]\di\.", line))}
    assert sorted(rows) == sorted(CPU_CATALOG)
    for name, spec in CPU_CATALOG.items():
        assert rows[name][1:4] == [str(spec.vcpus), str(spec.memory_gib),
                                   f"{spec.network_bandwidth_gbps:g}"]
        assert rows[name][5] == quota == "L-1216C47A"


@pytest.mark.parametrize("command, shown", cli_examples(DOC), ids=lambda x: str(x)[:40])
def test_every_cli_error_shown_is_what_the_cli_prints(capsys, tmp_path, monkeypatch, never_sent,
                                                       command, shown):
    code, err = run_example(capsys, monkeypatch, tmp_path, command, mixed_file(tmp_path))
    assert code == 2
    assert shown and all(line in err for line in shown), err
