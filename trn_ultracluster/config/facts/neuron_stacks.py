"""The Neuron training stacks and the standalone nodes' AMIs. Each fact with its source (the package docstring says more)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# --- standalone nodes ---------------------------------------------------------------------

@dataclass(frozen=True)
class NeuronStack:
    """One Neuron SDK release and what this project takes from it: the training image the
    container runtime builds on, the DLAMI the standalone nodes boot and the DLAMI's virtual
    environment of the ``dlami-venv`` runtime. Tests (tests/config/test_facts.py) check that
    they agree with each other, with ``training/Dockerfile`` and with the configuration's
    defaults.

    Attributes:
        sdk_release: the Neuron SDK release, e.g. ``"2.30.0"``.
        training_image: the base image of ``training/Dockerfile`` (its ``BASE_IMAGE``).
        dlami_name: the DLAMI's name without its date suffix; AMI names are this name, a
            space and a date (``"... (Ubuntu 20.04) 20240328"`` in the Neuron docs'
            ``announce-eos-dlami.rst``).
        dlami_venvs: the virtual environments that DLAMI has at :attr:`sdk_release`.
        venv: the one of :attr:`dlami_venvs` that ``runtime: dlami-venv`` uses.
        sources: attribute name -> where the value comes from.
    """

    sdk_release: str
    training_image: str
    dlami_name: str
    dlami_venvs: tuple[str, ...]
    venv: str
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    packages: dict[str, str] = field(default_factory=dict)
    """Package -> pinned version that ``training/Dockerfile`` installs on :attr:`training_image`
    (empty when the base image is Neuron's own training image, which has them)."""
    base_dlami_parameter: str | None = None
    """Public SSM parameter of the AMI standalone nodes boot when the stack's own DLAMI cannot be
    found by release (``None``: :meth:`dlami_filters` finds it)."""

    @property
    def dlami_description(self) -> str:
        """The ``description`` filter of DescribeImages that selects this release's DLAMIs:
        "Each Neuron DLAMI includes the SDK version in its description" (Neuron DLAMI User
        Guide, "Finding a DLAMI for a specific Neuron SDK version", DOC_NEURON_DLAMI, at
        aws-neuron/aws-neuron-sdk v2.32.0 ``deploy/environments/dlami.rst``)."""
        return f"*Neuron SDK {self.sdk_release}*"

    def dlami_filters(self) -> list[dict[str, object]]:
        """The EC2 ``DescribeImages`` filters of this release's DLAMI: the guide's own
        ``name`` and ``description`` filters (its example: ``Name=name,Values=Deep Learning
        AMI Neuron*`` and ``Name=description,Values=*Neuron SDK 2.32.0*``), the name narrowed
        to :attr:`dlami_name`, and x86_64 / available (Trn1 and Trn2 are x86_64 instances)."""
        return [
            {"Name": "name", "Values": [f"{self.dlami_name} *"]},
            {"Name": "description", "Values": [self.dlami_description]},
            {"Name": "architecture", "Values": ["x86_64"]},
            {"Name": "state", "Values": ["available"]},
        ]


XLA_STACK = NeuronStack(
    sdk_release="2.30.0",
    training_image=("public.ecr.aws/neuron/pytorch-training-neuronx:"
                    "2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"),
    dlami_name="Deep Learning AMI Neuron PyTorch 2.9 (Ubuntu 24.04)",
    dlami_venvs=("/opt/aws_neuronx_venv_pytorch_2_9",
                 "/opt/aws_neuronx_venv_pytorch_2_9_nxd_training",
                 "/opt/aws_neuronx_venv_pytorch_2_9_nxd_inference"),
    venv="/opt/aws_neuronx_venv_pytorch_2_9_nxd_training",
    sources={
        "sdk_release": (
            "The last release with both: the pytorch-training-neuronx DLC \"is no longer "
            "published\" from 2.31.0 (Neuron release notes, components/containers.rst), and "
            "\"Starting with Neuron SDK 2.31.0, NeuronX Distributed Training (NxDT) is no "
            "longer included in Neuron DLAMIs ... use a DLAMI associated with a previous Neuron "
            "SDK release (2.30.0 or earlier)\" (components/dlamis.rst, 2.31.0, 7/7/2026). From "
            "2.32.0 no PyTorch 2.9 DLAMI is published at all (dlamis.rst, 2.32.0). 2.30.0 was "
            "released May 21, 2026 (release-notes/prev/2.30.0.rst); there is no 2.30.1 tag."),
        "training_image": (
            "aws-neuron/deep-learning-containers README (commit 2be9ed1), pytorch-training-"
            "neuronx table: its top row, Neuron SDK 2.30.0; training/Dockerfile BASE_IMAGE."),
        "dlami_name": (
            "Neuron DLAMI User Guide at aws-neuron/aws-neuron-sdk v2.30.0, "
            "deploy/environments/dlami.rst, single framework DLAMIs table."),
        "dlami_venvs": (
            "Same guide at v2.30.0, \"Virtual Environments pre-installed\": the PyTorch 2.9 "
            "(Ubuntu 24.04) DLAMI lists these three; at v2.31.0 the nxd_training one is gone."),
        "venv": "Same table: \"PyTorch 2.9 NxD Training, Torch NeuronX\".",
        "dlami_lookup": (
            "No SSM parameter names a DLAMI of one SDK release: \"Currently, SSM parameters "
            "support finding the latest DLAMI ID for each DLAMI type. Support for finding "
            "specific Neuron SDK version DLAMIs will be added in future releases.\" (same "
            "guide, v2.30.0 to v2.32.0). The guide's way to a release's DLAMI is "
            "describe-images with owner amazon and a description filter (dlami_filters)."),
    },
)
"""The PyTorch/XLA (Trn1) stack of this project: Neuron SDK 2.30.0, its training image, its
PyTorch 2.9 DLAMI and that DLAMI's NxD Training environment. Not verified against a live
account (no AWS account here): that every Region with Trainium has the 2.30.0 DLAMI, and the
exact AMI name and description strings beyond what the guide quotes."""
NATIVE_STACK = NeuronStack(
    sdk_release="2.33.0",
    training_image="public.ecr.aws/docker/library/ubuntu:26.04",
    dlami_name="Deep Learning AMI Neuron torch-neuronx 2.14.0",
    dlami_venvs=("/opt/aws_neuronx_venv_torch_neuronx_2_14_0",),
    venv="/opt/aws_neuronx_venv_torch_neuronx_2_14_0",
    packages={
        "torch": "2.14.0",
        "torch-neuronx": "2.14.3.0.*",
        "neuronx-cc": "2.28.7631.0",
        "nki": "0.7.0",
        "aws-neuronx-runtime-lib": "2.35.30.0*",
        "aws-neuronx-collectives": "2.35.43.0*",
        "aws-neuronx-tools": "2.33.38.0*",
    },
    base_dlami_parameter="/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id",
    sources={
        "sdk_release": (
            "TorchNeuron, the native PyTorch backend, is a public beta from Neuron SDK 2.33.0 "
            "(October 19, 2026; release-notes/2.33.0.rst): \"torch-neuronx 2.13.3.0 and 2.14.3.0 "
            "(Neuron 2.33.0 Release) ... adds the neuron device through the PyTorch PrivateUse1 "
            "extension ... to run them on Trainium2 or Trainium3\" (release-notes/components/"
            "torchneuron.rst). 2.33.1 (November 11, 2026) is a bug-fix release whose full "
            "package versions we could not read, so the pins are 2.33.0's."),
        "training_image": (
            "No training image: the 2.33.0 docs name a \"PyTorch Training (TorchNeuron)\" DLC "
            "(setup/pytorch/dlc.rst) but neither its repository nor a tag could be verified (the "
            "aws-neuron/deep-learning-containers README read stops at 2.32.0, commit 2be9ed1). So "
            "training/Dockerfile builds the stack on Ubuntu 26.04, the OS of every 2.33.0 Neuron "
            "image (\"Starting with Neuron 2.33.0, Neuron DLC images are published on Ubuntu 26.04 "
            "only\", deploy/environments/dlc-images.rst), from Docker's official image on ECR "
            "Public as Neuron's own DLC Dockerfiles do (pytorch/training/2.9.0/Dockerfile.neuronx: "
            "FROM public.ecr.aws/docker/library/ubuntu:24.04). Its Python is 3.14 (Ubuntu 26.04's "
            "default: OpenStack \"Tested Runtimes for 2026.2\"), which TorchNeuron supports "
            "(3.12, 3.13 and 3.14, torchneuron.rst)."),
        "packages": (
            "torch-neuronx 2.14.3.0 with PyTorch 2.14.0 (torchneuron.rst support matrix; "
            "\"install torch-neuronx==2.14.* with PyTorch 2.14\"; the full build string was not "
            "seen, hence 2.14.3.0.*); neuronx-cc 2.28.7631.0, nki 0.7.0, aws-neuronx-runtime-lib "
            "2.35.30.0, aws-neuronx-collectives 2.35.43.0, aws-neuronx-tools 2.33.38.0 (release-"
            "notes/releasecontent.html at v2.33.0); the apt versions end in a build hash, hence "
            "the trailing '*'. Pip index and PyTorch CPU index from setup/pytorch/update-dlami.rst "
            "(v2.33.0)."),
        "dlami_name": (
            "\"Starting with Neuron SDK 2.33.0, the Deep Learning AMI Neuron torch-neuronx 2.14.0 "
            "DLAMI provides TorchNeuron ... for PyTorch 2.14 on Ubuntu 24.04 and Ubuntu 26.04, in "
            "the /opt/aws_neuronx_venv_torch_neuronx_2_14_0 virtual environment\" "
            "(setup/pytorch/update-dlami.rst, v2.33.0). Its exact AMI name and SSM parameter are "
            "not in the docs read."),
        "base_dlami_parameter": (
            "The Neuron Base DLAMI's public parameter: prefix /aws/service/neuron/dlami/base/"
            "ubuntu-24.04 and suffix /latest/image_id (Neuron DLAMI User Guide, \"SSM Parameter "
            "Prefix\" table, deploy/environments/dlami.rst at v2.32.0). It has the Neuron driver "
            "and the EFA software; jobs run in the training image."),
    },
)
"""The native (TorchNeuron) stack of this project: Neuron SDK 2.33.0 on Trn2 and newer. Not
verified: that Neuron's apt repository serves Ubuntu 26.04 (training/Dockerfile uses the
``jammy`` suite, as Neuron's own Ubuntu 24.04 DLC does), the AMI name of the torch-neuronx
DLAMI (so the standalone nodes boot the Base DLAMI by its parameter instead), and that the
newest Base DLAMI's driver serves the 2.33.0 runtime in the image (the Base DLAMI follows the
newest SDK; no driver/runtime compatibility table was read)."""
STACK_RELEASES: dict[str, NeuronStack] = {"xla": XLA_STACK, "native": NATIVE_STACK}
"""Each Neuron training stack (:mod:`trn_ultracluster.contracts.neuron_stack`) -> its SDK
release: the DLAMI (or Base DLAMI parameter) the standalone nodes boot by default and the
virtual environment of ``runtime: dlami-venv``."""
NEURON_DLAMI_LATEST_PARAMETER = "/aws/service/neuron/dlami/pytorch-2.9/ubuntu-24.04/latest/image_id"
"""The public SSM parameter of the newest PyTorch 2.9 DLAMI (same guide, "SSM Parameter
Prefix" table; ``<prefix>/latest/image_id``). Not the default any more: no PyTorch 2.9 DLAMI
is published from SDK 2.32.0, so it stays on the last 2.31.x one (inferred from the release
notes, not read from SSM), which has no ``/opt/aws_neuronx_venv_pytorch_2_9_nxd_training``."""
AMI_ID_RE = re.compile(r"^ami-([0-9a-f]{8}|[0-9a-f]{17})\Z")
"""An AMI id: ``ami-`` and 8 or 17 hexadecimal characters (EC2 user guide, "Resource IDs",
DOC_RESOURCE_IDS)."""
NEURON_DLAMI_ROOT_DEVICE = "/dev/sda1"
"""Root device of the Ubuntu Neuron DLAMIs: EC2 reserves ``/dev/sda1`` and ``/dev/xvda`` for
root volumes (EC2 user guide, "Device names for volumes on Amazon EC2 instances"), and
Ubuntu-based images use ``/dev/sda1``; Hugging Face's build of its Neuron AMI on the Ubuntu
Neuron DLAMI maps ``/dev/sda1`` to a 512 GB root volume (huggingface/optimum-neuron
``infrastructure/ami/hcl2-files/build.pkr.hcl``). Not verified with DescribeImages (no AWS
account here)."""
ROOT_DEVICE_RE = re.compile(r"^/dev/[a-z][a-z0-9]*\Z")
SSM_PARAMETER_NAME_RE = re.compile(r"^/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*\Z")
SSM_PARAMETER_NAME_CHARS = 1011
SSM_PARAMETER_MAX_LEVELS = 15
"""SSM parameter names: letters, digits and ``_.-``, ``/`` between the levels of a
hierarchy (a leading ``/`` for hierarchical names), at most fifteen levels; the 2048
characters the API reports include 1037 reserved for the ARN, which leaves 1011 (SSM API
reference, ``PutParameter``, ``Name``, DOC_SSM_PARAMETER_NAMES)."""
LINUX_PATH_RE = re.compile(r"^/[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*\Z")
"""An absolute path without spaces, quotes or shell characters (our rule: it goes into shell
scripts unquoted-safe)."""
