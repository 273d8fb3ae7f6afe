"""The export-before-delete custom resource handler: requests checked against botocore's FSx,
EC2 and CloudFormation models (Stubber), run through the CDK provider framework's
onEvent -> isComplete (polled) sequence, for a stack deletion, a file system replacement,
and the failure and edge cases."""

from __future__ import annotations

import datetime as dt

import boto3
import pytest
from botocore.stub import ANY, Stubber

from trn_ultracluster.constructs.fsx_export import handler

FS = "fs-0123456789abcdef0"
SG = "sg-0123456789abcdef0"
STACK = "arn:aws:cloudformation:us-west-2:123456789012:stack/TrnUltraCluster/1c2fa620-982a-11e3-aff7-50e2416294e0"
NOW = 1_800_000_000.0
REQUEST = "5d5b3a2c-1111-2222-3333-444455556666"
REPORT = "s3://trn-data/.trn-ultracluster/export-reports"


def _client(service):
    client = boto3.client(service, region_name="us-west-2", aws_access_key_id="x",
                          aws_secret_access_key="y")
    return client, Stubber(client)


@pytest.fixture
def aws():
    fsx, fsx_stub = _client("fsx")
    ec2, ec2_stub = _client("ec2")
    cfn, cfn_stub = _client("cloudformation")
    with fsx_stub, ec2_stub, cfn_stub:
        yield (fsx, ec2, cfn), (fsx_stub, ec2_stub, cfn_stub)
        for stub in (fsx_stub, ec2_stub, cfn_stub):
            stub.assert_no_pending_responses()


def _event(request_type, **extra):
    event = {"RequestType": request_type, "StackId": STACK, "RequestId": REQUEST,
             "ResourceProperties": {"FileSystemId": FS, "NodeSecurityGroupId": SG,
                                    "WaitSeconds": "1200", "DeadlineSeconds": "3120",
                                    "ReportPath": REPORT}}
    if request_type != "Create":
        event["PhysicalResourceId"] = FS
    event.update(extra)
    return event


def _stack_status(cfn_stub, status):
    cfn_stub.add_response("describe_stacks", {"Stacks": [{
        "StackName": "TrnUltraCluster", "StackStatus": status,
        "CreationTime": dt.datetime(2026, 11, 1)}]}, {"StackName": STACK})


def _interfaces(ec2_stub, count):
    ec2_stub.add_response("describe_network_interfaces", {"NetworkInterfaces": [
        {"NetworkInterfaceId": f"eni-0{i:016x}"} for i in range(count)]}, {"Filters": [
            {"Name": "group-id", "Values": [SG]}, {"Name": "status", "Values": ["in-use"]}]})


def _at(seconds):
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


def _tasks(fsx_stub, *lifecycles, created=NOW + 60, status=None):
    """DescribeDataRepositoryTasks answers one task per lifecycle; ``status``: the
    ``(total, done)`` files of each, the task started when created."""
    extra = {} if status is None else {
        "StartTime": _at(created), "Status": {"TotalCount": status[0], "SucceededCount": status[1],
                                              "FailedCount": 0}}
    fsx_stub.add_response("describe_data_repository_tasks", {"DataRepositoryTasks": [
        {"TaskId": f"task-0{i:016x}", "Lifecycle": state, "Type": "EXPORT_TO_REPOSITORY",
         "CreationTime": _at(created + i), "FileSystemId": FS, **extra}
        for i, state in enumerate(lifecycles)]},
        {"Filters": [{"Name": "file-system-id", "Values": [FS]}]})


def _create_task(fsx_stub, lifecycle="PENDING"):
    fsx_stub.add_response("create_data_repository_task", {"DataRepositoryTask": {
        "TaskId": "task-0aaaaaaaaaaaaaaaa", "Lifecycle": lifecycle, "Type": "EXPORT_TO_REPOSITORY",
        "CreationTime": dt.datetime.fromtimestamp(NOW + 60, dt.timezone.utc), "FileSystemId": FS}},
        {"Type": "EXPORT_TO_REPOSITORY", "FileSystemId": FS,
         "Report": {"Enabled": True, "Path": REPORT, "Format": "REPORT_CSV_20191124",
                    "Scope": "FAILED_FILES_ONLY"},
         "ClientRequestToken": REQUEST.replace("-", "")})


def test_create_and_update_only_name_the_file_system(aws):
    clients, _ = aws
    assert handler.on_event(_event("Create"), clients=clients) == {"PhysicalResourceId": FS}
    replaced = _event("Update")
    replaced["ResourceProperties"]["FileSystemId"] = "fs-0fffffffffffffff0"
    # a new physical id: CloudFormation deletes the old one (and so exports the old file
    # system) in its cleanup phase
    assert handler.on_event(replaced, clients=clients) == {
        "PhysicalResourceId": "fs-0fffffffffffffff0"}
    assert handler.is_complete(_event("Create"), clients=clients) == {"IsComplete": True}


def test_stack_deletion_waits_for_the_nodes_then_exports_and_waits(aws):
    clients, (fsx_stub, ec2_stub, cfn_stub) = aws
    _stack_status(cfn_stub, "DELETE_IN_PROGRESS")
    event = _event("Delete")
    event.update(handler.on_event(event, now=NOW, clients=clients))
    assert (event["StartedAt"], event["WaitUntil"]) == (NOW, NOW + 1200)
    _interfaces(ec2_stub, 3)
    assert handler.is_complete(event, now=NOW + 30, clients=clients) == {"IsComplete": False}
    _interfaces(ec2_stub, 0)
    _tasks(fsx_stub)
    _create_task(fsx_stub)
    assert handler.is_complete(event, now=NOW + 60, clients=clients) == {"IsComplete": False}
    _interfaces(ec2_stub, 0)
    _tasks(fsx_stub, "EXECUTING")
    assert handler.is_complete(event, now=NOW + 90, clients=clients) == {"IsComplete": False}
    _interfaces(ec2_stub, 0)
    _tasks(fsx_stub, "SUCCEEDED")
    assert handler.is_complete(event, now=NOW + 120, clients=clients) == {"IsComplete": True}


def test_nodes_that_never_go_do_not_block_the_export_forever(aws):
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW + 1200)
    _tasks(fsx_stub)
    _create_task(fsx_stub)
    assert handler.is_complete(event, now=NOW + 1201, clients=clients) == {"IsComplete": False}


def test_replacing_the_file_system_exports_without_waiting_for_the_nodes(aws):
    clients, (fsx_stub, _, cfn_stub) = aws
    _stack_status(cfn_stub, "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS")
    event = _event("Delete")
    event.update(handler.on_event(event, now=NOW, clients=clients))
    assert event["WaitUntil"] == NOW  # the nodes keep running on the new file system
    _tasks(fsx_stub, created=NOW - 600)  # an older export does not count
    _create_task(fsx_stub, "EXECUTING")
    assert handler.is_complete(event, now=NOW + 5, clients=clients) == {"IsComplete": False}


def test_a_failed_export_fails_the_delete_and_keeps_the_file_system(aws):
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW)
    _tasks(fsx_stub, "FAILED")
    with pytest.raises(RuntimeError, match=f"ended FAILED.*{REPORT}/task-.*/failures.csv.*"
                                           "the file system is kept.*cdk destroy again"):
        handler.is_complete(event, now=NOW + 60, clients=clients)


def test_another_running_task_is_waited_for(aws):
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW)
    _tasks(fsx_stub)
    fsx_stub.add_client_error("create_data_repository_task", "DataRepositoryTaskExecuting",
                              "a task is running", 400)
    assert handler.is_complete(event, now=NOW + 60, clients=clients) == {"IsComplete": False}


def _associations(fsx_stub, count):
    fsx_stub.add_response("describe_data_repository_associations", {"Associations": [
        {"AssociationId": f"dra-0{i:016x}", "FileSystemId": FS} for i in range(count)]},
        {"Filters": [{"Name": "file-system-id", "Values": [FS]}]})


@pytest.mark.parametrize("where", ["file system gone", "no association left"])
def test_nothing_to_export_completes(aws, where):
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW)
    if where == "file system gone":
        fsx_stub.add_client_error("describe_data_repository_tasks", "FileSystemNotFound", "gone", 400)
    else:
        _tasks(fsx_stub)
        fsx_stub.add_client_error("create_data_repository_task", "BadRequest", "no DRA", 400,
                                  expected_params={"Type": "EXPORT_TO_REPOSITORY",
                                                   "FileSystemId": FS, "Report": ANY,
                                                   "ClientRequestToken": ANY})
        _associations(fsx_stub, 0)
    assert handler.is_complete(event, now=NOW + 60, clients=clients) == {"IsComplete": True}


def test_a_refused_export_with_a_linked_repository_keeps_the_file_system(aws):
    """Only a file system without any association may be deleted unexported."""
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW)
    _tasks(fsx_stub)
    fsx_stub.add_client_error("create_data_repository_task", "BadRequest", "not AVAILABLE", 400)
    _associations(fsx_stub, 1)
    with pytest.raises(RuntimeError, match="FSx refused to export.*the file system is kept"):
        handler.is_complete(event, now=NOW + 60, clients=clients)


# --- the budget: DeadlineSeconds (52 min) after the delete started ------------------------

@pytest.mark.parametrize("done, after", [
    (600_000, 600),  # 10 min in, 60 % done: about 7 more minutes, well inside the budget
    (1_000, 120),    # 2 min in: a short sample mostly measures start-up, no verdict yet
], ids=["on track", "short sample"])
def test_an_export_that_may_still_fit_is_waited_for(aws, done, after):
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW)
    _tasks(fsx_stub, "EXECUTING", created=NOW, status=(1_000_000, done))
    assert handler.is_complete(event, now=NOW + after, clients=clients) == {"IsComplete": False}


def test_an_export_too_slow_for_the_window_fails_early_naming_the_task(aws):
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW)
    # 10 min in, 100,000 of 1,000,000 files: about 90 more minutes, past the 52 min budget
    _tasks(fsx_stub, "EXECUTING", created=NOW, status=(1_000_000, 100_000))
    with pytest.raises(RuntimeError, match=(
            r"exporting fs-0123456789abcdef0 to S3 does not fit the 52 min that cdk destroy can "
            r"wait .* task task-00000000000000000 would finish in about 90 min at its rate so "
            r"far \(100000 of 1000000 files after 10 min\)\. The task goes on and the file "
            r"system is kept\. Follow it with aws fsx describe-data-repository-tasks --task-ids "
            r"task-00000000000000000; once it is SUCCEEDED, run cdk destroy again")):
        handler.is_complete(event, now=NOW + 600, clients=clients)


def test_an_export_still_running_at_the_deadline_fails_with_its_name(aws):
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW + 1200)
    _tasks(fsx_stub, "EXECUTING", created=NOW + 1200)  # no file counts yet
    with pytest.raises(RuntimeError, match=r"task task-00000000000000000 has not finished "
                                           r"\(its files after 32 min\)"):
        handler.is_complete(event, now=NOW + 3120, clients=clients)


def test_another_task_that_outlasts_the_budget_fails_with_how_to_finish(aws):
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW)
    _tasks(fsx_stub)
    fsx_stub.add_client_error("create_data_repository_task", "DataRepositoryTaskExecuting",
                              "a task is running", 400)
    with pytest.raises(RuntimeError, match="could not start within 52 min: another data "
                                           "repository task .* run cdk destroy again"):
        handler.is_complete(event, now=NOW + 3120, clients=clients)


def test_the_budget_ends_before_the_framework_and_cloudformation_give_up(default):
    from trn_ultracluster.constructs.export_on_delete import (
        EXPORT_DEADLINE,
        EXPORT_POLL,
        EXPORT_SERVICE_TIMEOUT,
        EXPORT_TIMEOUT,
    )

    (export,) = default.resources("Custom::FsxExportOnDelete").values()
    deadline = int(export["Properties"]["DeadlineSeconds"])
    assert deadline == EXPORT_DEADLINE.to_seconds()
    # a poll and a one-minute Lambda run still fit before the framework's timeout
    assert deadline + EXPORT_POLL.to_seconds() + 60 <= EXPORT_TIMEOUT.to_seconds()
    assert EXPORT_TIMEOUT.to_seconds() < EXPORT_SERVICE_TIMEOUT.to_seconds() == 3600


def test_properties_of_a_stack_from_before_the_budget_get_the_same_budget(aws):
    """A file system replaced on the first update after an upgrade is deleted with the old
    properties, which have no DeadlineSeconds: the 52 minutes apply, no KeyError."""
    from trn_ultracluster.constructs.export_on_delete import EXPORT_DEADLINE

    assert handler.DEFAULT_DEADLINE_SECONDS == EXPORT_DEADLINE.to_seconds()
    clients, (fsx_stub, _, _) = aws
    event = _event("Delete", StartedAt=NOW, WaitUntil=NOW)
    del event["ResourceProperties"]["DeadlineSeconds"]
    _tasks(fsx_stub, "EXECUTING", created=NOW, status=(1_000_000, 600_000))
    assert handler.is_complete(event, now=NOW + 600, clients=clients) == {"IsComplete": False}
    _tasks(fsx_stub, "EXECUTING", created=NOW)
    with pytest.raises(RuntimeError, match="does not fit the 52 min"):
        handler.is_complete(event, now=NOW + 3120, clients=clients)
