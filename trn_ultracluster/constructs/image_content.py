"""What the image builds read and how an image is tagged: the repository root, the training
image's Dockerfile and ignore file, the platform, the ``.dockerignore`` reader and the content
tag (:func:`image_tag`). Shared by :mod:`~trn_ultracluster.constructs.training_image` (which
re-exports these names) and :mod:`~trn_ultracluster.constructs.user_image`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from aws_cdk import FileSystem, IgnoreMode
from aws_cdk import aws_ecr_assets as ecr_assets

__all__ = ["DOCKERFILE", "IGNORE_FILE", "PLATFORM", "REPO_ROOT", "build_context_patterns",
           "image_tag"]

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = "training/Dockerfile"
"""Dockerfile path, relative to the build context (the repository root)."""
IGNORE_FILE = REPO_ROOT / "training" / "Dockerfile.dockerignore"
"""The one list of files the image build sees (BuildKit reads ``<Dockerfile>.dockerignore``
for ``docker build -f training/Dockerfile .``; the TrainingImage construct uploads the same
context)."""
PLATFORM = ecr_assets.Platform.LINUX_AMD64
"""Trainium instances are x86_64 (EC2 instance types, accelerated computing)."""


def build_context_patterns(path: Path = IGNORE_FILE) -> list[str]:
    """The ``.dockerignore`` patterns of ``path``, without comments and blank lines.

    Raises:
        FileNotFoundError: the ignore file is missing.
    """
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def image_tag(directory: Path, dockerfile: str, patterns: list[str],
              build_args: dict[str, str] | None = None) -> str:
    """Content tag of the image: 64 hex characters (ECR allows up to 128).

    The CDK fingerprint (SHA-256 over paths and contents, Docker ignore semantics) of the
    build context, extended with the Dockerfile path, the platform and the build arguments:
    any change that can change the image changes the tag.
    """
    extra = json.dumps({"dockerfile": dockerfile, "platform": PLATFORM.platform,
                        "build_args": build_args or {}}, sort_keys=True)
    fingerprint = FileSystem.fingerprint(str(directory), exclude=patterns,
                                         ignore_mode=IgnoreMode.DOCKER, extra_hash=extra)
    return hashlib.sha256(fingerprint.encode()).hexdigest()
