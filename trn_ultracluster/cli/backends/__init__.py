"""Job backends: how the job CLI runs jobs on each orchestrator, chosen once per command.

The stack names its backend in the output ``JobBackend`` (stacks deployed before that
output existed: ``Orchestrator``, which had the same values); :data:`BACKENDS` maps the name
to a :class:`~trn_ultracluster.cli.backends.base.JobBackend` class, and
:func:`open_backend` makes the one a command uses.

Adding a backend: a module with a ``JobBackend`` subclass (its ``name``, ``options`` and
``texts``, and the job operations), and its class in :data:`BACKENDS`. The parser takes its
options and ``--help`` texts from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trn_ultracluster.cli.backends.base import JobBackend
from trn_ultracluster.cli.backends.eks import EksBackend
from trn_ultracluster.cli.backends.hyperpod_eks import HyperPodEksBackend
from trn_ultracluster.cli.backends.hyperpod_slurm import HyperPodSlurmBackend
from trn_ultracluster.cli.backends.standalone import StandaloneBackend
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.outputs import OutputKey

if TYPE_CHECKING:
    from trn_ultracluster.cli.stack_outputs import StackOutputs

__all__ = ["BACKENDS", "JobBackend", "backend_class", "open_backend"]

BACKENDS: dict[str, type[JobBackend]] = {
    backend.name: backend for backend in (EksBackend, HyperPodSlurmBackend, HyperPodEksBackend,
                                          StandaloneBackend)
}
"""Backend name (stack output ``JobBackend``) -> class, in the order ``--help`` lists them."""


def backend_class(outputs: StackOutputs) -> type[JobBackend]:
    """The class of the stack's job backend.

    Raises:
        CliError: (STACK) the stack names a backend this CLI does not know, or neither
            output.
    """
    key = OutputKey.JOB_BACKEND
    if key.value not in outputs.values and OutputKey.ORCHESTRATOR.value in outputs.values:
        key = OutputKey.ORCHESTRATOR  # a stack deployed before the JobBackend output
    name = outputs.get(key)
    try:
        return BACKENDS[name]
    except KeyError:
        raise CliError(
            f"stack {outputs.stack_name} ({outputs.source}) names job backend {name!r} (output "
            f"{key.value}), which this job CLI does not know (it knows: {', '.join(BACKENDS)})",
            "use the job CLI of the version that deployed the stack, or deploy the stack with "
            "this version", ExitCode.STACK) from None


def open_backend(outputs: StackOutputs, args: Any, session: Callable[[], Any]) -> JobBackend:
    """The stack's job backend for one command (arguments as :class:`JobBackend`).

    Raises:
        CliError: as :func:`backend_class`.
    """
    return backend_class(outputs)(outputs, args, session)
