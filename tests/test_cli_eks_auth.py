"""The EKS API client the job CLI builds sends what the API server needs: a request through
the real kubernetes client to a local HTTPS-less stand-in server carries
``Authorization: Bearer k8s-aws-v1.<token>`` (EKS rejects the token without the scheme)."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import boto3
from botocore.stub import Stubber

from trn_ultracluster.cli.eks_auth import TOKEN_PREFIX, eks_api_client

REGION = "us-west-2"


class _Session:
    def __init__(self, **clients):
        self.clients = clients

    def client(self, name, region_name=None):
        return self.clients[name]


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
            api = eks_api_client(_Session(eks=eks, sts=sts), REGION, "trn")
        from kubernetes import client

        client.CoreV1Api(api).list_namespace()
        client.CoreV1Api(api).list_namespace()
    finally:
        server.shutdown()
    assert len(seen) == 2
    for header in seen:
        assert header.startswith("Bearer " + TOKEN_PREFIX), header
