"""Rules of the training image: the Neuron training stack the instance family supports, and
the user's Dockerfile built on the stack's image."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.dockerfile import base_image_problem
from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import (
    DOC_CUSTOM_IMAGE,
    DOC_TORCHNEURON,
    DOC_TRAINING_STACKS,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.config.rules.pool_keys import neuron_stack_key
from trn_ultracluster.contracts.catalog import CATALOG
from trn_ultracluster.contracts.neuron_stack import XLA, default_stack, supported_stacks

__all__ = ["neuron_stack", "user_image"]


def neuron_stack(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Each Trainium pool's Neuron stack (its ``neuron_stack``, or
    ``training_image.neuron_stack``) must be one its instance family runs: ``native``
    (TorchNeuron) is for Trainium2 and newer only ("supported on Trainium 2 (trn2) and
    Trainium 3 (trn3) instances", Neuron docs, torch/index.rst, DOC_TORCHNEURON). ``xla``
    where the family's default is ``native`` is a warning: that stack is frozen at Neuron
    SDK 2.30 (docs/training-stacks.md). The message names the key the stack comes from,
    once for the pools of one type that take it; CPU pools have none
    (``pools.cpu_pool_settings``)."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for pool in c.node_pools:
        if pool.instance_type in CATALOG and pool.neuron_stack_setting != "auto":
            key = (neuron_stack_key(c, pool), pool.neuron_stack_setting, pool.instance_type)
            found.setdefault(key, []).append(pool.name)
    for (field, chosen, itype), names in found.items():
        spec = CATALOG[itype]
        where = spec.name if not c.pools else (
            f"{spec.name} (pool{'s' if len(names) > 1 else ''} {', '.join(names)})")
        allowed = supported_stacks(spec)
        if chosen not in allowed:
            yield ConfigIssue(
                field, chosen,
                f"must be {one_of(['auto', *allowed])} on {where}: TorchNeuron, the native "
                "stack, supports Trainium2 and Trainium3 only (Neuron SDK 2.33.0)",
                DOC_TORCHNEURON)
        elif chosen == XLA and default_stack(spec) != XLA:
            yield ConfigIssue(
                field, chosen,
                f"should be 'auto' (native) on {where}: the XLA stack is frozen at Neuron SDK "
                "2.30, the last release with a PyTorch/XLA training image; it gets no fixes",
                DOC_TRAINING_STACKS, severity="warning")


_LOCAL_BUILD = (
    "must be used with training_image.build: codebuild: the CDK CLI cannot build it on the "
    "stack's image, since a Docker image asset's build arguments must be known at synth "
    "time (aws-cdk-lib refuses tokens in buildArgs: aws-ecr-assets DockerImageAsset, "
    "lib/image-asset.ts) while the stack's image is in the CDK "
    "bootstrap repository, whose URI names the account that synth leaves open, and the CLI "
    "does not build an image that is already in the registry, so the stack's image may not "
    "exist locally to build on")


def user_image(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``training_image.user_dockerfile`` must be an existing, readable file inside its build
    context (``user_context``, an existing directory) whose final stage builds on the stack's
    image (:func:`~trn_ultracluster.config.dockerfile.base_image_problem`), and is built by
    CodeBuild only (:data:`_LOCAL_BUILD` says why); ``user_context`` needs a Dockerfile. A
    standalone stack whose nodes run jobs in the DLAMI's environment gets a warning: no job
    would run the image."""
    settings = c.training_image
    if settings.user_context is not None and settings.user_dockerfile is None:
        yield ConfigIssue("training_image.user_context", settings.user_context,
                          "must be given together with training_image.user_dockerfile: it is "
                          "the build context of that Dockerfile", DOC_CUSTOM_IMAGE)
    paths = settings.user_build
    if paths is None:
        return
    dockerfile, context = paths
    field, value = "training_image.user_dockerfile", settings.user_dockerfile
    if settings.build == "local":
        yield ConfigIssue(field, value, _LOCAL_BUILD, DOC_CUSTOM_IMAGE)
    if c.orchestrator == "standalone" and c.standalone.runtime == "dlami-venv":
        yield ConfigIssue(field, value, "should not be set with standalone.runtime: dlami-venv: "
                          "those nodes run jobs in the DLAMI's virtual environment, so no job "
                          "would run the image the deploy builds; use standalone.runtime: "
                          "container", DOC_CUSTOM_IMAGE, severity="warning")
    if not value or not value.strip():
        yield ConfigIssue(field, value, "must name a Dockerfile", DOC_CUSTOM_IMAGE)
        return
    try:  # pathlib lets PermissionError through on Python 3.11
        context_ok = context.is_dir()
        kind = "file" if dockerfile.is_file() else "directory" if dockerfile.is_dir() else None
        inside = dockerfile.resolve().is_relative_to(context.resolve())
    except (OSError, RuntimeError) as err:
        yield ConfigIssue(field, value, f"must be a readable path ({err})", DOC_CUSTOM_IMAGE)
        return
    if settings.user_context is not None and not context_ok:
        yield ConfigIssue("training_image.user_context", settings.user_context,
                          "must be an existing directory (the build context of "
                          "training_image.user_dockerfile; relative paths are read from the "
                          "project directory, where cdk.json is)", DOC_CUSTOM_IMAGE)
        return
    if kind != "file":
        what = "a file, not a directory" if kind == "directory" else "an existing file"
        yield ConfigIssue(field, value, f"must name {what}: a Dockerfile that builds on the "
                          "stack's image (relative paths are read from the project directory, "
                          "where cdk.json is)", DOC_CUSTOM_IMAGE)
        return
    if not inside:
        yield ConfigIssue(field, value, f"must be inside training_image.user_context ({context}): "
                          "the deploy uploads that directory and builds the Dockerfile from it",
                          DOC_CUSTOM_IMAGE)
    try:
        text = dockerfile.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        yield ConfigIssue(field, value, f"must be UTF-8 text (byte {err.start} is not)",
                          DOC_CUSTOM_IMAGE)
        return
    except OSError as err:
        yield ConfigIssue(field, value, f"must be a readable file ({err.strerror})",
                          DOC_CUSTOM_IMAGE)
        return
    if (problem := base_image_problem(text)) is not None:
        yield ConfigIssue(field, value, problem, DOC_CUSTOM_IMAGE)
