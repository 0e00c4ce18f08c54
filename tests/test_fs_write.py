"""The write side of the files area, driven by the official SDK against the real service.

write_file, upload, upload_zip, create_directory, delete_file, delete_directory, move,
set_file_permissions and download_dir_zip: what each does on disk, and each error in the
contract's shapes (400 naming the field, 404, 409), with nothing written when a request is refused.
Large transfers are streamed both ways: the service's memory stays flat through a 256 MiB upload
and zip. The SDK sends fs calls to the session's VM endpoint; raw HTTP checks the control plane.
All on the service with no Chromium: nothing here uses a session's browser.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import secrets
import stat
import threading
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import kernel
import psutil
import pytest
from conftest import session_area

from bbrowse.client import BrowserClient
from bbrowse.transfer import save_stream

if TYPE_CHECKING:
    from conftest import ServiceHandle


@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the module, on the service with no Chromium (a Chromium start saved)."""
    return browserless_module_session_id


@pytest.fixture
def sdk(browserless_sdk: kernel.Kernel) -> kernel.Kernel:
    """conftest's `sdk` (a client per test, see there), on the service that holds the module's session."""
    return browserless_sdk


@pytest.fixture
def tmp_path(browserless_service: ServiceHandle, session_id: str) -> Path:
    """A fresh directory of the module's session, in place of pytest's (a session's sandbox sees no directory of
    this machine): its str() is the path inside, its file operations act on the host side (conftest.session_area)."""
    return session_area(browserless_service, session_id, f"t-{secrets.token_hex(4)}")


def _details(error: kernel.APIStatusError) -> list[str]:
    body = error.body if isinstance(error.body, dict) else {}
    return [d.get("message", "") for d in body.get("details", [])]


def _refused(call, status: int, field: str | None = None) -> kernel.APIStatusError:
    with pytest.raises(kernel.APIStatusError) as raised:
        call()
    assert raised.value.status_code == status, raised.value
    if field is not None:
        assert any(m.startswith(f"{field}:") for m in _details(raised.value)), raised.value.body
    return raised.value


def _leftovers(root: Path) -> list[Path]:
    """Temporary files of an upload that should have been removed."""
    return [p for p in root.rglob("*") if p.name.endswith(".bbrowse-part")]


# write_file -------------------------------------------------------------------------------------


def test_write_file_creates_parents_and_sets_the_mode(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "file.bin"
    data = os.urandom(300_000)
    sdk.browsers.fs.write_file(session_id, data, path=str(target), mode="600")
    assert target.read_bytes() == data
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sdk.browsers.fs.read_file(session_id, path=str(target)).read() == data


def test_write_file_replaces_keeping_the_mode(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("old")
    target.chmod(0o751)
    sdk.browsers.fs.write_file(session_id, b"#!/bin/sh\necho new\n", path=str(target))
    assert target.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    sdk.browsers.fs.write_file(session_id, b"", path=str(target), mode="0644")
    assert target.read_bytes() == b"" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize(("path", "mode", "field"), [
    ("relative/file.txt", None, "path"),
    ("/tmp/x", "999", "mode"),
    ("/tmp/x", "rw-r--r--", "mode"),
    ("/tmp/x", "64", "mode"),
])
def test_write_file_bad_input_is_400(sdk: kernel.Kernel, session_id: str, path: str, mode: str | None,
                                     field: str) -> None:
    kwargs = {"mode": mode} if mode is not None else {}
    _refused(lambda: sdk.browsers.fs.write_file(session_id, b"x", path=path, **kwargs), 400, field)


def test_write_file_where_a_directory_or_device_is_is_refused(
    sdk: kernel.Kernel, session_id: str, tmp_path: Path
) -> None:
    (tmp_path / "dir").mkdir()
    _refused(lambda: sdk.browsers.fs.write_file(session_id, b"x", path=str(tmp_path / "dir")), 409)
    (tmp_path / "plain").write_text("a file")
    _refused(lambda: sdk.browsers.fs.write_file(session_id, b"x", path=str(tmp_path / "plain" / "under")), 409)
    os.mkfifo(tmp_path / "fifo")
    _refused(lambda: sdk.browsers.fs.write_file(session_id, b"x", path=str(tmp_path / "fifo")), 400, "path")
    assert stat.S_ISFIFO((tmp_path / "fifo").stat().st_mode)
    assert _leftovers(tmp_path) == []


async def test_an_upload_cut_short_leaves_no_file(
    browserless_service: ServiceHandle, session_id: str, tmp_path: Path
) -> None:
    """The client says 10 MB and hangs up after 1 MB: the old file is untouched, no temporary file stays."""
    service = browserless_service
    target = tmp_path / "kept.txt"
    target.write_text("the old content")
    _reader, writer = await asyncio.open_connection(*service.url.removeprefix("http://").split(":"))
    head = (f"PUT /browsers/{session_id}/fs/write_file?path={target} HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {service.token}\r\nContent-Length: 10000000\r\n\r\n")
    writer.write(head.encode() + b"x" * 1_000_000)
    await writer.drain()
    deadline = time.monotonic() + 10
    while not await asyncio.to_thread(_leftovers, tmp_path):
        assert time.monotonic() < deadline, "the upload never started"
        await asyncio.sleep(0.02)
    writer.close()
    deadline = time.monotonic() + 10
    while await asyncio.to_thread(_leftovers, tmp_path):
        assert time.monotonic() < deadline, "the partial upload was not removed"
        await asyncio.sleep(0.02)
    assert target.read_text() == "the old content"


# upload -----------------------------------------------------------------------------------------


def test_upload_writes_several_files(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    one, two = os.urandom(100_000), b"second file\n"
    sdk.browsers.fs.upload(session_id, files=[
        {"file": ("one.bin", one), "dest_path": str(tmp_path / "a" / "one.bin")},
        {"file": ("two.txt", two), "dest_path": str(tmp_path / "b" / "two.txt")},
    ])
    assert (tmp_path / "a" / "one.bin").read_bytes() == one
    assert (tmp_path / "b" / "two.txt").read_bytes() == two


def test_upload_with_a_bad_destination_writes_nothing(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    good = tmp_path / "good" / "file.txt"
    _refused(lambda: sdk.browsers.fs.upload(session_id, files=[
        {"file": ("f", b"x"), "dest_path": str(good)},
        {"file": ("g", b"y"), "dest_path": "not/absolute"},
    ]), 400, "files[1][dest_path]")
    (tmp_path / "taken").mkdir()
    _refused(lambda: sdk.browsers.fs.upload(session_id, files=[
        {"file": ("f", b"x"), "dest_path": str(good)},
        {"file": ("g", b"y"), "dest_path": str(tmp_path / "taken")},
    ]), 409)
    assert not good.exists() and not good.parent.exists()
    assert _leftovers(tmp_path) == []


async def test_upload_form_errors_name_the_field(
    browserless_http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    http = browserless_http
    route = f"/browsers/{session_id}/fs/upload"
    r = await http.post(route, files={"files[0][file]": ("f", b"x")})
    assert r.status_code == 400 and r.json()["details"][0]["message"].startswith("files[0][dest_path]:"), r.text
    r = await http.post(route, files={"files[0][dest_path]": (None, str(tmp_path / "x"))})
    assert r.status_code == 400 and r.json()["details"][0]["message"].startswith("files[0][file]:"), r.text
    r = await http.post(route, data={"surprise": "1"}, files={"files[0][file]": ("f", b"x")})
    assert r.status_code == 400 and r.json()["details"][0]["message"].startswith("surprise:"), r.text
    r = await http.post(route, content=b"not a form", headers={"content-type": "application/octet-stream"})
    assert r.status_code == 400 and r.json()["code"] == "bad_request"
    r = await http.post(route, content=b"--xyz\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\ncut",
                        headers={"content-type": "multipart/form-data; boundary=xyz"})
    assert r.status_code == 400, r.text
    assert await asyncio.to_thread(lambda: list(tmp_path.iterdir())) == []


async def test_a_file_sent_before_its_destination_still_lands(
    browserless_http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    """Other clients may send the file part first: it is held aside, then moved into place."""
    http = browserless_http
    boundary = "b0und"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files[0][file]\"; filename=\"f\"\r\n\r\n"
            f"early bytes\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"files[0][dest_path]\"\r\n\r\n"
            f"{tmp_path / 'late.txt'}\r\n--{boundary}--\r\n").encode()
    r = await http.post(f"/browsers/{session_id}/fs/upload", content=body,
                        headers={"content-type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 201, r.text
    assert (tmp_path / "late.txt").read_text() == "early bytes"


# upload_zip -------------------------------------------------------------------------------------


def _zip(entries: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100755 if name.endswith(".sh") else 0o100644) << 16
            archive.writestr(info, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def test_upload_zip_extracts_into_a_new_directory(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    archive = _zip({"top.txt": b"top", "sub/dir/inner.bin": b"\x00\x01", "empty/": b"", "run.sh": b"#!/bin/sh"},
                   links={"sub/link": "dir/inner.bin"})
    dest = tmp_path / "out"
    sdk.browsers.fs.upload_zip(session_id, dest_path=str(dest), zip_file=("a.zip", archive))
    assert (dest / "top.txt").read_bytes() == b"top"
    assert (dest / "sub" / "dir" / "inner.bin").read_bytes() == b"\x00\x01"
    assert (dest / "empty").is_dir()
    assert stat.S_IMODE((dest / "run.sh").stat().st_mode) == 0o755
    assert os.readlink(dest / "sub" / "link") == "dir/inner.bin"


@pytest.mark.parametrize(("entries", "links"), [
    ({"fine.txt": b"ok", "../escaped.txt": b"evil"}, None),
    ({"fine.txt": b"ok", "a/../../escaped.txt": b"evil"}, None),
    ({"fine.txt": b"ok", "/tmp/absolute.txt": b"evil"}, None),
    ({"fine.txt": b"ok"}, {"link": "../../outside"}),
    ({"fine.txt": b"ok"}, {"link": "/etc"}),
])
def test_a_zip_entry_escaping_its_target_refuses_the_archive(
    sdk: kernel.Kernel, session_id: str, tmp_path: Path, entries: dict, links: dict | None
) -> None:
    dest = tmp_path / "target"
    _refused(lambda: sdk.browsers.fs.upload_zip(session_id, dest_path=str(dest),
                                                zip_file=("evil.zip", _zip(entries, links))), 400, "zip_file")
    assert not dest.exists()
    assert not (tmp_path / "escaped.txt").exists()
    assert not Path("/tmp/absolute.txt").exists()


def test_a_zip_cannot_write_through_an_existing_link_out(
    sdk: kernel.Kernel, session_id: str, tmp_path: Path
) -> None:
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (dest / "door").symlink_to(outside)
    _refused(lambda: sdk.browsers.fs.upload_zip(session_id, dest_path=str(dest),
                                                zip_file=("z.zip", _zip({"door/x.txt": b"x"}))), 400, "zip_file")
    assert list(outside.iterdir()) == []


def test_upload_zip_conflicts_and_garbage(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file")
    _refused(lambda: sdk.browsers.fs.upload_zip(session_id, dest_path=str(tmp_path / "file"),
                                                zip_file=("z.zip", _zip({"a": b"a"}))), 409)
    dest = tmp_path / "d"
    (dest / "sub").mkdir(parents=True)
    _refused(lambda: sdk.browsers.fs.upload_zip(session_id, dest_path=str(dest),
                                                zip_file=("z.zip", _zip({"new.txt": b"n", "sub": b"a file"}))), 409)
    assert not (dest / "new.txt").exists()
    _refused(lambda: sdk.browsers.fs.upload_zip(session_id, dest_path=str(dest),
                                                zip_file=("z.zip", b"PK not really")), 400, "zip_file")
    _refused(lambda: sdk.browsers.fs.upload_zip(session_id, dest_path="relative",
                                                zip_file=("z.zip", _zip({"a": b"a"}))), 400, "dest_path")


# directories, deletes, moves, permissions ----------------------------------------------------------


def test_create_directory(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    sdk.browsers.fs.create_directory(session_id, path=str(target), mode="700")
    assert target.is_dir() and stat.S_IMODE(target.stat().st_mode) == 0o700
    sdk.browsers.fs.create_directory(session_id, path=str(target))  # already there: fine
    (tmp_path / "f").write_text("x")
    _refused(lambda: sdk.browsers.fs.create_directory(session_id, path=str(tmp_path / "f")), 409)
    _refused(lambda: sdk.browsers.fs.create_directory(session_id, path=str(tmp_path / "f" / "g")), 409)
    _refused(lambda: sdk.browsers.fs.create_directory(session_id, path=str(tmp_path / "x"), mode="8"), 400, "mode")
    _refused(lambda: sdk.browsers.fs.create_directory(session_id, path="x/y"), 400, "path")


def test_delete_file_and_directory(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "tree" / "deep").mkdir(parents=True)
    (tmp_path / "tree" / "deep" / "g").write_text("y")
    (tmp_path / "link").symlink_to(tmp_path / "tree")
    sdk.browsers.fs.delete_file(session_id, path=str(tmp_path / "link"))  # the link, not what it points to
    assert not (tmp_path / "link").exists() and (tmp_path / "tree").is_dir()
    sdk.browsers.fs.delete_file(session_id, path=str(tmp_path / "f.txt"))
    assert not (tmp_path / "f.txt").exists()
    _refused(lambda: sdk.browsers.fs.delete_file(session_id, path=str(tmp_path / "f.txt")), 404)
    _refused(lambda: sdk.browsers.fs.delete_file(session_id, path=str(tmp_path / "tree")), 400, "path")
    (tmp_path / "h").write_text("z")
    _refused(lambda: sdk.browsers.fs.delete_directory(session_id, path=str(tmp_path / "h")), 400, "path")
    sdk.browsers.fs.delete_directory(session_id, path=str(tmp_path / "tree"))
    assert not (tmp_path / "tree").exists()
    _refused(lambda: sdk.browsers.fs.delete_directory(session_id, path=str(tmp_path / "tree")), 404)
    _refused(lambda: sdk.browsers.fs.delete_directory(session_id, path="/"), 400, "path")
    _refused(lambda: sdk.browsers.fs.delete_directory(session_id, path="/usr"), 400, "path")
    assert Path("/usr").is_dir()


def test_move(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    sdk.browsers.fs.move(session_id, src_path=str(tmp_path / "a.txt"), dest_path=str(tmp_path / "c.txt"))
    assert (tmp_path / "c.txt").read_text() == "a" and not (tmp_path / "a.txt").exists()
    _refused(lambda: sdk.browsers.fs.move(session_id, src_path=str(tmp_path / "c.txt"),
                                          dest_path=str(tmp_path / "b.txt")), 409)
    assert (tmp_path / "b.txt").read_text() == "b"
    sdk.browsers.fs.move(session_id, src_path=str(tmp_path / "c.txt"), dest_path=str(tmp_path / "b.txt"),
                         extra_body={"overwrite": True})
    assert (tmp_path / "b.txt").read_text() == "a"
    _refused(lambda: sdk.browsers.fs.move(session_id, src_path=str(tmp_path / "gone"),
                                          dest_path=str(tmp_path / "x")), 404)
    _refused(lambda: sdk.browsers.fs.move(session_id, src_path=str(tmp_path / "b.txt"),
                                          dest_path=str(tmp_path / "no" / "dir" / "x")), 404)
    (tmp_path / "d").mkdir()
    _refused(lambda: sdk.browsers.fs.move(session_id, src_path=str(tmp_path / "d"),
                                          dest_path=str(tmp_path / "d" / "inside")), 400, "dest_path")
    _refused(lambda: sdk.browsers.fs.move(session_id, src_path="rel", dest_path=str(tmp_path / "x")), 400, "src_path")


def test_set_file_permissions(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    target = tmp_path / "p.txt"
    target.write_text("x")
    sdk.browsers.fs.set_file_permissions(session_id, path=str(target), mode="640")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    me = os.getuid()
    sdk.browsers.fs.set_file_permissions(session_id, path=str(target), mode="0600", owner=str(me),
                                         group=str(os.getgid()))
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.stat().st_uid == me
    _refused(lambda: sdk.browsers.fs.set_file_permissions(session_id, path=str(target), mode="u+x"), 400, "mode")
    _refused(lambda: sdk.browsers.fs.set_file_permissions(session_id, path=str(target), mode="644",
                                                          owner="no-such-user-here"), 400, "owner")
    _refused(lambda: sdk.browsers.fs.set_file_permissions(session_id, path=str(tmp_path / "gone"), mode="644"), 404)
    _refused(lambda: sdk.browsers.fs.set_file_permissions(session_id, path="/", mode="000"), 400, "path")


# download_dir_zip -------------------------------------------------------------------------------


def test_download_dir_zip_holds_the_tree(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "sub" / "empty").mkdir(parents=True)
    (root / "a.txt").write_text("hello " * 1000)
    (root / "sub" / "b.bin").write_bytes(os.urandom(200_000))
    (root / "sub" / "link").symlink_to("b.bin")
    response = sdk.browsers.fs.download_dir_zip(session_id, path=str(root))
    assert response.http_response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.read())) as archive:
        assert sorted(archive.namelist()) == ["a.txt", "sub/", "sub/b.bin", "sub/empty/", "sub/link"]
        assert archive.read("a.txt") == (root / "a.txt").read_bytes()
        assert archive.read("sub/b.bin") == (root / "sub" / "b.bin").read_bytes()
        assert archive.getinfo("a.txt").compress_type == zipfile.ZIP_DEFLATED
        assert archive.getinfo("sub/b.bin").compress_type == zipfile.ZIP_STORED  # random bytes: not worth it
        link = archive.getinfo("sub/link")
        assert stat.S_ISLNK(link.external_attr >> 16) and archive.read(link) == b"b.bin"
    _refused(lambda: sdk.browsers.fs.download_dir_zip(session_id, path=str(root / "a.txt")), 400, "path")
    _refused(lambda: sdk.browsers.fs.download_dir_zip(session_id, path=str(tmp_path / "gone")), 404)
    _refused(lambda: sdk.browsers.fs.download_dir_zip(session_id, path="/"), 400, "path")


def test_a_zip_round_trips_through_upload_zip(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "x" / "y").mkdir(parents=True)
    (source / "x" / "y" / "z.txt").write_text("deep")
    (source / "top").write_bytes(os.urandom(5000))
    archive = sdk.browsers.fs.download_dir_zip(session_id, path=str(source)).read()
    sdk.browsers.fs.upload_zip(session_id, dest_path=str(tmp_path / "copy"), zip_file=("c.zip", archive))
    assert (tmp_path / "copy" / "x" / "y" / "z.txt").read_text() == "deep"
    assert (tmp_path / "copy" / "top").read_bytes() == (source / "top").read_bytes()


# streaming both ways, memory flat ------------------------------------------------------------------

BIG = 256 * 1024 * 1024


class PeakRss:
    """The service's peak resident memory while a transfer runs (sampled every 20 ms)."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.start = self.peak = self.process.memory_info().rss
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.done.wait(0.02):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()

    @property
    def growth_mib(self) -> float:
        return (self.peak - self.start) / 2**20


def _random_file(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        for _ in range(size // (4 * 2**20)):
            block = os.urandom(4 * 2**20)
            digest.update(block)
            out.write(block)
    return digest.hexdigest()


def _member_digest(archive: Path, name: str) -> str:
    digest = hashlib.sha256()
    with zipfile.ZipFile(archive) as opened, opened.open(name) as member:
        while chunk := member.read(4 * 2**20):
            digest.update(chunk)
    return digest.hexdigest()


@pytest.mark.timeout(300)
async def test_big_upload_and_zip_download_stream_with_flat_memory(
    browserless_service: ServiceHandle, session_id: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    service = browserless_service
    local = tmp_path_factory.mktemp("local") / "big.bin"  # this machine's file, sent to the session
    digest = await asyncio.to_thread(_random_file, local, BIG)
    remote = tmp_path / "remote" / "big.bin"
    client = BrowserClient(service.url, service.token)
    sent: list[int] = []
    with PeakRss(service.pid) as upload:
        await client.fs.write_file(session_id, str(remote), local, progress=sent.append)
    assert remote.stat().st_size == BIG and sent[-1] == BIG
    assert upload.growth_mib < 64, f"the service grew by {upload.growth_mib:.0f} MiB during a 256 MiB upload"

    archive = local.parent / "remote.zip"
    with PeakRss(service.pid) as download:
        _, size = await save_stream(client.fs.download_dir_zip(session_id, str(remote.parent), chunk_size=None),
                                    archive, replace=True)
    assert size == archive.stat().st_size
    assert download.growth_mib < 64, f"the service grew by {download.growth_mib:.0f} MiB during a 256 MiB zip"
    assert await asyncio.to_thread(_member_digest, archive, "big.bin") == digest


async def test_client_upload_of_several_local_files(
    browserless_service: ServiceHandle, session_id: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    client = BrowserClient(browserless_service.url, browserless_service.token)
    local = tmp_path_factory.mktemp("local")  # this machine's files, sent to the session
    (local / "l1").write_bytes(b"one" * 1000)
    (local / "l2").write_bytes(b"two")
    seen: list[int] = []
    await client.fs.upload(session_id, [(local / "l1", str(tmp_path / "r" / "1")),
                                        (b"bytes too", str(tmp_path / "r" / "2"))], progress=seen.append)
    assert (tmp_path / "r" / "1").read_bytes() == b"one" * 1000
    assert (tmp_path / "r" / "2").read_bytes() == b"bytes too"
    assert seen[-1] == 3000 + len(b"bytes too")
    await client.fs.move(session_id, str(tmp_path / "r" / "1"), str(tmp_path / "r" / "2"), overwrite=True)
    assert (tmp_path / "r" / "2").read_bytes() == b"one" * 1000


async def test_control_plane_serves_the_write_side_too(
    browserless_http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    http = browserless_http
    route = f"/browsers/{session_id}/fs"
    r = await http.put(f"{route}/write_file", params={"path": str(tmp_path / "cp.txt")}, content=b"control plane")
    assert r.status_code == 201 and r.content == b""
    r = await http.put(f"{route}/create_directory", json={"path": str(tmp_path / "cpdir")})
    assert r.status_code == 201
    r = await http.put(f"{route}/move", json={"src_path": str(tmp_path / "cp.txt"),
                                              "dest_path": str(tmp_path / "cpdir" / "cp.txt")})
    assert r.status_code == 200
    assert (tmp_path / "cpdir" / "cp.txt").read_bytes() == b"control plane"
    r = await http.put(f"{route}/delete_file", json={"path": str(tmp_path / "cpdir" / "cp.txt"), "extra": 1})
    assert r.status_code == 400 and r.json()["details"][0]["message"].startswith("extra:")
    r = await http.put(f"{route}/delete_file", json={"path": str(tmp_path / "cpdir" / "cp.txt")})
    assert r.status_code == 200
    r = await http.put("/browsers/no-such-session/fs/delete_file", json={"path": "/tmp/x"})
    assert r.status_code == 404
