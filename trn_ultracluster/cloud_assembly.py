"""The stack of a synthesized cloud assembly (``cdk.out``): its name and template.

The app defines exactly one stack, named by the configuration's ``stack_name`` (default
``TrnUltraCluster``), so the summary and the estimate find it through the assembly's
``manifest.json`` instead of assuming a file name: the artifact of type
``aws:cloudformation:stack``, whose ``properties.templateFile`` names the template and whose
``properties.stackName`` (or, without it, the artifact id) is the CloudFormation stack name
(AWS CDK cloud assembly schema, ``AwsCloudFormationStackProperties``). Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AssemblyError", "AssemblyStack", "assembly_stack"]

STACK_ARTIFACT = "aws:cloudformation:stack"


class AssemblyError(Exception):
    """``cdk.out`` holds no synthesized stack of this app (or not exactly one); the message
    says which and what to do."""


@dataclass(frozen=True)
class AssemblyStack:
    """The one stack of a cloud assembly.

    Attributes:
        name: the CloudFormation stack name (``stack_name`` of the configuration).
        template_path: its template, ``<cdk.out>/<template file>``.
    """

    name: str
    template_path: Path


def assembly_stack(cdk_out: Path) -> AssemblyStack:
    """The one stack that ``cdk synth`` wrote to ``cdk_out``.

    Raises:
        AssemblyError: no ``manifest.json`` (nothing synthesized there), one that is not
            JSON, or not exactly one stack in it.
    """
    manifest = cdk_out / "manifest.json"
    if not manifest.is_file():
        raise AssemblyError(f"no synthesized stack in {cdk_out} (no manifest.json)")
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:  # unreadable, not UTF-8, not JSON
        raise AssemblyError(f"{manifest} is not a cloud assembly manifest ({err})") from None
    artifacts = data.get("artifacts") if isinstance(data, dict) else None
    if not isinstance(artifacts, dict):
        raise AssemblyError(f"{manifest} is not a cloud assembly manifest (no artifacts object)")
    stacks = {name: a for name, a in artifacts.items()
              if isinstance(a, dict) and a.get("type") == STACK_ARTIFACT}
    if len(stacks) != 1:
        raise AssemblyError(f"{cdk_out} holds {len(stacks)} stacks ({', '.join(sorted(stacks))}); "
                            "expected this app's one")
    ((artifact_id, artifact),) = stacks.items()
    properties = artifact.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    template = str(properties.get("templateFile", f"{artifact_id}.template.json"))
    return AssemblyStack(str(properties.get("stackName", artifact_id)), cdk_out / template)
