"""Read the TrnUltraCluster stack outputs: from CloudFormation or a ``--outputs-file``.

Keys come from :mod:`trn_ultracluster.contracts.outputs` (the stack writes them from the same enum).
``cdk deploy --outputs-file out.json`` writes ``{"<stack name>": {"<output key>": value}}``
(AWS CDK CLI reference, ``cdk deploy --outputs-file``,
https://docs.aws.amazon.com/cdk/v2/guide/ref-cli-cmd-deploy.html).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.files import read_text
from trn_ultracluster.contracts.catalog import (
    InstanceSpec,
    UnknownInstanceTypeError,
    get_any_instance,
    get_instance,
)
from trn_ultracluster.contracts.neuron_stack import NEURON_STACKS, XLA, NeuronStackName
from trn_ultracluster.contracts.orchestrators import ORCHESTRATORS
from trn_ultracluster.contracts.pools import (
    PoolError,
    PoolInfo,
    choose_pool,
    legacy_pool,
    parse_pools,
)
from trn_ultracluster.contracts.teams import (
    PriorityClassInfo,
    TeamError,
    TeamInfo,
    TeamsInfo,
    parse_teams,
)
from trn_ultracluster.contracts.outputs import (
    DESCRIPTIONS,
    FOUNDATION_KEYS,
    FSX_EFA_MODES,
    FSX_EFA_OFF,
    NONE,
    OutputKey,
)

__all__ = ["StackOutputs", "expected_keys", "load_outputs", "outputs_from_aws", "outputs_from_file"]

USABLE_STATES = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE",
                           "IMPORT_COMPLETE", "IMPORT_ROLLBACK_COMPLETE"})
"""Stack states whose outputs describe running resources. UPDATE_ROLLBACK_COMPLETE is the
previous, working version after a failed update (CloudFormation user guide, "Stack status
codes", https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/view-stack-events.html)."""

def expected_keys(orchestrator: str | None) -> tuple[OutputKey, ...]:
    """Output keys a stack of this orchestrator has (foundation keys for an unknown one;
    each orchestrator's keys: :data:`trn_ultracluster.contracts.orchestrators.ORCHESTRATORS`)."""
    facts = ORCHESTRATORS.get(orchestrator or "")
    return FOUNDATION_KEYS + (facts.output_keys if facts else ())


@dataclass(frozen=True)
class StackOutputs:
    """Outputs of one deployed stack.

    Attributes:
        stack_name: CloudFormation stack name.
        values: output key -> value (strings, as CloudFormation returns them).
        source: ``"DescribeStacks"`` or the outputs file path.
        status: stack status (``None`` when read from a file).
    """

    stack_name: str
    values: dict[str, str]
    source: str
    status: str | None = None
    warnings: tuple[str, ...] = field(default=())

    def data_bucket_on_fsx(self) -> str:
        """Where new objects of the data bucket appear on FSx (output ``DataBucketOnFsx``: the
        linked file system path, or ``none``); on a stack older than that output, the data
        repository association's path (``FsxDataRepositoryPath``), which assumed the default
        link of the data bucket with automatic import."""
        found = self.values.get(OutputKey.DATA_BUCKET_ON_FSX.value)
        return found if found else self.values.get(OutputKey.FSX_DATA_REPOSITORY_PATH.value,
                                                   NONE)

    @property
    def orchestrator(self) -> str | None:
        """The ``Orchestrator`` output (``eks``, ``hyperpod-slurm``, ``standalone``), or
        ``None`` when it is missing."""
        return self.values.get(OutputKey.ORCHESTRATOR.value)

    def missing(self) -> list[OutputKey]:
        """Keys this stack's orchestrator should have but the stack lacks."""
        return [k for k in expected_keys(self.orchestrator) if k.value not in self.values]

    def get(self, key: OutputKey) -> str:
        """The value of ``key``.

        Raises:
            CliError: (STACK) the output is missing: the stack was deployed by an older
                version of the project, or the orchestrator has not added it.
        """
        try:
            return self.values[key.value]
        except KeyError:
            raise CliError(
                f"stack {self.stack_name} ({self.source}) has no output {key.value!r} "
                f"({DESCRIPTIONS[key]}); it was deployed by an older version of "
                "TrnUltraCluster or with another orchestrator",
                "deploy this version (make deploy / npx cdk deploy TrnUltraCluster "
                "--outputs-file cdk.out/outputs.json) and retry",
                ExitCode.STACK,
            ) from None

    @property
    def neuron_stack(self) -> NeuronStackName:
        """The ``NeuronStack`` output: ``xla`` or ``native``; ``xla`` for a stack deployed
        before the output existed (every such stack built the XLA image).

        Raises:
            CliError: (STACK) a value this CLI does not know (a stack of a newer version).
        """
        return self._one_of(OutputKey.NEURON_STACK, NEURON_STACKS, XLA)  # type: ignore[return-value]

    @property
    def fsx_efa(self) -> str:
        """The ``FsxEfa`` output: ``off``, ``preferred`` or ``required``
        (:data:`~trn_ultracluster.contracts.outputs.FSX_EFA_MODES`); ``off`` for a stack
        deployed before the output existed (its file system has no EFA).

        Raises:
            CliError: (STACK) a value this CLI does not know (a stack of a newer version).
        """
        return self._one_of(OutputKey.FSX_EFA, FSX_EFA_MODES, FSX_EFA_OFF)

    def _one_of(self, key: OutputKey, known: tuple[str, ...], older: str) -> str:
        """Output ``key``, one of ``known``; ``older`` when the stack predates the output.

        Raises:
            CliError: (STACK) a value this CLI does not know (a stack of a newer version).
        """
        value = self.values.get(key.value, older)
        if value not in known:
            raise CliError(f"output {key.value} = {value!r} is not one of {', '.join(known)}",
                           "upgrade the CLI to the stack's version", ExitCode.STACK)
        return value

    def instance_spec(self) -> InstanceSpec:
        """The catalog entry of the stack's ``InstanceType``.

        Raises:
            CliError: (STACK) the output is missing, or names a type this CLI's catalog
                lacks (a stack deployed by a newer version).
        """
        try:
            return get_instance(self.get(OutputKey.INSTANCE_TYPE))
        except UnknownInstanceTypeError as err:
            raise CliError(str(err), "upgrade the CLI to the stack's version",
                           ExitCode.STACK) from None

    def pools(self) -> tuple[PoolInfo, ...]:
        """The stack's node pools (output ``Pools``); for a stack deployed before it, its one
        pool from ``InstanceType``, ``NodeCount*``, ``NeuronStack`` and ``TrainingImageUri``
        (:func:`~trn_ultracluster.contracts.pools.legacy_pool`).

        Raises:
            CliError: (STACK) the output is not the JSON the stack writes.
        """
        text = self.values.get(OutputKey.POOLS.value)
        if text:
            try:
                return parse_pools(text)
            except ValueError as err:
                raise CliError(str(err), "redeploy the stack with this version",
                               ExitCode.STACK) from None
        return (legacy_pool(self.get(OutputKey.INSTANCE_TYPE),
                            [self.int_value(k) for k in (OutputKey.NODE_COUNT_MIN,
                                                         OutputKey.NODE_COUNT_DESIRED,
                                                         OutputKey.NODE_COUNT_MAX)],
                            neuron_stack=self.neuron_stack,
                            image_uri=self.values.get(OutputKey.TRAINING_IMAGE_URI.value, "")),)

    def teams(self) -> TeamsInfo:
        """The stack's teams (output ``Teams``); empty for a stack without teams.

        Raises:
            CliError: (STACK) the output is not the JSON the stack writes.
        """
        try:
            return parse_teams(self.values.get(OutputKey.TEAMS.value))
        except ValueError as err:
            raise CliError(str(err), "redeploy the stack with this version",
                           ExitCode.STACK) from None

    def team(self, name: str | None, priority: str | None = None,
             ) -> tuple[TeamInfo, PriorityClassInfo] | None:
        """The team and priority class a job runs as: ``--team`` (else the default team) and
        ``--priority`` (else the team's); ``None`` on a stack without teams when neither is
        given.

        Raises:
            CliError: (USAGE) ``--team``/``--priority`` on a stack without teams, a team or
                class that does not exist, or no ``--team`` and no default team; the message
                lists the teams or classes.
        """
        teams = self.teams()
        if not teams:
            if name is None and priority is None:
                return None
            flag, value = ("--team", name) if name is not None else ("--priority", priority)
            raise CliError(f"{flag} {value!r}: stack {self.stack_name} has no teams (its "
                           "configuration has no `teams`), so every job is first come, first "
                           "served", f"leave {flag} out, or add `teams` to the configuration "
                           "and deploy (docs/teams.md)", ExitCode.USAGE)
        try:
            team = teams.team(name)
        except TeamError as err:
            fix = ("name one of them with --team NAME" if name is not None else
                   "name one with --team NAME, or mark one team `default: true` in the "
                   "configuration and deploy")
            raise CliError(str(err), f"{fix} (`trn-ultracluster teams` lists them)",
                           ExitCode.USAGE) from None
        try:
            return team, teams.priority(priority, team)
        except TeamError as err:
            raise CliError(str(err), f"name one of them with --priority CLASS, or leave it out "
                           f"for team {team.name}'s ({team.priority})", ExitCode.USAGE) from None

    def pool(self, name: str | None, *, accelerated_only: bool = False) -> PoolInfo:
        """The pool ``--pool`` names, or the only Trainium pool
        (:func:`~trn_ultracluster.contracts.pools.choose_pool`).

        Raises:
            CliError: (USAGE) no such pool, a CPU pool where NeuronCores are needed, or no
                ``--pool`` with several Trainium pools; the message lists the pools.
        """
        try:
            return choose_pool(self.pools(), name, accelerated_only=accelerated_only)
        except PoolError as err:
            raise CliError(str(err), "name one of the pools with --pool NAME",
                           ExitCode.USAGE) from None

    def pool_spec(self, pool: PoolInfo | None) -> InstanceSpec:
        """The catalog entry of ``pool``'s instance type, Trainium or CPU; for no pool, or a
        pool of the stack's ``InstanceType`` (the main pool's), :meth:`instance_spec`.

        Raises:
            CliError: (STACK) a type this CLI's catalogs lack (a stack of a newer version).
        """
        if pool is None or pool.instance_type == self.values.get(OutputKey.INSTANCE_TYPE.value):
            return self.instance_spec()
        try:
            return get_any_instance(pool.instance_type)
        except UnknownInstanceTypeError as err:
            raise CliError(f"pool {pool.name}: {err}", "upgrade the CLI to the stack's version",
                           ExitCode.STACK) from None

    def int_value(self, key: OutputKey) -> int:
        """An integer output (node counts)."""
        value = self.get(key)
        try:
            return int(value)
        except ValueError:
            raise CliError(f"output {key.value} = {value!r} is not an integer",
                           "redeploy the stack", ExitCode.STACK) from None


def outputs_from_file(path: Path, stack_name: str) -> StackOutputs:
    """Read ``cdk deploy --outputs-file`` JSON.

    Raises:
        CliError: USAGE when the file is missing, a directory, unreadable, not UTF-8 or
            not such JSON; STACK when it holds no entry for ``stack_name``.
    """
    text = read_text(Path(path), "outputs file",
                     "pass the JSON written by `cdk deploy --outputs-file` (make deploy writes "
                     "cdk.out/outputs.json), or leave --outputs-file out to read the stack "
                     "from AWS")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise CliError(f"outputs file {path} is not JSON ({err})",
                       "pass the file written by `cdk deploy --outputs-file`") from None
    if not isinstance(data, dict) or stack_name not in data or not isinstance(data[stack_name], dict):
        stacks = ", ".join(sorted(data)) if isinstance(data, dict) and data else "none"
        raise CliError(f"outputs file {path} has no stack {stack_name!r} (stacks: {stacks})",
                       "pass --stack-name with one of the stacks in the file", ExitCode.STACK)
    values = {str(k): str(v) for k, v in data[stack_name].items()}
    return StackOutputs(stack_name, values, str(path))


def outputs_from_aws(session: Any, stack_name: str) -> StackOutputs:
    """Read the outputs with CloudFormation ``DescribeStacks``.

    Raises:
        CliError: STACK when the stack does not exist or is not in a usable state
            (in progress, rolled back, deleted, failed); CREDENTIALS as :func:`aws_errors`.
    """
    from botocore.exceptions import ClientError

    region = session.region_name
    with aws_errors(f"DescribeStacks {stack_name}"):
        cfn = session.client("cloudformation")
        try:
            stack = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
        except ClientError as err:
            if error_code(err) == "ValidationError" and "does not exist" in str(err):
                raise CliError(
                    f"stack {stack_name} does not exist in {region}",
                    "deploy it (make deploy), or pass the right --stack-name / --region",
                    ExitCode.STACK,
                ) from None
            raise
    status = stack["StackStatus"]
    _check_status(stack_name, region, status, stack.get("StackStatusReason", ""))
    values = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    warnings = ()
    if status == "UPDATE_ROLLBACK_COMPLETE":
        warnings = (f"stack {stack_name} is UPDATE_ROLLBACK_COMPLETE: the last update failed "
                    "and the previous version is running; its outputs are used",)
    return StackOutputs(stack_name, values, "DescribeStacks", status, warnings)


def _check_status(stack_name: str, region: str, status: str, reason: str) -> None:
    if status in USABLE_STATES:
        return
    why = f" ({reason})" if reason else ""
    if status.endswith("_IN_PROGRESS"):
        fix = "wait for the operation to finish (aws cloudformation wait / the console), then retry"
    elif status.startswith("ROLLBACK"):
        fix = ("creation failed and was rolled back: read the first FAILED event "
               f"(aws cloudformation describe-stack-events --stack-name {stack_name}), fix it, "
               "then `npx cdk destroy` and deploy again")
    elif status.startswith("DELETE"):
        fix = "the stack is deleted or being deleted: deploy it again"
    else:
        fix = (f"read the stack events (aws cloudformation describe-stack-events --stack-name "
               f"{stack_name}) and deploy again")
    raise CliError(f"stack {stack_name} in {region} is {status}{why}; its outputs cannot be used",
                   fix, ExitCode.STACK)


def load_outputs(stack_name: str, region: str | None, outputs_file: Path | None) -> StackOutputs:
    """Outputs from ``outputs_file`` when given, else from AWS in ``region`` (``None``: the
    Region of :func:`trn_ultracluster.cli.aws.resolve_region`).

    Raises:
        CliError: as :func:`outputs_from_file` / :func:`outputs_from_aws`.
    """
    if outputs_file is not None:
        return outputs_from_file(outputs_file, stack_name)
    from trn_ultracluster.cli.aws import make_session

    return outputs_from_aws(make_session(region), stack_name)
