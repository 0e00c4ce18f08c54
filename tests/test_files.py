"""The files area over real HTTP and through the official SDK: read_file, list_files, file_info and their errors.

All on the service with no Chromium: nothing here uses a session's browser.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import kernel
import psutil
import pytest
from conftest import session_area

from bbrowse.wire import Error, FileInfo

if TYPE_CHECKING:
    from conftest import ServiceHandle


@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the whole module (overrides the per-test one), on the service with no Chromium."""
    return browserless_module_session_id


@pytest.fixture
def http(browserless_http: httpx.AsyncClient) -> httpx.AsyncClient:
    """Raw HTTP to the service that holds the module's session (overrides conftest's)."""
    return browserless_http


@pytest.fixture
def sdk(browserless_sdk: kernel.Kernel) -> kernel.Kernel:
    """conftest's `sdk` (a client per test, see there), on the service that holds the module's session."""
    return browserless_sdk


@pytest.fixture
def tmp_path(browserless_service: ServiceHandle, session_id: str) -> Path:
    """A fresh directory of the module's session, in place of pytest's (a session's sandbox sees no directory of
    this machine): its str() is the path inside, its file operations act on the host side (conftest.session_area)."""
    return session_area(browserless_service, session_id, f"t-{secrets.token_hex(4)}")


def _fs(session_id: str, op: str) -> str:
    return f"/browsers/{session_id}/fs/{op}"


def _error(response: httpx.Response, status: int) -> Error:
    assert response.status_code == status, response.text
    return Error.model_validate(response.json())


def _fds_open_on(pid: int, path: Path) -> int:
    """How many descriptors of process `pid` point at `path` (the service runs as a separate process)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                count += 1
        except OSError:
            continue
    return count


async def _wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


# read_file ---------------------------------------------------------------------------------------


async def test_read_file_streams_random_binary_byte_exact(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    target = tmp_path / "random.bin"
    target.write_bytes(data)
    chunks = []
    async with http.stream("GET", _fs(session_id, "read_file"), params={"path": str(target)}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/octet-stream"
        assert response.headers["content-length"] == str(len(data))
        async for chunk in response.aiter_raw():
            chunks.append(chunk)
    assert b"".join(chunks) == data
    assert len(chunks) > 1


async def test_read_file_of_a_huge_file_starts_at_once_and_stays_out_of_memory(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path, browserless_service: ServiceHandle
) -> None:
    service = browserless_service
    target = tmp_path / "huge.bin"
    size = 1 << 30  # sparse: a 1 GiB file that costs no disk
    target.write_bytes(b"HEAD")
    os.truncate(target, size)
    rss_before = psutil.Process(service.pid).memory_info().rss
    started = time.monotonic()
    async with http.stream("GET", _fs(session_id, "read_file"), params={"path": str(target)}) as response:
        assert response.headers["content-length"] == str(size)
        received = b""
        async for chunk in response.aiter_raw():
            received += chunk
            if len(received) >= 4 * 1024 * 1024:
                break
        first_bytes_after = time.monotonic() - started
        rss_during = psutil.Process(service.pid).memory_info().rss
    assert received[:4] == b"HEAD" and received[4:1000] == bytes(996)
    assert first_bytes_after < 3.0
    assert rss_during - rss_before < 200 * 1024 * 1024
    # the abandoned download's file is closed and the service answers the next request
    await _wait_until(lambda: _fds_open_on(service.pid, target) == 0)
    assert (await http.get(_fs(session_id, "file_info"), params={"path": str(target)})).status_code == 200


async def test_a_file_shrinking_mid_download_aborts_it_visibly(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    target = tmp_path / "shrinks.bin"
    target.write_bytes(b"start")
    os.truncate(target, 256 * 1024 * 1024)
    with pytest.raises(httpx.RemoteProtocolError):  # never a silently short file
        async with http.stream("GET", _fs(session_id, "read_file"), params={"path": str(target)}) as response:
            chunks = response.aiter_raw()
            assert (await anext(chunks)).startswith(b"start")
            os.truncate(target, 1000)
            async for _ in chunks:
                pass
    assert (await http.get(_fs(session_id, "file_info"), params={"path": str(target)})).json()["size_bytes"] == 1000


def test_read_file_through_the_official_sdk(sdk, session_id: str, tmp_path: Path) -> None:
    data = os.urandom(300_000)
    target = tmp_path / "sdk.bin"
    target.write_bytes(data)
    assert sdk.browsers.fs.read_file(session_id, path=str(target)).read() == data


async def test_read_file_errors(http: httpx.AsyncClient, session_id: str, tmp_path: Path) -> None:
    url = _fs(session_id, "read_file")
    relative = _error(await http.get(url, params={"path": "etc/passwd"}), 400)
    assert relative.code == "bad_request" and relative.details and relative.details[0].message.startswith("path:")
    assert "absolute" in relative.message

    missing_param = _error(await http.get(url), 400)
    assert missing_param.details and missing_param.details[0].message.startswith("path")

    directory = _error(await http.get(url, params={"path": str(tmp_path)}), 400)
    assert "directory" in directory.message

    missing = _error(await http.get(url, params={"path": str(tmp_path / "nope.txt")}), 404)
    assert missing.code == "not_found" and "nope.txt" in missing.message

    vanished = tmp_path / "vanished.txt"
    vanished.write_text("soon gone")
    listed = await http.get(_fs(session_id, "list_files"), params={"path": str(tmp_path)})
    assert "vanished.txt" in [e["name"] for e in listed.json()]
    vanished.unlink()
    _error(await http.get(url, params={"path": str(vanished)}), 404)

    under_a_file = _error(await http.get(url, params={"path": "/etc/hostname/child"}), 404)
    assert under_a_file.code == "not_found"

    device = _error(await http.get(url, params={"path": "/dev/zero"}), 400)
    assert "device" in device.message


async def test_read_file_of_a_fifo_is_refused_without_hanging(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    response = await asyncio.wait_for(http.get(_fs(session_id, "read_file"), params={"path": str(fifo)}), 5)
    assert "FIFO" in _error(response, 400).message
    # and the service keeps serving
    assert (await http.get(_fs(session_id, "file_info"), params={"path": str(fifo)})).json()["mode"].startswith("p")


def _unreadable_file(tmp_path: Path) -> Path | None:
    """A regular file the service (same user as the tests) may not read, if this machine has one."""
    if os.geteuid() != 0:
        secret = tmp_path / "secret.txt"
        secret.write_text("no")
        secret.chmod(0)
        return secret
    # root reads a mode-000 file; a write-only sysfs attribute still refuses it
    for candidate in ("/sys/bus/pci/rescan",):
        try:
            with open(candidate, "rb"):
                pass
        except PermissionError:
            if stat.S_ISREG(os.stat(candidate).st_mode):
                return Path(candidate)
        except OSError:
            continue
    return None


async def test_read_file_permission_denied_is_403_forbidden(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    secret = _unreadable_file(tmp_path)
    if secret is None:
        pytest.skip("running as root and no file on this machine refuses root: permission cannot be denied")
    response = await http.get(_fs(session_id, "read_file"), params={"path": str(secret)})
    assert response.status_code == 403
    assert response.json() == {"code": "forbidden", "message": f"permission denied: {secret}"}


# list_files and file_info -------------------------------------------------------------------------


def _tree(root: Path) -> None:
    (root / "b.txt").write_bytes(b"bee\n")
    (root / "A.txt").write_bytes(b"a" * 1000)
    (root / "zdir").mkdir()
    (root / "adir").mkdir()
    # Absolute links, written as the session sees the paths (str: see the `tmp_path` fixture).
    (root / "dangling").symlink_to(str(root / "does-not-exist"))
    (root / "to-zdir").symlink_to(str(root / "zdir"))
    (root / "to-b").symlink_to(str(root / "b.txt"))


async def test_list_files_dirs_first_then_name_with_symlinks(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    _tree(tmp_path)
    response = await http.get(_fs(session_id, "list_files"), params={"path": str(tmp_path) + "/"})
    assert response.status_code == 200
    entries = [FileInfo.model_validate(e) for e in response.json()]
    assert [e.name for e in entries] == ["adir", "to-zdir", "zdir", "A.txt", "b.txt", "dangling", "to-b"]
    by_name = {e.name: e for e in entries}
    assert all(e.path == str(tmp_path / e.name) for e in entries)
    assert by_name["A.txt"].size_bytes == 1000 and by_name["A.txt"].mode == "-rw-r--r--"
    assert by_name["zdir"].is_dir and by_name["zdir"].size_bytes == 0 and by_name["zdir"].mode == "drwxr-xr-x"
    # a link to a directory is listed as the directory it points to, under the link's own name
    assert by_name["to-zdir"].is_dir and by_name["to-zdir"].mode.startswith("d")
    assert by_name["to-b"].size_bytes == 4 and by_name["to-b"].mode == "-rw-r--r--"
    # a broken link is listed as the link itself
    assert not by_name["dangling"].is_dir and by_name["dangling"].mode.startswith("l")
    now = datetime.now(UTC)
    assert all(now - timedelta(minutes=5) < e.mod_time <= now + timedelta(seconds=5) for e in entries)


async def test_list_files_errors(http: httpx.AsyncClient, session_id: str, tmp_path: Path) -> None:
    url = _fs(session_id, "list_files")
    (tmp_path / "plain.txt").write_text("x")
    assert "not a directory" in _error(await http.get(url, params={"path": str(tmp_path / "plain.txt")}), 400).message
    _error(await http.get(url, params={"path": str(tmp_path / "missing")}), 404)
    relative = _error(await http.get(url, params={"path": "tmp"}), 400)
    assert relative.details and relative.details[0].message.startswith("path:")


async def test_list_files_of_root_and_proc(http: httpx.AsyncClient, session_id: str) -> None:
    root = (await http.get(_fs(session_id, "list_files"), params={"path": "/"})).json()
    etc = next(e for e in root if e["name"] == "etc")
    assert (etc["path"], etc["is_dir"]) == ("/etc", True)
    # /proc entries come and go while it is listed; the listing still succeeds
    assert (await http.get(_fs(session_id, "list_files"), params={"path": "/proc"})).status_code == 200


async def test_file_info_of_file_dir_and_links(http: httpx.AsyncClient, session_id: str, tmp_path: Path) -> None:
    _tree(tmp_path)
    url = _fs(session_id, "file_info")

    async def info(path: Path) -> FileInfo:
        response = await http.get(url, params={"path": str(path)})
        assert response.status_code == 200, response.text
        return FileInfo.model_validate(response.json())

    a = await info(tmp_path / "A.txt")
    st = os.stat(tmp_path / "A.txt")
    assert (a.name, a.path, a.size_bytes, a.is_dir) == ("A.txt", str(tmp_path / "A.txt"), 1000, False)
    assert a.mode == stat.filemode(st.st_mode)
    assert abs(a.mod_time.timestamp() - st.st_mtime) < 1e-3
    d = await info(tmp_path / "zdir")
    assert d.is_dir and d.mode == "drwxr-xr-x" and d.size_bytes == 0
    link = await info(tmp_path / "to-b")
    assert (link.name, link.path, link.size_bytes) == ("to-b", str(tmp_path / "to-b"), 4)
    assert (await info(tmp_path / "dangling")).mode.startswith("l")
    _error(await http.get(url, params={"path": str(tmp_path / "nope")}), 404)
    _error(await http.get(url, params={"path": "relative"}), 400)


def test_list_files_and_file_info_through_the_official_sdk(sdk, session_id: str, tmp_path: Path) -> None:
    _tree(tmp_path)
    listing = sdk.browsers.fs.list_files(session_id, path=str(tmp_path))
    assert [e.name for e in listing][:3] == ["adir", "to-zdir", "zdir"]
    info = sdk.browsers.fs.file_info(session_id, path=str(tmp_path / "A.txt"))
    assert (info.name, info.size_bytes, info.is_dir, info.mode) == ("A.txt", 1000, False, "-rw-r--r--")
