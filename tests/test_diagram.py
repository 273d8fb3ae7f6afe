"""``make diagram``: one self-contained picture per orchestrator of the registry, linked from the
docs, drawn with cdk-dia's collapse settings that still match the stack's constructs.

Nothing here needs Graphviz except the icon embedding, which skips without ``dot``.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from trn_ultracluster import diagram
from trn_ultracluster.orchestrators import ORCHESTRATORS

DIAGRAMS = REPO_ROOT / "docs" / "diagrams"
DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]*diagrams/[^)\s]+)\)")
SVG = "{http://www.w3.org/2000/svg}"
HREF = "{http://www.w3.org/1999/xlink}href"
FOUNDATION = ("Network", "Efa", "Storage", "TrainingImage")
"""The stack's constructs every picture shows as a box, beside the orchestrator's."""


def linked_diagrams() -> dict[Path, set[Path]]:
    """Picture -> the Markdown files that link it (links resolved from each file)."""
    links: dict[Path, set[Path]] = {}
    for doc in DOCS:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            links.setdefault((doc.parent / target).resolve(), set()).add(doc)
    return links


def test_make_diagram_draws_every_orchestrator_of_the_registry():
    if shutil.which("make") is None:
        pytest.skip("no make")
    recipe = subprocess.run(["make", "--no-print-directory", "-n", "-o", "setup", "diagram"],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    assert "for o in $(.venv/bin/python -m trn_ultracluster.diagram orchestrators)" in recipe
    assert "cdk synth --quiet -c orchestrator=$o " in recipe
    assert "trn_ultracluster.diagram svg cdk.out/diagram/$o.dot docs/diagrams/$o.svg" in recipe
    listed = subprocess.run([sys.executable, "-m", "trn_ultracluster.diagram", "orchestrators"],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    assert listed.split() == list(ORCHESTRATORS)


@pytest.mark.parametrize("orchestrator", list(ORCHESTRATORS))
def test_every_orchestrator_has_its_picture_in_the_readme(orchestrator):
    svg = DIAGRAMS / f"{orchestrator}.svg"
    assert svg.is_file(), f"no {svg.relative_to(REPO_ROOT)}: run make diagram"
    assert REPO_ROOT / "README.md" in linked_diagrams().get(svg, set()), (
        f"README.md does not show {svg.relative_to(REPO_ROOT)} (section Architecture)")


def test_every_linked_picture_exists_and_every_picture_is_linked():
    links = linked_diagrams()
    missing = sorted(str(p.relative_to(REPO_ROOT)) for p in links if not p.is_file())
    assert not missing, f"linked but not in the repository: {missing}"
    unlinked = sorted(p.name for p in DIAGRAMS.iterdir() if p.resolve() not in links)
    assert not unlinked, f"in docs/diagrams/ but linked from no document: {unlinked}"


@pytest.mark.parametrize("orchestrator", list(ORCHESTRATORS))
def test_each_picture_stands_alone_and_shows_the_stack(orchestrator):
    svg = DIAGRAMS / f"{orchestrator}.svg"
    if not svg.is_file():
        pytest.skip(f"no {svg.name} (the test above fails)")
    text = svg.read_text(encoding="utf-8")
    assert "node_modules" not in text and str(REPO_ROOT) not in text
    root = ET.fromstring(text)
    symbols = {s.get("id") for s in root.iter(f"{SVG}symbol")}
    for element in root.iter():
        href = element.get(HREF)
        if href is None:
            continue
        if element.tag == f"{SVG}use":
            assert href[1:] in symbols, href
        else:
            assert href.startswith("data:image/png;base64,"), f"{element.tag} links {href[:80]}"
    assert symbols and len(symbols) == len({s.find(f"{SVG}image").get(HREF) for s in
                                            root.iter(f"{SVG}symbol")}), "one symbol per icon"
    labels = {t.text for t in root.iter(f"{SVG}text")}
    construct_id = ORCHESTRATORS[orchestrator][2]
    for box in (*FOUNDATION, construct_id):
        assert box in labels, f"{svg.name} shows no {box} (stale? run make diagram)"
    assert len(text) < 400_000, f"{svg.name}: {len(text)} bytes"


def test_every_collapse_setting_matches_a_construct_of_some_orchestrator(synth):
    """A construct type that no stack has any more (renamed, replaced) is a setting that
    silently stopped working."""
    matched = dict.fromkeys(diagram.COLLAPSE, 0)
    for name in ORCHESTRATORS:
        tree = json.loads((synth(orchestrator=name).outdir / "tree.json").read_text())
        counts = diagram.customize(tree)
        for fqn, n in counts.items():
            matched[fqn] += n
        marked = [node for node in _nodes(tree["tree"])
                  if diagram.ATTRIBUTE in (node.get("attributes") or {})]
        assert len(marked) == sum(counts.values())
    assert [fqn for fqn, n in matched.items() if n == 0] == []


def _nodes(node):
    yield node
    for child in (node.get("children") or {}).values():
        yield from _nodes(child)


def _png(width: int, height: int) -> bytes:
    """An opaque red PNG (stdlib only)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def test_icons_are_embedded_once_and_scaled_down(tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("no Graphviz dot")
    icon = tmp_path / "a dir" / "icon.png"
    icon.parent.mkdir()
    icon.write_bytes(_png(400, 200))
    svg = ('<svg width="10pt" height="10pt" xmlns="http://www.w3.org/2000/svg" '
           'xmlns:xlink="http://www.w3.org/1999/xlink">\n'
           f'<image xlink:href="{icon}" width="144px" height="72px" '
           'preserveAspectRatio="xMinYMin meet" x="1" y="-2"/>\n'
           f'<image xlink:href="{icon}" width="86px" height="43px" '
           'preserveAspectRatio="xMinYMin meet" x="3" y="4"/>\n'
           '<image xlink:href="data:image/png;base64,AAAA" width="1px" height="1px"/>\n</svg>')
    out = diagram.inline_icons(svg, max_px=96)
    root = ET.fromstring(out)
    (symbol,) = root.iter(f"{SVG}symbol")
    assert symbol.get("viewBox") == "0 0 96 48"
    assert symbol.get("preserveAspectRatio") == "xMinYMin meet"
    uses = [u.attrib for u in root.iter(f"{SVG}use")]
    assert uses == [{HREF: "#icon-0", "x": "1", "y": "-2", "width": "144", "height": "72"},
                    {HREF: "#icon-0", "x": "3", "y": "4", "width": "86", "height": "43"}]
    assert str(icon) not in out and 'xlink:href="data:image/png;base64,AAAA"' in out


def test_a_picture_without_local_icons_is_unchanged():
    svg = '<svg><image xlink:href="https://example.com/a.png" width="1px" height="1px"/></svg>'
    assert diagram.inline_icons(svg) == svg


def test_bad_arguments_exit_2(capsys):
    assert diagram.main(["svg"]) == 2
    assert "usage:" in capsys.readouterr().err
