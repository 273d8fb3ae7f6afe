"""A non-editable install (``pip install .``, as on a login node or in an image) works: the
wheel holds the whole package tree, every directory of modules is a regular package, and the
installed ``trn-ultracluster`` runs from another directory with every module importable.

No network: the wheel is built by this interpreter's setuptools (``--no-build-isolation``;
pip checks it meets ``build-system.requires``) from a copy of the files a commit would hold
(``git ls-files``: tracked and untracked, not ignored), so the checkout gets no ``build/`` or
egg-info. A fresh venv (``--without-pip``; this interpreter's pip installs into it with
``--python``) sees the project's dependencies through a ``.pth`` line naming this
interpreter's site-packages. Python does not scan a directory added by a ``.pth`` line for
``.pth`` files, so the editable install's finder there (``__editable__.trn_ultracluster-*.pth``)
stays off: the ``venv`` fixture checks that the fresh venv cannot import the project before
the wheel is installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow  # about 6 s: a wheel build, a venv, every module imported

PACKAGE = "trn_ultracluster"
PLANTED_PYC = (f"{PACKAGE}/__pycache__/planted.cpython-311.pyc",
               f"{PACKAGE}/cli/__pycache__/planted.cpython-311.pyc")
"""Bytecode as a developer's tree has it; none of it may reach the wheel."""

IMPORT_ALL = """
import importlib, json, pkgutil, sys
import trn_ultracluster
files = {"trn_ultracluster": trn_ultracluster.__file__}
for info in pkgutil.walk_packages(trn_ultracluster.__path__, "trn_ultracluster."):
    if not info.name.endswith(".__main__"):  # importing __main__ runs the CLI
        files[info.name] = importlib.import_module(info.name).__file__
with open(sys.argv[1], "w") as out:
    json.dump(files, out)
"""
"""Imports every module pkgutil finds in the installed package; writes module -> file."""


class Wheel(NamedTuple):
    path: Path
    package_files: list[str]
    """Files under trn_ultracluster/ in the repository: what the wheel must hold."""


def run(args: list, cwd: Path) -> subprocess.CompletedProcess:
    """Run in ``cwd`` without PYTHONPATH (``make`` sets one) or the user site."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH")}
    env["PYTHONNOUSERSITE"] = "1"
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def site_packages(python: Path) -> Path:
    out = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
              cwd=python.parent)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip())


def source_files() -> list[str]:
    """Repository files a commit would hold (tracked or untracked, not ignored, present)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=REPO_ROOT, capture_output=True, check=True, timeout=60).stdout
    return sorted(p for p in out.decode().split("\0") if p and (REPO_ROOT / p).is_file())


def python_files(files: list[str]) -> tuple[list[PurePosixPath], set[PurePosixPath]]:
    """The ``.py`` files, and the packages (directories with an ``__init__.py``)."""
    py = [PurePosixPath(f) for f in files if f.endswith(".py")]
    return py, {p.parent for p in py if p.name == "__init__.py"}


def modules_of(files: list[str]) -> set[str]:
    """Module names of the ``.py`` files that lie in a package."""
    py, packages = python_files(files)
    return {".".join(p.with_suffix("").parts).removesuffix(".__init__")
            for p in py if p.parent in packages}


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("packaging")
    assert not path.resolve().is_relative_to(REPO_ROOT)
    return path


@pytest.fixture(scope="module")
def wheel(work) -> Wheel:
    """The wheel ``pip install .`` builds."""
    files = source_files()
    src = work / "src"
    for rel in files:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / rel, src / rel)
    for rel in PLANTED_PYC:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(b"planted")
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                 "--check-build-dependencies", "--no-index", "--disable-pip-version-check", "-q",
                 src, "-w", work / "dist"], cwd=work)
    assert built.returncode == 0, built.stderr[-3000:]
    (path,) = (work / "dist").glob("*.whl")
    return Wheel(path, [f for f in files if f.startswith(f"{PACKAGE}/")])


@pytest.fixture(scope="module")
def venv(wheel, work) -> Path:
    """A fresh venv with the wheel installed (not editable) and the project's dependencies."""
    path = work / "venv"
    made = run([sys.executable, "-m", "venv", "--without-pip", path], cwd=work)
    assert made.returncode == 0, made.stderr
    python = path / "bin" / "python"
    deps = sysconfig.get_paths()["purelib"]
    (site_packages(python) / "project-dependencies.pth").write_text(f"{deps}\n")
    before = run([python, "-c", f"import {PACKAGE}"], cwd=work)
    assert f"No module named '{PACKAGE}'" in before.stderr, (
        f"the fresh venv imports the project before it is installed: {before.stderr[-2000:]}")
    installed = run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps",
                     "--no-index", "--disable-pip-version-check", "-q", wheel.path], cwd=work)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return path


@pytest.fixture(scope="module")
def elsewhere(work) -> Path:
    """A working directory outside the repository."""
    path = work / "elsewhere"
    path.mkdir()
    return path


def test_wheel_holds_the_whole_package_tree(wheel):
    """Modules and the files the code reads beside itself (lifecycle scripts); no bytecode;
    the console script."""
    zf = zipfile.ZipFile(wheel.path)
    names = {n for n in zf.namelist() if ".dist-info/" not in n}
    assert sorted(set(wheel.package_files) - names) == [], "missing from the wheel"
    assert sorted(names - set(wheel.package_files)) == [], "in the wheel, not in the repository"
    (entry_points,) = [n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")]
    assert "trn-ultracluster = trn_ultracluster.cli.main:main" in zf.read(entry_points).decode()


def test_every_directory_of_modules_is_a_package():
    """No implicit namespace package: a ``.py`` file outside a package must be a script shipped
    as a file (it starts with ``#!``), never a module the package imports."""
    py, packages = python_files([f for f in source_files() if f.startswith(f"{PACKAGE}/")])
    stray = [str(p) for p in py
             if p.parent not in packages and not (REPO_ROOT / p).read_bytes().startswith(b"#!")]
    assert stray == [], f"add an __init__.py to the directories of {stray}"


def test_installed_cli_runs_from_another_directory(venv, elsewhere):
    """The console script and ``python -m`` of the install print the same help as the
    repository's CLI (its commands and exit codes)."""
    repo = run([sys.executable, "-m", PACKAGE, "--help"], cwd=REPO_ROOT)
    assert repo.returncode == 0 and "exit codes:" in repo.stdout, repo.stderr
    for command in ([venv / "bin" / "trn-ultracluster"], [venv / "bin" / "python", "-m", PACKAGE]):
        got = run([*command, "--help"], cwd=elsewhere)
        assert (got.returncode, got.stdout) == (0, repo.stdout), got.stderr[-2000:]


def test_every_module_imports_from_the_install(wheel, venv, elsewhere):
    """Every module of the installed package imports (the CDK constructs too) from the fresh
    venv, not from the repository; every file of the wheel is installed."""
    site = site_packages(venv / "bin" / "python").resolve()
    report = elsewhere / "modules.json"
    got = run([venv / "bin" / "python", "-c", IMPORT_ALL, report], cwd=elsewhere)
    assert got.returncode == 0, got.stderr[-3000:]
    files = json.loads(report.read_text())
    assert {m: f for m, f in files.items() if not Path(f).resolve().is_relative_to(site)} == {}
    assert sorted(files) == sorted(modules_of(wheel.package_files) - {f"{PACKAGE}.__main__"})
    assert [f for f in wheel.package_files if not (site / f).is_file()] == []
