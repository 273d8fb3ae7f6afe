"""Architecture pictures of the synthesized stack, one per orchestrator (``make diagram``).

cdk-dia (npm, pinned in ``tools/diagram/package.json``) reads a cloud assembly's ``tree.json`` and draws it
with Graphviz. This module does the steps around it; ``make diagram`` runs them for each
orchestrator (``python -m trn_ultracluster.diagram <command>``):

``orchestrators``
    prints the registry's keys (:data:`trn_ultracluster.orchestrators.ORCHESTRATORS`), the
    list ``make diagram`` loops over: a new orchestrator gets its picture without a change here
    or in the Makefile.
``customize TREE_IN TREE_OUT``
    copies a ``tree.json`` with cdk-dia's own collapse customizations (:data:`COLLAPSE`) added
    by construct type. A TypeScript app would write the same attributes from its constructs
    with cdk-dia's ``CdkDiaDecorator``, which Python apps cannot use; adding them to a copy of
    the tree leaves the app, its template and its synth time as they are.
``svg DOT SVG``
    renders cdk-dia's Graphviz file as an SVG that stands alone: Graphviz links each AWS icon
    by its path in ``node_modules``, which no browser follows from an ``<img>``; each icon is
    scaled down (by Graphviz itself) and embedded once, and every use of it refers to that.
"""

from __future__ import annotations

import base64
import html
import json
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["COLLAPSE", "ICON_PX", "customize", "inline_icons", "main", "orchestrators"]

ATTRIBUTE = "CDK-DIA_CollapssingCustomizer"
"""The tree.json attribute cdk-dia 0.12.3 reads (``CdkDia.attrPrefix`` + the customizer's class
name, spelled as in cdk-dia)."""

COLLAPSE: dict[str, str] = {
    # cdk-dia draws a construct with a `Resource` child as that one resource; these show their
    # parts instead:
    "aws-cdk-lib.aws_ec2.Vpc": "FORCE_NON_COLLAPSE",  # subnets, gateways, S3 endpoint, flow log
    "aws-cdk-lib.aws_eks_v2.Cluster": "FORCE_NON_COLLAPSE",  # node groups, Helm charts, manifests
    # ... and it draws the parts of a construct without one; these are one box each:
    "aws-cdk-lib.aws_ec2.PublicSubnet": "FORCE_COLLAPSE",  # route table, routes, NAT gateway
    "aws-cdk-lib.aws_ec2.PrivateSubnet": "FORCE_COLLAPSE",
    "aws-cdk-lib.custom_resources.Provider": "FORCE_COLLAPSE",  # 3 Lambdas, a state machine
    "aws-cdk-lib.aws_eks_v2.KubectlProvider": "FORCE_COLLAPSE",  # kubectl Lambda, its roles
    "aws-cdk-lib.aws_s3_deployment.BucketDeployment": "FORCE_COLLAPSE",  # AWS CLI layer, handler
}
"""Construct type (tree.json ``constructInfo.fqn``) -> cdk-dia collapse type."""

ICON_PX = 96
"""Largest side of an embedded icon in pixels. Graphviz draws icons 86-144 pt wide and GitHub
shows a whole diagram at about a fifth of that; cdk-dia's 400-pixel originals would make each
SVG ~2 MB, 96 pixels ~230 kB (128: ~290 kB)."""

_IMAGE = re.compile(r"<image\s([^>]*?)/>")
_ATTR = re.compile(r'([\w:-]+)="([^"]*)"')


def orchestrators() -> list[str]:
    """The orchestrators ``make diagram`` draws: every key of the registry."""
    from trn_ultracluster.orchestrators import ORCHESTRATORS

    return list(ORCHESTRATORS)


def customize(tree: dict[str, Any]) -> dict[str, int]:
    """Add :data:`COLLAPSE`'s attribute to every construct of a listed type, in place.

    Returns:
        construct type -> how many constructs got the attribute (listed types only).
    """
    counts = dict.fromkeys(COLLAPSE, 0)
    stack = [tree["tree"]]
    while stack:
        node = stack.pop()
        fqn = (node.get("constructInfo") or {}).get("fqn")
        if fqn in COLLAPSE:
            node.setdefault("attributes", {})[ATTRIBUTE] = COLLAPSE[fqn]
            counts[fqn] += 1
        stack.extend((node.get("children") or {}).values())
    return counts


def _png_size(data: bytes) -> tuple[int, int]:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _scaled_icon(path: Path, max_px: int) -> tuple[bytes, int, int]:
    """The PNG at ``path`` scaled to at most ``max_px`` on its longer side, drawn by Graphviz."""
    width, height = _png_size(path.read_bytes())
    scale = min(1.0, max_px / max(width, height))
    w, h = max(1, round(width * scale)), max(1, round(height * scale))
    image = str(path).replace("\\", "\\\\").replace('"', '\\"')
    graph = (f'digraph {{ pad=0; margin=0; dpi=72; bgcolor=transparent; node [shape=none, '
             f'label="", fixedsize=true, imagescale=both, width={w / 72}, height={h / 72}, '
             f'image="{image}"]; icon }}')
    png = subprocess.run(["dot", "-Tpng"], input=graph.encode(), capture_output=True,
                         check=True).stdout
    return (png, *_png_size(png))


def inline_icons(svg: str, max_px: int = ICON_PX) -> str:
    """Replace every ``<image>`` that links a local PNG by a ``<use>`` of one embedded copy.

    Each distinct icon becomes a ``<symbol>`` (its PNG scaled to ``max_px``, base64) in a
    ``<defs>`` at the top; each ``<image>`` becomes a ``<use>`` of it at the same place and
    size. Links that are not local files (``data:`` URIs, ``#`` references) stay as they are.
    """
    symbols: dict[str, str] = {}
    defs: list[str] = []

    def replace(match: re.Match[str]) -> str:
        attrs = dict(_ATTR.findall(match.group(1)))
        href = html.unescape(attrs.get("xlink:href", ""))
        if not href or href.startswith(("data:", "#")) or not Path(href).is_file():
            return match.group(0)
        if href not in symbols:
            png, w, h = _scaled_icon(Path(href), max_px)
            symbols[href] = f"icon-{len(symbols)}"
            defs.append(
                f'<symbol id="{symbols[href]}" viewBox="0 0 {w} {h}" '
                f'preserveAspectRatio="{attrs.get("preserveAspectRatio", "xMidYMid meet")}">'
                f'<image width="{w}" height="{h}" '
                f'xlink:href="data:image/png;base64,{base64.b64encode(png).decode()}"/></symbol>')
        place = " ".join(f'{k}="{attrs[k].removesuffix("px")}"'
                         for k in ("x", "y", "width", "height") if k in attrs)
        return f'<use xlink:href="#{symbols[href]}" {place}/>'

    body = _IMAGE.sub(replace, svg)
    if not defs:
        return body
    start = body.index("<svg")
    end = body.index(">", start) + 1
    return body[:end] + "\n<defs>\n" + "\n".join(defs) + "\n</defs>" + body[end:]


def render_svg(dot_file: Path, svg_file: Path) -> None:
    """Render ``dot_file`` as a self-contained SVG at ``svg_file`` (at 72 dpi: 1 pt a unit)."""
    done = subprocess.run(["dot", "-Tsvg", "-Gdpi=72", str(dot_file)], capture_output=True,
                          text=True)
    if done.returncode != 0:  # Graphviz's warnings (labels wider than their box) are noise
        sys.stderr.write(done.stderr)
        raise subprocess.CalledProcessError(done.returncode, done.args)
    svg_file.parent.mkdir(parents=True, exist_ok=True)
    svg_file.write_text(inline_icons(done.stdout), encoding="utf-8")


USAGE = """usage: python -m trn_ultracluster.diagram orchestrators
       python -m trn_ultracluster.diagram customize TREE_IN TREE_OUT
       python -m trn_ultracluster.diagram svg DOT SVG"""


def main(argv: list[str] | None = None) -> int:
    """CLI entry (see the module docstring); exit 2 on bad arguments."""
    args = sys.argv[1:] if argv is None else argv
    match args:
        case ["orchestrators"]:
            print("\n".join(orchestrators()))
        case ["customize", tree_in, tree_out]:
            tree = json.loads(Path(tree_in).read_text(encoding="utf-8"))
            customize(tree)
            Path(tree_out).write_text(json.dumps(tree), encoding="utf-8")
        case ["svg", dot_file, svg_file]:
            render_svg(Path(dot_file), Path(svg_file))
        case _:
            print(USAGE, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
