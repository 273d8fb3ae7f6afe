"""``submit --workdir``: the snapshot's archive is deterministic, leaves out what users never
ship, keeps executable bits and links inside the directory, refuses bad directories with
errors that name the fix, and names the program's problems (trn_ultracluster.cli.workdir)."""

from __future__ import annotations

import builtins
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.workdir import (
    ALWAYS_EXCLUDED,
    SNAPSHOT_PREFIX,
    WORKDIR_CAP_BYTES,
    Snapshot,
    check_program,
    pack_workdir,
)


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def members(snapshot: Snapshot) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(snapshot.archive) as tar:
        return {m.name: m for m in tar.getmembers()}


CODE = {"train.py": "import model\n", "model/__init__.py": "X = 1\n", "conf/a.yaml": "lr: 1\n"}


@pytest.fixture
def packed():
    made: list[Snapshot] = []

    def pack(source: Path, **kw) -> Snapshot:
        made.append(pack_workdir(source, **kw))
        return made[-1]

    yield pack
    for snapshot in made:
        snapshot.cleanup()


def test_same_files_same_hash_whatever_the_times_and_place(tmp_path, packed):
    one = make_tree(tmp_path / "one", CODE)
    first = packed(one)
    two = tmp_path / "elsewhere" / "two"
    shutil.copytree(one, two)  # new inodes, another path
    os.utime(two / "train.py", (1, 1))
    second = packed(two)
    assert first.sha256 == second.sha256
    assert first.archive.read_bytes() == second.archive.read_bytes()
    assert first.key == f"{SNAPSHOT_PREFIX}/{first.sha256}.tar.gz"
    assert first.short == first.sha256[:12]
    assert (first.files, first.bytes) == (3, sum(len(v) for v in CODE.values()))
    (two / "conf" / "a.yaml").write_text("lr: 2\n")  # one byte changed
    assert packed(two).sha256 != first.sha256


def test_archive_headers_carry_no_time_owner_or_umask(tmp_path, packed):
    src = make_tree(tmp_path / "src", {**CODE, "run.sh": "#!/bin/sh\n", "secret.txt": "s"})
    (src / "run.sh").chmod(0o700)
    (src / "secret.txt").chmod(0o600)
    (src / "train.py").chmod(0o664)
    snapshot = packed(src)
    raw = snapshot.archive.read_bytes()
    assert raw[3] == 0 and raw[4:8] == b"\0\0\0\0"  # gzip FLG: no file name; MTIME 0 (RFC 1952)
    got = members(snapshot)
    assert list(got) == ["conf", "conf/a.yaml", "model", "model/__init__.py", "run.sh",
                         "secret.txt", "train.py"]
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in got.values()} == {(0, 0, 0, "", "")}
    modes = {name: m.mode for name, m in got.items()}
    assert modes["run.sh"] == 0o755 and modes["conf"] == 0o755  # the executable bit is kept
    assert modes["secret.txt"] == modes["train.py"] == 0o644  # like git: 644 or 755


def test_built_in_exclusions_and_virtual_environments(tmp_path, packed):
    src = make_tree(tmp_path / "src", {
        **CODE,
        ".git/HEAD": "ref", "sub/.git": "gitdir: ../.git/modules/sub",  # worktree file
        "model/__pycache__/m.cpython-312.pyc": b"\0", "stale.pyc": b"\0",
        ".venv/lib/x.py": "", "myenv/pyvenv.cfg": "home = /usr", "myenv/lib/y.py": "",
        "conda/conda-meta/history": "", "conda/bin/python": "",
        ".ipynb_checkpoints/n.ipynb": "", ".mypy_cache/m": "", ".pytest_cache/p": "",
        "env/agent.py": "class Env: ...",  # an RL package named env: not a venv
    })
    got = set(members(packed(src)))
    assert got == {"conf", "conf/a.yaml", "model", "model/__init__.py", "train.py", "sub",
                   "env", "env/agent.py"}
    assert ".git" in ALWAYS_EXCLUDED and "__pycache__/" in ALWAYS_EXCLUDED


def test_trnignore_patterns_negation_and_directories(tmp_path, packed):
    src = make_tree(tmp_path / "src", {
        **CODE,
        ".trnignore": "# big things\n*.ckpt\n!keep.ckpt\noutputs/\n/root_only.txt\n"
                      "logs/*\n!logs/keep.log\n!.git\n!__pycache__/\n",
        "a.ckpt": "x", "sub/b.ckpt": "x", "keep.ckpt": "k", "sub/keep.ckpt": "k",
        "outputs/run1/x.bin": "x", "model/outputs/y.bin": "y",
        "root_only.txt": "r", "sub/root_only.txt": "kept: the pattern is anchored",
        "logs/a.log": "a", "logs/keep.log": "k",
        ".git/HEAD": "ref", "__pycache__/x.pyc": b"\0",
    })
    got = {name for name, m in members(packed(src)).items() if m.isfile()}
    assert got == {".trnignore", "conf/a.yaml", "model/__init__.py", "train.py", "keep.ckpt",
                   "sub/keep.ckpt", "sub/root_only.txt", "logs/keep.log"}


def test_links_inside_are_kept_as_links_and_not_followed(tmp_path, packed):
    src = make_tree(tmp_path / "src", CODE)
    (src / "latest.yaml").symlink_to("conf/a.yaml")
    (src / "alias").symlink_to("model", target_is_directory=True)
    (src / "dangling").symlink_to("gone.txt")
    os.mkfifo(src / "pipe")  # no content to ship: left out
    got = members(packed(src))
    assert got["latest.yaml"].issym() and got["latest.yaml"].linkname == "conf/a.yaml"
    assert got["alias"].issym() and not any(n.startswith("alias/") for n in got)
    assert got["dangling"].issym() and "pipe" not in got


@pytest.mark.parametrize("target",
                         ["/etc/hostname", "../../outside.txt", "../conf/../../outside.txt"])
def test_links_out_of_the_directory_are_refused(tmp_path, target):
    src = make_tree(tmp_path / "src", CODE)
    (tmp_path / "outside.txt").write_text("o")
    (src / "conf" / "link.txt").symlink_to(target)
    with pytest.raises(CliError) as err:
        pack_workdir(src)
    assert f"symbolic link conf/link.txt -> {target} points outside" in err.value.message
    assert ".trnignore" in err.value.fix


def test_a_link_out_listed_in_trnignore_is_left_out(tmp_path, packed):
    src = make_tree(tmp_path / "src", {**CODE, ".trnignore": "data/\n"})
    (tmp_path / "datasets").mkdir()
    (src / "data").symlink_to(tmp_path / "datasets", target_is_directory=True)
    assert "data" not in members(packed(src))


def test_over_the_cap_names_the_five_largest_files(tmp_path):
    sizes = {"w/a.bin": 900, "w/b.bin": 800, "c.bin": 700, "d.bin": 600, "e.bin": 500,
             "f.bin": 400, "train.py": 10}
    src = make_tree(tmp_path / "src", {k: b"x" * v for k, v in sizes.items()})
    with pytest.raises(CliError) as err:
        pack_workdir(src, cap_bytes=2048)
    msg = err.value.message
    assert msg.startswith(f"--workdir {src} holds 3.8 KiB in 7 files after exclusions, over "
                          "the 2.0 KiB cap; largest: w/a.bin (900 B), w/b.bin (800 B), "
                          "c.bin (700 B), d.bin (600 B), e.bin (500 B)")
    assert "f.bin" not in msg and ".trnignore" in err.value.fix
    assert err.value.exit_code == ExitCode.USAGE
    assert WORKDIR_CAP_BYTES == 1024**3


def test_missing_directory_and_file_instead(tmp_path):
    with pytest.raises(CliError, match=r"--workdir .*/nope does not exist"):
        pack_workdir(tmp_path / "nope")
    (tmp_path / "train.py").write_text("")
    with pytest.raises(CliError) as err:
        pack_workdir(tmp_path / "train.py")
    assert "is a file; it must be the directory of your code" in err.value.message
    assert err.value.fix == f"pass the directory that holds it: --workdir {tmp_path}"


def test_nothing_left_after_exclusions(tmp_path):
    src = make_tree(tmp_path / "src", {".git/HEAD": "x", "__pycache__/a.pyc": b"\0",
                                       "notes.md": "n", ".trnignore": "*\n"})
    with pytest.raises(CliError, match="has no file to ship after exclusions"):
        pack_workdir(src)


def test_unreadable_directory(tmp_path, monkeypatch):
    """Through a refusing os.scandir: the tests run as root, which chmod does not stop."""
    src = make_tree(tmp_path / "src", {**CODE, "private/key.txt": "k"})
    real = os.scandir

    def scandir(path):
        if str(path).endswith("private"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(CliError) as err:
        pack_workdir(src)
    expected = f"cannot read the directory {src.resolve()}/private (permission denied)"
    assert expected in err.value.message
    assert "chmod -R u+rX" in err.value.fix and ".trnignore" in err.value.fix


def test_unreadable_file(tmp_path, monkeypatch):
    src = make_tree(tmp_path / "src", {**CODE, "secret.txt": "s"})
    real = builtins.open

    def fake_open(file, *args, **kwargs):
        if str(file).endswith("secret.txt"):
            raise PermissionError(13, "Permission denied", str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    with pytest.raises(CliError, match=r"cannot read the file .*/secret.txt \(permission denied\)"):
        pack_workdir(src)


@pytest.mark.parametrize("content", [b"!\n", b"\xff\xfe*.ckpt\n"])
def test_bad_trnignore(tmp_path, content):
    src = make_tree(tmp_path / "src", {**CODE, ".trnignore": content})
    with pytest.raises(CliError, match=r"\.trnignore"):
        pack_workdir(src)


def test_program_in_the_snapshot(tmp_path, packed, monkeypatch):
    src = make_tree(tmp_path / "src", {**CODE, "tools/run.py": "", ".trnignore": "*.ckpt.py\n"})
    snapshot = packed(src)
    for program in ("train.py", "./tools/run.py", str(src / "tools" / "run.py")):
        check_program(snapshot, program)
    check_program(snapshot, "tools/../train.py")
    with pytest.raises(CliError, match="is outside --workdir"):
        check_program(snapshot, str(tmp_path / "elsewhere.py"))
    monkeypatch.chdir(tmp_path)  # a path given relative to the current directory
    with pytest.raises(CliError) as err:
        check_program(snapshot, "src/train.py")
    assert err.value.message == f"PROGRAM src/train.py is not a file in --workdir {snapshot.source}"
    assert err.value.fix == "PROGRAM paths are relative to --workdir: give train.py"


@pytest.mark.parametrize("program", ["../train.py", "/etc/hostname"])
def test_program_outside_the_workdir(tmp_path, packed, program):
    snapshot = packed(make_tree(tmp_path / "src", CODE))
    with pytest.raises(CliError, match=f"PROGRAM {program} is outside --workdir"):
        check_program(snapshot, program)


def test_program_excluded_names_the_rule(tmp_path, packed):
    src = make_tree(tmp_path / "src", {
        **CODE, ".trnignore": "scratch.py\nexperiments/\n", "scratch.py": "",
        "experiments/try.py": "", "venv2/pyvenv.cfg": "", "venv2/bin/tool.py": ""})
    snapshot = packed(src)
    with pytest.raises(CliError) as err:
        check_program(snapshot, "scratch.py")
    assert 'excluded by .trnignore pattern "scratch.py"' in err.value.message
    assert err.value.fix.endswith("or add `!scratch.py` after it")
    with pytest.raises(CliError) as err:
        check_program(snapshot, "experiments/try.py")
    assert 'pattern "experiments/" on its directory experiments/' in err.value.message
    assert "cannot be re-included" in err.value.fix
    with pytest.raises(CliError, match="the virtual environment venv2/ around it"):
        check_program(snapshot, "venv2/bin/tool.py")
    with pytest.raises(CliError, match="is a directory"):
        check_program(snapshot, "model")


# ---------------------------------------------------------------------------- upload (moto S3)

BUCKET = "trn-data-bucket"


@pytest.fixture
def s3_session():
    """A boto3 session on moto's S3 with the data bucket."""
    import boto3
    import moto

    from tests.cli.helpers import REGION

    with moto.mock_aws():
        session = boto3.Session(region_name=REGION)
        session.client("s3").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield session


def keys(session) -> list[str]:
    listed = session.client("s3").list_objects_v2(Bucket=BUCKET)
    return [o["Key"] for o in listed.get("Contents", [])]


def test_upload_once_with_the_sha256_checksum(tmp_path, packed, s3_session, capsys):
    import base64

    from trn_ultracluster.cli.workdir import upload_snapshot

    snapshot = packed(make_tree(tmp_path / "src", CODE))
    sent: list[dict] = []
    s3_session.events.register_first(
        "before-send.s3", lambda request, **kw: sent.append(
            {"op": kw["event_name"].rsplit(".", 1)[-1], **request.headers}))
    assert upload_snapshot(s3_session, BUCKET, snapshot) is True
    assert upload_snapshot(s3_session, BUCKET, snapshot) is False  # content-addressed: skipped
    assert [s["op"] for s in sent] == ["HeadObject", "PutObject", "HeadObject"]  # one request
    checksum = base64.b64encode(bytes.fromhex(snapshot.sha256))
    assert sent[1]["x-amz-checksum-sha256"] == checksum  # S3 refuses other bytes
    body = s3_session.client("s3").get_object(Bucket=BUCKET, Key=snapshot.key)["Body"].read()
    assert body == snapshot.archive.read_bytes()
    assert capsys.readouterr().err == ""  # a fast upload shows no progress bar


def test_progress_bar_for_slow_uploads(tmp_path, packed, s3_session, capsys, monkeypatch):
    from trn_ultracluster.cli import workdir

    monkeypatch.setattr(workdir, "PROGRESS_DELAY_S", 0.0)  # as if the upload were slow
    snapshot = packed(make_tree(tmp_path / "src", CODE))
    workdir.upload_snapshot(s3_session, BUCKET, snapshot)
    assert f"s3://{BUCKET}/{snapshot.key}" in capsys.readouterr().err


def test_upload_to_a_missing_bucket(tmp_path, packed, s3_session):
    from trn_ultracluster.cli.workdir import upload_snapshot

    snapshot = packed(make_tree(tmp_path / "src", CODE))
    with pytest.raises(CliError) as err:
        upload_snapshot(s3_session, "gone-bucket", snapshot)
    assert err.value.exit_code == ExitCode.STACK
    assert "bucket gone-bucket does not exist" in err.value.message


def read_some_then(action):
    """A before-send handler that sends part of the body, as a slow network would, then
    does ``action(body)``."""

    def handler(request, **kw):
        request.body.read(100)
        return action(request.body)

    return handler


def test_a_failure_mid_upload_leaves_no_object(tmp_path, packed, s3_session, monkeypatch):
    from botocore.exceptions import ConnectionClosedError

    from trn_ultracluster.cli.workdir import upload_snapshot

    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # no retries
    snapshot = packed(make_tree(tmp_path / "src", {**CODE, "w.bin": os.urandom(4096)}))

    def drop(body):
        raise ConnectionClosedError(endpoint_url="https://s3")

    s3_session.events.register_first("before-send.s3.PutObject", read_some_then(drop))
    with pytest.raises(CliError) as err:
        upload_snapshot(s3_session, BUCKET, snapshot, progress=False)
    assert err.value.exit_code == ExitCode.AWS
    assert keys(s3_session) == []


def test_ctrl_c_mid_upload_leaves_no_object(tmp_path, packed, s3_session, request):
    """SIGINT while the body is being sent: s3transfer cancels the transfer and its
    InterruptReader fails the rest of the body, so the request never completes. With
    Python's own SIGINT handler, as in a terminal, also when the test run was started with
    SIGINT ignored (a shell's background job, ``nohup``), which Python keeps."""
    import signal
    import time

    from trn_ultracluster.cli.workdir import upload_snapshot

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    snapshot = packed(make_tree(tmp_path / "src", {**CODE, "w.bin": os.urandom(4096)}))

    def interrupt(body):
        os.kill(os.getpid(), signal.SIGINT)  # the user presses Ctrl-C
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # keep sending until the transfer stops us
            body.read(1)
            body.seek(100)
            time.sleep(0.01)
        return None  # never cancelled: moto stores the object and the test fails

    s3_session.events.register_first("before-send.s3.PutObject", read_some_then(interrupt))
    with pytest.raises(KeyboardInterrupt):
        upload_snapshot(s3_session, BUCKET, snapshot, progress=False)
    assert keys(s3_session) == []
    assert s3_session.client("s3").list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []


def test_archive_over_one_put_object(tmp_path, packed, s3_session, monkeypatch):
    from trn_ultracluster.cli import workdir

    monkeypatch.setattr(workdir, "PUT_OBJECT_MAX_BYTES", 10)
    snapshot = packed(make_tree(tmp_path / "src", CODE))
    with pytest.raises(CliError, match="over the 10 B of one S3 PutObject"):
        workdir.upload_snapshot(s3_session, BUCKET, snapshot)
    assert keys(s3_session) == []


def test_head_object_refused_is_taken_as_missing_and_the_object_is_put(
        tmp_path, packed, s3_session, monkeypatch):
    """S3 answers HeadObject of a missing key with 403 to callers without s3:ListBucket; the
    key is content-addressed, so the upload goes ahead (moto has the object after it)."""
    from trn_ultracluster.cli.workdir import upload_snapshot

    snapshot = packed(make_tree(tmp_path / "src", CODE))
    client = s3_session.client("s3")

    def refused(**_):
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "403", "Message": "Forbidden"}}, "HeadObject")

    monkeypatch.setattr(client, "head_object", refused)
    monkeypatch.setattr(s3_session, "client", lambda *a, **kw: client)
    assert upload_snapshot(s3_session, BUCKET, snapshot) is True
    assert keys(s3_session) == [snapshot.key]