"""Retention on a real service: ended sessions' files go by age and by size, active ones and downloads stay.

Each service here reads its retention clock from a file the test writes (`BBROWSE_CLOCK_FILE`), so
time moves when the test says, and a pass runs when the test sends SIGUSR1; the test then waits for
the pass's line in the service log. Nothing sleeps for time to pass.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import sys
import time
import weakref
from pathlib import Path

import httpx
import pytest
from conftest import ServiceHandle, start_service, stop_service

from bbrowse.limits import RetentionLimits
from bbrowse.service.config import ServiceConfig
from bbrowse.service.recorder import IN_USE_GRACE_SECONDS
from bbrowse.service.state import build_state
from bbrowse.wire import BrowserCreateRequest, SpawnRequest

DAY = 86400.0
NO_CHROMIUM = {"BBROWSE_CHROMIUM": "/nonexistent/chromium"}


class Retained:
    """A service with a test-controlled retention clock."""

    def __init__(self, handle: ServiceHandle, clock: Path) -> None:
        self.handle = handle
        self.clock = clock
        self.http = httpx.Client(base_url=handle.url, headers=handle.headers, timeout=60)

    @property
    def root(self) -> Path:
        return self.handle.state_dir / "service"

    @property
    def log(self) -> Path:
        return self.root / "logs" / "bbrowse.log"

    def session_dir(self, sid: str) -> Path:
        return self.root / "sessions" / sid

    def set_clock(self, offset: float) -> None:
        """Retention's now: the real time plus `offset` seconds."""
        self.clock.write_text(str(time.time() + offset))

    def run_pass(self) -> str:
        """Run a retention pass now (SIGUSR1) and wait for its line; the log lines it wrote."""
        text = self.log.read_text()
        before = text.count("retention pass ")
        os.kill(self.handle.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = self.log.read_text()
            if now.count("retention pass ") > before:
                return now[len(text):]
            time.sleep(0.05)
        raise AssertionError("no retention pass within 30 s of SIGUSR1")

    def create(self, **body) -> str:
        r = self.http.post("/browsers", json={"timeout_seconds": 600, **body})
        assert r.status_code == 200, r.text
        return r.json()["session_id"]

    def delete(self, sid: str) -> None:
        assert self.http.delete(f"/browsers/{sid}").status_code == 204

    def close(self) -> None:
        self.http.close()
        stop_service(self.handle)


def retained(tmp_path: Path, name: str, **env: str) -> Retained:
    clock = tmp_path / f"{name}-clock"
    clock.write_text(str(time.time()))
    handle = start_service(tmp_path / name, extra_env={"BBROWSE_CLOCK_FILE": str(clock), **env})
    return Retained(handle, clock)


@pytest.fixture
def no_browser(tmp_path):
    service = retained(tmp_path, "state", BBROWSE_KEEP_FOR="1d", **NO_CHROMIUM)
    yield service
    service.close()


def test_ended_sessions_go_after_the_age_limit_and_active_ones_stay(no_browser):
    svc = no_browser
    ended = svc.create()
    (svc.session_dir(ended) / "logs" / "old.log").write_text("a line from long ago\n" * 100)
    svc.delete(ended)
    active = svc.create()
    process = svc.http.post(f"/browsers/{active}/process/spawn", json={"command": "sleep", "args": ["1000"]})
    assert process.status_code == 200, process.text
    active_record = (svc.session_dir(active) / "session.json").read_text()

    svc.set_clock(0.5 * DAY)  # ended half a day ago: within the day it is kept
    svc.run_pass()
    assert svc.session_dir(ended).is_dir()
    assert svc.http.get(f"/browsers/{ended}").status_code == 410

    svc.set_clock(1.5 * DAY)  # a day and a half: gone, files and all; the active session (as old) stays
    lines = svc.run_pass()
    assert "retention: removed 1 ended session(s)" in lines, lines
    assert not svc.session_dir(ended).exists()
    assert svc.http.get(f"/browsers/{ended}").status_code == 404
    assert svc.http.get("/browsers", params={"status": "deleted"}).json() == []

    assert (svc.session_dir(active) / "session.json").read_text() == active_record
    assert svc.http.get(f"/browsers/{active}").status_code == 200
    pid = process.json()["process_id"]
    assert svc.http.get(f"/browsers/{active}/process/{pid}/status").json()["state"] == "running"
    ran = svc.http.post(f"/browsers/{active}/process/exec", json={"command": "pwd"})
    assert ran.status_code == 200 and ran.json()["exit_code"] == 0


def test_over_the_size_limit_the_oldest_ended_sessions_go_first(tmp_path):
    svc = retained(tmp_path, "state", BBROWSE_MAX_STATE_SIZE="1M", **NO_CHROMIUM)
    try:
        filler = b"x" * (400 * 1024)
        ended = []
        for _ in range(3):
            sid = svc.create()
            (svc.session_dir(sid) / "logs" / "big.log").write_bytes(filler)
            svc.delete(sid)
            ended.append(sid)
        active = svc.create()
        (svc.session_dir(active) / "logs" / "big.log").write_bytes(filler)

        lines = svc.run_pass()  # 1.6 MiB: the two oldest ended sessions go, the newest and the active one stay
        assert "retention: removed 2 ended session(s)" in lines, lines
        assert [svc.session_dir(sid).exists() for sid in ended] == [False, False, True]
        assert svc.session_dir(active).is_dir() and (svc.session_dir(active) / "logs" / "big.log").exists()

        # the active session alone over the limit: kept, and the log says why
        (svc.session_dir(active) / "logs" / "bigger.log").write_bytes(filler * 3)
        lines = svc.run_pass()
        assert [svc.session_dir(sid).exists() for sid in ended] == [False, False, False]
        assert svc.session_dir(active).is_dir()
        assert "is over its limit" in lines and "active sessions or is in use" in lines, lines

        info = json.loads(bbrowse_info(svc.handle.state_dir))
        assert info["retention"] == {"keep_seconds": 7 * DAY, "max_bytes": 1024 * 1024}
        assert info["state_size_bytes"] > 1024 * 1024
    finally:
        svc.close()


def bbrowse_info(state_dir: Path) -> str:
    import subprocess
    import sys

    env = {**os.environ, "BBROWSE_STATE_DIR": str(state_dir), "BBROWSE_CONFIG_DIR": str(state_dir / "config")}
    env.pop("KERNEL_BASE_URL", None)
    env.pop("KERNEL_API_KEY", None)
    result = subprocess.run([sys.executable, "-m", "bbrowse", "info", "--json"], env=env, capture_output=True,
                            timeout=60, check=True)
    return result.stdout.decode()


def test_a_replay_downloaded_just_now_stays_then_goes_with_its_session(tmp_path):
    """A download marks the replay in use (as does the file being open): a pass then keeps it, even long
    past the age limit; once the grace is over it goes, with the ended session's record and logs."""
    svc = retained(tmp_path, "state", BBROWSE_KEEP_FOR="1d")
    try:
        sid = svc.create()
        started = svc.http.post(f"/browsers/{sid}/replays", json={})
        assert started.status_code == 201, started.text
        rid = started.json()["replay_id"]
        stopped = svc.http.post(f"/browsers/{sid}/replays/{rid}/stop")
        assert stopped.status_code == 200, stopped.text
        svc.delete(sid)
        video = svc.root / "replays" / sid / f"{rid}.mp4"
        assert video.is_file()

        svc.set_clock(2 * DAY)  # long past the age limit
        download = svc.http.get(f"/browsers/{sid}/replays/{rid}")
        assert download.status_code == 200 and len(download.content) == video.stat().st_size
        lines = svc.run_pass()
        assert "due but in use, kept" in lines, lines
        assert video.is_file() and svc.session_dir(sid).is_dir()

        svc.set_clock(2 * DAY + IN_USE_GRACE_SECONDS + 60)
        lines = svc.run_pass()
        assert "retention: removed 1 ended session(s)" in lines, lines
        assert not video.exists() and not svc.session_dir(sid).exists()
        assert svc.http.get(f"/browsers/{sid}/replays").status_code == 404
    finally:
        svc.close()


def test_files_the_service_has_open_are_seen():
    """The check that keeps a file being downloaded or followed: the process's open files, from /proc."""
    from bbrowse.service.retention import open_paths

    with open(__file__, "rb"):
        assert str(Path(__file__).resolve()) in open_paths()
    assert str(Path(__file__).resolve()) not in open_paths()


async def test_an_ended_session_leaves_nothing_in_memory(tmp_path):
    """In the service's own objects, not over HTTP: what a deleted session held (its browser, its exited
    shell with its output) is dropped when it is deleted, and the session itself when retention has
    removed its files. A soak of thousands of sessions is how a leak here would show, slowly."""
    state = build_state(ServiceConfig(token="t", state_dir=tmp_path / "service", chromium_path="/nonexistent/chromium",
                                      retention=RetentionLimits(keep_seconds=60)))
    now = time.time()
    state.retention.clock = lambda: now
    session = await state.sessions.create(BrowserCreateRequest())
    sid = session.session_id
    request = SpawnRequest(command="sh", args=["-c", "echo hello"], allocate_tty=True)
    shell = await state.processes.spawn(session, request)
    await asyncio.wait_for(shell.finished.wait(), 10)
    held = {"browser": weakref.ref(state.browsers.browser(session)), "shell": weakref.ref(shell)}
    del shell

    await state.sessions.delete(session)
    gc.collect()
    assert {name: ref() is None for name, ref in held.items()} == {"browser": True, "shell": True}
    assert state.sessions.get(sid, include_deleted=True) is session  # still known: 410 until retention

    now += 120
    report = await state.retention.run()
    assert [unit.session_id for unit in report.removed] == [sid]
    ended = weakref.ref(session)
    del session
    # pydantic builds a deferred model (wire/base.py) at its first use and reads a caller frame's locals to
    # resolve names: this frame's, when this test is the first in its process to use that model. The frame
    # keeps that copy (holding the session) until its locals are read again.
    sys._getframe().f_locals  # noqa: B018
    gc.collect()
    assert ended() is None
    assert state.sessions.find(sid) is None
