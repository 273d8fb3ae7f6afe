"""The README and docs/ as a web of links: every relative link and ``#anchor`` in README.md and
docs/*.md (and the READMEs of training/ and examples/) resolves (the file exists; the anchor is one of its headings, as GitHub makes the
anchor, or an explicit ``<a id=...>``), and so does every ``README.md#anchor`` and
``docs/<page>.md[#anchor]`` that the package, the Makefile, the profiles, the benchmarks and
the tools name (configuration messages, docstrings, the job CLI's help). Also: the table of the
smallest EFA-enabled file systems is what the facts and the offline prices give."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.conftest import REPO_ROOT
from trn_ultracluster.config.facts import FSX_EFA_CAPACITY_STEP_GIB, FSX_EFA_RECOMMENDED_MB_S
from trn_ultracluster.estimate.lustre import SSD_MIN_GIB
from trn_ultracluster.estimate.prices import OFFLINE

README = REPO_ROOT / "README.md"
DOCS = [README, *sorted((REPO_ROOT / "docs").glob("*.md"))]
"""The README and docs/: the pages whose links are checked, and that the README indexes."""
OTHER_PAGES = [REPO_ROOT / "training" / "README.md",
               *sorted((REPO_ROOT / "examples").glob("*/README.md"))]
"""Other Markdown pages of the project, whose links are checked too."""
NAMING = [*sorted((REPO_ROOT / "trn_ultracluster").rglob("*.py")),
          *sorted((REPO_ROOT / "trn_ultracluster").rglob("*.sh")),
          *sorted((REPO_ROOT / "profiles").glob("*.yaml")),
          *sorted((REPO_ROOT / "benchmarks").glob("*.py")),
          *sorted((REPO_ROOT / "tools").rglob("*.py")),
          REPO_ROOT / "Makefile"]
"""The files whose text names pages of the README and docs/ (paths from the repository root)."""

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
EXPLICIT_ANCHOR = re.compile(r"""<a\s+(?:[^>]*\s)?(?:id|name)=["']([^"']+)["']""")
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
NAMED = re.compile(r"(?<![\w./-])((?:README|docs/[\w-]+)\.md)(?:#([\w-]+))?")
"""A page named in text: ``README.md`` (with an anchor: alone it may be another project's
README, as in a source citation) or ``docs/<page>.md``, each with an optional anchor."""
INLINE_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
OTHER_PROJECTS = {
    ("trn_ultracluster/orchestrators/eks/versions.py", "docs/install.md"):
        "kubernetes-sigs/aws-fsx-csi-driver",
    ("trn_ultracluster/orchestrators/hyperpod_eks/cluster.py", "docs/iam-policy.md"):
        "aws/amazon-vpc-cni-k8s (PR #3874)",
}
"""Pages of other projects that the package cites as sources, in the form of ours."""


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: the text without its Markdown (links keep their text),
    lower case, punctuation other than ``-`` and ``_`` dropped, spaces to hyphens."""
    text = INLINE_LINK_TEXT.sub(r"\1", heading.strip())
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def _prose(text: str) -> str:
    """``text`` without fenced code blocks (a ``#`` line there is no heading, a ``](x)`` no
    link)."""
    return FENCE.sub("", text)


def anchors(path: Path) -> set[str]:
    """Every anchor a link into the Markdown file ``path`` may name: its headings' slugs
    (GitHub numbers a repeated one: ``x``, ``x-1``, ``x-2``) and its ``<a id=...>``."""
    text = path.read_text(encoding="utf-8")
    seen: dict[str, int] = {}
    found = set(EXPLICIT_ANCHOR.findall(text))
    for heading in HEADING.findall(_prose(text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The targets of the Markdown file's inline links and images, outside code."""
    return LINK.findall(CODE_SPAN.sub("``", _prose(path.read_text(encoding="utf-8"))))


def resolve(source: Path, target: str, root: Path) -> str | None:
    """Why the link ``target`` in the file ``source`` is broken, or None when it resolves: a
    missing file (paths are relative to ``source``'s directory; ``#anchor`` alone is
    ``source`` itself), or an anchor that is not one of the target's."""
    path_part, _, anchor = unquote(target).partition("#")
    page = (source.parent / path_part).resolve() if path_part else source
    if not page.exists():
        return f"{path_part}: no such file"
    if root.resolve() not in (page, *page.parents):
        return f"{path_part}: outside the repository"
    if anchor:
        if page.is_dir() or page.suffix != ".md":
            return f"{target}: an anchor into a file that is not Markdown"
        if anchor not in anchors(page):
            return f"{target}: no heading or <a id> '{anchor}' in {page.name}"
    return None


def broken_links(pages: list[Path], root: Path = REPO_ROOT) -> list[str]:
    """``file: target: why`` for every relative link of ``pages`` that does not resolve."""
    broken = []
    for page in pages:
        for target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # https:, mailto:
                continue
            why = resolve(page, target, root)
            if why:
                broken.append(f"{page.relative_to(root)}: {why}")
    return broken


def named_pages(files: list[Path], root: Path = REPO_ROOT) -> list[tuple[str, str]]:
    """``(file, "page#anchor")`` for every README or docs/ page ``files`` name (README only
    with an anchor)."""
    found = []
    for path in files:
        for page, anchor in NAMED.findall(path.read_text(encoding="utf-8")):
            if page == "README.md" and not anchor:
                continue
            found.append((str(path.relative_to(root)), f"{page}#{anchor}" if anchor else page))
    return found


def test_slug_is_githubs():
    assert slug("FSx for Lustre over EFA") == "fsx-for-lustre-over-efa"
    assert slug("What `cdk destroy` does") == "what-cdk-destroy-does"
    assert slug("What it costs, how long it takes") == "what-it-costs-how-long-it-takes"
    assert slug("`fsx.efa`: auto, true or false") == "fsxefa-auto-true-or-false"
    assert slug("The HyperPod job path on a real Slurm: `make test-slurm`") == (
        "the-hyperpod-job-path-on-a-real-slurm-make-test-slurm")
    assert slug("See [the guide](x.md#y)") == "see-the-guide"


def test_every_link_and_anchor_of_the_readme_and_docs_resolves():
    assert len(DOCS) > 20 and sum(len(links(p)) for p in DOCS) > 150
    assert broken_links(DOCS) == []
    assert broken_links(OTHER_PAGES) == []


def test_the_readme_links_every_page_of_docs():
    """The README is the map: an index of every docs/ page."""
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README)}
    unlinked = [p.name for p in DOCS[1:] if p.resolve() not in linked]
    assert unlinked == []


def test_a_broken_link_or_anchor_fails(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# Title\n\n## Quick start\n\n[ok](docs/a.md#the-part) [ok](#quick-start) "
        "[ok](docs/a.md#named) [web](https://example.com/#x)\n"
        "[gone](docs/missing.md) [bad anchor](docs/a.md#nothing) [bad here](#title-2)\n"
        "`[in code](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n## not a heading\n```\n",
        encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text(
        '# A\n\n## The part\n\n<a id="named"></a>\n[back](../README.md#quick-start) '
        "[twice](#the-part-1) [up](../README.md#not-a-heading)\n\n## The part\n",
        encoding="utf-8")
    pages = [tmp_path / "README.md", tmp_path / "docs" / "a.md"]
    assert broken_links(pages, root=tmp_path) == [
        "README.md: docs/missing.md: no such file",
        "README.md: docs/a.md#nothing: no heading or <a id> 'nothing' in a.md",
        "README.md: #title-2: no heading or <a id> 'title-2' in README.md",
        "docs/a.md: ../README.md#not-a-heading: no heading or <a id> 'not-a-heading' in "
        "README.md"]


def test_a_page_named_in_the_package_is_found():
    assert ("trn_ultracluster/config/facts/fsx.py", "docs/lustre-over-efa.md") in named_pages(
        NAMING)
    assert ("trn_ultracluster/orchestrators/eks/kubectl.py",
            "docs/deploy.md#a-private-eks-endpoint") in named_pages(NAMING)


@pytest.mark.parametrize("where, target", sorted(set(named_pages(NAMING)) - set(OTHER_PROJECTS)))
def test_every_page_and_anchor_named_in_the_package_resolves(where, target):
    # named from the repository root, wherever the naming file is
    assert resolve(REPO_ROOT / "Makefile", target, REPO_ROOT) is None, f"{where} names {target}"


def test_a_named_page_that_does_not_resolve_fails(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Part\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("# R\n", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    code = tmp_path / "pkg" / "m.py"
    code.write_text('DOC = "docs/a.md#part"\nBAD = "docs/a.md#gone"\nX = "README.md#nope"\n'
                    'GONE = "docs/b.md"\nOTHER = "charts/README.md#x"\n', encoding="utf-8")
    named = named_pages([code], root=tmp_path)
    assert named == [("pkg/m.py", "docs/a.md#part"), ("pkg/m.py", "docs/a.md#gone"),
                     ("pkg/m.py", "README.md#nope"), ("pkg/m.py", "docs/b.md")]
    assert [resolve(tmp_path / "README.md", t, tmp_path) for _, t in named] == [
        None, "docs/a.md#gone: no heading or <a id> 'gone' in a.md",
        "README.md#nope: no heading or <a id> 'nope' in README.md", "docs/b.md: no such file"]


def test_the_table_of_the_smallest_efa_enabled_file_systems():
    """Each tier: one step (the smallest) and the smallest above 10 GB/s (what auto turns on),
    their throughput and their price per month in the offline table."""
    text = (REPO_ROOT / "docs" / "lustre-over-efa.md").read_text(encoding="utf-8")
    for tier, step in FSX_EFA_CAPACITY_STEP_GIB.items():
        usd = OFFLINE[("fsx-lustre", f"PERSISTENT_2/{tier}")].usd
        steps = next(n for n in range(1, 100)
                     if step * n / 1024 * tier > FSX_EFA_RECOMMENDED_MB_S)
        row = (f"| {tier} | {step:,} GiB ({step // SSD_MIN_GIB}x), {step / 1024 * tier:,.0f} "
               f"MB/s | ${step * usd:,.0f} | {step * steps:,} GiB, "
               f"{step * steps / 1024 * tier:,.0f} MB/s | ${step * steps * usd:,.0f} |")
        assert row in text
