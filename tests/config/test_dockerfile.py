"""Reading a user's Dockerfile: instructions (directives, comments, continuations,
here-documents) and whether its final stage builds on the stack's image."""

from __future__ import annotations

import pytest

from trn_ultracluster.config.dockerfile import Instruction, base_image_problem, instructions


def test_continuations_comments_and_directives_are_read_as_docker_does():
    text = ("# syntax=docker/dockerfile:1\n"
            "# a comment\n"
            "ARG TRN_BASE_IMAGE\n"
            "FROM ${TRN_BASE_IMAGE}\n"
            "RUN apt-get update \\\n"
            "  # a comment inside the instruction\n"
            "\n"
            " && apt-get install -y gcc\n"
            "env A=1\n")
    assert instructions(text) == [
        Instruction("ARG", "TRN_BASE_IMAGE", 3),
        Instruction("FROM", "${TRN_BASE_IMAGE}", 4),
        Instruction("RUN", "apt-get update  && apt-get install -y gcc", 5),
        Instruction("ENV", "A=1", 9)]


def test_the_escape_directive_changes_the_continuation_character():
    text = "# escape=`\nARG TRN_BASE_IMAGE\nFROM ${TRN_BASE_IMAGE}\nRUN dir `\n  c:\\\n"
    assert instructions(text)[-1] == Instruction("RUN", "dir  c:\\", 4)


def test_here_document_lines_are_not_instructions():
    text = ("ARG TRN_BASE_IMAGE\nFROM ${TRN_BASE_IMAGE}\n"
            "RUN <<EOF\nFROM ubuntu\nEOF\n"
            "COPY <<-'END' /etc/x\nFROM debian\nEND\n")
    assert [i.keyword for i in instructions(text)] == ["ARG", "FROM", "RUN", "COPY"]
    assert base_image_problem(text) is None


@pytest.mark.parametrize("text", [
    "ARG TRN_BASE_IMAGE\nFROM ${TRN_BASE_IMAGE}\n",
    "ARG TRN_BASE_IMAGE=public.ecr.aws/x/y:1\nFROM --platform=linux/amd64 $TRN_BASE_IMAGE\n",
    # multi-stage: the final stage builds on a stage that builds on the stack's image
    "ARG TRN_BASE_IMAGE\nFROM ${TRN_BASE_IMAGE} AS Deps\nRUN make\n"
    "FROM public.ecr.aws/docker/library/ubuntu:24.04 AS tools\nFROM deps\n"
    "COPY --from=tools /bin/x /bin/x\n",
])
def test_dockerfiles_that_build_on_the_stacks_image(text):
    assert base_image_problem(text) is None


@pytest.mark.parametrize("text, says", [
    ("", "it has no FROM instruction"),
    ("ARG TRN_BASE_IMAGE\nRUN true\n", "it has no FROM instruction"),
    ("FROM ${TRN_BASE_IMAGE}\n", "must declare ARG TRN_BASE_IMAGE before its first FROM (line 1)"),
    ("ARG TRN_BASE_IMAGES\nFROM ${TRN_BASE_IMAGE}\n", "must declare ARG TRN_BASE_IMAGE"),
    ("ARG TRN_BASE_IMAGE\nFROM ${TRN_BASE_IMAGE} AS base\nFROM ubuntu\n",
     "(line 3 is FROM ubuntu)"),
    # a stage name that loops never reaches the stack's image
    ("ARG TRN_BASE_IMAGE\nFROM a AS b\nFROM b AS a\nFROM a\n", "(line 4 is FROM a)"),
])
def test_dockerfiles_that_do_not(text, says):
    problem = base_image_problem(text)
    assert problem is not None and says in problem
