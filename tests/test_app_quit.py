"""Quitting gives the terminal back at once: the embedded service this app started (with its browsers and a
recording in progress) stops in the background, and its recording is finalised, nothing lost."""

from __future__ import annotations

import contextlib
import shutil
import time

import httpx
import pytest
from app_support import wait_for

from bbrowse.config import Settings
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.screens.quit import QuitScreen
from bbrowse.tui.screens.sessions import SessionsScreen

#: What the app may take from the answer to the quit question to being gone (the terminal restored
#: within it). Before, quitting waited for the service and its Chromiums: 2 to 5.5 s.
QUIT_SECONDS = 1.0


def has_box(data: bytes, box: bytes) -> bool:
    """An MP4 top-level box of this type (ftyp, moov, mdat) is in the file: walk the box headers."""
    offset = 0
    while offset + 8 <= len(data):
        size = int.from_bytes(data[offset:offset + 4], "big")
        if data[offset + 4:offset + 8] == box:
            return True
        if size < 8:
            return False
        offset += size
    return False


@pytest.mark.skipif(shutil.which("ffmpeg") is None or not (shutil.which("chromium") or shutil.which("google-chrome")),
                    reason="recording needs Chromium and ffmpeg")
async def test_quit_is_immediate_and_the_service_finalises_the_recording_in_the_background(tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("BBROWSE_STATE_DIR", str(state))
    app = BbrowseApp(settings=Settings())  # the embedded profile: this app starts its own service
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen) and app.connection_state == "connected",
                       timeout=40)
        service = app.target.embedded
        assert service is not None and service.owned
        headers = {"Authorization": f"Bearer {service.token}"}
        async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=30) as http:
            session = (await http.post("/browsers", json={"start_url": "data:text/html,<h1>quit me</h1>"})).json()
            replay = (await http.post(f"/browsers/{session['session_id']}/replays", json={})).json()
            replay_id = replay["replay_id"]
            # recording: wait until the recorder has written frames to its partial file
            await wait_for(pilot, lambda: any(p.stat().st_size > 0 for p in state.rglob(f"{replay_id}*.mp4")),
                           timeout=30, what="frames recorded")
        listed = lambda: [key.value for key in app.screen.query_one("DataTable").rows]  # noqa: E731
        await wait_for(pilot, lambda: session["session_id"] in listed())
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
        started = time.monotonic()
        await pilot.press("y")
    elapsed = time.monotonic() - started
    print(f"quit: {elapsed * 1000:.0f} ms from the answer to the app gone")
    assert elapsed < QUIT_SECONDS, f"quitting took {elapsed:.2f} s"
    # the service finishes by itself: sessions end, the recording is finalised and kept
    service.process.wait(timeout=60)
    final = next(state.rglob(f"{replay_id}.mp4"), None)
    assert final is not None, sorted(str(p) for p in state.rglob("*.mp4"))
    data = final.read_bytes()
    assert has_box(data, b"ftyp") and has_box(data, b"moov"), "the MP4 was not finalised"
    assert not list(state.rglob(f"{replay_id}.partial.mp4"))


def test_a_closed_terminal_stops_the_embedded_service_the_app_started(tmp_path) -> None:
    """The real `bbrowse` in a real PTY: a hang-up (the terminal window closed) ends the app, and the
    service it started stops too instead of being left behind."""
    import fcntl
    import json
    import os
    import pty
    import select
    import signal
    import struct
    import sys
    import termios
    import threading

    state = tmp_path / "state"
    env = {**os.environ, "BBROWSE_STATE_DIR": str(state), "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    env.pop("KERNEL_API_KEY", None)
    env.pop("KERNEL_BASE_URL", None)
    pid, master = pty.fork()
    if pid == 0:  # the child: the app, as a user starts it, in a 100×30 terminal
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        os.execve(sys.executable, [sys.executable, "-m", "bbrowse"], env)
    screen = bytearray()
    threading.Thread(target=_drain, args=(master, screen), daemon=True).start()
    service_pid = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and service_pid is None:
            try:
                info = json.loads((state / "serve.json").read_text())
                service_pid = int(info["pid"]) if b"connected" in screen else None
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        assert service_pid is not None, bytes(screen[-2000:])
        service_exit = os.pidfd_open(service_pid)  # readable when the service has exited
        try:
            os.kill(pid, signal.SIGHUP)
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status) or os.WIFEXITED(status)
            readable, _, _ = select.select([service_exit], [], [], 60)
            assert readable or not _alive(service_pid), "the embedded service outlived the app's terminal"
        finally:
            os.close(service_exit)
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        if service_pid is not None and _alive(service_pid):
            os.kill(service_pid, signal.SIGKILL)
        os.close(master)


def _drain(fd: int, into: bytearray) -> None:
    import os

    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        into += chunk


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (not reaped yet) counts as gone
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
