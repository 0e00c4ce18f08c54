"""`bbrowse put`, `rm-file`, `mkdir`, `mv`, `chmod`, `zip` against a real service, run as a user runs them.

"The instance" is a fresh directory of the module's session (`session_area`: a session's sandbox sees none of
this machine's directories), checked on disk through the session's folder; local files stay in tmp_path.
All on the service with no Chromium: no command here uses a session's browser.
"""

from __future__ import annotations

import io
import os
import secrets
import stat
import zipfile
from pathlib import Path

import pytest
from cli_support import BBROWSE, PtyProcess, assert_one_line_error, bb_here, cli_env
from conftest import session_area


@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the module, on the service with no Chromium (a Chromium start saved)."""
    return browserless_module_session_id


@pytest.fixture
def remote(browserless_service, session_id) -> Path:
    """A fresh directory of the module's session: str() is the path inside, what a command is given; file
    operations act on the same files from outside (conftest.session_area)."""
    return session_area(browserless_service, session_id, f"t-{secrets.token_hex(4)}")


def printed(result) -> list[str]:
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b"", result.stderr  # no progress bar when stderr is not a terminal
    return result.stdout.decode().splitlines()


def make_tree(root: Path) -> Path:
    (root / "site" / "css").mkdir(parents=True)
    (root / "site" / "empty").mkdir()
    (root / "site" / "index.html").write_text("<h1>hi</h1>")
    (root / "site" / "css" / "main.css").write_bytes(b"body{}" * 1000)
    script = root / "site" / "run.sh"
    script.write_text("#!/bin/sh\necho run\n")
    script.chmod(0o750)
    return root / "site"


# put ---------------------------------------------------------------------------------


def test_put_a_file_makes_parents_keeps_the_mode_and_prints_the_path(browserless_service, session_id, tmp_path, remote):
    local = tmp_path / "report.bin"
    local.write_bytes(os.urandom(300_000))
    local.chmod(0o700)
    target = remote / "deep" / "report.bin"
    assert printed(bb_here(browserless_service, "put", session_id, str(local), str(target))) == [str(target)]
    assert target.read_bytes() == local.read_bytes()
    assert stat.S_IMODE(target.stat().st_mode) == 0o700

    local.write_bytes(b"second version")  # an existing file is replaced
    assert printed(bb_here(browserless_service, "put", session_id, str(local), str(target))) == [str(target)]
    assert target.read_bytes() == b"second version"


def test_put_into_a_directory_as_cp_does(browserless_service, session_id, tmp_path, remote):
    local = tmp_path / "notes.txt"
    local.write_text("notes")
    existing = remote / "existing"
    existing.mkdir()
    put = bb_here(browserless_service, "put", session_id, str(local), str(existing))
    assert printed(put) == [str(existing / "notes.txt")]
    assert (existing / "notes.txt").read_text() == "notes"
    fresh = remote / "fresh"  # a trailing slash: inside it, made for it
    into_fresh = bb_here(browserless_service, "put", session_id, str(local), f"{fresh}/")
    assert printed(into_fresh) == [str(fresh / "notes.txt")]
    assert (fresh / "notes.txt").read_text() == "notes"


def test_put_a_directory_with_empty_dirs_and_executables(browserless_service, session_id, tmp_path, remote):
    site = make_tree(tmp_path / "local")
    target = remote / "srv" / "site"
    assert printed(bb_here(browserless_service, "put", session_id, str(site), str(target))) == [str(target)]
    assert (target / "index.html").read_text() == "<h1>hi</h1>"
    assert (target / "css" / "main.css").read_bytes() == b"body{}" * 1000
    assert (target / "empty").is_dir() and not any((target / "empty").iterdir())
    assert stat.S_IMODE((target / "run.sh").stat().st_mode) == 0o750
    # again, into the parent that now exists: lands as srv/site (the same place), content replaced
    (site / "index.html").write_text("<h1>v2</h1>")
    assert printed(bb_here(browserless_service, "put", session_id, str(site), str(remote / "srv"))) == [str(target)]
    assert (target / "index.html").read_text() == "<h1>v2</h1>"


def test_put_errors(browserless_service, session_id, tmp_path, remote):
    local = tmp_path / "a.txt"
    local.write_text("a")
    missing = bb_here(browserless_service, "put", session_id, str(tmp_path / "nope"), str(remote / "x"))
    assert "does not exist" in assert_one_line_error(missing, "usage", exit_code=2)
    relative = bb_here(browserless_service, "put", session_id, str(local), "relative/a.txt")
    assert "path" in assert_one_line_error(relative, "bad_request", 400)
    blocker = remote / "blocker"
    blocker.write_text("a file where a directory should be")
    put = bb_here(browserless_service, "put", session_id, str(local), str(blocker / "a.txt"))
    assert_one_line_error(put, "conflict", 409)


def test_put_shows_a_progress_bar_on_a_terminal(browserless_service, session_id, tmp_path, remote):
    local = tmp_path / "big.bin"
    local.write_bytes(os.urandom(8 * 1024 * 1024))
    target = remote / "big-remote.bin"
    proc = PtyProcess([*BBROWSE, "put", session_id, str(local), str(target)], cli_env(browserless_service), cols=120)
    try:
        proc.expect(rb"big\.bin \xe2\x86\x92 ")  # the bar's description: "big.bin → <target>"
        proc.expect(target.name.encode() + rb"\r?\n")  # then the path written
        assert proc.wait() == 0
    finally:
        proc.close()
    assert target.read_bytes() == local.read_bytes()


# rm-file, mkdir, mv, chmod -------------------------------------------------------------


def test_rm_file_deletes_files_and_directories_only_with_r(browserless_service, session_id, remote):
    one, two = remote / "one.txt", remote / "two.txt"
    one.write_text("1")
    two.write_text("2")
    folder = make_tree(remote / "tree")
    result = bb_here(browserless_service, "rm-file", session_id, str(one), str(remote / "missing"), str(two))
    assert result.returncode == 1
    assert result.stdout.decode().split() == [str(one), str(two)]  # the others still deleted
    assert "missing" in assert_one_line_error(result, "not_found", 404)
    assert not one.exists() and not two.exists()

    refused = bb_here(browserless_service, "rm-file", session_id, str(folder))
    assert "add -r" in assert_one_line_error(refused, "bad_request", 400)
    assert folder.is_dir()
    assert printed(bb_here(browserless_service, "rm-file", session_id, "-r", str(folder))) == [str(folder)]
    assert not folder.exists()


def test_mkdir_with_parents_and_mode(browserless_service, session_id, remote):
    target = remote / "a" / "b" / "c"
    assert printed(bb_here(browserless_service, "mkdir", session_id, str(target), "--mode", "700")) == []
    assert target.is_dir() and stat.S_IMODE(target.stat().st_mode) == 0o700
    assert printed(bb_here(browserless_service, "mkdir", session_id, str(target))) == []  # already there: fine
    bad = bb_here(browserless_service, "mkdir", session_id, str(remote / "d"), "--mode", "rwx")
    assert "octal" in assert_one_line_error(bad, "usage", exit_code=2)
    (remote / "file").write_text("x")
    assert_one_line_error(bb_here(browserless_service, "mkdir", session_id, str(remote / "file")), "conflict", 409)


def test_mv_renames_and_refuses_to_overwrite_unless_forced(browserless_service, session_id, remote):
    src, dst = remote / "src.txt", remote / "dst.txt"
    src.write_text("new")
    dst.write_text("old")
    refused = bb_here(browserless_service, "mv", session_id, str(src), str(dst))
    assert_one_line_error(refused, "conflict", 409)
    assert src.read_text() == "new" and dst.read_text() == "old"
    assert printed(bb_here(browserless_service, "mv", session_id, str(src), str(dst), "--force")) == []
    assert not src.exists() and dst.read_text() == "new"
    assert printed(bb_here(browserless_service, "mv", session_id, str(dst), str(remote / "moved.txt"))) == []
    assert (remote / "moved.txt").read_text() == "new" and not dst.exists()
    gone = bb_here(browserless_service, "mv", session_id, str(remote / "gone"), str(src))
    assert_one_line_error(gone, "not_found", 404)


def test_chmod(browserless_service, session_id, remote):
    target = remote / "run.sh"
    target.write_text("#!/bin/sh\n")
    assert printed(bb_here(browserless_service, "chmod", session_id, "755", str(target))) == []
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert_one_line_error(bb_here(browserless_service, "chmod", session_id, "999", str(target)), "usage", exit_code=2)


# zip -----------------------------------------------------------------------------------


def test_zip_to_a_file_to_stdout_and_by_default_here(browserless_service, session_id, tmp_path, remote):
    site = make_tree(remote)
    out = tmp_path / "out.zip"
    assert printed(bb_here(browserless_service, "zip", session_id, str(site), "-o", str(out))) == [str(out)]
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        assert {"index.html", "css/main.css", "run.sh"} <= {n.rstrip("/") for n in names}
        assert archive.read("css/main.css") == b"body{}" * 1000

    piped = bb_here(browserless_service, "zip", session_id, str(site), "-o", "-")
    assert piped.returncode == 0 and piped.stderr == b""
    assert zipfile.ZipFile(io.BytesIO(piped.stdout)).read("index.html") == b"<h1>hi</h1>"

    here = tmp_path / "here"
    here.mkdir()
    default = bb_here(browserless_service, "zip", session_id, str(site), cwd=here)
    assert printed(default) == ["site.zip"] and zipfile.is_zipfile(here / "site.zip")

    assert_one_line_error(bb_here(browserless_service, "zip", session_id, str(remote / "none"), "-o", str(out)),
                          "not_found", 404)
    assert zipfile.is_zipfile(out)  # a failed zip leaves the earlier file alone
    no_dir = bb_here(browserless_service, "zip", session_id, str(site), "-o", str(tmp_path / "no" / "such" / "x.zip"))
    assert "no such directory" in assert_one_line_error(no_dir, "usage", exit_code=2)


def test_help_has_examples(browserless_service):
    for command in ("put", "rm-file", "mkdir", "mv", "chmod", "zip"):
        result = bb_here(browserless_service, command, "--help")
        assert result.returncode == 0
        assert b"Examples:" in result.stdout and f"bbrowse {command} ID".encode() in result.stdout
