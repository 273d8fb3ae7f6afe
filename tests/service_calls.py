"""The AWS calls a service makes with a role the stack hands it, read from the synthesized
template, and the role's policies from the same template, both with CloudFormation's
functions replaced by the same stand-in values so that ARNs compare (issue 29, "a test of
the rule, not of the template's shape"; evaluated by :mod:`tests.iam_eval`).

Stand-in values (:class:`StandIns`): account :data:`ACCOUNT`, the stack's region, partition
``aws``; the ``Ref`` of a subnet ``subnet-<LogicalId>``, of a VPC ``vpc-<LogicalId>``, of a file
system ``fs-<LogicalId>``, of a named resource (bucket, repository, log group, cluster,
project, function, role) its literal name property or ``<logicalid>``; ``Fn::GetAtt``
``GroupId`` of a security group ``sg-<LogicalId>``, ``Arn`` the resource type's ARN format
around that name (a log group's ``Arn`` ends in ``:*``, as CloudFormation's does).
``Fn::Join``, ``Fn::Sub``, ``Fn::Select``, ``Fn::Split``, ``Fn::If`` (with the template's
``Conditions``: ``Fn::Equals``, ``Fn::Not``, ``Fn::And``, ``Fn::Or``) and the pseudo
parameters are evaluated; ``AWS::NoValue`` drops the element. Anything else raises.

The calls (:func:`service_calls`), each from what the template hands the service:

- **HyperPod** (each instance group of an ``AWS::SageMaker::Cluster``, with its
  ``ExecutionRole``): create the nodes' interfaces in each subnet and security group of its
  network (``OverrideVpcConfig``, else the cluster's ``VpcConfig``): ``ec2:CreateNetworkInterface``
  on the subnet, on each security group and on the new interface, with the context key
  ``ec2:Vpc`` (the subnet's VPC) and ``ec2:Subnet``; tag, detach and delete the interfaces
  and manage their permissions (:data:`~trn_ultracluster.orchestrators.hyperpod.execution_role.VPC_INTERFACE_ACTIONS`,
  ``ec2:CreateTags``) in that VPC, ``DetachNetworkInterface`` also naming the instance,
  which runs in SageMaker's account (:data:`SERVICE_ACCOUNT`, a stand-in); describe the VPC;
  read the lifecycle script (``LifeCycleConfig``: ``s3:GetObject`` on
  ``SourceS3Uri/<OnCreate or OnInitComplete>``, ``s3:ListBucket`` on its bucket); write the
  cluster's logs under ``/aws/sagemaker/Clusters/<ClusterName>/``; on EKS, Pod Identity on
  ``Orchestrator.Eks.ClusterArn`` and ``sagemaker:AttachClusterNodeNetworkInterface`` on the
  HyperPod cluster (the VPC CNI on its nodes).
- **VPC CNI** (the Pod Identity role of the ``vpc-cni`` add-on's ``aws-node``, and on HyperPod
  on EKS the execution role, which the CNI falls back to there): create, attach, modify,
  tag and delete interfaces and assign addresses (:data:`VPC_CNI_ACTIONS`) for the nodes of
  every EKS node group of the add-on's cluster (its ``Subnets``, its launch template's
  security groups) and of every HyperPod instance group the cluster orchestrates (its
  network, as above; there the interfaces are attached with
  ``sagemaker:AttachClusterNodeNetworkInterface`` on the HyperPod cluster).
- **Nodes** (every HyperPod execution role, EKS node group ``NodeRole`` and standalone
  launch template instance profile): pull the stack's images (each ``AWS::ECR::Repository``:
  ``ecr:BatchGetImage``, ``ecr:GetDownloadUrlForLayer``; ``ecr:GetAuthorizationToken``).
- **CodeBuild** (each ``AWS::CodeBuild::Project``, its ``ServiceRole``): write the build's log
  stream in ``LogsConfig.CloudWatchLogs.GroupName``; for each ``Custom::CDKContainerImageBuild``
  that runs the project, read its ``sourceS3Url`` and push to its ``repositoryUri`` (the
  actions of the ECR user guide's "IAM permissions for pushing an image",
  https://docs.aws.amazon.com/AmazonECR/latest/userguide/image-push-iam.html), and pull the
  image a ``--build-arg`` of its ``buildCommand`` names in a private ECR repository (a user
  image's ``TRN_BASE_IMAGE``).
- **Lambda** (each ``AWS::Lambda::Function`` with ``LoggingConfig.LogGroup``, its ``Role``):
  ``logs:CreateLogStream`` and ``logs:PutLogEvents`` in that group (Lambda developer guide,
  "Sending Lambda function logs to CloudWatch Logs": a function's role needs them to write
  its logs; the function export, image report and DLAMI lookup functions).
- **FSx export** (each ``Custom::FsxExportOnDelete``: the user functions of its provider,
  ``USER_ON_EVENT_FUNCTION_ARN``/``USER_IS_COMPLETE_FUNCTION_ARN``): the export task on its
  ``FileSystemId`` (``fsx:CreateDataRepositoryTask`` on the file system and the new task),
  ``fsx:DescribeDataRepositoryTasks``/``DescribeDataRepositoryAssociations``,
  ``ec2:DescribeNetworkInterfaces`` and ``cloudformation:DescribeStacks`` on the stack
  (``constructs/fsx_export/handler.py``).
- **DLAMI lookup** (each ``Custom::NeuronDlami``: its provider's user function):
  ``ec2:DescribeImages`` (no resource types).
- **Image build report** (each ``AWS::Events::Rule`` on ``aws.codebuild`` build state changes
  whose targets are functions): ``codebuild:BatchGetBuilds`` on each project the rule names.

AWS managed policies are not in the template: a call counts as allowed by one only if it is
in :data:`AWS_MANAGED_POLICIES`, each copied from AWS's managed policy reference; any other
managed policy counts for nothing (as in :mod:`tests.orchestrators.node_calls`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.iam_eval import Decision, Request, evaluate
from tests.orchestrators.node_calls import attached_documents
from trn_ultracluster.orchestrators.hyperpod.execution_role import (
    CLUSTER_LOG_GROUPS,
    VPC_DESCRIBE_ACTIONS,
    VPC_INTERFACE_ACTIONS,
)
from trn_ultracluster.orchestrators.hyperpod_eks.execution_role import VPC_CNI_ACTIONS

__all__ = ["ACCOUNT", "AWS_MANAGED_POLICIES", "Call", "SERVICE_ACCOUNT", "StandIns",
           "denied_calls", "resource_types", "role_documents", "service_calls"]

ACCOUNT = "111122223333"
"""The stack's account (stand-in)."""
SERVICE_ACCOUNT = "999988887777"
"""Stand-in for the account of an AWS service's own resources (HyperPod's instances)."""
ECR_PULL = ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
ECR_PUSH = ("ecr:CompleteLayerUpload", "ecr:UploadLayerPart", "ecr:InitiateLayerUpload",
            "ecr:BatchCheckLayerAvailability", "ecr:PutImage", "ecr:BatchGetImage")
"""ECR user guide, "IAM permissions for pushing an image to an Amazon ECR private repository"
(with ``ecr:GetAuthorizationToken`` on ``*``)."""
AWS_MANAGED_POLICIES: dict[str, dict[str, Any]] = {
    "AmazonEC2ContainerRegistryPullOnly": {"Statement": [{
        "Effect": "Allow", "Resource": "*",
        "Action": ["ecr:GetAuthorizationToken", "ecr:BatchGetImage",
                   "ecr:GetDownloadUrlForLayer", "ecr:BatchImportUpstreamImage"]}]},
    "AmazonEKS_CNI_Policy": {"Statement": [
        {"Sid": "AmazonEKSCNIPolicy", "Effect": "Allow", "Resource": "*",
         "Action": ["ec2:AssignPrivateIpAddresses", "ec2:AttachNetworkInterface",
                    "ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface",
                    "ec2:DescribeInstances", "ec2:DescribeTags",
                    "ec2:DescribeNetworkInterfaces", "ec2:DescribeInstanceTypes",
                    "ec2:DescribeSubnets", "ec2:DetachNetworkInterface",
                    "ec2:ModifyNetworkInterfaceAttribute", "ec2:UnassignPrivateIpAddresses"]},
        {"Sid": "AmazonEKSCNIPolicyENITag", "Effect": "Allow", "Action": ["ec2:CreateTags"],
         "Resource": ["arn:aws:ec2:*:*:network-interface/*"]}]},
}
"""AWS managed policies the calls rely on, name -> document, from AWS's Managed Policy
Reference (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/<name>.html):
``AmazonEC2ContainerRegistryPullOnly`` version v1 (EKS node roles), ``AmazonEKS_CNI_Policy``
version v5 (the VPC CNI's Pod Identity role)."""
NO_VALUE = object()


@cache
def _service_reference() -> dict[str, Any]:
    """cfn-lint's copy of AWS's Service Reference (action -> resource types, resource type ->
    ARN formats), ``cfnlint/data/AdditionalSpecs/Policies.json``, generated by cfn-lint's
    ``maintenance.update_iam_policies`` from https://servicereference.us-east-1.amazonaws.com."""
    import cfnlint.data.AdditionalSpecs as specs

    return json.loads((Path(specs.__file__).parent / "Policies.json").read_text())


def resource_types(action: str, arn: str) -> list[str]:
    """The resource types of ``action`` (Service Reference) whose ARN format ``arn`` has; for an
    action without resource types, ``["*"]`` when ``arn`` is ``*``.

    Raises:
        KeyError: the Service Reference has no such action.
    """
    service, name = action.split(":", 1)
    data = _service_reference()[service]
    types = data["Actions"][name.lower()].get("Resources", [])
    if not types:
        return ["*"] if arn == "*" else []
    found = []
    for kind in types:
        for arn_format in data["Resources"][kind]["ARNFormats"]:
            pattern = re.escape(arn_format).replace(r"\.\*", ".*")
            pattern = re.sub(r"\\\$\\\{[A-Za-z]+\\\}", "[^:]*", pattern)
            if re.fullmatch(pattern, arn):
                found.append(kind)
    return found


class StandIns:
    """Template values with CloudFormation's functions replaced by stand-ins (module doc).

    Args:
        template: the synthesized template.
        region: the stack's region (``AWS::Region``).
    """

    NAME_PROPERTIES = {
        "AWS::S3::Bucket": "BucketName", "AWS::ECR::Repository": "RepositoryName",
        "AWS::Logs::LogGroup": "LogGroupName", "AWS::EKS::Cluster": "Name",
        "AWS::CodeBuild::Project": "Name", "AWS::Lambda::Function": "FunctionName",
        "AWS::IAM::Role": "RoleName", "AWS::SageMaker::Cluster": "ClusterName",
    }
    ID_PREFIXES = {"AWS::EC2::Subnet": "subnet", "AWS::EC2::VPC": "vpc",
                   "AWS::EC2::SecurityGroup": "sg", "AWS::FSx::FileSystem": "fs",
                   "AWS::EC2::LaunchTemplate": "lt"}

    def __init__(self, template: dict[str, Any], region: str) -> None:
        self.template, self.region = template, region
        self.resources = template["Resources"]
        self.pseudo = {
            "AWS::AccountId": ACCOUNT, "AWS::Region": region, "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "TrnUltraCluster",
            "AWS::StackId": self.arn("cloudformation", "stack/TrnUltraCluster/guid"),
        }

    def arn(self, service: str, resource: str, *, account: str = ACCOUNT,
            region: str | None = None) -> str:
        """``arn:aws:<service>:<region>:<account>:<resource>``."""
        return f"arn:aws:{service}:{self.region if region is None else region}:{account}:{resource}"

    def ref(self, name: str) -> str:
        """The stand-in of ``{"Ref": name}``."""
        if name in self.pseudo:
            return self.pseudo[name]
        resource = self.resources[name]
        kind = resource["Type"]
        if kind in self.ID_PREFIXES:
            return f"{self.ID_PREFIXES[kind]}-{name}"
        literal = resource.get("Properties", {}).get(self.NAME_PROPERTIES.get(kind, ""))
        if isinstance(literal, str):
            return literal
        return name.lower() if kind in ("AWS::S3::Bucket", "AWS::ECR::Repository") else name

    def attribute(self, name: str, attribute: str) -> str:
        """The stand-in of ``{"Fn::GetAtt": [name, attribute]}``."""
        kind = self.resources[name]["Type"]
        ref = self.ref(name)
        arns = {
            "AWS::S3::Bucket": f"arn:aws:s3:::{ref}",
            "AWS::ECR::Repository": self.arn("ecr", f"repository/{ref}"),
            "AWS::Logs::LogGroup": self.arn("logs", f"log-group:{ref}:*"),
            "AWS::EKS::Cluster": self.arn("eks", f"cluster/{ref}"),
            "AWS::CodeBuild::Project": self.arn("codebuild", f"project/{ref}"),
            "AWS::Lambda::Function": self.arn("lambda", f"function:{ref}"),
            "AWS::IAM::Role": f"arn:aws:iam::{ACCOUNT}:role/{ref}",
            "AWS::IAM::InstanceProfile": f"arn:aws:iam::{ACCOUNT}:instance-profile/{ref}",
        }
        if attribute == "Arn" and kind in arns:
            return arns[kind]
        if (kind, attribute) == ("AWS::SageMaker::Cluster", "ClusterArn"):
            return self.arn("sagemaker", f"cluster/{name.lower()}")
        if (kind, attribute) == ("AWS::EC2::SecurityGroup", "GroupId"):
            return ref
        return f"{name}.{attribute}"

    def value(self, value: Any) -> Any:
        """``value`` with every function replaced (lists lose their ``AWS::NoValue`` items).

        Raises:
            ValueError: a function this class does not evaluate.
        """
        if isinstance(value, list):
            return [v for v in (self.value(x) for x in value) if v is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Fn::", "Ref")):
            return {k: v for k, v in ((k, self.value(x)) for k, x in value.items())
                    if v is not NO_VALUE}
        (function, arg), = value.items()
        if function == "Ref":
            return NO_VALUE if arg == "AWS::NoValue" else self.ref(arg)
        if function == "Fn::GetAtt":
            name, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
            return self.attribute(name, attribute)
        if function == "Fn::Join":
            sep, parts = arg
            return sep.join(str(p) for p in self.value(parts))
        if function == "Fn::Sub":
            text, names = (arg, {}) if isinstance(arg, str) else (arg[0], self.value(arg[1]))
            return re.sub(r"\$\{(!?)([^}]+)\}", lambda m: self._sub(m, names), text)
        if function == "Fn::Select":
            index, items = arg
            return self.value(items)[int(self.value(index))]
        if function == "Fn::Split":
            sep, text = arg
            return str(self.value(text)).split(sep)
        if function == "Fn::If":
            condition, yes, no = arg
            return self.value(yes if self.condition(condition) else no)
        raise ValueError(f"cannot evaluate {function}")

    def _sub(self, match: re.Match[str], names: dict[str, Any]) -> str:
        literal, name = match.groups()
        if literal:
            return "${" + name + "}"
        if name in names:
            return str(names[name])
        if "." in name:
            return self.attribute(*name.split(".", 1))
        return self.ref(name)

    def condition(self, name: str) -> bool:
        """The value of the template's condition ``name``."""
        return self._holds(self.template["Conditions"][name])

    def _holds(self, expression: Any) -> bool:
        (function, arg), = expression.items()
        if function == "Fn::Equals":
            return self.value(arg[0]) == self.value(arg[1])
        if function == "Fn::Not":
            return not self._holds(arg[0])
        if function == "Fn::And":
            return all(self._holds(a) for a in arg)
        if function == "Fn::Or":
            return any(self._holds(a) for a in arg)
        if function == "Condition":
            return self.condition(arg)
        raise ValueError(f"cannot evaluate condition function {function}")


def role_documents(template: dict[str, Any], role: str, values: StandIns) -> list[dict[str, Any]]:
    """The policy documents of ``role``, resolved: the template's
    (:func:`~tests.orchestrators.node_calls.attached_documents`) and the attached AWS managed
    policies of :data:`AWS_MANAGED_POLICIES`."""
    documents = [values.value(d) for d in attached_documents(template, role)]
    for arn in values.value(template["Resources"][role]["Properties"].get("ManagedPolicyArns", [])):
        name = arn.rsplit("/", 1)[-1]
        if arn.startswith("arn:aws:iam::aws:policy/") and name in AWS_MANAGED_POLICIES:
            documents.append(AWS_MANAGED_POLICIES[name])
    return documents


@dataclass(frozen=True)
class Call:
    """One call a service makes with a role of the stack.

    Attributes:
        role: the role's logical id.
        role_is: what the role is (who uses it).
        request: the action, the resource and the condition context.
        why: what in the template hands the service that resource.
    """

    role: str
    role_is: str
    request: Request
    why: str

    def __str__(self) -> str:
        context = f" with {dict(self.request.context)}" if self.request.context else ""
        return (f"role {self.role} ({self.role_is}) may not {self.request.action} on "
                f"{self.request.resource}{context} ({self.why})")


def _ref(value: Any) -> str:
    if isinstance(value, dict) and "Ref" in value:
        return value["Ref"]
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        arg = value["Fn::GetAtt"]
        return arg[0] if isinstance(arg, list) else arg.split(".", 1)[0]
    raise ValueError(f"not a reference to a resource of the template: {value!r}")


def _of_type(template: dict[str, Any], kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, resource in template["Resources"].items():
        if resource["Type"] == kind:
            yield name, resource.get("Properties", {})


def service_calls(template: dict[str, Any], region: str) -> list[Call]:
    """Every call of the module doc, from ``template`` (stand-ins for ``region``)."""
    values = StandIns(template, region)
    calls: list[Call] = []
    for builder in (_hyperpod, _vpc_cni, _node_pulls, _codebuild, _lambda_logs, _fsx_export,
                    _dlami_lookup, _build_report):
        calls += builder(template, values)
    return calls


def denied_calls(template: dict[str, Any], region: str,
                 calls: list[Call] | None = None) -> list[tuple[Call, Decision]]:
    """The calls (default: :func:`service_calls`) that their role's policies do not allow."""
    values = StandIns(template, region)
    documents: dict[str, list[dict[str, Any]]] = {}
    denied = []
    for call in service_calls(template, region) if calls is None else calls:
        if call.role not in documents:
            documents[call.role] = role_documents(template, call.role, values)
        decision = evaluate(documents[call.role], call.request)
        if not decision.allowed:
            denied.append((call, decision))
    return denied


def _hyperpod(template: dict[str, Any], v: StandIns) -> Iterator[Call]:
    for cluster, props in _of_type(template, "AWS::SageMaker::Cluster"):
        cluster_arn = v.attribute(cluster, "ClusterArn")
        name = v.value(props["ClusterName"])
        eks = props.get("Orchestrator", {}).get("Eks")
        for group in props["InstanceGroups"]:
            role = _ref(group["ExecutionRole"])
            gname = group["InstanceGroupName"]
            role_is = f"execution role of instance group {gname} of HyperPod cluster {cluster}"

            def call(action: str, resource: str, why: str, context: dict[str, str] | None = None,
                     *, _role: str = role, _role_is: str = role_is, _gname: str = gname) -> Call:
                return Call(_role, _role_is, Request(action, resource, context or {}),
                            f"instance group {_gname}: {why}")

            override = "OverrideVpcConfig" in group
            network = group.get("OverrideVpcConfig") or props["VpcConfig"]
            where = "its OverrideVpcConfig" if override else "the cluster's VpcConfig"
            for subnet_ref in network["Subnets"]:
                subnet_name = _ref(subnet_ref)
                subnet = v.arn("ec2", f"subnet/{v.value(subnet_ref)}")
                vpc_id = v.value(template["Resources"][subnet_name]["Properties"]["VpcId"])
                context = {"ec2:Vpc": v.arn("ec2", f"vpc/{vpc_id}"), "ec2:Subnet": subnet}
                interface = v.arn("ec2", f"network-interface/eni-{gname}")
                why = f"subnet {subnet_name} of {where}"
                yield call("ec2:CreateNetworkInterface", subnet, why, context)
                yield call("ec2:CreateNetworkInterface", interface, why, context)
                for sg in network["SecurityGroupIds"]:
                    yield call("ec2:CreateNetworkInterface",
                               v.arn("ec2", f"security-group/{v.value(sg)}"),
                               f"security group {_ref(sg)} of {where}", context)
                for action in (*VPC_INTERFACE_ACTIONS, "ec2:CreateTags"):
                    yield call(action, interface, f"an interface in {why}", context)
                yield call("ec2:DetachNetworkInterface",
                           v.arn("ec2", "instance/i-hyperpod", account=SERVICE_ACCOUNT),
                           "the HyperPod instance its interface is detached from")
            for action in VPC_DESCRIBE_ACTIONS:
                yield call(action, "*", "the VPC of its network")
            lifecycle = group["LifeCycleConfig"]
            source = str(v.value(lifecycle["SourceS3Uri"])).removeprefix("s3://")
            bucket = source.split("/", 1)[0]
            script = lifecycle.get("OnCreate") or lifecycle["OnInitComplete"]
            yield call("s3:GetObject", f"arn:aws:s3:::{source.rstrip('/')}/{script}",
                       "its LifeCycleConfig script")
            yield call("s3:ListBucket", f"arn:aws:s3:::{bucket}",
                       "the bucket of its LifeCycleConfig")
            log_group = f"{CLUSTER_LOG_GROUPS}/{name}/cluster-id"
            yield call("logs:CreateLogGroup", v.arn("logs", f"log-group:{log_group}"),
                       "the cluster's log group")
            for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
                yield call(action, v.arn("logs", f"log-group:{log_group}:log-stream:{gname}-i"),
                           "the cluster's log group")
            if eks is not None:
                yield call("eks-auth:AssumeRoleForPodIdentity", v.value(eks["ClusterArn"]),
                           "Orchestrator.Eks.ClusterArn (Pod Identity agent on its nodes)")
                yield call("sagemaker:AttachClusterNodeNetworkInterface", cluster_arn,
                           "the VPC CNI on its nodes, on this HyperPod cluster")


def _node_networks(template: dict[str, Any], cluster: str,
                   ) -> Iterator[tuple[str, list, list, str | None]]:
    """(what, subnets, security groups, HyperPod cluster or ``None``) of each group of nodes of
    EKS cluster ``cluster``: its
    node groups (``Subnets``; the launch template's first interface's ``Groups``, none without
    a launch template: the cluster's own group, not in the template) and the HyperPod instance
    groups it orchestrates (``OverrideVpcConfig`` or ``VpcConfig``)."""
    resources = template["Resources"]
    for name, props in _of_type(template, "AWS::EKS::Nodegroup"):
        if _ref(props["ClusterName"]) != cluster:
            continue
        groups: list = []
        if "LaunchTemplate" in props:
            data = resources[_ref(props["LaunchTemplate"]["Id"])]["Properties"]["LaunchTemplateData"]
            interfaces = data.get("NetworkInterfaces") or [{}]
            groups = interfaces[0].get("Groups", data.get("SecurityGroupIds", []))
        yield f"EKS node group {name}", props["Subnets"], groups, None
    for name, props in _of_type(template, "AWS::SageMaker::Cluster"):
        eks = props.get("Orchestrator", {}).get("Eks")
        if eks is None or _ref(eks["ClusterArn"]) != cluster:
            continue
        for group in props["InstanceGroups"]:
            network = group.get("OverrideVpcConfig") or props["VpcConfig"]
            yield (f"instance group {group['InstanceGroupName']} of HyperPod cluster {name}",
                   network["Subnets"], network["SecurityGroupIds"], name)


def _vpc_cni(template: dict[str, Any], v: StandIns) -> Iterator[Call]:
    resources = template["Resources"]
    for addon, props in _of_type(template, "AWS::EKS::Addon"):
        if props["AddonName"] != "vpc-cni":
            continue
        cluster = _ref(props["ClusterName"])
        roles = [(_ref(a["RoleArn"]), f"Pod Identity role of {addon}'s aws-node")
                 for a in props.get("PodIdentityAssociations", [])
                 if a["ServiceAccount"] == "aws-node"]
        hyperpod = {_ref(g["ExecutionRole"]): f"execution role of HyperPod cluster {name}"
                    for name, c in _of_type(template, "AWS::SageMaker::Cluster")
                    if _ref(c.get("Orchestrator", {}).get("Eks", {}).get("ClusterArn", {"Ref": ""}))
                    == cluster for g in c["InstanceGroups"]}
        for what, subnets, groups, hyperpod_cluster in _node_networks(template, cluster):
            node_roles = roles + (list(hyperpod.items()) if hyperpod_cluster else [])
            instance_account = SERVICE_ACCOUNT if hyperpod_cluster else ACCOUNT
            if hyperpod_cluster:
                for role, role_is in node_roles:
                    yield Call(role, role_is, Request(
                        "sagemaker:AttachClusterNodeNetworkInterface",
                        v.attribute(hyperpod_cluster, "ClusterArn")),
                        f"the nodes of {what} (an interface attached through SageMaker)")
            for subnet_ref in subnets:
                subnet_name = _ref(subnet_ref)
                subnet = v.arn("ec2", f"subnet/{v.value(subnet_ref)}")
                vpc_id = v.value(resources[subnet_name]["Properties"]["VpcId"])
                context = {"ec2:Vpc": v.arn("ec2", f"vpc/{vpc_id}"), "ec2:Subnet": subnet}
                interface = v.arn("ec2", f"network-interface/eni-cni-{subnet_name}")
                instance = v.arn("ec2", "instance/i-node", account=instance_account)
                why = f"the nodes of {what} in subnet {subnet_name}"
                for role, role_is in node_roles:
                    if role_is.startswith("Pod Identity"):
                        yield Call(role, role_is, Request("ec2:CreateNetworkInterface", subnet,
                                                          context), why)
                        yield Call(role, role_is, Request("ec2:CreateNetworkInterface",
                                                          interface, context), why)
                    for action in VPC_CNI_ACTIONS:
                        yield Call(role, role_is, Request(action, interface, context), why)
                    for action in ("ec2:AttachNetworkInterface",
                                   "ec2:ModifyNetworkInterfaceAttribute"):
                        yield Call(role, role_is, Request(action, instance), why)
                    for sg in groups:
                        yield Call(role, role_is, Request(
                            "ec2:ModifyNetworkInterfaceAttribute",
                            v.arn("ec2", f"security-group/{v.value(sg)}"), context),
                            f"{why}, security group {_ref(sg)}")


def _node_roles(template: dict[str, Any]) -> Iterator[tuple[str, str]]:
    resources = template["Resources"]
    for name, props in _of_type(template, "AWS::SageMaker::Cluster"):
        for group in props["InstanceGroups"]:
            yield _ref(group["ExecutionRole"]), f"execution role of HyperPod cluster {name}"
    for name, props in _of_type(template, "AWS::EKS::Nodegroup"):
        yield _ref(props["NodeRole"]), f"node role of EKS node group {name}"
    for name, props in _of_type(template, "AWS::EC2::LaunchTemplate"):
        profile = props["LaunchTemplateData"].get("IamInstanceProfile", {}).get("Arn")
        if profile is not None:
            for role in resources[_ref(profile)]["Properties"]["Roles"]:
                yield _ref(role), f"instance role of launch template {name}"


def _node_pulls(template: dict[str, Any], v: StandIns) -> Iterator[Call]:
    repositories = [name for name, _ in _of_type(template, "AWS::ECR::Repository")]
    for role, role_is in dict(_node_roles(template)).items():
        yield Call(role, role_is, Request("ecr:GetAuthorizationToken", "*"), "an image pull")
        for repository in repositories:
            for action in ECR_PULL:
                yield Call(role, role_is,
                           Request(action, v.attribute(repository, "Arn")),
                           f"its nodes pull the stack's image from {repository}")


def _codebuild(template: dict[str, Any], v: StandIns) -> Iterator[Call]:
    builds = list(_of_type(template, "Custom::CDKContainerImageBuild"))
    for project, props in _of_type(template, "AWS::CodeBuild::Project"):
        role = _ref(props["ServiceRole"])
        role_is = f"service role of CodeBuild project {project}"
        logs = props.get("LogsConfig", {}).get("CloudWatchLogs", {})
        if logs.get("Status") == "ENABLED" and "GroupName" in logs:
            group = v.value(logs["GroupName"])
            for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
                yield Call(role, role_is, Request(
                    action, v.arn("logs", f"log-group:{group}:log-stream:build-id")),
                    f"LogsConfig.CloudWatchLogs.GroupName {_ref(logs['GroupName'])}")
        for build, build_props in builds:
            if _ref(build_props["codeBuildProjectName"]) != project:
                continue
            source = str(v.value(build_props["sourceS3Url"])).removeprefix("s3://")
            yield Call(role, role_is, Request("s3:GetObject", f"arn:aws:s3:::{source}"),
                       f"sourceS3Url of {build}")
            repository = _ecr_repository(v, str(v.value(build_props["repositoryUri"])))
            yield Call(role, role_is, Request("ecr:GetAuthorizationToken", "*"),
                       f"the push of {build}")
            for action in ECR_PUSH:
                yield Call(role, role_is, Request(action, repository),
                           f"repositoryUri of {build}")
            command = str(v.value(build_props["buildCommand"]))
            for arg, image in _ECR_BUILD_ARG.findall(command):
                for action in ECR_PULL:
                    yield Call(role, role_is, Request(action, _ecr_repository(v, image)),
                               f"the image in build argument {arg} of {build}")


_ECR_BUILD_ARG = re.compile(r"--build-arg (\w+)=(\d{12}\.dkr\.ecr\.[^\s/]+/[^\s:@]+)")
"""A build argument that names an image in a private ECR repository (the base image of a
user image, ``FROM ${TRN_BASE_IMAGE}``): the build pulls it."""


def _ecr_repository(v: StandIns, uri: str) -> str:
    """The repository ARN of ``<account>.dkr.ecr.<region>.<suffix>/<name>[:tag]``."""
    registry, name = uri.split("/", 1)
    account, _, _, region, *_ = registry.split(".")
    return v.arn("ecr", f"repository/{name.split(':', 1)[0]}", account=account, region=region)


def _lambda_logs(template: dict[str, Any], v: StandIns) -> Iterator[Call]:
    for function, props in _of_type(template, "AWS::Lambda::Function"):
        group = props.get("LoggingConfig", {}).get("LogGroup")
        if group is None:
            continue
        role = _ref(props["Role"])
        stream = v.arn("logs", f"log-group:{v.value(group)}:log-stream:2026/11/27/x")
        for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
            yield Call(role, f"execution role of Lambda function {function}",
                       Request(action, stream), f"LoggingConfig.LogGroup {_ref(group)}")


def _user_functions(template: dict[str, Any], service_token: Any) -> list[str]:
    """The functions a CDK provider framework's ``onEvent`` function calls."""
    framework = template["Resources"][_ref(service_token)]["Properties"]
    variables = framework.get("Environment", {}).get("Variables", {})
    return [_ref(variables[k]) for k in ("USER_ON_EVENT_FUNCTION_ARN",
                                         "USER_IS_COMPLETE_FUNCTION_ARN") if k in variables]


def _fsx_export(template: dict[str, Any], v: StandIns) -> Iterator[Call]:
    resources = template["Resources"]
    for export, props in _of_type(template, "Custom::FsxExportOnDelete"):
        file_system = v.arn("fsx", f"file-system/{v.value(props['FileSystemId'])}")
        for function in _user_functions(template, props["ServiceToken"]):
            role = _ref(resources[function]["Properties"]["Role"])
            role_is = f"execution role of FSx export function {function}"
            why = f"FileSystemId of {export}"
            for resource in (file_system, v.arn("fsx", "task/task-export")):
                yield Call(role, role_is, Request("fsx:CreateDataRepositoryTask", resource), why)
            for action in ("fsx:DescribeDataRepositoryTasks",
                           "fsx:DescribeDataRepositoryAssociations",
                           "ec2:DescribeNetworkInterfaces"):
                yield Call(role, role_is, Request(action, "*"), why)
            yield Call(role, role_is, Request("cloudformation:DescribeStacks",
                                              v.pseudo["AWS::StackId"]),
                       f"the StackId of {export}'s events")


def _dlami_lookup(template: dict[str, Any], v: StandIns) -> Iterator[Call]:
    resources = template["Resources"]
    for lookup, props in _of_type(template, "Custom::NeuronDlami"):
        for function in _user_functions(template, props["ServiceToken"]):
            yield Call(_ref(resources[function]["Properties"]["Role"]),
                       f"execution role of DLAMI lookup function {function}",
                       Request("ec2:DescribeImages", "*"), f"the image search of {lookup}")


def _build_report(template: dict[str, Any], v: StandIns) -> Iterator[Call]:
    resources = template["Resources"]
    for rule, props in _of_type(template, "AWS::Events::Rule"):
        pattern = props.get("EventPattern", {})
        if pattern.get("source") != ["aws.codebuild"]:
            continue
        projects = [_ref(p) for p in pattern.get("detail", {}).get("project-name", [])]
        for target in props.get("Targets", []):
            function = _ref(target["Arn"])
            if resources[function]["Type"] != "AWS::Lambda::Function":
                continue
            role = _ref(resources[function]["Properties"]["Role"])
            for project in projects:
                yield Call(role, f"execution role of Lambda function {function}",
                           Request("codebuild:BatchGetBuilds", v.attribute(project, "Arn")),
                           f"project-name of rule {rule}")
