"""Which resources changed in each snapshot (tests/snapshots/*.json) since the last commit:
``make snapshots`` runs it after regenerating them, so a snapshot update is reviewed as a list
of added, removed, replaced and updated logical ids with their types, not as a JSON diff.

    python tools/snapshot_changes.py [REV]   # compare with REV (default HEAD)

Exit 0; prints "unchanged" for a snapshot equal to REV's, "new" for one REV lacks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trn_ultracluster.changes import classify, summary  # noqa: E402

SNAPSHOTS = REPO / "tests" / "snapshots"


def committed(path: Path, rev: str) -> dict | None:
    """``path`` as of ``rev`` (None when git has no such file there)."""
    relative = path.relative_to(REPO).as_posix()
    done = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{relative}"],
                          capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else None


def report(rev: str = "HEAD") -> list[str]:
    """One block of lines per snapshot."""
    lines = []
    for path in sorted(SNAPSHOTS.glob("*.json")):
        old, new = committed(path, rev), json.loads(path.read_text())
        if old is None:
            lines.append(f"{path.stem}: new ({len(new.get('Resources', {}))} resources)")
            continue
        changed = summary(classify(old, new))
        other = "" if old.get("Outputs") == new.get("Outputs") else " (outputs changed)"
        if not changed:
            lines.append(f"{path.stem}: unchanged" + (" resources" + other if other else ""))
            continue
        lines.append(f"{path.stem}: {len(changed)} resources changed{other}")
        lines += [f"  {line}" for line in changed]
    return lines


if __name__ == "__main__":
    print("\n".join(report(sys.argv[1] if len(sys.argv) > 1 else "HEAD")))
