"""README links and figures that code and other pages rely on: every ``README.md#anchor`` the
code, the docs and README itself name is a README heading, and the table of the smallest
EFA-enabled file systems is what the facts and the offline prices give."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO_ROOT
from trn_ultracluster.config.facts import FSX_EFA_CAPACITY_STEP_GIB, FSX_EFA_RECOMMENDED_MB_S
from trn_ultracluster.estimate.lustre import SSD_MIN_GIB
from trn_ultracluster.estimate.prices import OFFLINE

README = REPO_ROOT / "README.md"
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)
CODE_ANCHOR = re.compile(r"README\.md#([A-Za-z0-9_-]+)")
README_ANCHOR = re.compile(r"\]\(#([A-Za-z0-9_-]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation other than ``-`` and ``_``
    dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def readme_anchors() -> set[str]:
    text = README.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)  # code blocks
    return {slug(h) for h in HEADING.findall(text)}


def named_anchors() -> list[tuple[str, str]]:
    """(file, anchor) of every README anchor named in the package, docs/ and README."""
    found = []
    for path in [*sorted((REPO_ROOT / "trn_ultracluster").rglob("*.py")),
                 *sorted((REPO_ROOT / "docs").glob("*.md")), README]:
        text = path.read_text(encoding="utf-8")
        anchors = CODE_ANCHOR.findall(text)
        if path == README:
            anchors += README_ANCHOR.findall(text)
        found += [(str(path.relative_to(REPO_ROOT)), a) for a in anchors]
    return found


def test_slug_is_githubs():
    assert slug("FSx for Lustre over EFA") == "fsx-for-lustre-over-efa"
    assert slug("What `cdk destroy` does") == "what-cdk-destroy-does"
    assert slug("What it costs, how long it takes") == "what-it-costs-how-long-it-takes"


def test_the_efa_section_is_linked():
    assert ("trn_ultracluster/config/facts/fsx.py", "fsx-for-lustre-over-efa") in named_anchors()


@pytest.mark.parametrize("where, anchor", named_anchors())
def test_every_named_readme_anchor_is_a_heading(where, anchor):
    assert anchor in readme_anchors(), f"{where} links README.md#{anchor}, which has no heading"


def test_the_readme_table_of_the_smallest_efa_enabled_file_systems():
    """Each tier: one step (the smallest) and the smallest above 10 GB/s (what auto turns on),
    their throughput and their price per month in the offline table."""
    text = README.read_text(encoding="utf-8")
    for tier, step in FSX_EFA_CAPACITY_STEP_GIB.items():
        usd = OFFLINE[("fsx-lustre", f"PERSISTENT_2/{tier}")].usd
        steps = next(n for n in range(1, 100)
                     if step * n / 1024 * tier > FSX_EFA_RECOMMENDED_MB_S)
        row = (f"| {tier} | {step:,} GiB ({step // SSD_MIN_GIB}x), {step / 1024 * tier:,.0f} "
               f"MB/s | ${step * usd:,.0f} | {step * steps:,} GiB, "
               f"{step * steps / 1024 * tier:,.0f} MB/s | ${step * steps * usd:,.0f} |")
        assert row in text
