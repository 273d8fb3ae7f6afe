"""Reach the stack's EKS cluster with the caller's AWS credentials, without a kubeconfig.

The job CLI asks EKS for the cluster's endpoint and certificate authority
(``DescribeCluster``) and authenticates with the token EKS accepts from any IAM principal
that has an access entry: ``k8s-aws-v1.`` + the unpadded URL-safe base64 of an STS
``GetCallerIdentity`` URL, presigned for 60 seconds with the header ``x-k8s-aws-id: <cluster
name>`` signed in (the scheme of ``aws eks get-token``, aws/aws-cli
``awscli/customizations/eks/get_token.py``, and of kubernetes-sigs/aws-iam-authenticator).
A new token is signed for every request (signing is local and cheap), so long ``smoke-test``
waits never hold an expired one.

So after ``make deploy`` (which gives the deploying principal an access entry) the job CLI
works with no ``aws eks update-kubeconfig`` step; ``--kube-context`` still selects a
kubeconfig context when one is wanted.
"""

from __future__ import annotations

import atexit
import base64
import os
import tempfile
from typing import Any

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode

__all__ = ["K8S_AWS_ID_HEADER", "TOKEN_PREFIX", "eks_api_client", "eks_token"]

TOKEN_PREFIX = "k8s-aws-v1."
K8S_AWS_ID_HEADER = "x-k8s-aws-id"
URL_EXPIRES_S = 60
"""Lifetime of the presigned URL, as ``aws eks get-token`` uses."""


def _sts_client(session: Any, region: str) -> Any:
    """An STS client that signs ``x-k8s-aws-id`` into ``GetCallerIdentity``."""
    sts = session.client("sts", region_name=region)

    def take_header(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if K8S_AWS_ID_HEADER in params:
            context[K8S_AWS_ID_HEADER] = params.pop(K8S_AWS_ID_HEADER)

    def add_header(request: Any, **_: Any) -> None:
        if K8S_AWS_ID_HEADER in request.context:
            request.headers[K8S_AWS_ID_HEADER] = request.context[K8S_AWS_ID_HEADER]

    sts.meta.events.register("provide-client-params.sts.GetCallerIdentity", take_header)
    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_header)
    return sts


def eks_token(session: Any, region: str, cluster_name: str, sts: Any = None) -> str:
    """A bearer token for ``cluster_name`` from the session's credentials.

    Returns:
        ``k8s-aws-v1.<base64url(presigned URL), unpadded>``.

    Raises:
        CliError: (CREDENTIALS) no credentials to sign with.
    """
    client = sts or _sts_client(session, region)
    with aws_errors("sign an EKS token"):
        url = client.generate_presigned_url(
            "get_caller_identity", Params={K8S_AWS_ID_HEADER: cluster_name},
            ExpiresIn=URL_EXPIRES_S, HttpMethod="GET")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def eks_api_client(session: Any, region: str, cluster_name: str) -> Any:
    """A ``kubernetes.client.ApiClient`` for the cluster, authenticated by :func:`eks_token`.

    Raises:
        CliError: STACK when the cluster does not exist; CREDENTIALS as :func:`aws_errors`.
    """
    from botocore.exceptions import ClientError
    from kubernetes import client

    with aws_errors(f"DescribeCluster {cluster_name}"):
        try:
            cluster = session.client("eks", region_name=region).describe_cluster(
                name=cluster_name)["cluster"]
        except ClientError as err:
            if error_code(err) == "ResourceNotFoundException":
                raise CliError(f"EKS cluster {cluster_name} does not exist in {region}",
                               "check --stack-name/--region; redeploy the stack",
                               ExitCode.STACK) from None
            raise
    handle, ca_path = tempfile.mkstemp(prefix="trn-ultracluster-eks-ca-", suffix=".crt")
    with os.fdopen(handle, "wb") as ca_file:
        ca_file.write(base64.b64decode(cluster["certificateAuthority"]["data"]))
    atexit.register(lambda: os.path.exists(ca_path) and os.unlink(ca_path))
    with aws_errors("STS client for the EKS token"):
        sts = _sts_client(session, region)
    configuration = client.Configuration()
    configuration.host = cluster["endpoint"]
    configuration.ssl_ca_cert = ca_path
    # The client's auth settings read the token under "BearerToken" and take the prefix from
    # that key only (kubernetes 36.x configuration.py auth_settings,
    # https://github.com/kubernetes-client/python/issues/2595), as its own kubeconfig loader
    # sets them.
    configuration.api_key_prefix["BearerToken"] = "Bearer"

    def refresh(config: Any) -> None:
        config.api_key["BearerToken"] = eks_token(session, region, cluster_name, sts)

    configuration.refresh_api_key_hook = refresh
    refresh(configuration)
    return client.ApiClient(configuration)
