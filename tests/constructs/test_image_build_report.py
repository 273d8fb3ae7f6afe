"""The training image build's failure report (``image_build_report/handler.py``): what it
sends CloudFormation for a build that ended without answering, and when it stays silent."""

from __future__ import annotations

from trn_ultracluster.constructs.image_build_report import handler as report


def _event(status="TIMED_OUT", phases=(), variables=True):
    env = [{"name": "responseURL", "value": "https://example.invalid/r", "type": "PLAINTEXT"},
           {"name": "stackId", "value": "arn:stack"}, {"name": "requestId", "value": "req"},
           {"name": "logicalResourceId", "value": "Build"}, {"name": "imageTag", "value": "abc"},
           {"name": "buildCommand", "value": "docker buildx build ."}]
    return {"detail-type": "CodeBuild Build State Change", "detail": {
        "build-status": status, "build-id": "arn:build/p:1", "current-phase": "BUILD",
        "additional-information": {
            "environment": {"environment-variables": env if variables else []},
            "logs": {"group-name": "/trn/build", "stream-name": "p/1"},
            "phases": [{"phase-type": t, "phase-status": st} for t, st in phases]}}}


def test_the_report_answers_failed_with_the_build_its_status_and_its_log():
    sent = []
    body = report.handler(_event(), put=lambda url, b: sent.append((url, b)) or 200)
    assert sent == [("https://example.invalid/r", body)]
    assert body["Status"] == "FAILED" and body["PhysicalResourceId"] == "abc"
    assert (body["StackId"], body["RequestId"], body["LogicalResourceId"]) == ("arn:stack", "req", "Build")
    for part in ("arn:build/p:1", "TIMED_OUT", "BUILD", "/trn/build", "p/1"):
        assert part in body["Reason"]


def test_the_report_stays_silent_when_post_build_answered_or_the_build_is_not_ours():
    def put(*_):
        raise AssertionError("must not answer")

    answered = _event("FAILED", phases=[("BUILD", "FAILED"), ("POST_BUILD", "SUCCEEDED")])
    assert report.handler(answered, put=put) is None

    class NoBuild:
        def batch_get_builds(self, ids):
            return {"builds": [{"environment": {"environmentVariables": []}}]}

    assert report.handler(_event(variables=False), codebuild=NoBuild(), put=put) is None


def test_the_report_reads_the_request_from_the_build_when_the_event_lacks_it():
    class Builds:
        def batch_get_builds(self, ids):
            assert ids == ["arn:build/p:1"]
            variables = _event()["detail"]["additional-information"]["environment"]
            return {"builds": [{"environment": {"environmentVariables": [
                {"name": v["name"], "value": v["value"]}
                for v in variables["environment-variables"]]}}]}

    sent = []
    report.handler(_event("STOPPED", variables=False), codebuild=Builds(),
                   put=lambda url, b: sent.append(b) or 200)
    assert sent and "STOPPED" in sent[0]["Reason"]


def test_an_expired_response_url_is_logged_not_raised():
    def put(*_):
        raise OSError("403 Forbidden")

    assert report.handler(_event(), put=put) is None
