"""The AWS calls of the node scripts and the grants of the node roles, side by side (issue 23:
"a test reads the scripts' AWS calls and the roles' grants side by side").

Reading the calls:

- bash (``*.sh``, user data): :func:`shell_calls` finds ``aws <service> <command>`` where
  a command starts (after ``;``, ``|``, ``&&``, a newline, ``if``, ``!``, assignments...),
  inside ``$(...)`` and backquotes too, and through wrapper functions whose body runs
  ``aws "$@"`` after ``shift`` (``fsx.sh``'s ``aws_json OUT_FILE ARGS...``). Comments and
  quoted text are not commands (``log "... aws sagemaker update-cluster-software"`` is a
  message). A substitution escaped inside double quotes (``"\\$(aws ecr get-login-password)"``)
  counts: it is written to a file that another program runs later with the node's
  credentials (``on_init_complete.sh``'s enroot credentials). An ``aws`` command whose
  service or command is not a literal word is an error, not a call left out.
- Python: :func:`python_calls` finds argument lists ``["aws", "<service>", "<command>", ...]``
  and boto3 clients (``x = boto3.client("fsx")`` then ``x.describe_file_systems(...)``).

Mapping a call to IAM actions (:func:`iam_actions`): the CLI command to the botocore
operation through botocore's service model (``xform_name(operation, "-")`` is how the AWS
CLI names its commands), and the operation to the action ``<prefix>:<operation>``, the IAM
prefix being the botocore service name for the services in :data:`IAM_PREFIXES` (checked in
the Service Authorization Reference). The AWS CLI's own commands, which have no operation in
the model, are in :data:`CLI_CUSTOM_COMMANDS` with their source.

Reading the grants (:func:`granted`): the Allow statements of the role's inline policies,
of the ``AWS::IAM::Policy`` and customer managed policies of the template attached to it.
AWS managed policies are not in the template and count for nothing here: a call the role
may only make through one fails the test (grant it explicitly).

Which scripts run with which role (:func:`node_scripts`), from the synthesized stack: the
files of the S3 assets a HyperPod cluster's lifecycle bucket receives (its
``Custom::CDKBucketDeployment``) run with the cluster's execution roles; the user data of a
launch template, and the assets it names, run with the role of the instances launched from
it (the template's instance profile, or the EKS node group's node role).
"""

from __future__ import annotations

import ast
import base64
import email
import fnmatch
import gzip
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["AwsCall", "CLI_CUSTOM_COMMANDS", "IAM_PREFIXES", "NodeScript", "ReadError", "TOKEN",
           "attached_documents", "granted", "iam_actions", "node_roles", "node_scripts", "python_calls",
           "scripts_in_user_data", "shell_calls"]

IAM_PREFIXES = frozenset({"cloudwatch", "ec2", "ecr", "eks", "fsx", "logs", "sagemaker", "ssm",
                          "sts"})
"""botocore service names that are also their IAM service prefix, and whose IAM actions are
named as their operations (Service Authorization Reference: ``cloudwatch:``, ``ec2:``,
``ecr:``, ``eks:``, ``fsx:``, ``logs:``, ``sagemaker:``, ``ssm:``, ``sts:``; botocore's
``monitoring`` endpoint and signing name for ``cloudwatch`` are not the prefix, hence the
list). Not ``s3``: its actions are not its operations (``HeadObject`` needs
``s3:GetObject``, S3 API reference). A call to another service is an error until it is
checked and added."""
CLI_SERVICES = {"s3api": "s3"}
"""AWS CLI service commands named otherwise than their botocore model: ``s3api`` is the
``s3`` model (``aws s3`` is the CLI's own high-level command set)."""
CLI_CUSTOM_COMMANDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("ecr", "get-login-password"): ("ecr:GetAuthorizationToken",),
}
"""AWS CLI commands with no operation of their own in the service model -> IAM actions:
``ecr get-login-password`` calls ``get_authorization_token`` (aws/aws-cli
``awscli/customizations/ecr.py`` @01e092bd, ``ECRGetLoginPassword._run_main``). ``s3 cp``
is read from its arguments (:func:`iam_actions`)."""
S3_CP_OPTIONS_WITH_VALUE = frozenset({
    "--region", "--profile", "--endpoint-url", "--acl", "--sse", "--sse-kms-key-id",
    "--storage-class", "--content-type", "--cache-control", "--metadata", "--grants",
    "--exclude", "--include", "--expected-size"})
AWS_GLOBAL_OPTIONS_WITH_VALUE = frozenset({
    "--region", "--profile", "--output", "--endpoint-url", "--query", "--color",
    "--cli-read-timeout", "--cli-connect-timeout", "--ca-bundle"})
COMMAND_PREFIXES = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "time",
                              "exec", "command", "{", "nohup", "sudo", "timeout"})
"""Words after which a command still starts (``timeout`` takes a duration first: handled
by skipping one more word)."""
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_WORD = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_ALL_ARGS = frozenset({'"$@"', '"${@}"'})


class ReadError(Exception):
    """A script's AWS call cannot be read statically (a variable service or command)."""


@dataclass(frozen=True)
class AwsCall:
    """One AWS call of a node script.

    Attributes:
        source: the script (repository path, or where else it is: user data).
        line: 1-based line of the call in ``source``.
        service: the AWS CLI service command (``fsx``) or boto3 client name.
        command: the CLI command (``describe-file-systems``), or the botocore operation
            name for boto3 (``DescribeFileSystems``).
        args: the words after the command (CLI) or nothing (boto3).
        boto3: whether it is a boto3 call.
    """

    source: str
    line: int
    service: str
    command: str
    args: tuple[str, ...] = ()
    boto3: bool = False

    def __str__(self) -> str:
        call = (f"boto3 {self.service}.{self.command}" if self.boto3
                else f"aws {self.service} {self.command}")
        return f"{self.source}:{self.line}: {call}"


# --- bash --------------------------------------------------------------------------------


@dataclass
class _Word:
    text: str  # the word as written (quotes kept)
    line: int
    substitutions: list[tuple[str, int]] = field(default_factory=list)  # (inner text, line)


_SEPARATORS = frozenset({";", "&", "|", "&&", "||", ";;", "(", ")", "\n"})


def _matching(text: str, i: int, opening: str, closing: str) -> int:
    """Index just past the ``closing`` that matches the ``opening`` at ``i - 1``, skipping
    quoted text and nested pairs."""
    depth, quote = 1, None
    while i < len(text):
        c = text[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and opening == "(" and (i == 0 or text[i - 1] in " \t\n;"):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
            continue
        elif c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ReadError(f"unbalanced {opening}{closing}")


def _tokens(text: str) -> list[_Word | str]:
    """Words (with their command substitutions) and separators of a bash text."""
    out: list[_Word | str] = []
    i, line = 0, 1
    word: _Word | None = None
    heredocs: list[tuple[str, bool]] = []  # (delimiter, expands)

    def end_word() -> None:
        nonlocal word
        if word is not None:
            out.append(word)
            word = None

    def start() -> _Word:
        nonlocal word
        if word is None:
            word = _Word("", line)
        return word

    while i < len(text):
        c = text[i]
        if c == "\\" and text[i + 1:i + 2] == "\n":
            i, line = i + 2, line + 1
            continue
        if c == "\n":
            end_word()
            out.append("\n")
            i, line = i + 1, line + 1
            for delimiter, expands in heredocs:  # bodies follow the line of their <<
                end = re.compile(rf"^\t*{re.escape(delimiter)}$", re.M).search(text, i)
                body_end = end.start() if end else len(text)
                body = text[i:body_end]
                if expands:
                    out.append(_Word("<heredoc>", line, _substitutions(body, line)))
                else:
                    out.append(_Word("<heredoc>", line, [(body, line)]))
                line += body.count("\n") + 1
                i = end.end() + 1 if end else len(text)
                out.append("\n")
            heredocs = []
            continue
        if c in " \t":
            end_word()
            i += 1
            continue
        if c == "#" and word is None:
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
            continue
        if c == "<" and text[i:i + 2] == "<<" and text[i:i + 3] != "<<<":
            end_word()
            m = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1").match(text, i)
            if m:
                heredocs.append((m.group(2), not m.group(1)))
                i = m.end()
                continue
        if c in ";&|()":
            end_word()
            two = text[i:i + 2]
            if two in ("&&", "||", ";;"):
                out.append(two)
                i += 2
            else:
                if c == "&" and text[i + 1:i + 2] == ">":  # &> redirection
                    out.append(">")
                    i += 2
                    continue
                out.append(c)
                i += 1
            continue
        if c in "<>":
            if word is not None and word.text.isdigit():  # 2>: a file descriptor
                word = None
            end_word()
            out.append(">")  # a redirection: the next word is its target
            i += 1
            while i < len(text) and text[i] in "<>&|":
                i += 1
            continue
        w = start()
        if c == "\\":
            w.text += text[i:i + 2]
            i += 2
        elif c == "'":
            end = text.index("'", i + 1) + 1
            w.text += text[i:end]
            line += text.count("\n", i, end)
            i = end
        elif c == '"':
            j = i + 1
            while text[j] != '"':
                if text[j] == "\\":
                    if text[j + 1:j + 3] == "$(":  # \$(...): run later by another program
                        end = _matching(text, j + 3, "(", ")")
                        w.substitutions.append((text[j + 3:end - 1], line + text.count("\n", i, j)))
                        j = end
                        continue
                    j += 2
                elif text.startswith("$(", j) or text[j] == "`":
                    j = _substitution(text, j, w, line + text.count("\n", i, j))
                elif text.startswith("${", j):  # may hold quotes: "${LOG#"${ROOT}"}"
                    end = _matching(text, j + 2, "{", "}")
                    w.substitutions += _substitutions(text[j:end], line + text.count("\n", i, j))
                    j = end
                else:
                    j += 1
            w.text += text[i:j + 1]
            line += text.count("\n", i, j)
            i = j + 1
        elif text.startswith("$(", i) or c == "`":
            j = _substitution(text, i, w, line)
            w.text += text[i:j]
            line += text.count("\n", i, j)
            i = j
        elif text.startswith("${", i):
            j = _matching(text, i + 2, "{", "}")
            for inner, at in _substitutions(text[i:j], line):
                w.substitutions.append((inner, at))
            w.text += text[i:j]
            i = j
        else:
            w.text += c
            i += 1
    end_word()
    return out


def _substitution(text: str, i: int, word: _Word, line: int) -> int:
    """Record the ``$(...)`` or backquoted command at ``i`` in ``word``; return its end."""
    if text[i] == "`":
        end = text.index("`", i + 1)
        word.substitutions.append((text[i + 1:end], line))
        return end + 1
    end = _matching(text, i + 2, "(", ")")
    word.substitutions.append((text[i + 2:end - 1], line))
    return end


def _substitutions(text: str, line: int) -> list[tuple[str, int]]:
    """The command substitutions of a text that expands them (a heredoc body, ``${...}``)."""
    found, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text.startswith("$(", i) and not text.startswith("$((", i):
            end = _matching(text, i + 2, "(", ")")
            found.append((text[i + 2:end - 1], line + text.count("\n", 0, i)))
            i = end
        else:
            i += 1
    return found


def _commands(tokens: list[_Word | str]) -> list[list[_Word]]:
    """The simple commands (their words from the command word on), and every command of
    every substitution, in order."""
    commands: list[list[_Word]] = []
    current: list[_Word] = []
    redirect = False
    for token in [*tokens, "\n"]:
        if isinstance(token, str):
            if token == ">":
                redirect = True
                continue
            if current:
                commands.append(current)
            current, redirect = [], False
            continue
        if redirect:  # a redirection's target is no word of the command
            redirect = False
        else:
            current.append(token)
    return commands


def _command_word(words: list[_Word]) -> int | None:
    """Index of the command word (past keywords and assignments), or None."""
    i = 0
    while i < len(words):
        text = words[i].text
        if text in COMMAND_PREFIXES:
            i += 2 if text == "timeout" else 1
        elif _ASSIGNMENT.match(text) or text in ("local", "export", "readonly", "declare"):
            i += 1
        else:
            return i
    return None


def _unquote(text: str) -> str:
    """A word's value when it is a literal (quotes removed); '' when it holds an expansion."""
    if "$" in text or "`" in text:
        return ""
    return re.sub(r"\\(.)", r"\1", text.replace('"', "").replace("'", ""))


def _wrappers(text: str) -> dict[str, int]:
    """Functions that run ``aws "$@"``: name -> how many leading arguments they ``shift``
    off first (``aws_json OUT_FILE ARGS...`` -> 1)."""
    found = {}
    for m in re.finditer(r"(?ms)^([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{(.*?)^\}", text):
        body = m.group(2)
        call = re.search(r'\baws\s+"\$(@|\{@\})"', body)
        if call:
            found[m.group(1)] = len(re.findall(r"(?m)^\s*shift\s*$", body[:call.start()]))
    return found


def _cli_call(source: str, words: list[_Word], skip: int) -> AwsCall:
    """The call of ``aws <global options> <service> <command> ...`` (``words`` after ``aws``
    and ``skip`` wrapper arguments)."""
    values = [w.text for w in words[skip:]]
    i = 0
    while i < len(values) and values[i].startswith("--"):
        i += 2 if values[i] in AWS_GLOBAL_OPTIONS_WITH_VALUE else 1
    if i + 1 >= len(values):
        raise ReadError(f"{source}:{words[0].line if words else 0}: aws without a command")
    service, command = _unquote(values[i]), _unquote(values[i + 1])
    if not (_WORD.match(service) and _WORD.match(command)):
        raise ReadError(f"{source}:{words[skip].line}: cannot read the AWS call "
                        f"`aws {values[i]} {values[i + 1]}` (service and command must be "
                        "literal words)")
    return AwsCall(source, words[skip].line, service, command, tuple(values[i + 2:]))


def shell_calls(text: str, source: str, first_line: int = 1) -> list[AwsCall]:
    """Every AWS call of a bash text (module doc).

    Raises:
        ReadError: an ``aws`` call whose service or command is not a literal word, or
            ``aws "$@"`` outside a ``name() {`` ... ``}`` function.
    """
    wrappers = _wrappers(text)
    if len(re.findall(r'\baws\s+"\$(?:@|\{@\})"', text)) > len(wrappers):
        raise ReadError(f"{source}: `aws \"$@\"` outside a function this reader understands")
    calls: list[AwsCall] = []
    pending = [(text, first_line)]
    while pending:
        chunk, line = pending.pop(0)
        for words in _commands(_tokens(chunk)):
            for w in words:
                w.line += line - 1
                pending += [(inner, at + line - 1) for inner, at in w.substitutions]
            at = _command_word(words)
            if at is None:
                continue
            name = _unquote(words[at].text)
            if name == "aws" and words[at + 1:at + 2] and words[at + 1].text in _ALL_ARGS:
                continue  # a wrapper's body: its calls are read where it is called
            if name == "aws":
                calls.append(_cli_call(source, words[at + 1:], 0))
            elif name in wrappers and len(words) > at + 1:  # (alone: `name() {`)
                calls.append(_cli_call(source, words[at + 1:], wrappers[name]))
    return sorted(calls, key=lambda c: c.line)


# --- Python ------------------------------------------------------------------------------


def python_calls(text: str, source: str) -> list[AwsCall]:
    """Every AWS call of a Python script (module doc).

    Raises:
        ReadError: an ``["aws", ...]`` list whose service or command is not a string literal.
    """
    tree = ast.parse(text)
    calls: list[AwsCall] = []
    clients: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            service = _boto3_client(node.value)
            if service:
                clients.update({t.id: service for t in node.targets if isinstance(t, ast.Name)})
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts and _const(node.elts[0]) == "aws":
            words = [_const(e) for e in node.elts[1:]]
            i = 0
            while i < len(words) and (words[i] or "").startswith("--"):
                i += 2 if words[i] in AWS_GLOBAL_OPTIONS_WITH_VALUE else 1
            if i + 1 >= len(words) or not (words[i] and words[i + 1]):
                raise ReadError(f"{source}:{node.lineno}: cannot read the AWS call (service "
                                "and command must be string literals)")
            calls.append(AwsCall(source, node.lineno, words[i], words[i + 1],
                                 tuple(w or "<expr>" for w in words[i + 2:])))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id in clients):
            service = clients[node.func.value.id]
            operation = _operations(service).get(node.func.attr)
            if operation is None:
                raise ReadError(f"{source}:{node.lineno}: {node.func.attr} is no operation of "
                                f"the {service} client")
            calls.append(AwsCall(source, node.lineno, service, operation, boto3=True))
    return sorted(calls, key=lambda c: c.line)


def _const(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _boto3_client(call: ast.Call) -> str | None:
    """``"fsx"`` for ``boto3.client("fsx")`` or ``<session>.client("fsx")``."""
    if isinstance(call.func, ast.Attribute) and call.func.attr == "client" and call.args:
        return _const(call.args[0])
    return None


# --- CLI command -> botocore operation -> IAM action ---------------------------------------


@cache
def _session() -> Any:
    import botocore.session

    return botocore.session.get_session()


@cache
def _operations(service: str) -> dict[str, str]:
    """botocore ``service``'s operations: CLI name (``describe-file-systems``) and Python
    name (``describe_file_systems``) -> operation (``DescribeFileSystems``)."""
    from botocore import xform_name

    model = _session().get_service_model(service)
    found = {}
    for operation in model.operation_names:
        found[xform_name(operation, "-")] = operation
        found[xform_name(operation)] = operation
    return found


def iam_actions(call: AwsCall) -> tuple[str, ...]:
    """The IAM actions a call needs (module doc).

    Raises:
        ReadError: an unknown service or command, or a service whose IAM prefix is not in
            :data:`IAM_PREFIXES`.
    """
    if (call.service, call.command) in CLI_CUSTOM_COMMANDS and not call.boto3:
        return CLI_CUSTOM_COMMANDS[(call.service, call.command)]
    if call.service == "s3" and not call.boto3:
        if call.command != "cp":
            raise ReadError(f"{call}: the AWS CLI's s3 {call.command}: add its IAM actions")
        return _s3_cp(call)
    service = CLI_SERVICES.get(call.service, call.service)
    if service not in _session().get_available_services():
        raise ReadError(f"{call}: botocore has no service {service!r}")
    if service not in IAM_PREFIXES:
        raise ReadError(f"{call}: check the IAM prefix of {service!r} in the Service "
                        "Authorization Reference and add it to IAM_PREFIXES")
    operation = call.command if call.boto3 else _operations(service).get(call.command)
    if operation is None:
        raise ReadError(f"{call}: {service} has no command {call.command!r}")
    return (f"{service}:{operation}",)


def _s3_cp(call: AwsCall) -> tuple[str, ...]:
    """``aws s3 cp SRC DEST``: a download needs ``s3:GetObject`` (the CLI's HeadObject too:
    "To use HEAD, you must have the s3:GetObject permission", S3 API reference, HeadObject),
    an upload ``s3:PutObject``; a destination that is a variable may be either."""
    positional, i = [], 0
    while i < len(call.args):
        arg = call.args[i]
        if arg.startswith("--"):
            i += 2 if arg in S3_CP_OPTIONS_WITH_VALUE else 1
        else:
            positional.append(arg)
            i += 1
    if len(positional) != 2:
        raise ReadError(f"{call}: expected SRC DEST, got {positional}")
    source, dest = (_unquote(p) or p for p in positional)
    actions = []
    if source.startswith("s3://") or not dest.startswith("s3://"):
        actions.append("s3:GetObject")
    if dest.startswith("s3://") or re.fullmatch(r'"?\$\{?\w+\}?"?', dest):
        actions.append("s3:PutObject")
    return tuple(actions)


# --- the template: node roles, their grants and their scripts -----------------------------


def _ref(value: Any) -> str | None:
    """The logical id of ``{"Ref": id}`` or ``{"Fn::GetAtt": [id, ...]}``."""
    if isinstance(value, dict):
        if "Ref" in value:
            return value["Ref"]
        if "Fn::GetAtt" in value:
            return value["Fn::GetAtt"][0]
    return None


TOKEN = "__TOKEN__"
"""What :func:`_text` writes for a deploy-time value (no shell metacharacter in it)."""


def _text(value: Any) -> str:
    """The literal text of a template value, each token as :data:`TOKEN`."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(_text(p) for p in parts)
    if isinstance(value, dict) and "Fn::Base64" in value:
        return _text(value["Fn::Base64"])
    if isinstance(value, dict) and "Fn::Sub" in value:
        inner = value["Fn::Sub"]
        return re.sub(r"\$\{[^}]+\}", TOKEN, inner if isinstance(inner, str) else inner[0])
    return TOKEN


def node_roles(template: dict[str, Any]) -> dict[str, str]:
    """The roles the nodes run as: logical id -> what launches them."""
    resources = template["Resources"]
    roles: dict[str, str] = {}
    for name, r in resources.items():
        props = r.get("Properties", {})
        if r["Type"] == "AWS::SageMaker::Cluster":
            for group in props.get("InstanceGroups", []):
                roles[_ref(group["ExecutionRole"])] = f"HyperPod cluster {name}"
        elif r["Type"] == "AWS::EKS::Nodegroup" and "LaunchTemplate" in props:
            roles[_ref(props["NodeRole"])] = f"EKS node group {name}"
        elif r["Type"] == "AWS::EC2::LaunchTemplate":
            profile = props["LaunchTemplateData"].get("IamInstanceProfile", {}).get("Arn")
            if profile is not None:
                for role in resources[_ref(profile)]["Properties"]["Roles"]:
                    roles[_ref(role)] = f"launch template {name}"
    return roles


def _launch_template_roles(template: dict[str, Any], name: str) -> set[str]:
    """Roles of the instances launched from launch template ``name``."""
    resources = template["Resources"]
    props = resources[name]["Properties"]
    roles = set()
    profile = props["LaunchTemplateData"].get("IamInstanceProfile", {}).get("Arn")
    if profile is not None:
        roles |= {_ref(r) for r in resources[_ref(profile)]["Properties"]["Roles"]}
    for r in resources.values():
        if r["Type"] == "AWS::EKS::Nodegroup":
            lt = r["Properties"].get("LaunchTemplate", {})
            if _ref(lt.get("Id")) == name:
                roles.add(_ref(r["Properties"]["NodeRole"]))
    return roles


@dataclass(frozen=True)
class NodeScript:
    """A script the nodes run, and the roles they run it with.

    Attributes:
        source: the repository path of the file (or ``<asset>/<file>`` when no repository
            file has its content, or ``user data of <launch template>``).
        text: its text.
        roles: logical ids of the roles it runs with.
        python: a Python script (else bash).
    """

    source: str
    text: str
    roles: frozenset[str]
    python: bool = False


def _repository_files(repo: Path) -> dict[bytes, str]:
    """Content -> repository path of the scripts under ``trn_ultracluster/``; each bash
    script also by its commands alone (:func:`_without_comments`), as user data may carry
    it."""
    found = {}
    for p in sorted((repo / "trn_ultracluster").rglob("*")):
        if p.is_file() and p.suffix in (".sh", ".py"):
            found[p.read_bytes()] = str(p.relative_to(repo))
            if p.suffix == ".sh":
                found[_without_comments(p.read_text()).encode()] = str(p.relative_to(repo))
    return found


def _without_comments(text: str) -> str:
    """A bash script's lines but its comment-only ones (the first, ``#!``, stays)."""
    lines = text.splitlines()
    return "\n".join([lines[0], *(ln for ln in lines[1:] if not ln.lstrip().startswith("#"))])


_BASE64_BLOCK = re.compile(r"(?m)^(?:[A-Za-z0-9+/]{40,}={0,2}\n)+[A-Za-z0-9+/]*={0,2}$")


def scripts_in_user_data(text: str, where: str,
                       known: dict[bytes, str]) -> list[tuple[str, str]]:
    """(source, text) of the bash scripts in a user data text: the text itself, or each
    ``text/x-shellscript`` part of a MIME multi-part document; and every script packed in
    them as a base64 block of gzip data (the EKS part unpacks ``lustre_efa.sh`` so, as user
    data is limited to 16 KB)."""
    parts = [text]
    if text.startswith(("MIME-Version:", "Content-Type: multipart")):
        parts = [p.get_payload() for p in email.message_from_string(text).walk()
                 if p.get_content_type() == "text/x-shellscript"]
    found = [(f"user data of {where}", part) for part in parts]
    for part in parts:
        for block in _BASE64_BLOCK.finditer(part):
            try:
                script = gzip.decompress(base64.b64decode(block.group(0))).decode()
            except (ValueError, OSError):
                continue
            name = known.get(script.rstrip("\n").encode(), "a script")
            found.append((f"{name} packed in the user data of {where}", script))
    return found


def _asset_scripts(outdir: Path, asset: dict[str, Any],
                   known: dict[bytes, str]) -> list[tuple[str, str, bool]]:
    """(source, text, python) of each script of a file asset of the cloud assembly: the
    file itself, or the top-level files of a directory asset."""
    path = outdir / asset["source"]["path"]
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    found = []
    for f in files:
        data = f.read_bytes()
        python = f.suffix == ".py" or data.startswith(b"#!/usr/bin/env python")
        if not (python or f.suffix == ".sh" or data.startswith(b"#!/bin/bash")):
            continue
        found.append((known.get(data, f"{asset['source']['path']}/{f.name}"),
                      data.decode(), python))
    return found


def node_scripts(template: dict[str, Any], outdir: Path, repo: Path,
                 stack_name: str) -> list[NodeScript]:
    """Every script the nodes of the synthesized stack run, with the roles that run it
    (module doc): lifecycle assets, launch template user data and the assets it names."""
    resources = template["Resources"]
    assets = json.loads((outdir / f"{stack_name}.assets.json").read_text())["files"]
    by_key = {dest["objectKey"]: asset for asset in assets.values()
              for dest in asset["destinations"].values()}
    known = _repository_files(repo)
    roles_of_key: dict[str, set[str]] = {}
    scripts: list[NodeScript] = []
    for name, r in resources.items():
        props = r.get("Properties", {})
        if r["Type"] == "AWS::EC2::LaunchTemplate" and "UserData" in props["LaunchTemplateData"]:
            roles = _launch_template_roles(template, name)
            text = _text(props["LaunchTemplateData"]["UserData"])
            scripts += [NodeScript(source, script, frozenset(roles))
                        for source, script in scripts_in_user_data(text, name, known)]
            for key in by_key:
                if key in text:
                    roles_of_key.setdefault(key, set()).update(roles)
        elif r["Type"] == "Custom::CDKBucketDeployment":
            bucket = _ref(props["DestinationBucketName"])
            roles = {_ref(group["ExecutionRole"]) for c in resources.values()
                     if c["Type"] == "AWS::SageMaker::Cluster"
                     and bucket in json.dumps(c["Properties"].get("InstanceGroups", []))
                     for group in c["Properties"]["InstanceGroups"]}
            for key in props["SourceObjectKeys"]:
                roles_of_key.setdefault(key, set()).update(roles)
    for key, roles in sorted(roles_of_key.items()):
        if roles and key in by_key:
            for source, text, python in _asset_scripts(outdir, by_key[key], known):
                scripts.append(NodeScript(source, text, frozenset(roles), python))
    return scripts


def attached_documents(template: dict[str, Any], role: str) -> list[dict[str, Any]]:
    """The policy documents the template gives ``role``."""
    resources = template["Resources"]
    props = resources[role]["Properties"]
    documents = [p["PolicyDocument"] for p in props.get("Policies", [])]
    for r in resources.values():
        if r["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            if {"Ref": role} in r["Properties"].get("Roles", []):
                documents.append(r["Properties"]["PolicyDocument"])
    for arn in props.get("ManagedPolicyArns", []):
        if _ref(arn) in resources:
            documents.append(resources[_ref(arn)]["Properties"]["PolicyDocument"])
    return documents


def granted(template: dict[str, Any], role: str, action: str) -> list[dict[str, Any]]:
    """The Allow statements of ``role`` whose actions match ``action`` (IAM action names
    are case-insensitive and take ``*`` and ``?`` wildcards)."""
    found = []
    for document in attached_documents(template, role):
        for statement in document["Statement"]:
            if statement["Effect"] != "Allow" or "Action" not in statement:
                continue
            actions = statement["Action"]
            actions = [actions] if isinstance(actions, str) else actions
            if any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in actions):
                found.append(statement)
    return found
