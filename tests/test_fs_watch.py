"""Directory watches against the real service: the official SDK starts a watch, reads its SSE stream,
and stops it, while another process (a shell) changes the directory.

Each test reads events on a thread (the SDK's stream is blocking) into a queue and waits on the queue
with a deadline: no sleeps, every wait bounded. All on the service with no Chromium: nothing here uses a
session's browser.
"""

from __future__ import annotations

import contextlib
import os
import queue
import secrets
import subprocess
import threading
import time
from pathlib import Path

import httpx
import kernel
import pytest
from conftest import session_area

from bbrowse.client import BrowserClient

WAIT_SECONDS = 15


@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the module, on the service with no Chromium (a Chromium start saved)."""
    return browserless_module_session_id


@pytest.fixture
def sdk(browserless_sdk: kernel.Kernel) -> kernel.Kernel:
    """conftest's `sdk` (a client per test, see there), on the service that holds the module's session."""
    return browserless_sdk


@pytest.fixture
def tmp_path(browserless_service, session_id: str) -> Path:
    """A fresh directory of the module's session, in place of pytest's (a session's sandbox sees no directory of
    this machine): its str() is the path inside, its file operations act on the host side (conftest.session_area)."""
    return session_area(browserless_service, session_id, f"t-{secrets.token_hex(4)}")


class EventReader:
    """The watch's events, read by a thread from the SDK's stream into a queue."""

    def __init__(self, sdk: kernel.Kernel, session_id: str, watch_id: str) -> None:
        self.stream = sdk.browsers.fs.watch.events(watch_id, id_or_name=session_id)
        self.events: queue.Queue = queue.Queue()
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for event in self.stream:
                self.events.put((event.type, event.path, event.is_dir))
        except Exception as exc:  # a closed stream ends the thread
            self.events.put(("error", repr(exc), None))
        finally:
            self.ended.set()

    def until(self, wanted: set[tuple[str, str, bool | None]]) -> list[tuple]:
        """Events read until every one of `wanted` was seen."""
        seen: list[tuple] = []
        deadline = time.monotonic() + WAIT_SECONDS
        while not wanted <= set(seen):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"still waiting for {wanted - set(seen)}; saw {seen}"
            try:
                seen.append(self.events.get(timeout=remaining))
            except queue.Empty:
                continue
        return seen

    def close(self) -> None:
        """Close the stream (every test does, see conftest.sdk); the reading thread ends with it."""
        self.stream.close()


def _shell(script: str, cwd: Path) -> None:
    """Another process changes the directory (not the service)."""
    subprocess.run(["sh", "-c", script], cwd=cwd, check=True, timeout=30)


def test_watch_sees_what_another_process_does(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    watch = sdk.browsers.fs.watch.start(session_id, path=str(tmp_path))
    assert watch.watch_id
    _shell("echo one > made.txt", tmp_path)  # before the stream opens: kept for the reader
    reader = EventReader(sdk, session_id, watch.watch_id)
    try:
        _shell("echo two >> made.txt && mv made.txt moved.txt && mkdir sub && rm moved.txt", tmp_path)
        seen = reader.until({
            ("CREATE", str(tmp_path / "made.txt"), False),
            ("WRITE", str(tmp_path / "made.txt"), False),
            ("RENAME", str(tmp_path / "made.txt"), False),
            ("CREATE", str(tmp_path / "moved.txt"), False),
            ("CREATE", str(tmp_path / "sub"), True),
            ("DELETE", str(tmp_path / "moved.txt"), False),
        })
        order = [e for e in seen if e[1].endswith("moved.txt")]
        assert order[0][0] == "CREATE" and order[-1][0] == "DELETE"
    finally:
        sdk.browsers.fs.watch.stop(watch.watch_id, id_or_name=session_id)
        assert reader.ended.wait(WAIT_SECONDS), "the event stream did not end when the watch was stopped"
        reader.close()


def test_recursive_watch_follows_new_directories(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    watch = sdk.browsers.fs.watch.start(session_id, path=str(tmp_path), recursive=True)
    reader = EventReader(sdk, session_id, watch.watch_id)
    try:
        # Made faster than the service can add watches: what is found in a new directory is reported too.
        _shell("touch old/in-old && mkdir -p a/b/c && touch a/b/c/deep.txt", tmp_path)
        reader.until({
            ("CREATE", str(tmp_path / "old" / "in-old"), False),
            ("CREATE", str(tmp_path / "a"), True),
            ("CREATE", str(tmp_path / "a" / "b"), True),
            ("CREATE", str(tmp_path / "a" / "b" / "c"), True),
            ("CREATE", str(tmp_path / "a" / "b" / "c" / "deep.txt"), False),
        })
        _shell("echo x >> a/b/c/deep.txt", tmp_path)  # and the new directories are watched from then on
        reader.until({("WRITE", str(tmp_path / "a" / "b" / "c" / "deep.txt"), False)})
    finally:
        sdk.browsers.fs.watch.stop(watch.watch_id, id_or_name=session_id)
        reader.close()


def test_a_plain_watch_does_not_see_inside_subdirectories(
    sdk: kernel.Kernel, session_id: str, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    watch = sdk.browsers.fs.watch.start(session_id, path=str(tmp_path))
    reader = EventReader(sdk, session_id, watch.watch_id)
    try:
        _shell("touch sub/hidden.txt && touch visible.txt", tmp_path)
        seen = reader.until({("CREATE", str(tmp_path / "visible.txt"), False)})
        assert all("hidden.txt" not in e[1] for e in seen)
    finally:
        sdk.browsers.fs.watch.stop(watch.watch_id, id_or_name=session_id)
        reader.close()


def test_the_stream_ends_when_the_watched_directory_goes(
    sdk: kernel.Kernel, session_id: str, tmp_path: Path
) -> None:
    target = tmp_path / "doomed"
    target.mkdir()
    watch = sdk.browsers.fs.watch.start(session_id, path=str(target))
    reader = EventReader(sdk, session_id, watch.watch_id)
    try:
        _shell("rmdir doomed", tmp_path)
        reader.until({("DELETE", str(target), True)})
        assert reader.ended.wait(WAIT_SECONDS)
    finally:
        reader.close()
    sdk.browsers.fs.watch.stop(watch.watch_id, id_or_name=session_id)


def test_watch_errors(sdk: kernel.Kernel, session_id: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for path, recursive, status in ((str(tmp_path / "file"), False, 400), (str(tmp_path / "gone"), False, 404),
                                    ("relative", False, 400), ("/", True, 400)):
        with pytest.raises(kernel.APIStatusError) as refused:
            sdk.browsers.fs.watch.start(session_id, path=path, recursive=recursive)
        assert refused.value.status_code == status, (path, refused.value)
    watch = sdk.browsers.fs.watch.start(session_id, path=str(tmp_path))
    sdk.browsers.fs.watch.stop(watch.watch_id, id_or_name=session_id)
    with pytest.raises(kernel.NotFoundError):
        sdk.browsers.fs.watch.stop(watch.watch_id, id_or_name=session_id)
    with pytest.raises(kernel.NotFoundError):
        sdk.browsers.fs.watch.events(watch.watch_id, id_or_name=session_id)


async def test_client_watch_stops_its_watch_on_close(
    browserless_service, browserless_http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    service, http = browserless_service, browserless_http
    client = BrowserClient(service.url, service.token)
    before = _inotify_instances(service.pid)
    async with client.fs.watch(session_id, str(tmp_path)) as events:
        assert _inotify_instances(service.pid) == before + 1
        r = await http.put(f"/browsers/{session_id}/fs/write_file", params={"path": str(tmp_path / "w.txt")},
                           content=b"through the service")
        assert r.status_code == 201
        async for event in events:
            if event.type == "CREATE" and event.path == str(tmp_path / "w.txt"):
                break  # the service's own temporary file comes first, then the rename into place
    assert _inotify_instances(service.pid) == before  # stopped: the service let go of its inotify instance


def _inotify_instances(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify"
    return count
