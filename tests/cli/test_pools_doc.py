"""docs/pools.md says what the code does: its CPU table is the CPU catalog, and each job CLI
error it shows is what the CLI prints for that command on the stack of profiles/mixed.yaml."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.cli.helpers import run
from tests.cli.pool_helpers import mixed_file, never_sent  # noqa: F401 (fixture)
from tests.cli.program_helpers import make_workdir
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


def _cli_examples() -> list[tuple[str, list[str]]]:
    """Each ``$ trn-ultracluster ...`` line of the bad-input block and the lines after it."""
    block = DOC[DOC.index("```text\n$ trn-ultracluster"):]
    block = block[len("```text\n"):block.index("\n```", 1)]
    examples: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            examples.append((line[2:], []))
        else:
            examples[-1][1].append(line)
    return examples


@pytest.mark.parametrize("command, shown", _cli_examples(), ids=lambda x: str(x)[:40])
def test_every_cli_error_shown_is_what_the_cli_prints(capsys, tmp_path, monkeypatch, never_sent,
                                                       command, shown):
    monkeypatch.chdir(make_workdir(tmp_path / "work"))
    words = shlex.split(command)
    assert words[0] == "trn-ultracluster"
    code, _, err = run(capsys, words[1], "--outputs-file", mixed_file(tmp_path), *words[2:])
    assert code == 2
    assert shown and all(line in err.splitlines() for line in shown), err
