"""Reaching the EKS cluster with AWS credentials alone: a token signed like ``aws eks
get-token`` (a presigned STS GetCallerIdentity with the cluster header signed in), an API
client from EKS DescribeCluster, and requests that carry ``Authorization: Bearer
k8s-aws-v1.<token>`` (EKS rejects the token without the scheme). No AWS: botocore Stubber."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

import boto3
import pytest
from botocore.stub import Stubber

from tests.cli.helpers import REGION, StubSession, stubbed
from trn_ultracluster.cli.backends.eks_auth import (
    K8S_AWS_ID_HEADER,
    TOKEN_PREFIX,
    eks_api_client,
    eks_token,
)
from trn_ultracluster.cli.errors import CliError, ExitCode

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_token_is_a_presigned_get_caller_identity_with_the_cluster_header_signed():
    session = boto3.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
                            region_name=REGION)
    token = eks_token(session, REGION, "my-cluster")
    assert token.startswith(TOKEN_PREFIX) and "=" not in token
    payload = token[len(TOKEN_PREFIX):]
    url = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    parsed = urlparse(url)
    query = parse_qs(parsed.query)
    assert parsed.netloc == f"sts.{REGION}.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"] and query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-SignedHeaders"] == [f"host;{K8S_AWS_ID_HEADER}"]
    assert query["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/")


def test_api_client_from_the_stack_outputs_needs_no_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    eks, stub = stubbed("eks")
    stub.add_response("describe_cluster", {"cluster": {
        "name": "trn", "endpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
        "certificateAuthority": {"data": base64.b64encode(CA).decode()}}}, {"name": "trn"})
    session = StubSession(eks=eks, sts=boto3.client(
        "sts", region_name=REGION, aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="s"))
    with stub:
        api = eks_api_client(session, REGION, "trn")
    config = api.configuration
    assert config.host == "https://ABC.gr7.us-west-2.eks.amazonaws.com"
    with open(config.ssl_ca_cert, "rb") as ca:
        assert ca.read() == CA
    # what the client really sends (auth_settings, not a helper with another lookup)
    header = config.auth_settings()["BearerToken"]["value"]
    assert header.startswith("Bearer " + TOKEN_PREFIX)
    # every request signs afresh, so long waits never carry an expired token
    assert config.refresh_api_key_hook is not None


def test_missing_cluster_is_a_stack_error():
    eks, stub = stubbed("eks")
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", "no cluster", 404)
    with stub, pytest.raises(CliError) as err:
        eks_api_client(StubSession(eks=eks), REGION, "gone")
    assert err.value.exit_code == ExitCode.STACK


def test_requests_carry_a_bearer_token():
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            seen.append(self.headers.get("Authorization"))
            body = json.dumps({"kind": "NamespaceList", "apiVersion": "v1", "items": [],
                               "metadata": {}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        eks = boto3.client("eks", region_name=REGION, aws_access_key_id="x",
                           aws_secret_access_key="y")
        stub = Stubber(eks)
        stub.add_response("describe_cluster", {"cluster": {
            "name": "trn", "endpoint": f"http://127.0.0.1:{server.server_port}",
            "certificateAuthority": {"data": base64.b64encode(b"unused").decode()}}},
            {"name": "trn"})
        sts = boto3.client("sts", region_name=REGION, aws_access_key_id="AKIDEXAMPLE",
                           aws_secret_access_key="s")
        with stub:
            api = eks_api_client(StubSession(eks=eks, sts=sts), REGION, "trn")
        from kubernetes import client

        client.CoreV1Api(api).list_namespace()
        client.CoreV1Api(api).list_namespace()
    finally:
        server.shutdown()
    assert len(seen) == 2
    for header in seen:
        assert header.startswith("Bearer " + TOKEN_PREFIX), header
