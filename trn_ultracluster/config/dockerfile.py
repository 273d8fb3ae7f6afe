"""What the configuration checks in a user's Dockerfile (``training_image.user_dockerfile``):
that its final stage builds on the stack's training image.

The deploy builds the user's Dockerfile with ``--build-arg TRN_BASE_IMAGE=<the stack's image
URI>`` (:data:`BASE_IMAGE_ARG`). For ``FROM ${TRN_BASE_IMAGE}`` to see that value the
Dockerfile must declare ``ARG TRN_BASE_IMAGE`` before its first ``FROM``: "FROM instructions
support variables that are declared by any ARG instructions that occur before the first FROM"
(Dockerfile reference, "Understand how ARG and FROM interact",
https://docs.docker.com/reference/dockerfile/#understand-how-arg-and-from-interact).

The reader follows the Dockerfile reference's syntax as far as the check needs it: parser
directives (``# syntax=``, ``# escape=``) before anything else, comment lines (also inside
a continued instruction), line continuations with the escape character (default ``\\``), and
here-documents (``RUN <<EOF`` ... ``EOF``), whose lines are not instructions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["BASE_IMAGE_ARG", "Instruction", "base_image_problem", "instructions"]

BASE_IMAGE_ARG = "TRN_BASE_IMAGE"
"""The build argument that carries the stack's image URI (``<registry>/<repository>:<tag>``)."""

_DIRECTIVE = re.compile(r"^#\s*([a-zA-Z][a-zA-Z0-9_-]*)\s*=\s*(\S+)\s*$")
_HEREDOC = re.compile(r"<<-?\s*([\"']?)([A-Za-z_][A-Za-z0-9_]*)\1")
_BASE_REFS = {f"${{{BASE_IMAGE_ARG}}}", f"${BASE_IMAGE_ARG}"}


@dataclass(frozen=True)
class Instruction:
    """One instruction: ``keyword`` in upper case, ``arguments`` joined onto one line, and the
    1-based ``line`` it starts on."""

    keyword: str
    arguments: str
    line: int


def instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile, continuations joined, comments and here-document
    bodies left out.

    Args:
        text: the Dockerfile's text.

    Returns:
        The instructions in order (empty for a file with none).
    """
    lines = text.splitlines()
    escape, index = "\\", 0
    while index < len(lines) and (match := _DIRECTIVE.match(lines[index].strip())):
        if match.group(1).lower() == "escape" and match.group(2) in ("`", "\\"):
            escape = match.group(2)
        index += 1
    found: list[Instruction] = []
    pending: list[str] = []
    first = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue  # empty lines and comments, also inside a continued instruction
        if not pending:
            first = index
        if stripped.endswith(escape):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        found.append(_joined(pending, first))
        pending = []
        for _, word in _HEREDOC.findall(found[-1].arguments):
            while index < len(lines) and lines[index].strip() != word:
                index += 1
            index += 1  # the terminating word
    if pending:
        found.append(_joined(pending, first))
    return found


def _joined(parts: list[str], line: int) -> Instruction:
    keyword, *rest = " ".join(parts).split(None, 1)
    return Instruction(keyword.upper(), rest[0] if rest else "", line)


def _from_parts(arguments: str) -> tuple[str, str | None]:
    """``FROM [--platform=...] image [AS name]`` -> (image, lower-case stage name or None)."""
    words = [w for w in arguments.split() if not w.startswith("--")]
    image = words[0] if words else ""
    name = words[2].lower() if len(words) >= 3 and words[1].upper() == "AS" else None
    return image, name


def base_image_problem(text: str) -> str | None:
    """Why a Dockerfile does not build on the stack's image, or None when it does.

    It does when ``ARG TRN_BASE_IMAGE`` comes before the first ``FROM`` and the final stage
    (what ``docker build`` without ``--target`` produces) starts ``FROM ${TRN_BASE_IMAGE}``,
    directly or through earlier stages (``FROM ${TRN_BASE_IMAGE} AS deps`` ... ``FROM deps``).

    Returns:
        A sentence fragment for a "must ..." message, or None.
    """
    found = instructions(text)
    froms = [i for i in found if i.keyword == "FROM"]
    if not froms:
        return (f"must be a Dockerfile with FROM ${{{BASE_IMAGE_ARG}}}: it has no FROM "
                "instruction")
    before = [i for i in found if i.line < froms[0].line]
    if not any(i.keyword == "ARG" and re.match(rf"{BASE_IMAGE_ARG}(=|\s|$)", i.arguments)
               for i in before):
        return (f"must declare ARG {BASE_IMAGE_ARG} before its first FROM (line "
                f"{froms[0].line}): the deploy passes the stack's image URI in that build "
                "argument, and FROM sees only the arguments declared before the first FROM")
    stages: dict[str, str] = {}
    for instruction in froms:
        image, name = _from_parts(instruction.arguments)
        if name:
            stages[name] = image
    image, _ = _from_parts(froms[-1].arguments)
    seen: set[str] = set()
    while image.lower() in stages and image.lower() not in seen:
        seen.add(image.lower())
        image = stages[image.lower()]
    if image in _BASE_REFS:
        return None
    return (f"must build its final stage FROM ${{{BASE_IMAGE_ARG}}}, the stack's training "
            f"image (line {froms[-1].line} is FROM {froms[-1].arguments}): jobs run the "
            "final stage, and only the stack's image has the Neuron stack and the job "
            "environment the cluster sets up")
