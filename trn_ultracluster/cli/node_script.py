"""The part of every job that runs on each node, inside the job's runtime (the training
container, or the standalone DLAMI's virtual environment): the same bash on every
orchestrator, wrapped by each backend (Slurm's ``srun``, the TrainJob's container command,
the standalone node's ``job.sh``), which supplies the node's rank and the rendezvous.

What it does, in order (:func:`node_script`):

1. exports the job's environment (:data:`JOB_VARIABLES`: ``TRN_JOB_NAME``,
   ``TRN_NODE_RANK``, ``TRN_NNODES``, ``TRN_OUTPUT_DIR``, ``MASTER_ADDR``/``MASTER_PORT``,
   ...), the same names on every orchestrator (docs/your-code.md has the table), then
   ``--env`` (after ours, so it may override them; before pip, so ``PIP_INDEX_URL``,
   ``PIP_EXTRA_INDEX_URL`` or ``PIP_FIND_LINKS`` reach the requirements install: pip reads
   every option from ``PIP_<OPTION>``, pip user guide, "Environment Variables");
2. with a working directory snapshot: node 0 waits for the uploaded archive to appear on
   FSx (the data repository association imports new S3 objects: FSx for Lustre user guide,
   "Automatically import updates from your S3 bucket",
   https://docs.aws.amazon.com/fsx/latest/LustreGuide/autoimport-data-repo-dra.html; how
   soon is not stated there, so the wait is bounded by :data:`IMPORT_TIMEOUT_S`), checks its
   SHA-256 and unpacks it into ``/fsx/.trn-ultracluster/code/<sha256>`` (into a temporary
   directory renamed in place, so a directory of that name is always complete, and made
   read-only: every job of the same content shares it, outputs go to ``TRN_OUTPUT_DIR``);
   the other nodes wait for the directory. Every node then ``cd``s into it;
3. with ``--requirements``: node 0 runs ``pip install --prefix`` into
   ``/fsx/.trn-ultracluster/pip/<key>`` (again renamed in place when complete), the key
   being the SHA-256 of the image, the file, ``--env PIP_*`` and, when the file names local
   paths, the snapshot: once per job and content, shared by all nodes, so N nodes do not download the
   same wheels N times through the NAT gateway. ``--prefix`` and not ``--target``: pip
   ignores installed packages with ``--target`` (pip ``commands/install.py``:
   ``if options.target_dir: options.ignore_installed = True``) and would download torch
   again; with ``--prefix`` the image's packages satisfy what they can. Every package of
   the image is pinned with a constraints file made from ``pip list`` in the image, so a
   requirement that wants another version of one makes pip fail rather than shadow it
   (the Neuron compiler runs with the same ``PYTHONPATH``) or uninstall it (pip with
   ``--prefix`` uninstalls the environment's copy of a package it upgrades, pypa/pip#10136:
   on a standalone node's DLAMI environment that would last); ``submit`` refuses the Neuron
   packages by name before that. The other nodes wait; every node puts
   the prefix's ``site-packages`` on ``PYTHONPATH`` and its ``bin`` on ``PATH``;
4. ``--setup``: every node runs the command with bash in the snapshot directory; a failure
   ends the node's part with the command's status, before the program starts;
5. node 0 writes the job record (:data:`~trn_ultracluster.contracts.shared_storage.JOB_RECORD_FILE`)
   into the output directory;
6. the precompile pass, if any, then the program.

A failure in steps 2-4 on node 0 leaves a marker the waiting nodes see
(``<directory>.failed-<run id>``), so they stop at once with a pointer to node 0's log
instead of waiting :data:`PREPARE_TIMEOUT_S`; on Slurm the step's ``--kill-on-bad-exit``
ends them too. pip's output and the failure come first in the log, before the program's.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.cli.launch import Launch, bash_word, literal_note
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH, JOB_RECORD_FILE, PIP_DIR

__all__ = ["IMPORT_TIMEOUT_S", "JOB_VARIABLES", "NodeContext", "PREPARE_TIMEOUT_S",
           "job_record", "node_script", "pip_key"]

IMPORT_TIMEOUT_S = 900
"""How long node 0 waits for the snapshot archive to appear on FSx after the upload. The FSx
guide gives no import latency; our bound, in seconds."""
PREPARE_TIMEOUT_S = 3600
"""How long the other nodes wait for node 0 to unpack the snapshot and install the
requirements (a large requirements file can take many minutes); seconds."""
JOB_VARIABLES = ("TRN_JOB_NAME", "TRN_NODE_RANK", "TRN_NNODES", "TRN_OUTPUT_DIR", "TRN_IMAGE",
                 "TRN_DATA_BUCKET", "TRN_RUN_ID", "MASTER_ADDR", "MASTER_PORT",
                 "TRN_FSX_MOUNT_POINT", "TRN_CODE_DIR", "TRN_CODE_SHA256")
"""What the node script exports for the program (the last two with a snapshot)."""


@dataclass(frozen=True)
class NodeContext:
    """How a backend names the node's place in the job: bash expressions (quoted where
    needed), read on the node.

    Attributes:
        rank: the node's rank, 0 for the first (e.g. ``"${SLURM_NODEID}"``).
        nnodes: the job's node count.
        master_addr: the first node's address (the rendezvous host).
        master_port: the rendezvous port.
        run_id: what tells one run of the job from another (a requeued Slurm job runs again
            under the same name), for the failure markers.
        torchrun: ``torchrun`` with its launcher options for this backend.
        check: a bash line run first that stops a node whose place is wrong, or "".
    """

    rank: str
    nnodes: str
    master_addr: str
    master_port: str
    run_id: str
    torchrun: str
    check: str = ""


def _requirement_target(line: str) -> str:
    """What a requirements line installs: the line without an ``-e``/``--editable`` flag."""
    words = line.split()
    if words and words[0] in ("-e", "--editable"):
        words = words[1:]
    return words[0] if words else ""


def pip_key(image: str, requirements: str, code_sha256: str | None,
            env: dict[str, str] | None = None) -> str:
    """The SHA-256 (hex) naming a requirements install: the image, the file's text, pip's
    own variables among ``env`` (``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, ...: another index
    may resolve other versions) and, when a line names a local path (``.``/``/``/``file:``,
    resolved in the snapshot), the snapshot."""
    local = any(_requirement_target(line).startswith((".", "/", "file:"))
                for line in requirements.splitlines())
    pip_env = sorted(f"{k}={v}" for k, v in (env or {}).items() if k.startswith("PIP_"))
    parts = [image, requirements, *pip_env] + ([code_sha256 or ""] if local else [])
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


_FUNCTIONS = f"""trn_fail() {{ echo "trn: $*" >&2; exit 1; }}
# trn_once DIR WHAT FUNCTION ARGS...: node 0 runs FUNCTION unless DIR exists, the other nodes
# wait for DIR; a failure on node 0 leaves DIR.failed-RUN for them.
trn_once() {{
  local dir="$1" what="$2" marker="$1.failed-${{TRN_RUN_ID}}" waited=0
  shift 2
  if [[ -d "${{dir}}" ]]; then echo "trn: ${{what}}: done already (${{dir}})"; return 0; fi
  if [[ "${{TRN_NODE_RANK}}" == 0 ]]; then
    mkdir -p "$(dirname "${{dir}}")"  # for the marker, whatever fails first
    rm -f "${{marker}}"
    echo "trn: ${{what}}"
    if ! "$@"; then touch "${{marker}}"; trn_fail "${{what}} failed (above)"; fi
    return 0
  fi
  until [[ -d "${{dir}}" ]]; do
    if [[ -e "${{marker}}" ]]; then trn_fail "${{what}} failed on node 0: see its log"; fi
    if (( waited >= {PREPARE_TIMEOUT_S} )); then
      trn_fail "${{what}}: node 0 did not finish within {PREPARE_TIMEOUT_S} s"
    fi
    sleep 2
    waited=$(( waited + 2 ))
  done
}}
"""

_RENAME = """# trn_rename TMP DIR: TMP becomes DIR; when another run made DIR first, TMP goes.
trn_rename() {
  mv -T "$1" "$2" 2> /dev/null && return 0
  chmod -R u+w "$1" && rm -rf "$1"
  [[ -d "$2" ]] || { echo "trn: cannot rename $1 to $2" >&2; return 1; }
}
"""

_UNPACK = f"""# trn_unpack ARCHIVE SHA256 DIR: wait for the archive, check it, unpack it, rename into DIR.
trn_unpack() {{
  local waited=0 tmp
  until [[ -f "$1" ]]; do
    if (( waited >= {IMPORT_TIMEOUT_S} )); then
      echo "trn: $1 did not appear within {IMPORT_TIMEOUT_S} s: the data repository association imports new S3 objects only with auto import (fsx.data_repository.auto_import)" >&2
      return 1
    fi
    sleep 2
    waited=$(( waited + 2 ))
  done
  echo "$2  $1" | sha256sum --check --quiet - || {{ echo "trn: $1 does not match its SHA-256" >&2; return 1; }}
  mkdir -p "$(dirname "$3")" || return 1
  tmp="$(mktemp -d "$3.tmp.XXXXXX")" || return 1
  if ! tar -xzf "$1" -C "${{tmp}}" --no-same-owner; then rm -rf "${{tmp}}"; return 1; fi
  chmod 755 "${{tmp}}"
  chmod -R a-w "${{tmp}}"  # shared by every job of this content: not a place to write
  trn_rename "${{tmp}}" "$3"
}}
"""


def _pip_function() -> str:
    return """# trn_pip BASE64_REQUIREMENTS DIR: pip install --prefix into a new directory, renamed into DIR.
# Every package of the image is a constraint: pip can add packages, never replace one.
trn_pip() {
  local tmp
  mkdir -p "$(dirname "$2")" || return 1
  tmp="$(mktemp -d "$2.tmp.XXXXXX")" || return 1
  chmod 755 "${tmp}"
  printf '%s' "$1" | base64 -d > "${tmp}/requirements.txt" || return 1
  python3 -m pip list --format=freeze --disable-pip-version-check 2> /dev/null \\
    | grep -E '^[A-Za-z0-9._-]+==' > "${tmp}/constraints.txt" || true
  echo "trn: the image's $(wc -l < "${tmp}/constraints.txt") packages stay as they are"
  if ! python3 -m pip install --no-input --disable-pip-version-check --no-warn-script-location \\
      --prefix "${tmp}" -c "${tmp}/constraints.txt" -r "${tmp}/requirements.txt"; then
    rm -rf "${tmp}"
    echo "trn: pip could not install the requirements on top of the image (a requirement that needs another version of an image package cannot: build your own image, docs/custom-image.md)" >&2
    return 1
  fi
  trn_rename "${tmp}" "$2"
}
# trn_use_pip DIR: its site-packages first on PYTHONPATH, its bin first on PATH.
trn_use_pip() {
  local site
  while IFS= read -r site; do
    PYTHONPATH="${site}${PYTHONPATH:+:${PYTHONPATH}}"
  done < <(find "$1" -maxdepth 6 -type d \\( -name site-packages -o -name dist-packages \\))
  export PYTHONPATH PATH="$1/bin:$1/local/bin:${PATH}"
}
"""


def job_record(*, name: str, launch: Launch, image: str, nodes: int,
               submitted: str, pool: str | None = None) -> dict[str, object]:
    """The job record (:data:`JOB_RECORD_FILE`) as the CLI knows it; node 0 adds ``started``
    and ``run_id``. ``pool``: the node pool's name (``None`` on a stack without pools in its
    outputs)."""
    return {"name": name, "program": list(launch.program), "launcher": launch.launcher,
            "precompile_program": (None if launch.precompile_program is None
                                   else list(launch.precompile_program)),
            "code_sha256": launch.code.sha256 if launch.code else None,
            "requirements_sha256": (None if launch.requirements is None else
                                    hashlib.sha256(launch.requirements.encode()).hexdigest()),
            "setup": launch.user_setup,
            "image": image, "nodes": nodes, "pool": pool, "submitted": submitted}


_RECORD_PROGRAM = ('import base64, datetime, json, os, sys; '
                   'r = json.loads(base64.b64decode(sys.argv[1])); '
                   'r["started"] = datetime.datetime.now(datetime.timezone.utc)'
                   '.isoformat(timespec="seconds"); r["run_id"] = sys.argv[3]; '
                   't = sys.argv[2] + ".tmp"; '
                   'open(t, "w").write(json.dumps(r, indent=2, sort_keys=True) + chr(10)); '
                   'os.replace(t, sys.argv[2])')
"""Node 0's writer of the job record: the CLI's part (base64 JSON) plus the start time and
run id, written to a temporary file and renamed, so the record is never half written."""


def node_script(job: JobRequest, node: NodeContext) -> str:
    """The bash every node runs in the job's runtime, after the stack's environment file is
    sourced (the module docstring lists the steps).

    Args:
        job: the checked job: its name, program (snapshot, requirements, setup), image
            (which names the requirements install), output directory (``TRN_OUTPUT_DIR``),
            data bucket (``TRN_DATA_BUCKET``) and ``--env`` (exported after ours: it may
            override them; before the requirements install and ``--setup``).
        node: the backend's names for the node's rank and the rendezvous.

    Returns:
        Bash lines (``set -euo pipefail`` is the caller's), ending with a newline.
    """
    name, launch, image, env = job.name, job.launch, job.image, job.env
    record = job_record(name=name, launch=launch, image=image, nodes=job.nodes,
                        submitted=job.submitted, pool=job.pool.name if job.pool else None)
    lines = [
        f"export TRN_JOB_NAME={bash_word(name)} TRN_NODE_RANK={node.rank} "
        f"TRN_NNODES={node.nnodes}",
        *literal_note(job.output_dir),
        f"export TRN_RUN_ID={node.run_id} TRN_OUTPUT_DIR={bash_word(job.output_dir)} "
        f"TRN_IMAGE={bash_word(image)} TRN_DATA_BUCKET={bash_word(job.data_bucket)}",
        f"export MASTER_ADDR={node.master_addr} MASTER_PORT={node.master_port} "
        f"TRN_FSX_MOUNT_POINT={FSX_MOUNT_PATH}",
    ]
    if node.check:
        lines.append(node.check)
    code, requirements = launch.code, launch.requirements
    for key, value in sorted(env.items()):  # before pip: PIP_INDEX_URL and friends work
        lines += [*literal_note(value), f"export {key}={bash_word(value)}"]
    if code is not None or requirements is not None:
        lines += [_FUNCTIONS.rstrip("\n"), _RENAME.rstrip("\n")]
    if code is not None:
        lines += [_UNPACK.rstrip("\n"),
                  f"export TRN_CODE_SHA256={code.sha256} TRN_CODE_DIR={code.directory}",
                  f'trn_once "${{TRN_CODE_DIR}}" "code snapshot {code.sha256[:12]}" '
                  f'trn_unpack {bash_word(code.archive)} "${{TRN_CODE_SHA256}}" "${{TRN_CODE_DIR}}"',
                  'cd "${TRN_CODE_DIR}"']
    if requirements is not None:
        key = pip_key(image, requirements, code.sha256 if code else None, dict(env))
        lines += [_pip_function().rstrip("\n"),
                  f"TRN_PIP_DIR={PIP_DIR}/{key}",
                  f'trn_once "${{TRN_PIP_DIR}}" "requirements ({key[:12]})" '
                  f'trn_pip {bash_word(_b64(requirements))} "${{TRN_PIP_DIR}}"',
                  'trn_use_pip "${TRN_PIP_DIR}"']
    lines.append('echo "trn: job ${TRN_JOB_NAME} node ${TRN_NODE_RANK} of ${TRN_NNODES} on '
                 '$(hostname): code ${TRN_CODE_SHA256:-(image)}, image ${TRN_IMAGE}, '
                 'output ${TRN_OUTPUT_DIR}"')
    if launch.user_setup is not None:
        note = literal_note(launch.user_setup)
        lines += [*note, f"echo {bash_word('trn: setup: ' + launch.user_setup)}",
                  *note, f"bash -c {bash_word(launch.user_setup)} || trn_setup_status=$?",
                  'if [[ -n "${trn_setup_status:-}" ]]; then '
                  'echo "trn: --setup failed with exit status ${trn_setup_status} on node '
                  '${TRN_NODE_RANK}; the program was not started" >&2; '
                  'exit "${trn_setup_status}"; fi']
    if job.output_dir:  # the smoke test has none
        lines += ['mkdir -p "${TRN_OUTPUT_DIR}"',
                  'if [[ "${TRN_NODE_RANK}" == 0 ]]; then',
                  f"  python3 -c {bash_word(_RECORD_PROGRAM)} "
                  f'{_b64(json.dumps(dict(record), sort_keys=True))} '
                  f'"${{TRN_OUTPUT_DIR}}/{JOB_RECORD_FILE}" "${{TRN_RUN_ID}}"',
                  "fi"]
    if launch.setup:
        lines.append(launch.setup)
    lines += launch.run_lines(node.torchrun)
    return "\n".join(lines) + "\n"

