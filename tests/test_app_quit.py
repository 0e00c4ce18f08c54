"""Quitting gives the terminal back at once: the embedded service this app started (with its browsers and a
recording in progress) stops in the background, and its recording is finalised, nothing lost."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import select
import shutil
import signal
import struct
import sys
import termios
import threading
import time
from pathlib import Path

import httpx
import pytest
from app_support import screen_shown, wait_for
from textual import events

from bbrowse.config import Settings
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.screens.quit import QuitScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import driver_of

#: What the app may take from the quit key (or the answer to its question) to being gone (the terminal restored
#: within it). Before, quitting waited for the service and its Chromiums: 2 to 5.5 s.
QUIT_SECONDS = 1.5


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
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.connection_state == "connected",
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
        await wait_for(pilot, lambda: screen_shown(app, QuitScreen))
        # The key as the terminal delivers it: Pilot's press then waits, twice, for this whole process (the test's
        # too) to be idle, up to 1 s each, which is not the app's quitting.
        driver = driver_of(app)
        assert driver is not None
        started = time.monotonic()
        driver.send_message(events.Key("y", "y"))
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


class AppInPty:
    """The real `bbrowse` (no arguments: the app on the embedded service) in a real PTY (100×30 unless told),
    as a user starts it; what it writes is collected with the time it arrived."""

    def __init__(self, state: Path, rows: int = 30, cols: int = 100) -> None:
        env = {**os.environ, "BBROWSE_STATE_DIR": str(state), "TERM": "xterm-256color"}
        env.pop("KERNEL_API_KEY", None)
        env.pop("KERNEL_BASE_URL", None)
        self.state = state
        self.output = bytearray()
        self.arrivals: list[tuple[float, int]] = []  # (time, length of output after that read)
        self.pid, self.master = pty.fork()
        if self.pid == 0:  # the child
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execve(sys.executable, [sys.executable, "-m", "bbrowse"], env)
        threading.Thread(target=self._drain, daemon=True).start()
        self.service_pid: int | None = None

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            # the arrival first: `when` finds the bytes in `output` only once their arrival is recorded
            self.arrivals.append((time.monotonic(), len(self.output) + len(chunk)))
            self.output += chunk

    def wait_connected(self) -> int:
        """Wait (bounded) for the service to run and the app to show it; the service's pid."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                info = json.loads((self.state / "serve.json").read_text())
                if b"connected" in self.output:
                    # nothing printed on the user's screen before the app took it over (it stays there)
                    assert b"Traceback" not in self.output, bytes(self.output[:3000])
                    self.service_pid = int(info["pid"])
                    return self.service_pid
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        raise AssertionError(bytes(self.output[-2000:]))

    def when(self, needle: bytes, after: int, wait: float = 5.0) -> float | None:
        """When `needle` arrived in the output past offset `after`; None if it has not within `wait` seconds.

        The reading thread may not have taken the app's last bytes from the PTY yet when the app is seen
        gone (seen once: the screen's restore was in the PTY, not yet in `output`), so this waits for them.
        """
        deadline = time.monotonic() + wait
        while (found := self.output.find(needle, after)) < 0:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.01)
        return next(at for at, length in self.arrivals if length >= found + len(needle))

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        if self.service_pid is not None and _alive(self.service_pid):
            os.kill(self.service_pid, signal.SIGKILL)
        os.close(self.master)


def wait_exit(pid: int, timeout: float) -> bool:
    """Wait for any process (not only a child) to end, on its pidfd: no polling."""
    if not _alive(pid):
        return True
    handle = os.pidfd_open(pid)
    try:
        readable, _, _ = select.select([handle], [], [], timeout)
        return bool(readable) or not _alive(pid)
    finally:
        os.close(handle)


def test_ctrl_q_gives_the_terminal_back_at_once_and_the_service_stops_after(tmp_path) -> None:
    app = AppInPty(tmp_path / "state")
    try:
        service_pid = app.wait_connected()
        mark = len(app.output)
        pressed = time.monotonic()
        os.write(app.master, b"\x11")  # ctrl+q; no session, so no question
        _, status = os.waitpid(app.pid, 0)
        exited = time.monotonic()
        restored = app.when(b"\x1b[?1049l", mark)  # the alternate screen left: the user's screen is back
        assert restored is not None, bytes(app.output[mark:])
        print(f"ctrl+q: screen restored after {(restored - pressed) * 1000:.0f} ms, "
              f"process gone after {(exited - pressed) * 1000:.0f} ms")
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert restored - pressed < QUIT_SECONDS and exited - pressed < QUIT_SECONDS
        assert wait_exit(service_pid, 60), "the embedded service did not stop"
    finally:
        app.close()


def test_a_terminal_of_no_size_still_gets_the_app(tmp_path) -> None:
    """A PTY nobody sized reports 0×0 (some `docker exec -t`, serial consoles): the app starts, draws its
    sessions screen (Textual takes it as 80×25) and quits as usual. It died at start-up before, in the image
    library's cell-size probe (a division by the 0 columns); `wait_connected` also checks that no traceback
    was printed on the way."""
    app = AppInPty(tmp_path / "state", rows=0, cols=0)
    try:
        app.wait_connected()
        os.write(app.master, b"\x11")  # ctrl+q
        _, status = os.waitpid(app.pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, bytes(app.output[-2000:])
    finally:
        app.close()


def test_a_closed_terminal_stops_the_embedded_service_the_app_started(tmp_path) -> None:
    """A hang-up (the terminal window closed) ends the app, and the service it started stops too instead
    of being left behind."""
    app = AppInPty(tmp_path / "state")
    try:
        service_pid = app.wait_connected()
        os.kill(app.pid, signal.SIGHUP)
        _, status = os.waitpid(app.pid, 0)
        assert os.WIFSIGNALED(status) or os.WIFEXITED(status)
        assert wait_exit(service_pid, 60), "the embedded service outlived the app's terminal"
    finally:
        app.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (not reaped yet) counts as gone
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
