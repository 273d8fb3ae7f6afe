"""cfn-lint on a synthesized template, in the test's own process.

cfn-lint's command line pays about 2 s per template to import itself and load its schemas;
its Python API (``cfnlint.api.lint``, the same rules and Region data as the command) pays
that once per pytest worker: a third of the time of each configuration's lint.
"""

from __future__ import annotations

import json
from typing import Any

IGNORED = {
    # CDK itself emits a DependsOn on a Lambda's role that the Fn::GetAtt of the role already
    # implies (custom resource providers of aws-cdk-lib and cdk-ecr-deployment).
    "W3005": "redundant DependsOn emitted by CDK's own custom resource providers",
}
"""cfn-lint rules not run on the stack's templates, with the reason."""


def cfn_lint(template: dict[str, Any], region: str) -> list[dict[str, Any]]:
    """cfn-lint's findings on ``template`` for ``region``, less :data:`IGNORED`, each as the
    command's ``--format json`` writes it: ``{"Rule": {"Id": str}, "Message": str,
    "Location": {"Path": [...]}}``. An empty list: clean."""
    from cfnlint.api import ManualArgs, lint

    matches = lint(json.dumps(template), config=ManualArgs(regions=[region],
                                                             ignore_checks=list(IGNORED)))
    return [{"Rule": {"Id": m.rule.id}, "Message": m.message,
             "Location": {"Path": list(getattr(m, "path", None) or [])}} for m in matches]
