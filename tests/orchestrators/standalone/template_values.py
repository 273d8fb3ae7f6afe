"""The values CloudFormation would give a synthesized template's functions, for tests that
run what the template holds (the user data): ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``,
``Fn::Join``, ``Fn::Select``, ``Fn::Split`` and ``Fn::Base64`` with made-up but well-formed
values (account 123456789012, us-west-2)."""

from __future__ import annotations

import base64
import re
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-west-2"
STACK_ID = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/TrnUltraCluster/1111"
PSEUDO = {"AWS::AccountId": ACCOUNT, "AWS::Region": REGION, "AWS::URLSuffix": "amazonaws.com",
          "AWS::Partition": "aws", "AWS::StackId": STACK_ID, "AWS::StackName": "TrnUltraCluster"}


def attribute(resource_type: str, logical_id: str, name: str) -> str:
    """A plausible ``Fn::GetAtt`` value."""
    if resource_type == "AWS::ECR::Repository" and name == "Arn":
        return f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/{logical_id.lower()}"
    if name == "Arn":
        return f"arn:aws:{resource_type.split('::')[1].lower()}:{REGION}:{ACCOUNT}:{logical_id}"
    return f"{logical_id}-{name}"


def resolve(value: Any, template: dict[str, Any]) -> Any:
    """``value`` with every CloudFormation function replaced by a value."""
    resources = template["Resources"]
    if isinstance(value, list):
        return [resolve(v, template) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        return {k: resolve(v, template) for k, v in value.items()}
    (key, arg), = value.items()
    if key == "Ref":
        return PSEUDO.get(arg) or f"ref-{arg}"
    if key == "Fn::GetAtt":
        name, attr = arg if isinstance(arg, list) else arg.split(".", 1)
        return attribute(resources[name]["Type"], name, attr)
    if key == "Fn::Sub":
        text = arg if isinstance(arg, str) else arg[0]
        return re.sub(r"\$\{([^}]+)\}", lambda m: PSEUDO.get(m.group(1)) or f"ref-{m.group(1)}",
                      text)
    if key == "Fn::Join":
        sep, parts = arg
        return sep.join(str(resolve(p, template)) for p in parts)
    if key == "Fn::Select":
        index, items = arg
        return resolve(items, template)[int(index)]
    if key == "Fn::Split":
        sep, text = arg
        return str(resolve(text, template)).split(sep)
    if key == "Fn::Base64":
        return base64.b64encode(str(resolve(arg, template)).encode()).decode()
    return {key: resolve(arg, template)}


def user_data(template: dict[str, Any], prefix: str = "") -> str:
    """The user data of the template's one launch template (with ``prefix``: of the one whose
    logical id is ``prefix`` and CDK's 8-character hash, e.g. ``EfaLaunchTemplateCpu``), as an
    instance would get it (decoded)."""
    (lt,) = [r for k, r in template["Resources"].items()
             if r["Type"] == "AWS::EC2::LaunchTemplate"
             and (k.startswith(prefix) and len(k) == len(prefix) + 8 if prefix else True)]
    encoded = resolve(lt["Properties"]["LaunchTemplateData"]["UserData"], template)
    return base64.b64decode(encoded).decode()
