"""The job-backend protocol: what the job CLI asks of an orchestrator.

A backend is chosen once per command from the stack outputs
(:func:`trn_ultracluster.cli.backends.open_backend`). It gets the stack outputs (and so the
catalog entry of the stack's instance type), the parsed command line (for the options it
declared in :attr:`JobBackend.options`) and a way to make a boto3 session in the stack's
Region. It is given jobs that are already checked
(:class:`~trn_ultracluster.cli.job_args.JobRequest`: name, node count, EFA, environment
names, time limit) and only translates them into what its orchestrator runs; it reaches the
cluster on first need and keeps that connection for the rest of the command
(:attr:`JobBackend.client`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from trn_ultracluster.cli.errors import CliError
from trn_ultracluster.cli.smoke import smoke_launch

if TYPE_CHECKING:
    from trn_ultracluster.cli.job_args import JobRequest
    from trn_ultracluster.cli.launch import Launch
    from trn_ultracluster.cli.stack_outputs import StackOutputs
    from trn_ultracluster.contracts.catalog import InstanceSpec
    from trn_ultracluster.cli.usage import Period, UsageRecord
    from trn_ultracluster.contracts.pools import PoolInfo
    from trn_ultracluster.contracts.teams import TeamsInfo

__all__ = ["BackendOption", "BackendTexts", "JobBackend", "JobState", "RenderedJob"]


@dataclass(frozen=True)
class BackendOption:
    """A command-line option a backend reads (added to every command that reaches jobs).

    Attributes:
        flag: e.g. ``--kube-context``; the backend reads it as ``options.kube_context``.
        help: the ``--help`` text, starting with the backend's label.
        choices: allowed values, or ``None`` for any.
        default: value when the option is not given.
    """

    flag: str
    help: str
    choices: tuple[str, ...] | None = None
    default: str | None = None

    @property
    def dest(self) -> str:
        """The attribute name argparse gives the option."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class BackendTexts:
    """How ``--help`` describes a backend's jobs (one ``<label>: <text>`` part each).

    Attributes:
        label: e.g. ``EKS``.
        job: what names a job in ``status``/``logs``/``cancel``.
        dry_run: what ``--dry-run`` prints.
        time_limit: what ``--time`` becomes.
        env: where ``--env`` goes.
    """

    label: str
    job: str
    dry_run: str
    time_limit: str
    env: str


@dataclass(frozen=True)
class RenderedJob:
    """A job translated for the orchestrator.

    Attributes:
        job: the checked job it was made from.
        text: what ``--dry-run`` prints (a manifest, a script), ending with a newline.
        payload: what :meth:`JobBackend.submit` sends.
    """

    job: JobRequest
    text: str
    payload: Any


@dataclass(frozen=True)
class JobState:
    """A job's state as the orchestrator names it, and whether the job has ended."""

    text: str
    ended: bool


class JobBackend(ABC):
    """Submit, watch, read and cancel jobs on one kind of orchestrator.

    Class attributes (each backend sets them):
        name: the value of the stack output ``JobBackend`` (``Orchestrator`` on stacks
            older than that output) that selects it.
        options: command-line options it reads.
        texts: how ``--help`` describes its jobs.

    Args:
        outputs: the stack outputs.
        args: the parsed command line; the options of :attr:`options` are absent on
            commands that do not reach jobs (``scale``): read them with :meth:`option`.
        session: makes the boto3 session in the stack's Region (called once, on first need:
            ``--dry-run`` never imports boto3).
    """

    name: ClassVar[str]
    options: ClassVar[tuple[BackendOption, ...]] = ()
    texts: ClassVar[BackendTexts]

    def __init__(self, outputs: StackOutputs, args: Any, session: Callable[[], Any]) -> None:
        self.outputs = outputs
        self.args = args
        self._make_session = session
        self._session: Any = None
        self._client: Any = None

    @property
    def spec(self) -> InstanceSpec:
        """Catalog entry of the stack's instance type (looked up when a job needs it, so
        ``status`` works on a stack whose type this CLI's catalog lacks)."""
        return self.outputs.instance_spec()

    def option(self, dest: str) -> Any:
        """The value of one of :attr:`options` (its default when the command lacks it)."""
        found = next((o for o in self.options if o.dest == dest), None)
        return getattr(self.args, dest, found.default if found else None)

    @property
    def session(self) -> Any:
        """The boto3 session in the stack's Region (made once)."""
        if self._session is None:
            self._session = self._make_session()
        return self._session

    @property
    def client(self) -> Any:
        """The connection to the cluster, made by :meth:`connect` on first use and kept for
        the command (connecting loads credentials, a kubeconfig or lists nodes)."""
        if self._client is None:
            self._client = self.connect()
        return self._client

    @abstractmethod
    def connect(self) -> Any:
        """Reach the cluster; returns the client the other methods use.

        Raises:
            CliError: CLUSTER / STACK / CREDENTIALS when the cluster cannot be reached.
        """

    @abstractmethod
    def render(self, job: JobRequest) -> RenderedJob:
        """Translate a checked job; contacts nothing.

        Raises:
            ValueError: an argument this orchestrator cannot express (the message says which).
            CliError: (STACK) an output the translation needs is missing.
        """

    @abstractmethod
    def submit(self, job: RenderedJob) -> str:
        """Send the job; returns its handle (what ``status``/``logs``/``cancel`` take)."""

    @abstractmethod
    def status(self, job: str | None, pool: PoolInfo | None = None) -> list[str]:
        """Lines describing one job, or every job (a line saying so when there is none);
        with ``pool`` (``status --pool``), only the jobs of that pool, and its nodes.

        Raises:
            CliError: USAGE for a handle this orchestrator cannot have; CLUSTER when the job
                is unknown or the cluster fails the request.
        """

    @abstractmethod
    def state(self, job: str) -> JobState:
        """The job's current state (polled while ``smoke-test`` waits)."""

    @abstractmethod
    def logs(self, job: str, tail_lines: int | None = None) -> str:
        """The job's log (the first node's), or its last ``tail_lines`` lines."""

    @abstractmethod
    def cancel(self, job: str) -> None:
        """Stop and remove the job."""

    def team_status(self, teams: TeamsInfo) -> list[str]:
        """Lines of each team's use of its quota per pool, and its jobs waiting for quota
        (``status`` on a stack with teams), from the scheduler's own records.

        Raises:
            CliError: USAGE: this orchestrator has no teams; CLUSTER when the scheduler fails
                the request.
        """
        raise CliError(f"teams are not available with the {self.name} job backend: it has "
                       "no scheduler that enforces them", "see docs/teams.md")

    def usage(self, period: Period, teams: TeamsInfo) -> list[UsageRecord]:
        """Each job's use of its pool inside ``period``, per team, from the scheduler's own
        records (Slurm's ``sacct``, Kueue's Workloads); times clipped to the period.

        Raises:
            CliError: USAGE: this orchestrator keeps no such records; CLUSTER when the
                scheduler fails the request.
        """
        raise CliError(f"usage is not available with the {self.name} job backend: it keeps "
                       "no per-team records", "see docs/teams.md")

    def apply_teams(self, teams: TeamsInfo, *, dry_run: bool = False) -> list[str]:
        """Apply the stack's current teams to the running scheduler (``teams --apply``);
        returns the lines to print: what changed, or with ``dry_run`` what would be sent.

        Raises:
            CliError: USAGE: this orchestrator applies teams otherwise (on deploy) or has
                none; CLUSTER when a step fails on the cluster.
        """
        raise CliError(f"teams --apply is not available with the {self.name} job backend: it "
                       "has no scheduler that enforces teams", "see docs/teams.md")

    def smoke_launch(self, name: str, pool: PoolInfo | None = None) -> Launch:
        """The smoke test's program for job ``name`` on ``pool`` (default: the main pool;
        each node writes the script to its own /tmp, which all its processes see)."""
        stack = pool.neuron_stack if pool is not None and pool.neuron_stack else None
        return smoke_launch(stack or self.outputs.neuron_stack)

    def scale(self, nodes: int, pool: PoolInfo | None = None) -> str:
        """Set the number of nodes of ``pool`` (``None``: the main pool); returns a line
        saying what changed.

        Raises:
            CliError: USAGE: this orchestrator's nodes are sized by the stack.
        """
        raise CliError(f"scale is not available with the {self.name} job backend: its nodes "
                       "are sized by the stack", "set nodes.desired and deploy")

    def shell_argv(self, node: int, *, check_tools: bool = True) -> list[str]:
        """The command line of an interactive shell on node ``node`` (0: the first);
        ``check_tools``: fail when the tools it runs are not on PATH (not when only printed).

        Raises:
            CliError: USAGE: this backend opens no shells (see the stack's outputs).
        """
        raise CliError(f"shell is not available with the {self.name} job backend",
                       "see the stack's outputs (`trn-ultracluster outputs`) for how to reach "
                       "its nodes")
