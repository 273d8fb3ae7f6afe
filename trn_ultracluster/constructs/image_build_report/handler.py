"""Report a training image build that ended without answering CloudFormation.

``cdklabs.deploy-time-build`` 0.1.14's ``ContainerImageBuild`` answers CloudFormation from its
buildspec's ``post_build`` phase (a ``curl -X PUT`` to ``$responseURL``;
``lib/container-image-build.js``); its trigger Lambda only calls ``StartBuild``
(``lambda/trigger-codebuild/index.ts``, which notes that "Sometimes CodeBuild build fails
before running buildspec, without calling the CFn callback"). No CodeBuild document says that
``post_build`` runs after a build times out or is stopped (the "Build phase transitions" page
only promises ``UPLOAD_ARTIFACTS`` after a failed ``BUILD``), so such a build may never answer
and CloudFormation would wait out its hour with a generic timeout.

This function is the target of an EventBridge rule on "CodeBuild Build State Change" events
of the stack's image build project with status FAILED, FAULT, STOPPED or TIMED_OUT. It PUTs a
FAILED response that names the build, its status and phase and its log group and stream,
unless the build's ``POST_BUILD`` phase succeeded (the buildspec's own answer went out then).

The request's fields come from the environment variables the trigger Lambda passes to
``StartBuild`` (``responseURL``, ``stackId``, ``requestId``, ``logicalResourceId``,
``imageTag``), read from the event's ``additional-information.environment`` and, if missing
there, from ``BatchGetBuilds`` (the build's ``environment.environmentVariables``). The
physical id is ``imageTag``, as in the buildspec's answer.

Sources: CodeBuild user guide, "Build notifications input format reference" (event fields
``build-status``, ``build-id``, ``current-phase``, ``additional-information.environment.
environment-variables``, ``logs.group-name`` / ``stream-name``, ``phases[].phase-type`` /
``phase-status``); CodeBuild API reference, ``Build`` and ``BuildPhase`` (statuses SUCCEEDED,
FAILED, FAULT, TIMED_OUT, IN_PROGRESS, STOPPED); CloudFormation user guide, custom resource
response objects (Status, Reason, PhysicalResourceId, StackId, RequestId,
LogicalResourceId; the ``cfn-response`` module sends ``Content-Type: ''``). EventBridge
delivers CodeBuild events "best effort" (EventBridge events reference, AWS CodeBuild
events): if one is lost, CloudFormation's own one-hour limit still ends the wait.

Standard library and boto3 only (the Lambda Python runtime ships boto3).
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

__all__ = ["handler"]

REQUEST_FIELDS = ("responseURL", "stackId", "requestId", "logicalResourceId", "imageTag")
"""Environment variables the library's trigger Lambda sets on the build (``commonEnvironments``
and the ContainerImageBuild case of ``lambda/trigger-codebuild/index.ts``)."""
MAX_REASON = 1000
"""Keeps the response well inside the 4096-byte limit of a custom resource response."""


def _log(message: str, **fields: Any) -> None:
    print(json.dumps({"message": message, **fields}, default=str))


def _post_build_answered(info: dict[str, Any]) -> bool:
    return any(p.get("phase-type") == "POST_BUILD" and p.get("phase-status") == "SUCCEEDED"
               for p in info.get("phases", []))


def _variables(pairs: list[dict[str, Any]]) -> dict[str, str]:
    return {v["name"]: v.get("value", "") for v in pairs if "name" in v}


def _environment(build_id: str, info: dict[str, Any], codebuild: Any = None) -> dict[str, str]:
    env = _variables(info.get("environment", {}).get("environment-variables", []))
    if all(env.get(n) for n in REQUEST_FIELDS):
        return env
    if codebuild is None:
        import boto3

        codebuild = boto3.client("codebuild")
    builds = codebuild.batch_get_builds(ids=[build_id])["builds"]
    pairs = builds[0].get("environment", {}).get("environmentVariables", []) if builds else []
    return {**env, **_variables(pairs)}


def _put(url: str, body: dict[str, Any]) -> int:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="PUT",
                                     headers={"Content-Type": "", "Content-Length": str(len(data))})
    with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310 (https URL from CloudFormation)
        return response.status


def handler(event: dict[str, Any], context: Any = None, *, codebuild: Any = None,
            put: Any = _put) -> dict[str, Any] | None:
    """EventBridge target: answer FAILED for a build that ended without answering.

    Returns:
        The response sent, or ``None`` when nothing was sent (the buildspec answered, or the
        build was not started by the custom resource).
    """
    detail = event["detail"]
    info = detail.get("additional-information", {})
    build_id, status = detail.get("build-id", ""), detail.get("build-status", "")
    if _post_build_answered(info):
        _log("post_build succeeded: the buildspec answered", build=build_id, status=status)
        return None
    env = _environment(build_id, info, codebuild)
    missing = [n for n in REQUEST_FIELDS if not env.get(n)]
    if missing:
        _log("not a build started by the custom resource", build=build_id, missing=missing)
        return None
    logs = info.get("logs", {})
    reason = (f"Training image build {build_id} ended {status} in phase "
              f"{detail.get('current-phase', '?')}; log group {logs.get('group-name', '?')}, "
              f"stream {logs.get('stream-name', '?')}.")[:MAX_REASON]
    body = {"Status": "FAILED", "Reason": reason, "PhysicalResourceId": env["imageTag"],
            "StackId": env["stackId"], "RequestId": env["requestId"],
            "LogicalResourceId": env["logicalResourceId"]}
    try:
        code = put(env["responseURL"], body)
    except OSError as error:  # an answered or expired request: nothing left to do
        _log("response not accepted", build=build_id, error=str(error))
        return None
    _log("reported FAILED", build=build_id, status=status, http_status=code)
    return body
