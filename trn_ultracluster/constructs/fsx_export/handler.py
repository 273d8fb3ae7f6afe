"""Export an FSx for Lustre file system to its S3 data repository before CloudFormation
deletes it (custom resource ``Custom::FsxExportOnDelete``, CDK provider framework).

The resource's physical id is the file system id:

- Create / Update: nothing to do; the physical id becomes the (possibly new) file system id.
  When the file system was replaced, CloudFormation later deletes the old physical id in
  its cleanup phase, before it deletes the old file system (which this resource depends
  on), so the old file system is exported then.
- Delete: when the whole stack is being deleted, first wait (at most ``WaitSeconds``) until
  no network interface of the nodes' security group is in use any more, so that what the
  training jobs wrote last is on the file system; then run an ``EXPORT_TO_REPOSITORY`` data
  repository task over every data repository association and wait for it. A failed or
  cancelled export fails the delete: the file system stays, nothing is lost, and
  ``cdk destroy`` can be run again.

The delete has a budget, ``DeadlineSeconds`` after ``StartedAt`` (the node wait included),
below the provider framework's total timeout and CloudFormation's one hour for a custom
resource, so that an export too large for the window fails with a message that names the
task and how to finish, not with the framework's generic timeout. It fails early, once the
task has run :data:`MIN_SAMPLE_SECONDS`, when its rate of files so far says it cannot end
within the budget. The task itself goes on: once it has succeeded, ``cdk destroy`` again
exports only what changed since (an export writes new and changed files only) and goes on.

Sources: FSx API reference, ``CreateDataRepositoryTask`` (EXPORT_TO_REPOSITORY; no
``Paths`` exports every file; ``ClientRequestToken`` makes the create idempotent, up to 63
ASCII characters; it fails when no data repository is linked) and
``DescribeDataRepositoryTasks`` (``Lifecycle`` PENDING, EXECUTING, FAILED, SUCCEEDED,
CANCELED, CANCELING), as in botocore's FSx model. CDK provider framework: ``onEvent``
returns the physical id and extra attributes that are passed to ``isComplete``, which
returns ``{"IsComplete": bool}`` and is polled until true or the total timeout.

Standard library and boto3 only (the Lambda Python runtime ships boto3).
"""

from __future__ import annotations

import json
import time
from typing import Any

__all__ = ["is_complete", "on_event"]

DONE_STATES = {"SUCCEEDED"}
MIN_SAMPLE_SECONDS = 300
"""How long a task must have run before its rate of files decides that it cannot finish in
time (a shorter sample mostly measures the task's start-up)."""
FAILED_STATES = {"FAILED", "CANCELED", "CANCELING"}
STACK_DELETING = "DELETE_IN_PROGRESS"


def _clients() -> tuple[Any, Any, Any]:
    import boto3

    return boto3.client("fsx"), boto3.client("ec2"), boto3.client("cloudformation")


def _log(message: str, **fields: Any) -> None:
    print(json.dumps({"message": message, **fields}, default=str))


def on_event(event: dict[str, Any], context: Any = None, *, now: float | None = None,
             clients: tuple[Any, Any, Any] | None = None) -> dict[str, Any]:
    """Provider framework ``onEvent``: name the file system; on Delete, plan the wait.

    Returns:
        ``{"PhysicalResourceId": <file system id>}``; on Delete also ``StartedAt`` (epoch
        seconds) and ``WaitUntil`` (``StartedAt`` + ``WaitSeconds`` when the stack itself is
        being deleted, else ``StartedAt``: no wait when only the file system is replaced).
    """
    props = event["ResourceProperties"]
    if event["RequestType"] in ("Create", "Update"):
        return {"PhysicalResourceId": props["FileSystemId"]}
    _, _, cfn = clients or _clients()
    status = cfn.describe_stacks(StackName=event["StackId"])["Stacks"][0]["StackStatus"]
    wait = int(props.get("WaitSeconds", 0)) if status == STACK_DELETING else 0
    started = time.time() if now is None else now
    _log("export before delete", file_system=event["PhysicalResourceId"], stack_status=status,
         wait_seconds=wait)
    return {"PhysicalResourceId": event["PhysicalResourceId"], "StartedAt": int(started),
            "WaitUntil": int(started + wait)}


def _nodes_still_up(ec2: Any, security_group_id: str) -> int:
    """Network interfaces of the nodes' security group that are still attached."""
    found = ec2.describe_network_interfaces(Filters=[
        {"Name": "group-id", "Values": [security_group_id]},
        {"Name": "status", "Values": ["in-use"]},
    ])["NetworkInterfaces"]
    return len(found)


def _linked(fsx: Any, file_system_id: str) -> bool:
    """Whether any data repository association still links the file system to S3."""
    found = fsx.describe_data_repository_associations(
        Filters=[{"Name": "file-system-id", "Values": [file_system_id]}])["Associations"]
    return bool(found)


def _export_task(fsx: Any, file_system_id: str, since: float) -> dict[str, Any] | None:
    """The newest EXPORT_TO_REPOSITORY task of the file system created since ``since``."""
    tasks: list[dict[str, Any]] = []
    request: dict[str, Any] = {"Filters": [{"Name": "file-system-id", "Values": [file_system_id]}]}
    while True:  # botocore has no paginator for this operation: follow NextToken
        page = fsx.describe_data_repository_tasks(**request)
        tasks += [t for t in page["DataRepositoryTasks"]
                  if t["Type"] == "EXPORT_TO_REPOSITORY"
                  and t["CreationTime"].timestamp() >= since]
        if not page.get("NextToken"):
            break
        request["NextToken"] = page["NextToken"]
    return max(tasks, key=lambda t: t["CreationTime"], default=None)


def is_complete(event: dict[str, Any], context: Any = None, *, now: float | None = None,
                clients: tuple[Any, Any, Any] | None = None) -> dict[str, Any]:
    """Provider framework ``isComplete``: wait for the nodes, then export and wait for it.

    Raises:
        RuntimeError: the export task FAILED or was CANCELED, or it does not fit the budget
            (``DeadlineSeconds``; see the module doc): the delete then fails and the file
            system is kept.
    """
    if event["RequestType"] != "Delete":
        return {"IsComplete": True}
    fsx, ec2, _ = clients or _clients()
    file_system_id = event["PhysicalResourceId"]
    current = time.time() if now is None else now
    if current < float(event["WaitUntil"]):
        attached = _nodes_still_up(ec2, event["ResourceProperties"]["NodeSecurityGroupId"])
        if attached:
            _log("waiting for the nodes to stop", attached_interfaces=attached)
            return {"IsComplete": False}
    try:
        task = _export_task(fsx, file_system_id, float(event["StartedAt"]))
    except fsx.exceptions.FileSystemNotFound:
        _log("file system already gone", file_system=file_system_id)
        return {"IsComplete": True}
    report = event["ResourceProperties"]["ReportPath"]
    if task is None:
        try:
            task = fsx.create_data_repository_task(
                Type="EXPORT_TO_REPOSITORY", FileSystemId=file_system_id,
                Report={"Enabled": True, "Path": report, "Format": "REPORT_CSV_20191124",
                        "Scope": "FAILED_FILES_ONLY"},
                ClientRequestToken=event["RequestId"].replace("-", "")[:63],
            )["DataRepositoryTask"]
        except fsx.exceptions.DataRepositoryTaskExecuting:
            _log("another data repository task is running; waiting", file_system=file_system_id)
            _check_budget(event, None, current)
            return {"IsComplete": False}
        except (fsx.exceptions.BadRequest, fsx.exceptions.UnsupportedOperation) as err:
            if _linked(fsx, file_system_id):
                raise RuntimeError(
                    f"FSx refused to export {file_system_id} to S3 ({err}); the file system is "
                    "kept: fix the cause and run cdk destroy again") from None
            _log("no data repository association: nothing to export", file_system=file_system_id)
            return {"IsComplete": True}
    state = task["Lifecycle"]
    _log("export task", task=task.get("TaskId"), lifecycle=state, status=task.get("Status"))
    if state in FAILED_STATES:
        details = task.get("FailureDetails", {}).get("Message", "")
        raise RuntimeError(
            f"exporting {file_system_id} to S3 ended {state} ({details}); the files that failed "
            f"are listed in {report}/task-{task.get('TaskId')}/failures.csv; the file system is "
            "kept: fix the cause and run cdk destroy again")
    if state not in DONE_STATES:
        _check_budget(event, task, current)
    return {"IsComplete": state in DONE_STATES}


DEFAULT_DEADLINE_SECONDS = 3120
"""The budget when the resource's properties have no ``DeadlineSeconds``: a delete sent with
the properties of a stack deployed before the budget existed (a file system replaced on the
first update after an upgrade). The same 52 minutes the stack sets."""


def _budget(event: dict[str, Any]) -> float:
    """``DeadlineSeconds`` of the resource, else :data:`DEFAULT_DEADLINE_SECONDS`."""
    return float(event["ResourceProperties"].get("DeadlineSeconds", DEFAULT_DEADLINE_SECONDS))


def _deadline(event: dict[str, Any]) -> float:
    """Epoch seconds by which the delete must be done (``StartedAt`` + the budget)."""
    return float(event["StartedAt"]) + _budget(event)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min"


def _check_budget(event: dict[str, Any], task: dict[str, Any] | None, now: float) -> None:
    """Fail the delete, naming the task and how to finish, when the export has run out of
    its budget or, by its rate so far, will.

    Raises:
        RuntimeError: past the deadline, or the task's projected end is after it.
    """
    file_system_id = event["PhysicalResourceId"]
    deadline = _deadline(event)
    budget = _budget(event)
    if task is None:
        if now >= deadline:
            raise RuntimeError(
                f"the export of {file_system_id} to S3 could not start within {_minutes(budget)}: "
                "another data repository task of the file system is still running. The file "
                "system is kept; when that task has ended (aws fsx describe-data-repository-tasks "
                f"--filters Name=file-system-id,Values={file_system_id}), run cdk destroy again")
        return
    task_id = task.get("TaskId")
    status = task.get("Status") or {}
    total = int(status.get("TotalCount") or 0)
    done = int(status.get("SucceededCount") or 0) + int(status.get("FailedCount") or 0)
    started = task.get("StartTime") or task.get("CreationTime")
    running = now - started.timestamp() if started is not None else 0.0
    projected_end = None
    if total > done > 0 and running >= MIN_SAMPLE_SECONDS:
        projected_end = now + (total - done) * running / done
    if now < deadline and (projected_end is None or projected_end <= deadline):
        return
    progress = f"{done} of {total} files" if total else "its files"
    when = ("has not finished" if now >= deadline
            else f"would finish in about {_minutes(projected_end - now)} at its rate so far")
    raise RuntimeError(
        f"exporting {file_system_id} to S3 does not fit the {_minutes(budget)} that cdk destroy "
        f"can wait (CloudFormation waits at most 1 hour for a custom resource): task {task_id} "
        f"{when} ({progress} after {_minutes(running)}). The task goes on and the file system "
        f"is kept. Follow it with aws fsx describe-data-repository-tasks --task-ids {task_id}; "
        "once it is SUCCEEDED, run cdk destroy again: the next export writes only the files "
        "changed since")
