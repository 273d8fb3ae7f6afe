#!/usr/bin/env bash
# XLA:CPU tests of the training program (make test-xla).
#
# Creates .venv-xla at the repository root from training/requirements-xla.txt (torch 2.9.0 +
# torch-xla 2.9.0, about 7 GB installed) when it is missing or the requirements changed (a
# SHA-256 stamp inside the venv), then runs tests/xla with PJRT_DEVICE=CPU. A second run with
# an up-to-date venv goes straight to the tests.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-xla"
REQ="$ROOT/training/requirements-xla.txt"
STAMP="$VENV/.requirements-xla.sha256"
PYTHON="${PYTHON:-python3}"

want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [[ ! -x "$VENV/bin/python" || "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]]; then
  echo "test-xla: building $VENV from $REQ (first run: about 1.5 min, 7 GB)" >&2
  "$PYTHON" -m venv "$VENV"
  PYTHONPATH= "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r "$REQ"
  echo "$want" > "$STAMP"
else
  echo "test-xla: $VENV is up to date" >&2
fi

export PJRT_DEVICE=CPU
export PYTHONPATH="$ROOT:$ROOT/training${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
# -m xla replaces pyproject's `-m` (make test leaves these tests out). A worker per core, one
# test file each (--dist loadfile): a test runs one XLA:CPU process at a time, and the tests of
# test_xla_train.py share one training run (its module fixture `reference`), which a worker of
# its own trains once. The workers take the files in collection order (--no-loadscope-reorder),
# which tests/xla/conftest.py sorts longest first (LONGEST_FIRST). (--dist loadgroup would
# group by mark, but pytest-xdist 3.8 cannot rename pytest 9.2's node ids, so its groups are
# ignored.)
exec "$VENV/bin/python" -m pytest tests/xla -m xla -q -p no:cacheprovider -n auto --dist loadfile \
  --no-loadscope-reorder "$@"
