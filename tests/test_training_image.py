"""TrainingImage: ECR repository settings, copy into it, and what the build context holds."""

from __future__ import annotations

import json

from trn_ultracluster.constructs.training_image import BUILD_CONTEXT_INCLUDES, build_context_excludes


def test_repository_scans_on_push_expires_images_and_is_emptied_on_destroy(default):
    repo = default.logical("TrainingImageRepository")
    props = repo["Properties"]
    assert props["ImageScanningConfiguration"] == {"ScanOnPush": True}
    assert props["EmptyOnDelete"] is True
    assert repo["DeletionPolicy"] == "Delete"
    rules = json.loads(props["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    selections = [r["selection"] for r in rules]
    assert {"tagStatus": "untagged", "countType": "sinceImagePushed", "countNumber": 14,
            "countUnit": "days"} in selections
    assert {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 20} in selections


def test_image_is_copied_into_the_repository_under_the_asset_hash(default):
    (copy,) = default.resources("Custom::CDKECRDeployment").values()
    dest = json.dumps(copy["Properties"]["DestImage"])
    tag = default.stack.training_image.image_tag
    assert len(tag) == 64 and tag in dest
    assert default.ref_id("TrainingImageRepository") in dest
    uri = default.output("TrainingImageUri")
    assert copy["Properties"]["DestImage"]["Fn::Join"][1][1:] == uri["Fn::Join"][1]  # docker:// + uri


def _docker_asset(s):
    assets = json.loads((s.outdir / "TrnUltraCluster.assets.json").read_text())
    (image,) = assets["dockerImages"].values()
    return image["source"]


def test_image_is_built_for_linux_amd64_from_training_dockerfile(default):
    source = _docker_asset(default)
    assert source["dockerFile"] == "training/Dockerfile"
    assert source["platform"] == "linux/amd64"


def test_build_context_holds_the_training_program_and_the_catalog_only(default):
    staged = default.outdir / _docker_asset(default)["directory"]
    files = {p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()}
    assert "training/Dockerfile" in files
    assert {"trn_ultracluster/__init__.py", "trn_ultracluster/catalog.py"} <= files
    assert not any(f.startswith("trn_ultracluster/") and f not in BUILD_CONTEXT_INCLUDES
                   for f in files)
    top = {f.split("/", 1)[0] for f in files}
    assert top == {"training", "trn_ultracluster"}
    assert not any("__pycache__" in f for f in files)


def test_excludes_reinclude_parents_of_nested_files():
    assert build_context_excludes(("a", "b/c/d.py")) == [
        "*", "!a", "!b", "b/*", "!b/c", "b/c/*", "!b/c/d.py", "**/__pycache__", "**/*.pyc"]
