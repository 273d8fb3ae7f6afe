"""TrainingImage: the build context (docker-py's .dockerignore semantics), the in-AWS build
(CodeBuild through cdklabs.deploy-time-build, no copy Lambda), the content tag, the
repository, and the local-Docker option."""

from __future__ import annotations

import ast
import json
import sys
import re
import shlex
from pathlib import Path

import pytest
from docker.utils.build import exclude_paths

from tests.conftest import REPO_ROOT
from trn_ultracluster.constructs import training_image
from trn_ultracluster.constructs.training_image import (
    BUILD_COMPUTE_TYPE,
    DOCKERFILE,
    IGNORE_FILE,
    build_context_patterns,
    image_tag,
)

PATTERNS = build_context_patterns()


def docker_context(root: Path = REPO_ROOT, patterns: list[str] = PATTERNS) -> set[str]:
    """The files `docker build -f training/Dockerfile .` sends (docker-py's implementation of
    BuildKit's .dockerignore rules)."""
    return set(exclude_paths(str(root), patterns, dockerfile=DOCKERFILE))


def dockerfile_sources(path: Path = REPO_ROOT / DOCKERFILE) -> list[str]:
    """Local COPY/ADD sources of a Dockerfile (URLs, --from stages and heredocs left out)."""
    text = re.sub(r"\\\n", " ", path.read_text())
    sources = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True) if line.strip() else []
        if not words or words[0].upper() not in ("COPY", "ADD"):
            continue
        args = [w for w in words[1:] if not w.startswith("--")]
        if any(w.startswith("--from") for w in words[1:]):
            continue
        sources += [s for s in args[:-1] if "://" not in s and not s.startswith("<<")]
    return sources


def test_every_copy_source_of_the_dockerfile_is_in_the_build_context():
    context = docker_context()
    sources = dockerfile_sources()
    assert sources, "the Dockerfile copies the program"
    for source in sources:
        assert source in context or any(f.startswith(source.rstrip("/") + "/") for f in context), (
            f"{DOCKERFILE} COPYs {source}, which {IGNORE_FILE.name} keeps out of the context")


def test_the_context_check_fails_for_a_file_the_ignore_file_leaves_out(tmp_path):
    # the failure the issue found: a COPY of shared_storage.py that the ignore file omits
    (tmp_path / "trn_ultracluster").mkdir()
    (tmp_path / "trn_ultracluster" / "shared_storage.py").write_text("X = 1\n")
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "Dockerfile").write_text("COPY trn_ultracluster/contracts/shared_storage.py /x\n")
    context = docker_context(tmp_path, ["*", "!trn_ultracluster/contracts/catalog.py"])
    assert "trn_ultracluster/contracts/shared_storage.py" not in context


def test_the_context_holds_only_the_program_and_stdlib_modules():
    context = docker_context()
    top = {f.split("/", 1)[0] for f in context}
    assert top == {"training", "trn_ultracluster"}
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in context)
    contracts = REPO_ROOT / "trn_ultracluster" / "contracts"
    assert {f for f in context if f.startswith("trn_ultracluster/")} == {
        "trn_ultracluster/__init__.py",
        *(p.relative_to(REPO_ROOT).as_posix() for p in contracts.glob("*.py"))}


def test_contracts_import_the_standard_library_only():
    """The image and the HyperPod lifecycle scripts run them without the project's
    dependencies."""
    for path in (REPO_ROOT / "trn_ultracluster" / "contracts").glob("*.py"):
        modules = {m.split(".")[0] for m in _imports(path)}
        assert modules <= {"trn_ultracluster", "__future__", *sys.stdlib_module_names}, path
        own = {m for m in _imports(path) if m.startswith("trn_ultracluster")}
        assert all(m.startswith("trn_ultracluster.contracts") for m in own), path


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def test_the_image_ships_every_project_module_the_training_program_imports():
    context = docker_context()
    used = {m for p in (REPO_ROOT / "training" / "trn_train").rglob("*.py") for m in _imports(p)
            if m.startswith("trn_ultracluster.")}
    assert used, "the training program reads the catalog at least"
    for module in sorted(used):
        path = module.replace(".", "/") + ".py"
        assert path in context, f"{path} is missing from the build context"
        # the image has no CDK or pydantic: these modules import the standard library only
        own = {m for m in _imports(REPO_ROOT / path) if m.startswith("trn_ultracluster")}
        assert own <= used, f"{path} imports {own - used}, which the image lacks"
        third_party = {m.split(".")[0] for m in _imports(REPO_ROOT / path)} - {
            "trn_ultracluster", *sys.stdlib_module_names}
        assert not third_party, f"{path} imports {third_party}"


def test_the_uploaded_source_asset_is_the_docker_context(default):
    build = default.stack.training_image.build
    source = build.node.find_child("Source")
    staged = default.outdir / f"asset.{source.asset_hash}"
    files = {p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()}
    # CodeBuild builds from this upload: it must hold the Dockerfile and every COPY source
    assert files == docker_context()


# --- the build in AWS ------------------------------------------------------------------------


def test_image_is_built_in_codebuild_and_pushed_to_the_stack_repository(default):
    (build,) = default.resources("Custom::CDKContainerImageBuild").values()
    props = build["Properties"]
    assert {"Ref": default.ref_id("TrainingImageRepository")} in props["repositoryUri"]["Fn::Join"][1]
    assert props["imageTag"] == default.stack.training_image.image_tag
    command = props["buildCommand"]
    assert f"--file {DOCKERFILE}" in command and "--platform linux/amd64" in command
    (project,) = default.resources("AWS::CodeBuild::Project").values()
    env = project["Properties"]["Environment"]
    assert env["ComputeType"] == BUILD_COMPUTE_TYPE == "BUILD_GENERAL1_LARGE"
    assert env["PrivilegedMode"] is True
    assert project["Properties"]["LogsConfig"]["CloudWatchLogs"]["GroupName"] == {
        "Ref": default.ref_id("TrainingImageBuildLogs")}
    # no copy step and no local Docker image asset
    assert not default.resources("Custom::CDKECRDeployment")
    assets = json.loads((default.outdir / "TrnUltraCluster.assets.json").read_text())
    assert assets.get("dockerImages", {}) == {}


def test_nothing_in_the_build_may_write_to_every_repository_or_read_every_object(each_synth):
    for name, s in each_synth:
        for pid, policy in s.resources("AWS::IAM::Policy").items():
            for st in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
                resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
                writes_ecr = any(a.startswith("ecr:") and a not in READ_ONLY_ECR for a in actions)
                reads_s3 = any(a.startswith("s3:Get") for a in actions)
                assert not ((writes_ecr or reads_s3) and "*" in resources), (name, pid, st)


READ_ONLY_ECR = {"ecr:GetAuthorizationToken", "ecr:BatchCheckLayerAvailability",
                 "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage", "ecr:DescribeImages"}


@pytest.fixture(scope="module")
def each_synth(synth):
    from tests.conftest import PROFILES

    return [("default", synth()), *((p.stem, synth(p)) for p in PROFILES)]


def test_consumers_name_the_image_without_waiting_for_the_build(default):
    from trn_ultracluster.template_graph import references

    uri = default.output("TrainingImageUri")
    assert default.stack.training_image.image_tag in json.dumps(uri)
    # the URI refers to the repository only: a synth-time tag, not the build's attribute
    assert references(uri) == {default.ref_id("TrainingImageRepository")}


def test_tag_is_a_content_hash_that_follows_the_build_inputs(tmp_path):
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "training" / "a.txt").write_text("a")
    (tmp_path / "other.txt").write_text("ignored")
    patterns = ["*", "!training/**"]
    first = image_tag(tmp_path, DOCKERFILE, patterns)
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert image_tag(tmp_path, DOCKERFILE, patterns) == first
    (tmp_path / "other.txt").write_text("changed, but outside the context")
    assert image_tag(tmp_path, DOCKERFILE, patterns) == first
    assert image_tag(tmp_path, DOCKERFILE, patterns, {"X": "1"}) != first
    (tmp_path / "training" / "a.txt").write_text("b")
    assert image_tag(tmp_path, DOCKERFILE, patterns) != first


def test_repository_scans_encrypts_expires_and_is_emptied_on_destroy(default):
    repo = default.logical("TrainingImageRepository")
    props = repo["Properties"]
    assert props["ImageScanningConfiguration"] == {"ScanOnPush": True}
    assert props["EncryptionConfiguration"] == {"EncryptionType": "KMS"}
    assert props["EmptyOnDelete"] is True
    assert repo["DeletionPolicy"] == "Delete"
    rules = json.loads(props["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    selections = [r["selection"] for r in rules]
    assert {"tagStatus": "untagged", "countType": "sinceImagePushed", "countNumber": 14,
            "countUnit": "days"} in selections
    assert {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 20} in selections
    skips = {s["id"] for s in repo["Metadata"]["checkov"]["skip"]}
    assert skips == {"CKV_AWS_51"}  # mutable tags, with the rollback reason


def test_local_build_publishes_the_asset_and_copies_nothing(synth):
    s = synth(**{"training_image.build": "local"})
    assets = json.loads((s.outdir / "TrnUltraCluster.assets.json").read_text())
    (image,) = assets["dockerImages"].values()
    assert image["source"]["dockerFile"] == DOCKERFILE
    assert image["source"]["platform"] == "linux/amd64"
    assert image["source"]["dockerBuildArgs"] == {"NEURON_STACK": "xla"}  # the stack's stage
    assert not s.resources("Custom::CDKContainerImageBuild")
    assert not s.resources("Custom::CDKECRDeployment")
    assert not s.resources("AWS::ECR::Repository")
    assert "container-assets" in json.dumps(s.output("TrainingImageUri"))


def test_the_eks_runtime_that_names_the_image_waits_for_the_build(default):
    """On an update that changes the tag, the runtime switches only once the image exists."""
    from trn_ultracluster.template_graph import transitive_dependencies

    runtime = default.ref_id("EksClustermanifestNeuronTrainingRuntime")
    (build,) = default.resources("Custom::CDKContainerImageBuild")
    assert build in transitive_dependencies(default.template, runtime)


# --- the build's time limits, failure report, push and cache ---------------------------------

CLOUDFORMATION_WAIT_S = 3600
"""The most CloudFormation waits for a custom resource (CloudFormation template reference,
``AWS::CloudFormation::CustomResource`` ``ServiceTimeout``: 1-3600, default 3600): literal
here, so that raising the code's constants cannot move it."""


def _project(s):
    (project,) = s.resources("AWS::CodeBuild::Project").values()
    return project["Properties"]


def test_the_queue_and_the_build_end_inside_cloudformations_hour(default):
    props = _project(default)
    build, queued = props["TimeoutInMinutes"], props["QueuedTimeoutInMinutes"]
    assert (build, queued) == (50, 5)
    # five minutes stay for StartBuild's retries, the failure event and the report
    assert (build + queued) * 60 + 300 <= CLOUDFORMATION_WAIT_S
    (resource,) = default.resources("Custom::CDKContainerImageBuild").values()
    assert resource["Properties"].get("ServiceTimeout", CLOUDFORMATION_WAIT_S) == CLOUDFORMATION_WAIT_S


def test_a_timeout_past_the_window_fails_the_synth(monkeypatch):
    from aws_cdk import App, Duration, Stack

    monkeypatch.setattr(training_image, "BUILD_TIMEOUT", Duration.minutes(51))
    with pytest.raises(ValueError, match="got 56 min"):
        training_image.TrainingImage(Stack(App(), "S"), "Image")


def test_failed_stopped_and_timed_out_builds_are_reported_to_cloudformation(default):
    (rule,) = default.resources("AWS::Events::Rule").values()
    project = next(iter(default.resources("AWS::CodeBuild::Project")))
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == ["aws.codebuild"]
    assert pattern["detail-type"] == ["CodeBuild Build State Change"]
    assert pattern["detail"] == {"project-name": [{"Ref": project}],
                                 "build-status": ["FAILED", "FAULT", "STOPPED", "TIMED_OUT"]}
    report = default.ref_id("TrainingImageReport")
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [report, "Arn"]}
    # the report is in place before any build starts
    (build_id, build), = default.resources("Custom::CDKContainerImageBuild").items()
    rule_id = next(iter(default.resources("AWS::Events::Rule")))
    assert {report, rule_id} <= set(build["DependsOn"])
    # it reads only this project's builds
    policy = default.logical("TrainingImageReportRoleDefaultPolicy")["Properties"]["PolicyDocument"]
    reads = [st for st in policy["Statement"] if "codebuild:BatchGetBuilds" in st["Action"]]
    assert reads == [{"Action": "codebuild:BatchGetBuilds", "Effect": "Allow",
                      "Resource": {"Fn::GetAtt": [project, "Arn"]}}]


def test_the_build_pushes_from_the_daemon_and_caches_docker_layers_locally(default):
    """What the module docstring says about the library's command (a library upgrade that
    changes it must revisit the docstring) and the CodeBuild cache."""
    (build,) = default.resources("Custom::CDKContainerImageBuild").values()
    command = build["Properties"]["buildCommand"]
    assert "--output type=docker,name=artifact:$imageTag " in command
    assert "push=true" not in command and "--cache-to" not in command
    props = _project(default)
    assert props["Cache"] == {"Type": "LOCAL", "Modes": ["LOCAL_DOCKER_LAYER_CACHE"]}
    # local caching needs privileged mode and is not supported in a VPC or on 2XLARGE
    assert props["Environment"]["PrivilegedMode"] is True
    assert "VpcConfig" not in props
    assert props["Environment"]["ComputeType"] != "BUILD_GENERAL1_2XLARGE"


def test_each_neuron_stack_is_its_own_image(tmp_path):
    """The stack is a build argument of the same Dockerfile: it selects the stage and is part
    of the content tag, so switching stacks builds and tags a new image."""
    from trn_ultracluster.constructs.training_image import TrainingImageProps

    xla, native = (TrainingImageProps(neuron_stack=s).build_args for s in ("xla", "native"))
    assert (xla, native) == ({"NEURON_STACK": "xla"}, {"NEURON_STACK": "native"})
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "Dockerfile").write_text("FROM scratch\n")
    tags = {image_tag(tmp_path, DOCKERFILE, [], args) for args in (xla, native)}
    assert len(tags) == 2
    stages = re.findall(r"^FROM \S+ AS (\w+)$", (REPO_ROOT / DOCKERFILE).read_text(), re.M)
    assert stages == ["xla", "native"]
    assert re.search(r"^FROM \$\{NEURON_STACK\}$", (REPO_ROOT / DOCKERFILE).read_text(), re.M)


def test_the_stack_of_the_configuration_reaches_the_build(each_synth):
    """The CodeBuild build gets `--build-arg NEURON_STACK=<stack>` and the stack output names
    the same stack: trn1 profiles build the XLA stage, trn2 ones the native stage."""
    seen = set()
    for name, s in each_synth:
        stack = s.config.neuron_stack
        seen.add(stack)
        assert stack == ("native" if s.config.instance_type.startswith("trn2") else "xla"), name
        assert s.output("NeuronStack") == stack, name
        builds = [json.dumps(b["Properties"])
                  for b in s.resources("Custom::CDKContainerImageBuild").values()]
        # one build per Neuron stack of the pools (profiles/mixed.yaml: xla and native)
        assert len(builds) == len(s.config.neuron_stacks), name
        for each in s.config.neuron_stacks:
            assert sum(f"NEURON_STACK={each}" in b for b in builds) == 1, (name, each)
    assert seen == {"xla", "native"}
