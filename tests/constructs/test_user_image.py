"""UserImage: the user's Dockerfile (``training_image.user_dockerfile``) built on the stack's
image during the deploy, and every consumer of the image naming it. One synthesized
configuration: the dev profile with examples/custom-image (the change matrix's
``training_image.user_dockerfile`` row synthesizes the same, so the session shares it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from aws_cdk import App, CfnResource, Stack
from aws_cdk import aws_ecr as ecr
from constructs import Construct
from docker.utils.build import exclude_paths

from tests.conftest import REPO_ROOT, profile_path
from tests.constructs.test_training_image import dockerfile_sources
from tests.service_calls import ACCOUNT, StandIns, denied_calls, service_calls
from trn_ultracluster.constructs.training_image import TrainingImage, TrainingImageProps
from trn_ultracluster.constructs.user_image import UserImage, context_patterns

EXAMPLE = REPO_ROOT / "examples" / "custom-image"
USER_DOCKERFILE = {"training_image.user_dockerfile": "examples/custom-image/Dockerfile"}


@pytest.fixture(scope="module")
def user(synth):
    return synth(profile_path("dev"), **USER_DOCKERFILE)


def _builds(s) -> dict[str, dict]:
    """Logical id -> properties of the user's and the stack's image builds."""
    builds = s.resources("Custom::CDKContainerImageBuild")
    assert len(builds) == 2
    user_id = s.ref_id("TrainingImageUserBuild")
    base_id = s.ref_id("TrainingImageBuild")
    return {"user": builds[user_id] | {"id": user_id}, "base": builds[base_id] | {"id": base_id}}


def test_the_users_image_is_built_after_and_from_the_stacks_image(user):
    builds = _builds(user)
    image = user.stack.training_image
    assert builds["base"]["Properties"]["imageTag"] == image.base_image_tag
    assert builds["user"]["Properties"]["imageTag"] == image.image_tag != image.base_image_tag
    # CloudFormation starts the user's build once the stack's image is pushed
    assert builds["base"]["id"] in builds["user"]["DependsOn"]
    command = StandIns(user.template, "us-west-2").value(builds["user"]["Properties"]["buildCommand"])
    repository = user.ref_id("TrainingImageRepository").lower()
    assert (f"--build-arg TRN_BASE_IMAGE={ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/{repository}:"
            f"{image.base_image_tag} --file Dockerfile --platform linux/amd64 ") in command
    # both push to the stack's repository, through the one CodeBuild project
    assert (builds["user"]["Properties"]["repositoryUri"]
            == builds["base"]["Properties"]["repositoryUri"])
    assert len(user.resources("AWS::CodeBuild::Project")) == 1


def test_the_failure_report_is_in_place_before_either_build(user):
    report, rule = user.ref_id("TrainingImageReport"), user.ref_id("TrainingImageBuildFailed")
    for build in _builds(user).values():
        assert {report, rule} <= set(build["DependsOn"])


def test_the_build_role_may_pull_the_stacks_image_it_builds_from(user):
    pulls = [c for c in service_calls(user.template, "us-west-2")
             if "build argument TRN_BASE_IMAGE" in c.why]
    assert {c.request.action for c in pulls} == {"ecr:BatchGetImage",
                                                 "ecr:GetDownloadUrlForLayer"}
    assert not denied_calls(user.template, "us-west-2")


def test_every_consumer_names_the_users_image(user):
    from trn_ultracluster.template_graph import references, transitive_dependencies

    image = user.stack.training_image
    uri = user.output("TrainingImageUri")
    assert image.image_tag in json.dumps(uri) and image.base_image_tag not in json.dumps(uri)
    assert references(uri) == {user.ref_id("TrainingImageRepository")}
    runtime_id = user.ref_id("EksClustermanifestNeuronTrainingRuntime")
    runtime = json.dumps(user.template["Resources"][runtime_id])
    assert image.image_tag in runtime and image.base_image_tag not in runtime
    # the runtime switches once the user's image exists
    assert _builds(user)["user"]["id"] in transitive_dependencies(user.template, runtime_id)


def test_the_stack_image_the_users_builds_on_is_never_expired(user, default):
    def rules(s):
        repository = s.logical("TrainingImageRepository")["Properties"]
        return json.loads(repository["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]

    keep = [r for r in rules(user) if "tagPatternList" in r["selection"]]
    assert [r["selection"] for r in keep] == [{
        "tagStatus": "tagged", "tagPatternList": [user.stack.training_image.base_image_tag],
        "countType": "imageCountMoreThan", "countNumber": 1}]
    # before the count rule over every image, which may not expire what it matches
    count = next(r for r in rules(user) if r["selection"]["tagStatus"] == "any")
    assert keep[0]["rulePriority"] < count["rulePriority"]
    assert not [r for r in rules(default) if "tagPatternList" in r["selection"]]


def test_the_uploaded_context_is_the_docker_context(user):
    source = user.stack.training_image.user_image.build.node.find_child("Source")
    staged = user.outdir / f"asset.{source.asset_hash}"
    files = {p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()}
    patterns = context_patterns(EXAMPLE / "Dockerfile", EXAMPLE)
    sent = exclude_paths(str(EXAMPLE), patterns, dockerfile="Dockerfile")
    assert files == {f for f in sent if (EXAMPLE / f).is_file()}
    assert "Dockerfile" in files and "fastsum/fastsum.c" in files


# --- the tag, the ignore file, local builds --------------------------------------------------


def _user_image(context: Path, base_tag: str, dockerfile: Path | None = None) -> UserImage:
    stack = Stack(App(), "S")
    base = Construct(stack, "Base")
    CfnResource(base, "Resource", type="Custom::Base")
    return UserImage(stack, "User", repository=ecr.Repository(stack, "Repo"), base_build=base,
                     base_tag=base_tag, base_uri=f"registry/repo:{base_tag}",
                     dockerfile=dockerfile or context / "Dockerfile", context=context)


def test_the_tag_follows_the_context_the_dockerfile_and_the_stacks_image(tmp_path):
    (tmp_path / "Dockerfile").write_text("ARG TRN_BASE_IMAGE\nFROM ${TRN_BASE_IMAGE}\n")
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / ".dockerignore").write_text("ignored.txt\n")
    first = _user_image(tmp_path, "1" * 64).image_tag
    assert _user_image(tmp_path, "1" * 64).image_tag == first
    assert _user_image(tmp_path, "2" * 64).image_tag != first  # a new stack image
    (tmp_path / "ignored.txt").write_text("left out of the context")
    assert _user_image(tmp_path, "1" * 64).image_tag == first
    (tmp_path / "a.txt").write_text("b")
    assert _user_image(tmp_path, "1" * 64).image_tag != first


def test_the_dockerfiles_own_ignore_file_comes_first(tmp_path):
    (tmp_path / "train.Dockerfile").write_text("")
    assert context_patterns(tmp_path / "train.Dockerfile", tmp_path) == []
    (tmp_path / ".dockerignore").write_text("# comment\ndata\n")
    assert context_patterns(tmp_path / "train.Dockerfile", tmp_path) == ["data"]
    (tmp_path / "train.Dockerfile.dockerignore").write_text("*.ckpt\n")
    assert context_patterns(tmp_path / "train.Dockerfile", tmp_path) == ["*.ckpt"]


def test_a_dockerfile_outside_its_context_or_a_local_build_is_refused(tmp_path):
    (tmp_path / "ctx").mkdir()
    (tmp_path / "Dockerfile").write_text("")
    with pytest.raises(ValueError, match="must be inside its context"):
        _user_image(tmp_path / "ctx", "1" * 64, dockerfile=tmp_path / "Dockerfile")
    with pytest.raises(ValueError, match="needs build codebuild"):
        TrainingImage(Stack(App(), "S"), "Image", TrainingImageProps(
            build="local", user_build=(tmp_path / "Dockerfile", tmp_path)))


# --- the example -----------------------------------------------------------------------------


def test_the_example_copies_only_what_its_context_sends():
    sent = set(exclude_paths(str(EXAMPLE), context_patterns(EXAMPLE / "Dockerfile", EXAMPLE),
                             dockerfile="Dockerfile"))
    sources = dockerfile_sources(EXAMPLE / "Dockerfile")
    assert sources == ["fastsum"]
    assert {"fastsum/pyproject.toml", "fastsum/fastsum.c"} <= sent
    assert not any("egg-info" in f or f.startswith("fastsum/build/") for f in sent)


def test_the_examples_extension_compiles_and_sums(tmp_path):
    """What the example's RUN line checks in the image, built here with the host's compiler
    and the venv's setuptools (the image build gets setuptools from PyPI)."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler on this machine")
    source = shutil.copytree(EXAMPLE / "fastsum", tmp_path / "fastsum")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                    "-q", "-w", str(tmp_path / "dist"), str(source)], check=True)
    (wheel,) = (tmp_path / "dist").glob("fastsum-*.whl")
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    check = "import fastsum; print(fastsum.total([1.5, 2.5]), fastsum.total(range(4)))"
    out = subprocess.run([sys.executable, "-c", check], cwd=tmp_path / "site",
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["4.0", "6.0"]
    failed = subprocess.run([sys.executable, "-c", "import fastsum; fastsum.total(['x'])"],
                            cwd=tmp_path / "site", capture_output=True, text=True)
    assert failed.returncode != 0 and "TypeError" in failed.stderr
