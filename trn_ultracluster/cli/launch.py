"""What a job runs: the user's program (:func:`program_launch`) or the bundled trainer
(:func:`trn_train_launch`), both a :class:`Launch` that every backend runs through the same
node script (:mod:`trn_ultracluster.cli.node_script`), and the ``torchrun`` command line.

The default launcher is ``torchrun`` on every node, one process per logical NeuronCore
(:attr:`InstanceSpec.logical_neuron_cores`) unless ``--nproc-per-node``:

- EKS: Kubeflow Trainer's torch policy gives torchrun its node count, rank and master
  address through ``PET_*`` variables (kubeflow/trainer ``pkg/runtime/framework/plugins/
  torch/torch.go``: ``PET_NNODES``, ``PET_NPROC_PER_NODE``, ``PET_NODE_RANK``,
  ``PET_MASTER_ADDR``, ``PET_MASTER_PORT``; torchrun reads ``PET_<option>`` for each of its
  options, PyTorch ``torch/distributed/run.py``), so the command is plain ``torchrun``.
- Slurm and standalone: the node script gives ``--nnodes``, ``--nproc-per-node``,
  ``--node-rank`` and the first node's address (:func:`torchrun_command`).

``--launcher none`` runs the program once per node instead. Arguments are written as bash
words no shell expands (:func:`bash_word`).

The bundled trainer is ``python -m trn_train train --recipe ... --data-dir ...
--output-dir ... --steps ...`` (``training/trn_train/cli.py``); under torchrun that is
``torchrun ... -m trn_train train ...`` (torchrun ``-m/--module``).

Precompile: ``neuron_parallel_compile <the same command>`` extracts and compiles every
graph in parallel into the Neuron cache on FSx before the real run (Neuron docs,
"neuron_parallel_compile", https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/api-reference-guide/training/pytorch-neuron-parallel-compile.html);
the trial run adds ``--precompile-args`` to a user's program, and ``--max-steps-this-run``
to the bundled trainer's (its flag for this purpose).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath
from collections.abc import Sequence
from datetime import datetime, timezone

from trn_ultracluster.contracts.hyperpod import JobEnv
from trn_ultracluster.contracts.neuron_stack import XLA, NeuronStackName
from trn_ultracluster.contracts.shared_storage import CODE_DIR, ENV_FILE

__all__ = ["CodeSnapshot", "check_precompile_stack", "LAUNCHERS", "Launch", "NO_LAUNCHER", "RENDEZVOUS_PORT", "TORCHRUN",
           "bash_join", "bash_word", "default_job_name", "env_file_lines", "literal_note",
           "program_launch", "torchrun_command", "trn_train_launch", "validate_job_name"]

PRECOMPILE_STEPS = 10
"""Default steps of the precompile trial run: enough to reach every graph of a step
(forward, backward, optimizer, logging); our choice, not a Neuron number."""
_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
RENDEZVOUS_PORT = 29500
"""torchrun's default master port (PyTorch ``torch/distributed/run.py``)."""


def torchrun_command(nnodes: str, nproc_per_node: int, node_rank: str, master_addr: str,
                     master_port: str) -> str:
    """``torchrun`` with a static rendezvous: ``nnodes`` nodes of ``nproc_per_node``
    processes, this node being ``node_rank``, rank 0's node at ``master_addr:master_port``
    (torchrun's default ``--rdzv-backend=static``: ``--node-rank`` and ``--master-addr`` "are
    only used for static rendezvous", PyTorch ``torch/distributed/run.py``). Static and not
    c10d: with c10d the ranks go to nodes in the order they join, so rank 0, which prints a
    program's metrics, could be on any node and ``logs`` (the first node's) would miss them;
    with the node's rank given, node 0 runs ranks 0 to ``nproc_per_node - 1`` on every
    orchestrator, as Kubeflow Trainer's ``PET_NODE_RANK`` does on EKS. The arguments are shell
    words as they are (they may be quoted variables such as ``"${SLURM_NODEID}"``)."""
    return (f"torchrun --nnodes={nnodes} --nproc-per-node={nproc_per_node} "
            f"--node-rank={node_rank} --master-addr={master_addr} --master-port={master_port}")


def env_file_lines() -> str:
    """Bash lines that source the stack's job environment file
    (:data:`~trn_ultracluster.contracts.shared_storage.ENV_FILE`, written on every node by the
    node scripts) and stop when it lacks the Neuron compile cache (a file from a stack older
    than the shared cache), which both Neuron training stacks set."""
    return (f"# shellcheck source=/dev/null\nsource {ENV_FILE}\n"
            f': "${{{JobEnv.NEURON_CACHE_DIR.value}:?is not set by {ENV_FILE}: redeploy the stack}}"\n')


TORCHRUN = "torchrun"
NO_LAUNCHER = "none"
LAUNCHERS = (TORCHRUN, NO_LAUNCHER)
"""``submit --launcher``: ``torchrun`` starts the program once per process on every node
(one process per logical NeuronCore unless ``--nproc-per-node``); ``none`` runs it once per
node, for programs that start their own workers (launcher scripts of Neuronx Distributed,
TorchTitan)."""


def bash_word(value: str) -> str:
    """``value`` as one bash word that no shell expands: ``shlex.quote`` (single quotes)
    when every character is printable (non-ASCII letters are), else ANSI-C quoting
    (``$'...'``, bash manual "ANSI-C Quoting") with control characters escaped, so a
    generated script never holds a line break of the user's: no argument can end a
    here-document early or start a new command."""
    if value.isprintable():
        return shlex.quote(value)
    escaped = "".join(
        {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t"}.get(c)
        or (c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 0x100
            else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
        for c in value)
    return f"$'{escaped}'"


LITERAL_NOTE = "# shellcheck disable=SC1003,SC2016  # the user's words, literal on purpose"


def literal_note(*words: str) -> list[str]:
    """``[LITERAL_NOTE]`` when a line quoting ``words`` with :func:`bash_word` would fail
    shellcheck for being literal on purpose, else ``[]``: ``$`` or a backquote inside single
    quotes is SC2016 ("Expressions don't expand in single quotes"), a backslash before a
    single quote SC1003 ("Want to escape a single quote?"), both info-level notes that make
    shellcheck exit 1 (measured with shellcheck 0.11.0 on every printable ASCII character).
    The note goes on the line before; it covers that line only (shellcheck wiki,
    "Directive")."""
    return [LITERAL_NOTE] if any(c in w for w in words for c in "$`\\") else []


def bash_join(words: tuple[str, ...] | list[str]) -> str:
    """Words joined as bash words (:func:`bash_word`)."""
    return " ".join(bash_word(w) for w in words)


@dataclass(frozen=True)
class CodeSnapshot:
    """A working directory packed by ``submit`` (:mod:`trn_ultracluster.cli.workdir`), as the
    nodes find it.

    Attributes:
        sha256: hex digest of the archive (its name, and what the nodes verify).
        archive: where the archive appears on the shared file system (the data repository
            association shows the uploaded object there).
    """

    sha256: str
    archive: str

    @property
    def directory(self) -> str:
        """The unpacked snapshot, the program's current directory on every node."""
        return f"{CODE_DIR}/{self.sha256}"


@dataclass(frozen=True)
class Launch:
    """A job's program.

    Attributes:
        program: the program and its arguments, as given. With ``launcher`` ``torchrun``:
            what follows ``torchrun [launcher options]`` (``("train.py", ...)``, ``("-m",
            "trn_train", "train", ...)``, or ``("--no-python", "./run.sh", ...)``); with
            ``none``: the command run once per node.
        precompile_program: the same for the ``neuron_parallel_compile`` trial run, or
            ``None`` for no precompile pass.
        setup: shell lines of ours run on every node before the program (the smoke test
            writes its script), or "".
        launcher: one of :data:`LAUNCHERS`.
        nproc_per_node: processes per node of ``torchrun``; ``None``: one per logical
            NeuronCore of the instance type.
        code: the working directory snapshot the program runs in, or ``None`` (the
            bundled trainer runs from the image).
        requirements: the text of ``--requirements``, or ``None``.
        user_setup: ``--setup``: a command run with bash on every node before the program.
    """

    program: tuple[str, ...]
    precompile_program: tuple[str, ...] | None = None
    setup: str = ""
    launcher: str = TORCHRUN
    nproc_per_node: int | None = None
    code: CodeSnapshot | None = None
    requirements: str | None = None
    user_setup: str | None = None

    def run_lines(self, torchrun: str) -> list[str]:
        """The precompile pass (if any) and the run, as shell lines, each after a shellcheck
        note when its words need one (:func:`literal_note`), the run last; ``torchrun`` is
        the launcher with its options (unused with ``launcher`` ``none``)."""
        prefix = f"{torchrun} " if self.launcher == TORCHRUN else ""
        lines = []
        if self.precompile_program is not None:
            lines += literal_note(*self.precompile_program)
            lines.append(f"neuron_parallel_compile {prefix}{bash_join(self.precompile_program)}")
        lines += literal_note(*self.program)
        lines.append(f"{prefix}{bash_join(self.program)}")
        return lines


def check_precompile_stack(stack: NeuronStackName) -> None:
    """A precompile pass runs on the XLA stack only.

    Raises:
        ValueError: ``stack`` is not ``xla`` (``neuron_parallel_compile`` extracts XLA graphs;
            the native stack compiles its torch.compile graphs on first use).
    """
    if stack != XLA:
        raise ValueError(
            "--precompile runs neuron_parallel_compile, which extracts the graphs of the XLA "
            f"stack; this stack trains on the {stack} stack, whose torch.compile graphs are "
            "compiled on first use and kept in the shared compile cache: leave --precompile out")


def trn_train_launch(*, recipe: str, data_dir: str, output_dir: str, steps: int,
                     instance_type: str, backend: NeuronStackName,
                     extra_args: tuple[str, ...] = (),
                     precompile_steps: int | None = None) -> Launch:
    """``torchrun -m trn_train train --backend <stack> ...`` with the flags of
    ``training/trn_train/cli.py``.

    Args:
        recipe: recipe name (``python -m trn_train recipes`` lists them).
        data_dir: prepared data on the shared file system (output of ``prepare-data``).
        output_dir: checkpoints and TensorBoard directory on the shared file system.
        steps: total optimizer steps.
        instance_type: the stack's instance type (the program's MFU uses its peak).
        backend: the stack's Neuron training stack, the program's ``--backend``.
        extra_args: more ``train`` flags, passed as they are.
        precompile_steps: steps of a ``neuron_parallel_compile`` trial run first; ``None``
            for none; the XLA stack's only (``neuron_parallel_compile`` extracts XLA graphs).

    Raises:
        ValueError: ``steps`` or ``precompile_steps`` below 1, or a precompile pass on the
            native stack.
    """
    if steps < 1:
        raise ValueError(f"--steps must be at least 1, got: {steps}")
    program = ("-m", "trn_train", "train", "--backend", backend, "--recipe", recipe,
               "--data-dir", data_dir, "--output-dir", output_dir, "--steps", str(steps),
               "--instance-type", instance_type, *extra_args)
    precompile = None
    if precompile_steps is not None:
        check_precompile_stack(backend)
        if precompile_steps < 1:
            raise ValueError(f"--precompile-steps must be at least 1, got: {precompile_steps}")
        precompile = (*program, "--max-steps-this-run", str(precompile_steps))
    return Launch(program, precompile)


LAUNCHER_COMMANDS = ("torchrun", "neuron_parallel_compile")
"""Commands that start workers themselves: under torchrun they would run once per process."""
PYTHON_NAMES = ("python", "python3")
"""A program given as ``python train.py`` (or ``python -m mod``) runs as ``train.py`` under
torchrun, which starts Python itself (torchrun runs ``python -u <script>``, or ``-m`` modules;
``--no-python`` for anything else: PyTorch "torchrun (Elastic Launch)"). With interpreter
options before the script (``python -X dev train.py``), which torchrun's own ``python -u``
cannot take, the interpreter is the program: ``--no-python python -X dev train.py``."""


def program_launch(program: Sequence[str], *, launcher: str = TORCHRUN,
                   nproc_per_node: int | None = None,
                   precompile_args: tuple[str, ...] | None = None,
                   code: CodeSnapshot | None = None, requirements: str | None = None,
                   user_setup: str | None = None) -> Launch:
    """The launch of a user's program (``submit -- PROGRAM [ARGS...]``).

    Args:
        program: ``("train.py", ARGS...)``, ``("python", "train.py", ...)``, ``("-m",
            "pkg.mod", ...)`` or, with ``launcher`` ``none`` (and with torchrun through
            ``--no-python``), any executable with its arguments. Arguments are kept as given.
        launcher: one of :data:`LAUNCHERS`.
        nproc_per_node: torchrun processes per node; ``None``: one per logical NeuronCore.
        precompile_args: ``None`` for no precompile pass; else the arguments added to the
            program's for the ``neuron_parallel_compile`` trial run only (e.g. a step limit).
        code: the working directory snapshot; requirements, user_setup: as :class:`Launch`.

    Raises:
        ValueError: no program, ``-m`` without a module, an unknown launcher, or fewer than
            one process per node.
    """
    if launcher not in LAUNCHERS:
        raise ValueError(f"--launcher must be one of {', '.join(LAUNCHERS)}, got {launcher!r}")
    if nproc_per_node is not None and nproc_per_node < 1:
        raise ValueError(f"--nproc-per-node must be at least 1, got {nproc_per_node}")
    words = tuple(program)
    if (launcher == TORCHRUN and len(words) > 1 and words[0] in PYTHON_NAMES
            and (words[1] == "-m" or words[1].endswith(".py"))):
        words = words[1:]
    if not words or not words[0]:
        raise ValueError("no program: give it after `--`, e.g. `submit -- train.py --epochs 3`")
    if words[0] == "-m" and (len(words) < 2 or not words[1] or words[1].startswith("-")):
        raise ValueError("`-m` must be followed by a module name, e.g. `-- -m my_pkg.train`")
    if words[0].startswith("-") and words[0] != "-m":
        raise ValueError(f"PROGRAM starts with {words[0]!r}: give a script, `-m MODULE` or a "
                         "command after the one `--` (`-c CODE` is not a program torchrun "
                         "runs: put the code in a script)")
    if launcher == TORCHRUN and PurePosixPath(words[0]).name in LAUNCHER_COMMANDS:
        raise ValueError(f"PROGRAM is {words[0]}, and the default launcher is torchrun already: "
                         f"this would start {words[0]} in every torchrun process. Run your "
                         "own launcher line once per node with --launcher none, e.g. "
                         "`--launcher none -- bash -c 'torchrun --nnodes=$TRN_NNODES "
                         "--node-rank=$TRN_NODE_RANK --master-addr=$MASTER_ADDR ... train.py'`, "
                         "and --precompile for neuron_parallel_compile")
    if launcher == TORCHRUN:
        run = words if words[0] == "-m" or words[0].endswith(".py") else ("--no-python", *words)
    elif words[0] == "-m":
        run = ("python3", *words)
    else:  # run once per node; a program in the working directory is named by its path
        first = words[0]
        local = "/" not in first and code is not None and first.endswith(".py")
        run = (f"./{first}", *words[1:]) if local else words
    precompile = None if precompile_args is None else (*run, *precompile_args)
    return Launch(run, precompile, launcher=launcher, nproc_per_node=nproc_per_node, code=code,
                  requirements=requirements, user_setup=user_setup)


def validate_job_name(name: str) -> str:
    """Return ``name`` if it is a valid job name, else raise ValueError.

    The TrainJob CRD (Kubeflow Trainer 2.3.0) requires an RFC 1035 label of at most 63
    characters (``x-kubernetes-validations`` on the object: ``^[a-z]([-a-z0-9]*[a-z0-9])?$``);
    Slurm job names follow the same rule here so one name works on every orchestrator.
    """
    if len(name) > 63 or not _NAME_RE.match(name):
        raise ValueError(f"job name {name!r} must be 1-63 lower-case letters, digits and '-', "
                         "starting with a letter and not ending with '-'")
    return name


def default_job_name(prefix: str, now: datetime | None = None) -> str:
    """``<prefix>-<yyyymmdd-hhmmss>`` in UTC, cut and cleaned to a valid job name."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    clean = re.sub(r"[^a-z0-9-]+", "-", prefix.lower()).strip("-") or "job"
    if not clean[0].isalpha():
        clean = f"job-{clean}"
    return validate_job_name(f"{clean[: 63 - len(stamp) - 1].rstrip('-')}-{stamp}")
