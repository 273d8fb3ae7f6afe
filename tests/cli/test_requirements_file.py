"""``submit --requirements``: the file is read as pip reads it, bad files are refused with the
option named, and requirements that would replace the image's Neuron stack are refused
(trn_ultracluster.cli.requirements_file, re-exported by trn_ultracluster.cli.workdir)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.requirements_file import REQUIREMENTS_CAP_BYTES, requirement_names
from trn_ultracluster.cli.workdir import (
    PROTECTED_PACKAGES,
    Requirements,
    check_requirements,
    read_requirements,
)


def req(tmp_path, text: str) -> Requirements:
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    return read_requirements(path)


def test_read_keeps_text_and_hash_of_the_bytes(tmp_path):
    path = tmp_path / "requirements.txt"
    data = "\ufeffdatasets==4.4.1  # für die Daten\n".encode()
    path.write_bytes(data)
    got = read_requirements(path)
    assert got.text == data.decode() and got.sha256 == hashlib.sha256(data).hexdigest()
    assert got.path == path


@pytest.mark.parametrize(("content", "problem"), [
    (None, "does not exist"),
    ("dir", "is a directory"),
    (b"datasets\n\x00\x01", "is not a text file (it holds NUL bytes)"),
    (b"\x89PNG\r\n\x1a\n\xff", "is not UTF-8 text (byte 0)"),
    (b"a" * (REQUIREMENTS_CAP_BYTES + 1), f"is {REQUIREMENTS_CAP_BYTES + 1} bytes; at most 16384"),
])
def test_bad_files_name_the_option(tmp_path, content, problem):
    path = tmp_path / "requirements.txt"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(CliError) as err:
        read_requirements(path)
    assert err.value.message.startswith(f"--requirements {path} ")
    assert problem in err.value.message and err.value.fix
    assert err.value.exit_code == ExitCode.USAGE


def test_names_read_as_pip_reads_them(tmp_path):
    text = "\n".join([
        "# a comment",
        "",
        "--index-url https://pypi.org/simple",
        "--extra-index-url=https://pip.repos.neuron.amazonaws.com",
        "-f ./wheels",
        "--pre",
        "Transformers[torch]==5.23.0 ; python_version >= '3.11'  # trailing comment",
        "datasets \\",
        "  >=4.0",
        "numpy==2.4.6 --hash=sha256:" + "0" * 64,
        "my_lib @ https://example.com/my_lib-1.0-py3-none-any.whl",
        "https://example.com/files/Some.Pkg-2.0-py3-none-any.whl",
        "./local/pkg",
        "git+https://github.com/org/repo@v1#egg=repo_pkg",
        "sdist_pkg-1.0.tar.gz",
    ])
    got = [(n, name) for n, _, name in requirement_names(req(tmp_path, text))]
    assert got == [(7, "transformers"), (8, "datasets"), (10, "numpy"), (11, "my-lib"),
                   (12, "some-pkg"), (13, None), (14, "repo-pkg"), (15, "sdist-pkg")]


@pytest.mark.parametrize("line", ["-e .", "--editable ./pkg",
                                  "-e git+https://github.com/org/repo#egg=repo_pkg"])
def test_editable_lines_are_refused(tmp_path, line):
    """pip writes an editable install as a .pth file, which Python does not read from a
    PYTHONPATH entry (Python docs, site), where the job puts the shared install."""
    with pytest.raises(CliError) as err:
        requirement_names(req(tmp_path, f"datasets\n{line}\n"))
    assert f"line 2: {line!r} is an editable install" in err.value.message
    assert ".pth" in err.value.message and "without -e" in err.value.fix


def test_allowed_requirements_pass(tmp_path):
    check_requirements(req(tmp_path, "transformers==5.23.0\ndatasets\naccelerate>=1.0\n./pkg\n"))


@pytest.mark.parametrize("line", [
    "torch==2.5.0", "Torch_NeuronX>=2.9", "neuronx-cc", "torch-xla[pallas]",
    "torch @ https://download.pytorch.org/whl/cpu/torch-2.5.0-cp312-none-linux_x86_64.whl",
    "https://download.pytorch.org/whl/cpu/torch-2.5.0%2Bcpu-cp312-cp312-linux_x86_64.whl",
    "git+https://github.com/aws-neuron/neuronx-distributed#egg=neuronx_distributed",
    "nki==0.7.0 ; sys_platform == 'linux'",
])
def test_protected_packages_are_refused(tmp_path, line):
    r = req(tmp_path, f"datasets\n{line}\n")
    with pytest.raises(CliError) as err:
        check_requirements(r)
    assert f"line 2 {line!r} would replace" in err.value.message
    msg = err.value.message
    assert "built and tested together with the Neuron compiler, runtime and driver" in msg
    assert "drop the line" in err.value.fix
    assert "training_image.user_dockerfile" in err.value.fix


def test_every_refused_line_in_one_error(tmp_path):
    with pytest.raises(CliError) as err:
        check_requirements(req(tmp_path, "torchvision==0.24\ntqdm\ntorchaudio\n"))
    msg = err.value.message
    assert ("line 1 'torchvision==0.24'; line 3 'torchaudio' would replace torchaudio, "
            "torchvision") in msg
    assert "torchaudio, torchvision: built for exactly one torch release" in msg


def test_protected_names_are_canonical():
    from packaging.utils import canonicalize_name

    assert all(canonicalize_name(n) == n for n in PROTECTED_PACKAGES)
    assert {"torch", "torch-neuronx", "torch-xla", "neuronx-cc", "nki", "libneuronxla",
            "neuronx-distributed", "neuronx-distributed-training", "torchvision",
            "torchaudio"} == PROTECTED_PACKAGES


@pytest.mark.parametrize("line", ["-r other.txt", "-rother.txt", "--requirement=other.txt",
                                  "--constraint other.txt", "-c other.txt"])
def test_included_files_are_refused(tmp_path, line):
    with pytest.raises(CliError) as err:
        check_requirements(req(tmp_path, f"datasets\n{line}\n"))
    msg = err.value.message
    assert f"line 2: {line!r} refers to another file; the job carries only this one" in msg
    assert "copy the lines of other.txt into requirements.txt" in err.value.fix


def test_a_line_pip_cannot_read(tmp_path):
    with pytest.raises(CliError) as err:
        check_requirements(req(tmp_path, "numpy=2.4\n"))
    assert "line 1: 'numpy=2.4' is not a requirement pip can read" in err.value.message
    assert "PEP 508" in err.value.fix


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_device_is_refused_without_reading_it(tmp_path, kind):
    """A FIFO would block the read and /dev/zero never end it: refused by its type."""
    import os

    path = tmp_path / "reqs"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    with pytest.raises(CliError) as err:
        read_requirements(path)
    assert f"--requirements {path} is not a regular file" in err.value.message


def test_the_hash_is_of_the_files_bytes_crlf_included(tmp_path):

    path = tmp_path / "requirements.txt"
    path.write_bytes(b"numpy==2.4.6\r\ntqdm\r\n")
    assert read_requirements(path).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_fifo_trnignore_is_refused(tmp_path):
    import os

    from trn_ultracluster.cli.workdir import pack_workdir

    (tmp_path / "train.py").write_text("print(1)\n")
    os.mkfifo(tmp_path / ".trnignore")
    with pytest.raises(CliError) as err:
        pack_workdir(tmp_path)
    assert ".trnignore" in err.value.message and "not a regular file" in err.value.message
