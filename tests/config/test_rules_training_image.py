"""Rules of the training image: the Neuron training stack of the instance family, and the
user's Dockerfile built on the stack's image (``training_image.user_dockerfile``)."""

from __future__ import annotations

from tests.config import (
    TRN1_POOL,
    TRN2_POOL,
    check_one_error,
    errors,
    warnings_about,
    with_pools,
)
from trn_ultracluster.config import load_config


def test_native_on_trainium_is_an_error_naming_the_allowed_stacks():
    check_one_error(
        {"training_image.neuron_stack": "native"},
        "error: training_image.neuron_stack = 'native': must be 'auto' or 'xla' on "
        "trn1.32xlarge: TorchNeuron, the native stack, supports Trainium2 and Trainium3 only "
        "(Neuron SDK 2.33.0) (see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/"
        "torch/index.html)")


def test_xla_on_trainium2_is_allowed_with_a_warning_that_it_is_frozen():
    overrides = {"instance_type": "trn2.48xlarge", "az_ids": "use2-az3,use2-az1",
                 "training_image.neuron_stack": "xla"}
    assert warnings_about(overrides, "training_image.neuron_stack") == [
        "warning: training_image.neuron_stack = 'xla': should be 'auto' (native) on "
        "trn2.48xlarge: the XLA stack is frozen at Neuron SDK 2.30, the last release with a "
        "PyTorch/XLA training image; it gets no fixes (see docs/training-stacks.md)"]
    assert load_config(overrides).config.neuron_stack == "xla"


def test_auto_follows_the_instance_family():
    assert load_config({}).config.neuron_stack == "xla"
    trn2 = load_config({"instance_type": "trn2.48xlarge", "az_ids": "use2-az3,use2-az1"})
    assert trn2.config.neuron_stack == "native"
    assert not [w for w in trn2.warnings if w.field == "training_image.neuron_stack"]


# --- training_image.user_dockerfile ---------------------------------------------------------

USER = "training_image.user_dockerfile"
GOOD = "ARG TRN_BASE_IMAGE\nFROM ${TRN_BASE_IMAGE}\nRUN apt-get update\n"


def _dockerfile(tmp_path, text: str = GOOD, name: str = "Dockerfile"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_example_dockerfile_is_accepted_and_its_directory_is_the_context():
    from tests.conftest import REPO_ROOT

    settings = load_config({USER: "examples/custom-image/Dockerfile"},
                           base_dir=REPO_ROOT).config.training_image
    example = REPO_ROOT / "examples" / "custom-image"
    assert settings.user_build == (example / "Dockerfile", example)


def test_a_relative_path_is_read_from_the_project_directory(tmp_path):
    _dockerfile(tmp_path / "docker", name="train.Dockerfile")
    loaded = load_config({USER: "docker/train.Dockerfile",
                          "training_image.user_context": "."}, base_dir=tmp_path)
    assert loaded.config.training_image.user_build == (
        tmp_path / "docker" / "train.Dockerfile", tmp_path)


def test_a_missing_dockerfile_is_an_error_naming_where_it_was_looked_for(tmp_path):
    check_one_error(
        {USER: str(tmp_path / "nope")},
        f"error: {USER} = '{tmp_path / 'nope'}': must name an existing file: a Dockerfile that "
        "builds on the stack's image (relative paths are read from the project directory, "
        "where cdk.json is) (see docs/custom-image.md)")


def test_a_directory_is_not_a_dockerfile(tmp_path):
    assert errors({USER: str(tmp_path)}) == [
        f"error: {USER} = '{tmp_path}': must name a file, not a directory: a Dockerfile that "
        "builds on the stack's image (relative paths are read from the project directory, "
        "where cdk.json is) (see docs/custom-image.md)"]


def test_a_dockerfile_that_does_not_start_from_the_stacks_image_is_refused(tmp_path):
    path = _dockerfile(tmp_path, "ARG TRN_BASE_IMAGE\nFROM ubuntu:24.04\nRUN true\n")
    check_one_error(
        {USER: str(path)},
        f"error: {USER} = '{path}': must build its final stage FROM ${{TRN_BASE_IMAGE}}, the "
        "stack's training image (line 2 is FROM ubuntu:24.04): jobs run the final stage, and "
        "only the stack's image has the Neuron stack and the job environment the cluster sets "
        "up (see docs/custom-image.md)")


def test_the_base_argument_must_be_declared_before_the_first_from(tmp_path):
    path = _dockerfile(tmp_path, "FROM ${TRN_BASE_IMAGE}\nARG TRN_BASE_IMAGE\n")
    assert errors({USER: str(path)}) == [
        f"error: {USER} = '{path}': must declare ARG TRN_BASE_IMAGE before its first FROM "
        "(line 1): the deploy passes the stack's image URI in that build argument, and FROM "
        "sees only the arguments declared before the first FROM (see docs/custom-image.md)"]


def test_a_local_build_cannot_build_the_users_image(tmp_path):
    (message,) = errors({USER: str(_dockerfile(tmp_path)), "training_image.build": "local"})
    assert "must be used with training_image.build: codebuild" in message
    assert "aws-cdk-lib refuses tokens in buildArgs" in message


def test_the_context_must_be_a_directory_that_holds_the_dockerfile(tmp_path):
    path = _dockerfile(tmp_path / "a")
    (other := tmp_path / "b").mkdir()
    assert errors({USER: str(path), "training_image.user_context": str(other)}) == [
        f"error: {USER} = '{path}': must be inside training_image.user_context ({other}): the "
        "deploy uploads that directory and builds the Dockerfile from it (see "
        "docs/custom-image.md)"]
    assert errors({USER: str(path), "training_image.user_context": str(tmp_path / "c")}) == [
        f"error: training_image.user_context = '{tmp_path / 'c'}': must be an existing "
        "directory (the build context of training_image.user_dockerfile; relative paths are "
        "read from the project directory, where cdk.json is) (see docs/custom-image.md)"]


def test_a_context_without_a_dockerfile_is_an_error(tmp_path):
    assert errors({"training_image.user_context": str(tmp_path)}) == [
        f"error: training_image.user_context = '{tmp_path}': must be given together with "
        "training_image.user_dockerfile: it is the build context of that Dockerfile (see "
        "docs/custom-image.md)"]


def test_a_dockerfile_that_is_not_text_is_refused(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_bytes(b"FROM \xff\n")
    assert errors({USER: str(path)}) == [
        f"error: {USER} = '{path}': must be UTF-8 text (byte 5 is not) (see "
        "docs/custom-image.md)"]


def test_a_user_image_that_no_standalone_job_would_run_is_a_warning(tmp_path):
    overrides = {USER: str(_dockerfile(tmp_path)), "orchestrator": "standalone",
                 "standalone.runtime": "dlami-venv"}
    (warning,) = warnings_about(overrides, USER)
    assert warning.startswith(f"warning: {USER} = '{tmp_path / 'Dockerfile'}': should not be "
                              "set with standalone.runtime: dlami-venv")
    assert not warnings_about({**overrides, "standalone.runtime": "container"}, USER)


def test_a_home_of_no_user_is_a_config_error_not_a_traceback():
    """``Path.expanduser`` raises RuntimeError for ``~nosuchuser``: the loader leaves the
    value as written and the rule names it."""
    found = errors({USER: "~no-such-user-here/Dockerfile"})
    assert len(found) == 1 and "must name an existing file" in found[0]


def test_an_unreadable_path_is_a_config_error(tmp_path, monkeypatch):
    """pathlib lets PermissionError through on Python 3.11 (tests run as root: patched)."""
    from pathlib import Path

    path = _dockerfile(tmp_path)

    def refused(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_dir", refused)
    found = errors({USER: str(path)})
    assert len(found) == 1 and "must be a readable path" in found[0] and "Permission" in found[0]


def test_each_pools_neuron_stack_is_checked_where_it_is_set():
    torch = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
    check_one_error(with_pools({**TRN1_POOL, "neuron_stack": "native"}, TRN2_POOL),
                    "error: pools[0].neuron_stack = 'native': must be 'auto' or 'xla' on "
                    "trn1.32xlarge (pool trn1): TorchNeuron, the native stack, supports "
                    f"Trainium2 and Trainium3 only (Neuron SDK 2.33.0) (see {torch})")
    # two trn1 pools that take training_image.neuron_stack: one error naming both
    check_one_error(with_pools(TRN1_POOL, {**TRN1_POOL, "name": "trn1b"}, TRN2_POOL,
                               **{"training_image.neuron_stack": "native"}),
                    "error: training_image.neuron_stack = 'native': must be 'auto' or 'xla' on "
                    "trn1.32xlarge (pools trn1, trn1b): TorchNeuron, the native stack, "
                    f"supports Trainium2 and Trainium3 only (Neuron SDK 2.33.0) (see {torch})")
    (warning,) = warnings_about(with_pools(TRN1_POOL, {**TRN2_POOL, "neuron_stack": "xla"}),
                                "pools[1].neuron_stack")
    assert warning.startswith("warning: pools[1].neuron_stack = 'xla': should be 'auto' "
                              "(native) on trn2.48xlarge (pool trn2): the XLA stack is frozen")
