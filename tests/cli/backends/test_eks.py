"""The ``eks`` job backend through the CLI: submit, status, logs and cancel with the official
Kubernetes client, against the client's API methods and against a local Kubernetes API
server (real HTTP, real JSON and text bodies, the client unchanged).

The fake server answers the paths the CLI calls (Kubernetes API reference: ``GET
/api/v1/namespaces/{ns}/pods?labelSelector=...``, ``GET /api/v1/namespaces/{ns}/pods/{pod}/log``
with ``container`` and ``tailLines``, which answers ``text/plain``; the Trainer CRD's
``/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs``) the way an API server does,
errors as a ``Status`` object. The CLI reaches it through a kubeconfig context
(``--kube-context``), or with AWS credentials (EKS DescribeCluster stubbed), so no client
method is replaced.

Regression covered: kubernetes client 36.x returns ``read_namespaced_pod_log`` as the repr of
the body's bytes (``"b'...'"``), or as the repr of a dict when the log is one JSON line
(https://github.com/kubernetes-client/python/issues/2596).
"""

from __future__ import annotations

import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from tests.cli.helpers import StubSession, outputs_values, run, write_outputs
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.orchestrators.eks.manifests import TRAINER_NODE

NAMESPACE = "training"
TOKEN = "t0ken"
TRAINJOBS = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NAMESPACE}/trainjobs"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
ALLREDUCE = ('{"event": "allreduce", "bytes": 536870912, "ranks": 64, '
             '"time_s": 0.0066437120000000006, "correct": true}')
"""One all-reduce record of 512 MiB on 2 x 32 ranks at 80 GB/s bus bandwidth."""


class FakeKubeApi:
    """A tiny Kubernetes API server: TrainJobs, the pods of a JobSet and their logs.

    Attributes:
        logs: pod name -> log body (bytes, served as ``text/plain``).
        jobs: TrainJob name -> stored object.
        requests: ``(method, path, query)`` of every request, in order.
    """

    def __init__(self) -> None:
        self.logs: dict[str, bytes] = {}
        self.jobs: dict[str, dict] = {}
        self.requests: list[tuple[str, str, dict[str, list[str]]]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_):  # keep pytest output clean
                pass

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, code: int, obj: dict) -> None:
                self._send(code, json.dumps(obj).encode(), "application/json")

            def _not_found(self, what: str, name: str) -> None:
                self._json(404, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                 "status": "Failure", "message": f'{what} "{name}" not found',
                                 "reason": "NotFound", "details": {"name": name, "kind": what},
                                 "code": 404})

            def _route(self, method: str) -> None:
                url = urlparse(self.path)
                query = parse_qs(url.query)
                api.requests.append((method, url.path, query))
                auth = self.headers.get("Authorization", "")
                if auth != f"Bearer {TOKEN}" and not auth.startswith("Bearer k8s-aws-v1."):
                    return self._json(401, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                            "status": "Failure", "message": "Unauthorized",
                                            "reason": "Unauthorized", "code": 401})
                if url.path == TRAINJOBS and method == "POST":
                    length = int(self.headers["Content-Length"])
                    job = json.loads(self.rfile.read(length))
                    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
                    api.jobs[job["metadata"]["name"]] = job
                    return self._json(201, job)
                if url.path == TRAINJOBS:
                    return self._json(200, {"apiVersion": "trainer.kubeflow.org/v1alpha1",
                                            "kind": "TrainJobList", "metadata": {},
                                            "items": list(api.jobs.values())})
                if url.path.startswith(TRAINJOBS + "/"):
                    name = url.path.rsplit("/", 1)[1]
                    if name not in api.jobs:
                        return self._not_found("trainjobs.trainer.kubeflow.org", name)
                    if method == "DELETE":
                        api.jobs.pop(name)
                        return self._json(200, {"kind": "Status", "apiVersion": "v1",
                                                "metadata": {}, "status": "Success"})
                    return self._json(200, api.jobs[name])
                if url.path == PODS:
                    selector = dict(s.split("=", 1) for s in query["labelSelector"][0].split(","))
                    job = selector["jobset.sigs.k8s.io/jobset-name"]
                    items = [] if job not in api.jobs and job != "job-a" else [{
                        "metadata": {"name": f"{job}-node-0-0-x7k2p", "namespace": NAMESPACE,
                                     "labels": selector},
                        "spec": {"containers": [{"name": "node", "image": "trn:abc"}]},
                        "status": {"phase": "Succeeded"}}]
                    return self._json(200, {"kind": "PodList", "apiVersion": "v1",
                                            "metadata": {"resourceVersion": "42"},
                                            "items": items})
                if url.path.startswith(PODS + "/") and url.path.endswith("/log"):
                    pod = url.path.split("/")[-2]
                    body = api.logs.get(pod)
                    if body is None:
                        return self._not_found("pods", pod)
                    if "tailLines" in query:
                        body = b"".join(body.splitlines(keepends=True)[-int(query["tailLines"][0]):])
                    return self._send(200, body, "text/plain")
                return self._json(404, {"kind": "Status", "status": "Failure", "code": 404,
                                        "reason": "NotFound", "message": "the server could not "
                                        "find the requested resource"})

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

            def do_DELETE(self):
                self._route("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeKubeApi:
        self.thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.server.shutdown()
        self.server.server_close()


def kubeconfig(tmp_path: Path, server: str) -> Path:
    """A kubeconfig with one context ``fake`` (bearer token) for ``server``."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "fake", "user": {"token": TOKEN}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}))
    return path


def fake_cluster(tmp_path, monkeypatch, orchestrator: str):
    """The fake API server and, in its ``args``, the CLI arguments that reach it for a stack
    of ``orchestrator`` (a generator for a fixture)."""
    with FakeKubeApi() as api:
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path, api.url)))
        outputs = write_outputs(tmp_path, outputs_values(orchestrator))
        api.args = ["--outputs-file", str(outputs), "--kube-context", "fake"]
        yield api


@pytest.fixture
def kube(tmp_path, monkeypatch):
    """The fake API server and the CLI arguments that reach it."""
    yield from fake_cluster(tmp_path, monkeypatch, "eks")


LOG = ("2026-11-21 09:30:00 INFO torchrun: starting 32 processes\n"
       '{"event": "step", "step": 1, "loss": 7.25, "tokens_per_s": 24410.2}\n'
       "naïve → ünïcode ✓\n"
       '{"event": "step", "step": 2, "loss": 7.01, "tokens_per_s": 24512.9}\n')


def test_logs_print_the_log_text(capsys, kube):
    kube.logs["job-a-node-0-0-x7k2p"] = LOG.encode()
    code, out, err = run(capsys, "logs", *kube.args, "job-a")
    assert code == 0, err
    assert out == LOG  # not "b'2026-11-21 ...\\n...'"
    method, path, query = kube.requests[-1]
    assert path == f"{PODS}/job-a-node-0-0-x7k2p/log" and query == {"container": ["node"]}
    _, _, pods_query = kube.requests[-2]
    assert pods_query["labelSelector"] == [
        "jobset.sigs.k8s.io/jobset-name=job-a,batch.kubernetes.io/job-completion-index=0"]


def test_logs_tail_of_one_json_line_is_that_line(capsys, kube):
    """A body that is one JSON document was turned into a Python dict repr by the client."""
    kube.logs["job-a-node-0-0-x7k2p"] = LOG.encode()
    code, out, err = run(capsys, "logs", *kube.args, "job-a", "--tail", "1")
    assert code == 0, err
    assert out == LOG.splitlines(keepends=True)[-1]
    assert json.loads(out)["loss"] == 7.01
    assert kube.requests[-1][2] == {"container": ["node"], "tailLines": ["1"]}


def test_logs_with_bytes_that_are_not_utf8(capsys, kube):
    """A multi-byte character cut by concurrent writers must not stop the log (U+FFFD)."""
    kube.logs["job-a-node-0-0-x7k2p"] = b"progress \xe2\x96 done\n"
    code, out, err = run(capsys, "logs", *kube.args, "job-a")
    assert code == 0, err
    assert out == "progress \ufffd done\n"


def test_logs_of_a_pod_without_log_is_a_cluster_error(capsys, kube):
    code, _, err = run(capsys, "logs", *kube.args, "job-a")
    assert code == ExitCode.CLUSTER
    assert "error: logs of job-a-node-0-0-x7k2p: Kubernetes API 404 Not Found" in err
    assert 'pods \\"job-a-node-0-0-x7k2p\\" not found' in err or \
        'pods "job-a-node-0-0-x7k2p" not found' in err


def test_smoke_test_on_eks_passes_with_the_api_servers_log(capsys, kube):
    """Submit, poll, read the log and judge it: PASS (it said FAIL with the bytes repr)."""
    kube.logs["smoke-a-node-0-0-x7k2p"] = f"[rank0]: starting\n{ALLREDUCE}\n".encode()
    code, out, err = run(capsys, "smoke-test", *kube.args, "--name", "smoke-a")
    assert code == 0, out + err
    assert "PASS: EFA carries the collectives" in out
    assert [r[:2] for r in kube.requests] == [
        ("POST", TRAINJOBS), ("GET", f"{TRAINJOBS}/smoke-a"), ("GET", PODS),
        ("GET", f"{PODS}/smoke-a-node-0-0-x7k2p/log")]


def test_status_without_jobs_says_so(capsys, kube):
    code, out, err = run(capsys, "status", *kube.args)
    assert code == 0, err
    assert out == f"no TrainJobs in namespace {NAMESPACE}\n"


def closed_port() -> int:
    """A local TCP port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("command", [["status"], ["logs", "job-a"], ["cancel", "job-a"],
                                     ["submit", "--recipe", "llama-1b", "--steps", "10",
                                      "--data-dir", "/fsx/datasets/wiki"]])
def test_unreachable_api_server_is_a_cluster_error(capsys, tmp_path, monkeypatch, command):
    """urllib3's MaxRetryError is not an OSError: it escaped as a traceback."""
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path, f"http://127.0.0.1:{closed_port()}")))
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, command[0], "--outputs-file", str(outputs), "--kube-context", "fake",
                       *command[1:])
    assert code == ExitCode.CLUSTER
    assert "cannot reach the Kubernetes API server" in err
    assert "fix: check the network" in err


def test_logs_through_eks_auth_without_kubeconfig(capsys, tmp_path, monkeypatch):
    """The default path: DescribeCluster gives the endpoint, a signed STS token authenticates."""
    import base64

    import boto3
    from botocore.stub import Stubber

    from trn_ultracluster.cli.commands import common

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    eks = boto3.client("eks", region_name="us-west-2")
    sts = boto3.client("sts", region_name="us-west-2", aws_access_key_id="AKIDEXAMPLE",
                       aws_secret_access_key="secret")

    with FakeKubeApi() as api, Stubber(eks) as stub:
        api.logs["job-a-node-0-0-x7k2p"] = LOG.encode()
        stub.add_response("describe_cluster", {"cluster": {
            "name": "value-of-EksClusterName", "endpoint": api.url,
            "certificateAuthority": {"data": base64.b64encode(b"unused over http").decode()}}},
            {"name": "value-of-EksClusterName"})
        monkeypatch.setattr(common, "stack_session",
                            lambda args, outputs: StubSession(eks=eks, sts=sts))
        outputs = write_outputs(tmp_path, outputs_values("eks"))
        code, out, err = run(capsys, "logs", "--outputs-file", str(outputs), "job-a")
    assert code == 0, err
    assert out == LOG


# --- the client's API methods replaced ------------------------------------------------------


def test_eks_submit_status_logs_cancel(capsys, tmp_path, monkeypatch):
    from kubernetes import client as k8s

    from trn_ultracluster.cli.backends import eks, trainjob

    store: dict[str, dict] = {}
    api = k8s.ApiClient()

    class Custom:
        def create_namespaced_custom_object(self, group, version, ns, plural, body):
            assert (group, version, ns, plural) == ("trainer.kubeflow.org", "v1alpha1", "training", "trainjobs")
            store[body["metadata"]["name"]] = {**body, "status": {"conditions": [
                {"type": "Complete", "status": "True"}]}}
            return body

        def get_namespaced_custom_object(self, group, version, ns, plural, name):
            if name not in store:
                raise k8s.exceptions.ApiException(status=404, reason="Not Found")
            return store[name]

        def delete_namespaced_custom_object(self, group, version, ns, plural, name):
            store.pop(name)

    class Core:
        def list_namespaced_pod(self, ns, label_selector):
            assert label_selector == ("jobset.sigs.k8s.io/jobset-name=job-a,"
                                      "batch.kubernetes.io/job-completion-index=0")
            return SimpleNamespace(items=[SimpleNamespace(metadata=SimpleNamespace(name="job-a-node-0-0"))])

        def read_namespaced_pod_log(self, pod, ns, container, **kw):
            assert container == TRAINER_NODE == "node"
            assert kw == {"_preload_content": False}  # the raw body (see the API server tests)
            return SimpleNamespace(data=b"loss 2.0\n", release_conn=lambda: None)

    def connect(namespace, **kwargs):
        assert kwargs["cluster_name"] == "value-of-EksClusterName" and kwargs["context"] is None
        client = trainjob.TrainJobClient(namespace, api)
        client.custom, client.core = Custom(), Core()
        return client

    monkeypatch.setattr(eks, "trainjob_client", connect)
    path = write_outputs(tmp_path, outputs_values("eks"))
    base = ["--outputs-file", str(path)]
    code, out, _ = run(capsys, "submit", *base, "--name", "job-a", "--recipe", "llama-1b",
                       "--steps", "10", "--data-dir", "/fsx/d")
    assert code == 0 and out.startswith("submitted job-a (2 x trn1.32xlarge)")
    code, out, _ = run(capsys, "status", *base, "job-a")
    assert re.match(r"job-a\s+Complete\s+nodes=2", out)
    assert run(capsys, "logs", *base, "job-a")[1] == "loss 2.0\n"
    assert run(capsys, "cancel", *base, "job-a")[0] == 0
    code, _, err = run(capsys, "status", *base, "job-a")
    assert code == ExitCode.CLUSTER and "Kubernetes API 404" in err


def test_eks_with_an_unusable_kube_context(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "status", "--outputs-file", str(path), "--kube-context", "dev")
    assert code == ExitCode.CLUSTER
    assert "kubeconfig context 'dev' is not usable" in err
    assert "leave --kube-context out" in err
