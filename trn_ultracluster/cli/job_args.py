"""Checks of ``submit`` / ``smoke-test`` arguments, made before anything is sent, and the
checked job they give (:class:`JobRequest`), which every job backend translates.

Each check raises :class:`CliError` (USAGE) with the fix, so a job that cannot run never
reaches the cluster: the recipe must run with ``trn_train train``, the directories must be
on the shared file system every node mounts, the node count must fit the pool (and be 1
without EFA), the job name must suit every orchestrator, and options are honoured by every
backend (``--env``, ``--time``) or rejected, never dropped. The checks live here only:
backends trust a :class:`JobRequest`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from trn_ultracluster.cli.errors import CliError
from trn_ultracluster.cli.launch import Launch, validate_job_name
from trn_ultracluster.contracts.catalog import (
    InstanceSpec,
    UnknownInstanceTypeError,
    get_any_instance,
)
from trn_ultracluster.contracts.neuron_stack import XLA, NeuronStackName
from trn_ultracluster.contracts.pools import PoolInfo
from trn_ultracluster.contracts.teams import PriorityClassInfo, TeamInfo
from trn_ultracluster.contracts.recipes import RECIPES, UnknownRecipeError, get_recipe
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH

__all__ = ["JobRequest", "check_env", "check_image", "check_nodes", "check_shared_dir",
           "check_team_nodes", "check_train_recipe", "job_request", "team_node_limit",
           "time_limit_seconds"]

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""Environment names ``--env`` accepts: what bash can export (POSIX "Name": letters, digits
and ``_``, not starting with a digit), which Kubernetes accepts too; one rule for every
backend."""
_TIME_RE = re.compile(
    r"^(?:(?P<days>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?"
    r"|(?P<a>\d+)(?::(?P<b>\d+)(?::(?P<c>\d+))?)?)$")
TIME_FORMATS = ("minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
                "days-hours:minutes", "days-hours:minutes:seconds")
"""``sbatch --time`` formats (Slurm sbatch man page, ``--time``,
https://slurm.schedmd.com/sbatch.html)."""

# An image reference, as the distribution/reference grammar defines it (distribution/reference
# v0.5.0, reference.go, "Grammar"): name [":" tag] ["@" digest], the name an optional
# registry domain (with port) and lower-case path components; the name at most 255
# characters (NameTotalLengthMax). IPv6 registry hosts are left out.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REFERENCE_RE = re.compile(
    rf"(?P<name>(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?/)?"
    rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?\Z")
IMAGE_NAME_MAX = 255


def check_image(image: str) -> str:
    """``image`` is a container image reference (:data:`IMAGE_REFERENCE_RE`), e.g.
    ``123456789012.dkr.ecr.us-west-2.amazonaws.com/repo:tag`` or ``...@sha256:<hex>``;
    returns it unchanged.

    Raises:
        CliError: (USAGE) not a reference, or a name longer than :data:`IMAGE_NAME_MAX`.
    """
    match = IMAGE_REFERENCE_RE.match(image)
    if match is None or len(match["name"]) > IMAGE_NAME_MAX:
        raise CliError(
            f"--image {image!r} is not a container image reference: it must be "
            "[registry/]repository[:tag][@digest], with a lower-case repository of letters, "
            "digits and '._-' separators, a tag of at most 128 characters, and a name of at "
            f"most {IMAGE_NAME_MAX} characters (distribution/reference grammar)",
            "e.g. --image 123456789012.dkr.ecr.us-west-2.amazonaws.com/my-training:v1, or "
            "leave --image out for the stack's TrainingImageUri")
    return image


def _data_parallel_recipes() -> str:
    return ", ".join(sorted(n for n, r in RECIPES.items() if not r.needs_model_parallel))


def check_train_recipe(name: str, stack: NeuronStackName | None = None) -> None:
    """The recipe exists and runs with ``python -m trn_train train`` on the stack's Neuron
    training stack: every recipe on ``native`` (FSDP2 shards a model that needs tensor
    parallelism on NxD Training, such as llama-8b), the data-parallel ones on ``xla``.

    Args:
        name: ``submit --recipe``.
        stack: the stack's ``NeuronStack`` output; ``None`` checks only that the recipe exists.

    Raises:
        CliError: unknown recipe (the message lists them); a TP/PP recipe on ``xla``, which
            runs through ``python -m trn_train nxd-config`` instead.
    """
    try:
        recipe = get_recipe(name)
    except UnknownRecipeError as err:
        raise CliError(str(err), "`python -m trn_train recipes` describes each recipe") from None
    if stack == XLA and recipe.needs_model_parallel:
        raise CliError(
            f"recipe {name} uses tensor parallelism {recipe.tensor_parallel} / pipeline "
            f"parallelism {recipe.pipeline_parallel}: on this stack's XLA training stack it "
            "runs with `python -m trn_train nxd-config`, not `train` (on the native stack, "
            "Trn2 and newer, `train` shards it with FSDP2)",
            f"submit runs the data-parallel recipes ({_data_parallel_recipes()}); run {name} "
            f"with `python -m trn_train nxd-config --recipe {name} --launch` in a job "
            "(training/README.md)")


def check_shared_dir(option: str, path: str) -> str:
    """``path`` is absolute and below the shared file system's mount (``/fsx``), where every
    node and container sees it; returns it normalised.

    Raises:
        CliError: relative, elsewhere, the mount itself, or escaping it with ``..``.
    """
    normal = posixpath.normpath(path) if path.startswith("/") else ""
    example = "runs" if option == "--output-dir" else "datasets"
    if not normal.startswith(FSX_MOUNT_PATH + "/"):
        raise CliError(
            f"{option} {path} must be an absolute path under {FSX_MOUNT_PATH} (the shared file "
            "system every node mounts)",
            f"e.g. {option} {FSX_MOUNT_PATH}/{example}/<name> (`trn-ultracluster data` "
            "prints where an upload appears)")
    return normal


def check_nodes(nodes: int, pool: PoolInfo, *, least: int = 1, scaling: bool = False) -> None:
    """``least <= nodes <= pool.nodes_max``: a job's nodes (``submit``, ``smoke-test``: at
    least 1; on HyperPod at most the instances the pool runs, ``PoolInfo.job_nodes_max``) or a
    pool's desired size (``scale``: at least 0) fit the pool as deployed.

    Args:
        nodes: ``--nodes``.
        pool: the pool (``--pool``, or the only Trainium pool).
        least: the fewest nodes allowed.
        scaling: the count is ``scale``'s (the fix then says how to allow more).

    Raises:
        CliError: (USAGE) fewer than ``least``; more than the pool's ``nodes.max`` (the
            message names the pool and its maximum, the fix the other pools and ``scale``).
    """
    if nodes < least:
        raise CliError(f"--nodes must be at least {least}, got {nodes}",
                       "leave --nodes out for the pool's nodes.desired" if least else
                       f"--nodes 0 stops every node of pool {pool.name}")
    most = pool.nodes_max if scaling else pool.job_nodes_max
    if nodes > most:
        if not scaling and pool.instances is not None:  # HyperPod: a fixed count of instances
            raise CliError(
                f"--nodes {nodes} is more than pool {pool.name} ({pool.instance_type}) runs: "
                f"its instance groups hold {most} instance(s) (HyperPod runs the pool's "
                "nodes.desired)",
                f"run it on {most} nodes or fewer, on another pool (`trn-ultracluster pools` "
                "lists them), or raise the pool's nodes.desired in the configuration and "
                "deploy")
        more = (f"give --nodes {most} or fewer, or raise the pool's nodes.max in the "
                "configuration and deploy" if scaling else
                f"run it on {most} nodes or fewer, on a larger pool (--pool NAME; "
                "`trn-ultracluster pools` lists them), or raise the pool's nodes.max in the "
                f"configuration and deploy (then `trn-ultracluster scale --pool {pool.name} "
                "--nodes N` where nodes are sized by hand)")
        raise CliError(f"--nodes {nodes} is more than pool {pool.name} ({pool.instance_type}) "
                       f"holds: its nodes.max is {most}", more)


def team_node_limit(pool: PoolInfo, team: TeamInfo | None) -> int | None:
    """The most nodes a job of ``team`` may take on ``pool``: its quota there in whole nodes
    (NeuronCores that are no whole number of nodes count their whole nodes: a job takes whole
    nodes) when the team may not borrow; ``None`` (no limit of the team's) when it may
    borrow, on a stack without teams, or for a pool the ``Teams`` output does not list."""
    if team is None or team.borrow:
        return None
    quota = team.quota(pool.name)
    if quota is None:
        return None
    if quota.nodes is not None:
        return quota.nodes
    try:
        per_node = get_any_instance(pool.instance_type).neuron_cores
    except UnknownInstanceTypeError:
        return None  # the job's own checks name the type
    return quota.neuron_cores // per_node if per_node else None


def check_team_nodes(nodes: int, pool: PoolInfo, team: TeamInfo | None) -> None:
    """A team that may not borrow runs at most its quota on ``pool``
    (:func:`team_node_limit`): its scheduler would hold a larger job forever (Kueue never
    admits a workload above its ClusterQueue's quota plus what it may borrow; Slurm holds it
    with ``AssocGrpNodeLimit``; HyperPod task governance is Kueue).

    Raises:
        CliError: (USAGE) more nodes than the team's quota on the pool, with borrowing off.
    """
    most = team_node_limit(pool, team)
    if most is not None and nodes > most:
        raise CliError(
            f"--nodes {nodes} is more than team {team.name}'s quota on pool {pool.name} "
            f"({_count(most, 'node')}), and the team may not borrow: its scheduler would hold "
            "the job forever",
            f"run it on {_count(most, 'node')} or fewer, as another team (--team NAME), or "
            "raise the team's quota (teams[].quota) or set borrow: true and deploy "
            "(docs/teams.md)")


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def check_env(items: Iterable[str]) -> dict[str, str]:
    """``NAME=VALUE`` items as a dict (a later item wins).

    Raises:
        CliError: an item without ``=`` or with a name bash cannot export.
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise CliError(f"--env {item!r} must be NAME=VALUE",
                           "e.g. --env NEURON_RT_LOG_LEVEL=INFO")
        if not ENV_NAME_RE.match(key):
            raise CliError(f"--env {item!r}: the name must be letters, digits and '_', not "
                           "starting with a digit", "e.g. --env NEURON_RT_LOG_LEVEL=INFO")
        out[key] = value
    return out


def time_limit_seconds(value: str) -> int:
    """Seconds of a Slurm ``--time`` value (:data:`TIME_FORMATS`).

    Raises:
        CliError: not one of the formats, or zero (Slurm reads 0 as "no limit"; leave
            ``--time`` out for that).
    """
    match = _TIME_RE.match(value.strip())
    if not match:
        raise CliError(f"--time {value!r} is not a Slurm time ({', '.join(TIME_FORMATS)})",
                       "e.g. --time 2-00:00:00 for two days, --time 90 for 90 minutes")
    g = {k: int(v) for k, v in match.groupdict().items() if v is not None}
    if "days" in g:
        seconds = ((g["days"] * 24 + g["dh"]) * 60 + g.get("dm", 0)) * 60 + g.get("ds", 0)
    elif "c" in g:
        seconds = (g["a"] * 60 + g["b"]) * 60 + g["c"]
    else:
        seconds = g["a"] * 60 + g.get("b", 0)
    if seconds < 1:
        raise CliError(f"--time must be more than 0, got {value!r}",
                       "leave --time out for no limit of its own (Slurm: the partition's)")
    return seconds


ARGUMENTS_FIX = "fix the arguments (trn-ultracluster submit --help)"


@dataclass(frozen=True)
class JobRequest:
    """A checked job, ready for a backend to translate; made by :func:`job_request`.

    Attributes:
        name: job name (:func:`~trn_ultracluster.cli.launch.validate_job_name`).
        nodes: nodes of its pool, at least 1; 1 on a Trainium type without EFA.
        launch: what to run.
        image: training image URI.
        env: extra environment of the training processes (names as :data:`ENV_NAME_RE`).
        time_limit: ``--time`` as given (Slurm's format), or ``None`` for no limit.
        time_limit_s: the same in seconds (at least 1), or ``None``.
        output_dir: the job's output directory on FSx (``TRN_OUTPUT_DIR``; the bundled
            trainer's ``--output-dir``).
        data_bucket: the stack's data bucket (``TRN_DATA_BUCKET``).
        submitted: when ``submit`` made the job (UTC, ISO 8601), for the job record.
        pool: the node pool it runs on (``--pool``, or the only Trainium pool); ``None``
            where a caller does not choose one (the backend then uses the main pool).
        team: the team it runs as (``--team``, or the default team) on a stack with teams;
            ``None`` on a stack without.
        priority: its priority class (``--priority``, or the team's); ``None`` without teams.
    """

    name: str
    nodes: int
    launch: Launch
    image: str
    env: Mapping[str, str] = field(default_factory=dict)
    time_limit: str | None = None
    time_limit_s: int | None = None
    output_dir: str = ""
    data_bucket: str = ""
    submitted: str = ""
    pool: PoolInfo | None = None
    team: TeamInfo | None = None
    priority: PriorityClassInfo | None = None


def job_request(*, name: str, nodes: int, spec: InstanceSpec, launch: Launch, image: str,
                env: Mapping[str, str] | None = None, time_limit: str | None = None,
                output_dir: str = "", data_bucket: str = "",
                pool: PoolInfo | None = None, team: TeamInfo | None = None,
                priority: PriorityClassInfo | None = None) -> JobRequest:
    """Check what every backend relies on and return the job.

    Args:
        name: job name.
        nodes: node count (``submit`` checks it against the pool with :func:`check_nodes`).
        spec: catalog entry of the pool's instance type (Trainium or CPU; EFA or not).
        launch: the program; torchrun without ``nproc_per_node`` gets one process per
            logical NeuronCore of ``spec``, or one per node on a CPU type (which has none).
        image: training image URI.
        env: environment from :func:`check_env`.
        time_limit: ``--time``, or ``None``.
        output_dir, data_bucket, pool, team, priority: as :class:`JobRequest`.

    Raises:
        CliError: (USAGE) a bad ``--time``, job name or image reference, fewer than 1
            node, or more than one node on a Trainium type without EFA (its collectives need
            EFA; a CPU type's multi-node programs talk TCP, e.g. torch's gloo backend).
    """
    check_image(image)
    seconds = time_limit_seconds(time_limit) if time_limit is not None else None
    try:
        validate_job_name(name)
    except ValueError as err:
        raise CliError(str(err), ARGUMENTS_FIX) from None
    if nodes < 1:
        raise CliError(f"--nodes must be at least 1, got: {nodes}", ARGUMENTS_FIX)
    if nodes > 1 and spec.accelerated and not spec.supports_efa:
        raise CliError(f"{spec.name} has no EFA: multi-node jobs need an EFA instance type",
                       ARGUMENTS_FIX)
    if launch.nproc_per_node is None and launch.launcher == "torchrun":
        launch = replace(launch, nproc_per_node=spec.logical_neuron_cores or 1)
    submitted = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return JobRequest(name, nodes, launch, image, dict(env or {}), time_limit, seconds,
                      output_dir, data_bucket, submitted, pool, team, priority)
