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


def _imports(path):
    import ast

    tree = ast.parse(path.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def test_the_image_ships_every_project_module_the_training_program_imports():
    from tests.conftest import REPO_ROOT

    used = {m for p in (REPO_ROOT / "training" / "trn_train").rglob("*.py") for m in _imports(p)
            if m.startswith("trn_ultracluster.")}
    assert used, "the training program reads the catalog at least"
    dockerfile = (REPO_ROOT / "training" / "Dockerfile").read_text()
    for module in sorted(used):
        path = module.replace(".", "/") + ".py"
        assert path in BUILD_CONTEXT_INCLUDES, f"{path} missing from the build context"
        assert path in dockerfile, f"training/Dockerfile does not COPY {path}"
        # the image has no CDK or pydantic: these modules import the standard library only
        own = {m for m in _imports(REPO_ROOT / path) if m.startswith("trn_ultracluster")}
        assert own <= used, f"{path} imports {own - used}, which the image lacks"
        third_party = {m.split(".")[0] for m in _imports(REPO_ROOT / path)} - {
            "__future__", "dataclasses", "trn_ultracluster"}
        assert not third_party, f"{path} imports {third_party}"
