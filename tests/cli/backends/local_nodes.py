"""Standalone nodes on this machine, for the job backend's tests: each "node" runs the
scripts the backend would send through SSM Run Command with bash here.

What stands in for a node:

- its paths: ``/fsx`` is a temporary directory (shared by the nodes, as FSx is), the ready
  marker and the training program (``PROGRAM_DIR``) map to per-node and repository paths.
  The scripts are rewritten with these paths before they run, including the job script the
  prepare step carries base64-encoded, and ``MASTER_PORT`` becomes a free port (two test runs
  may share this machine);
- systemd: ``systemd-run`` and ``systemctl`` shims (``shims/`` written here) start the unit's
  command in its own session and remember its process id; ``is-active`` checks it runs,
  ``stop`` sends SIGTERM to its process group, as systemd stops a unit's control group.

Nothing else differs: the backend's scripts, the job script and torchrun run as they are.
"""

from __future__ import annotations

import base64
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.launch import RENDEZVOUS_PORT
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH
from trn_ultracluster.contracts.standalone import PROGRAM_DIR, READY_FILE

REPO = Path(__file__).resolve().parents[3]

SYSTEMD_RUN = """#!/bin/bash
# systemd-run stand-in: systemd-run [--OPTION...] COMMAND ARGS...: COMMAND in its own session.
unit=""
while [[ "$1" == --* ]]; do
  case "$1" in --unit=*) unit="${1#--unit=}" ;; esac
  echo "$1" >> "$SHIM_STATE/systemd-run.options"
  shift
done
setsid "$@" < /dev/null > /dev/null 2>&1 &
echo $! > "$SHIM_STATE/${unit}.pid"
echo "Running as unit: ${unit}.service" >&2
"""
SYSTEMCTL = """#!/bin/bash
# systemctl stand-in: is-active [--quiet] UNIT, stop UNIT (SIGTERM to its process group).
command="$1"; shift
if [[ "${1:-}" == --quiet ]]; then shift; fi
pid_file="$SHIM_STATE/$1.pid"
alive() {
  local state
  [[ -f "$pid_file" ]] || return 1
  state="$(awk '{print $3}' "/proc/$(cat "$pid_file")/stat" 2> /dev/null)"
  [[ -n "$state" && "$state" != Z ]]
}
case "$command" in
  is-active) alive ;;
  stop)
    if alive; then
      kill -TERM -- "-$(cat "$pid_file")" 2> /dev/null || true
      for _ in $(seq 100); do alive || break; sleep 0.1; done
    fi ;;
  *) exit 0 ;;
esac
"""
_B64 = re.compile(r"echo ([A-Za-z0-9+/=]{8,}) \| base64 -d")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalNodes:
    """``run(instance_ids, script) -> {instance id: stdout}`` for the standalone backend, each
    instance a "node" on this machine (see the module doc).

    Attributes:
        fsx: the shared file system's stand-in.
        scripts: every (instance id, script as the backend sent it) in order.
    """

    def __init__(self, tmp: Path, instances: list[str], env: dict[str, str] | None = None):
        self.fsx = tmp / "fsx"
        self.fsx.mkdir(parents=True, exist_ok=True)
        self.shims = tmp / "shims"
        self.shims.mkdir(exist_ok=True)
        for name, text in (("systemd-run", SYSTEMD_RUN), ("systemctl", SYSTEMCTL)):
            path = self.shims / name
            path.write_text(text)
            path.chmod(path.stat().st_mode | stat.S_IEXEC)
        self.state = {i: tmp / "nodes" / i for i in instances}
        for directory in self.state.values():
            directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.env = env or {}
        self.scripts: list[tuple[str, str]] = []

    def ready_file(self, instance: str) -> Path:
        return self.state[instance] / "node-ready"

    def mark_ready(self) -> None:
        for instance in self.state:
            self.ready_file(instance).write_text("runtime=dlami-venv\n")

    def localize(self, text: str, instance: str) -> str:
        """The node's paths and port in ``text`` (and in the base64 payloads it writes)."""
        text = _B64.sub(lambda m: "echo " + base64.b64encode(
            self.localize(base64.b64decode(m.group(1)).decode(), instance).encode()).decode()
            + " | base64 -d", text)
        return (text.replace(READY_FILE, str(self.ready_file(instance)))
                .replace(PROGRAM_DIR, str(REPO))
                .replace(f"{FSX_MOUNT_PATH}/", f"{self.fsx}/")
                .replace(f"MASTER_PORT={RENDEZVOUS_PORT}", f"MASTER_PORT={self.port}"))

    def __call__(self, instance_ids: list[str], script: str) -> dict[str, str]:
        out = {}
        for instance in instance_ids:
            self.scripts.append((instance, script))
            env = {**os.environ, **self.env, "SHIM_STATE": str(self.state[instance]),
                   "PATH": f"{self.shims}:{Path(sys.executable).parent}:{os.environ['PATH']}"}
            done = subprocess.run(["bash"], input=self.localize(script, instance), env=env,
                                  capture_output=True, text=True, timeout=120)
            if done.returncode != 0:  # as run_command reports a failed invocation
                raise CliError(f"command on the node ({instance}) Failed: "
                               f"{done.stderr.strip()[-500:]}", "the node's stderr is in this "
                               "error", ExitCode.CLUSTER)
            out[instance] = done.stdout
        return out
