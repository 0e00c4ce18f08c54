"""Faults: the service killed mid-stream and started again, processes killed mid-write, files that fight back.

Covered elsewhere, not repeated here:

- Chromium killed: 503 `browser_unavailable`, then a new Chromium on the next call
  (tests/test_browsers.py::test_killed_chromium_answers_503_then_recovers, and mid-recording in
  tests/test_replays.py::test_chromium_dying_mid_recording_keeps_the_replay_and_recovers).
- read_file of a file without permission, a FIFO, a directory, a device, a vanished file, a file
  shrinking mid-download (tests/test_files.py); a file unlinked mid-download is below.
- The client fed a garbage or truncated SSE frame, a non-JSON error body, a connection cut mid-chunk
  (tests/test_client_errors.py, against a fake server that misbehaves on purpose).

The kill-and-restart tests run their own service on a fixed port with a fixed token, as a user's
service restarted by systemd would come back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil
import pytest
from conftest import NO_CHROMIUM, ServiceHandle, session_area, start_service, stop_service
from test_app_logs import LogsScreen, append, screen_rows, status
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from bbrowse.client import BrowserClient, ConnectionLost, NotFound
from bbrowse.client.config import ClientConfig
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.panes.logs import LogsPane, LogTarget
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.wire import LogSource, ProcessExitEvent, ProcessOutputEvent

TOKEN = "faults-token-0123456789abcdefghijklmnop"


class Restartable:
    """One `bbrowse serve` that a test can SIGKILL and start again on the same port, token and state."""

    def __init__(self, state_dir: Path, extra_env: dict[str, str] | None = None) -> None:
        self.state_dir = state_dir
        self.env = {"BBROWSE_TOKEN": TOKEN, **(extra_env or {})}
        self.port = 0  # the first start takes any free port; restarts reuse the one it got
        self.handle: ServiceHandle = self.start()

    def start(self) -> ServiceHandle:
        self.handle = start_service(self.state_dir, extra_env=self.env, port=self.port)
        self.port = urlsplit(self.handle.url).port or 0
        return self.handle

    def kill(self) -> None:
        """SIGKILL, as the OOM killer would: no cleanup, no goodbye to clients."""
        os.kill(self.handle.pid, signal.SIGKILL)
        self.handle.process.wait(10)

    @property
    def url(self) -> str:
        return self.handle.url

    @property
    def headers(self) -> dict[str, str]:
        return self.handle.headers


@pytest.fixture(scope="module")
def restartable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restartable]:
    """With no Chromium: what most tests here restart is the service, its records, processes and streams (each
    restart would start the surviving session's browser again)."""
    service = Restartable(tmp_path_factory.mktemp("faults-state"), {"BBROWSE_CHROMIUM": NO_CHROMIUM})
    yield service
    stop_service(service.handle)


@pytest.fixture
def restartable_with_chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restartable]:
    service = Restartable(tmp_path_factory.mktemp("faults-state-chromium"))
    yield service
    stop_service(service.handle)


@pytest.fixture(scope="module")
def session_id(restartable: Restartable) -> str:
    """A named session that outlives the restarts of this module."""
    r = httpx.post(restartable.url + "/browsers", json={"name": "survivor", "timeout_seconds": 900},
                   headers=restartable.headers, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["session_id"]


async def test_killed_service_gives_connection_lost_then_comes_back_with_the_session_and_a_new_chromium(
    restartable_with_chromium: Restartable
) -> None:
    restartable = restartable_with_chromium
    client = BrowserClient(restartable.url, TOKEN)
    session_id = (await client.sessions.create(name="survivor", timeout_seconds=900)).session_id
    tmp_path = session_area(restartable.handle, session_id, f"t-{secrets.token_hex(4)}")
    ticker = await client.processes.spawn(session_id, "sh", ["-c", "while :; do echo tick; sleep 0.05; done"])
    log = tmp_path / "during.log"
    log.write_text("")
    got_output = asyncio.Event()

    async def read_output() -> None:
        async with client.processes.stdout_stream(session_id, ticker.process_id) as events:
            async for event in events:
                assert isinstance(event, ProcessOutputEvent)
                got_output.set()

    async def read_log() -> None:
        async with client.logs.stream(session_id, path=str(log)) as events:
            async for _ in events:
                pass

    readers = [asyncio.create_task(read_output()), asyncio.create_task(read_log())]
    await asyncio.wait_for(got_output.wait(), 10)
    restartable.kill()
    for reader in readers:
        with pytest.raises(ConnectionLost):
            await asyncio.wait_for(reader, 10)
    with pytest.raises(ConnectionLost):  # while it is down, calls fail clearly (after the client's bounded retries)
        await client.sessions.get(session_id)

    restartable.start()
    again = await client.sessions.get("survivor")  # the same session, by id and by name
    assert again.session_id == session_id
    shot = await client.computer.screenshot(session_id)  # with a new Chromium
    assert shot.startswith(b"\x89PNG")
    with pytest.raises(NotFound):  # processes ended with the service that ran them
        await client.processes.status(session_id, ticker.process_id)
    append(log, "after the restart")
    lines = [event.message async for event in client.logs.stream(session_id, path=str(log), follow=False)]
    assert lines == ["after the restart"]


async def test_a_restart_skips_damaged_records_and_ended_sessions(restartable: Restartable, session_id: str) -> None:
    client = BrowserClient(restartable.url, TOKEN)
    ended = (await client.sessions.create(name="ended-before-the-crash")).session_id
    await client.sessions.delete(ended)
    damaged = restartable.state_dir / "service" / "sessions" / "damagedrecord" / "session.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_text('{"session_id": "damagedrec')
    restartable.kill()
    restartable.start()
    assert (await client.sessions.get(session_id)).session_id == session_id
    with pytest.raises(NotFound):
        await client.sessions.get(ended)
    with pytest.raises(NotFound):
        await client.sessions.get("damagedrecord")
    log = (restartable.state_dir / "service" / "logs" / "bbrowse.log").read_text()
    assert "damagedrecord/session.json is unreadable, skipped" in log
    assert f"session {session_id} restored after the service restarted" in log


async def test_a_pty_program_that_ignores_hangup_still_ends_with_a_killed_service(
    restartable: Restartable, session_id: str
) -> None:
    client = BrowserClient(restartable.url, TOKEN)
    spawned = await client.processes.spawn(
        session_id, "sh", ["-c", "trap '' HUP; exec sleep 1000"], allocate_tty=True
    )
    victim = psutil.Process(spawned.pid)
    restartable.kill()
    psutil.wait_procs([victim], timeout=10)
    assert not victim.is_running() or victim.status() == psutil.STATUS_ZOMBIE
    restartable.start()


async def test_the_app_shows_the_outage_reconnects_and_log_panes_mark_the_gap(
    restartable: Restartable, session_id: str
) -> None:
    log = session_area(restartable.handle, session_id, f"t-{secrets.token_hex(4)}") / "app.log"
    log.write_text("before the outage\n")
    app = BbrowseApp(target=Target(ClientConfig(restartable.url, TOKEN), "remote"))
    notes: list[tuple[str, str]] = []
    original_notify = app.notify

    def notify(message, *, title="", **kwargs):
        notes.append((str(title), str(message)))
        return original_notify(message, title=title, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    async with app.run_test(size=(110, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "sessions screen")
        await app.push_screen(LogsScreen(session_id))
        pane = app.screen.query_one(LogsPane)
        panel = await pane.open_log(LogTarget(LogSource.PATH, str(log)))
        view = panel.view
        await until(pilot, lambda: "before the outage" in screen_rows(view) and "● live" in status(panel), "live")
        assert app.connection_state == "connected"

        restartable.kill()
        await until(pilot, lambda: app.connection_state == "reconnecting", "the app notices the outage")
        await until(pilot, lambda: "reconnecting" in status(panel), "the pane says it is reconnecting")
        assert any(title == "Service unreachable" for title, _ in notes), notes
        append(log, "written while the service was down")

        restartable.start()
        await until(pilot, lambda: "● live" in status(panel) and any(  # the gap: the service answered again
            row.startswith("── reconnected after") for row in screen_rows(view)), "the pane is live again", timeout=30)
        await until(pilot, lambda: app.connection_state == "connected", "the app is connected again")
        assert any(title == "Service back" for title, _ in notes), notes
        rows = [row for row in screen_rows(view) if row]
        assert rows[0] == "before the outage"
        assert rows[1].startswith("── reconnected after") and view.buffer.gaps
        append(log, "after the gap")
        await until(pilot, lambda: "after the gap" in screen_rows(view), "new lines after the gap")
        assert app.is_running and app.return_code is None


async def until(pilot, predicate, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        await pilot.pause(0.05)


# processes killed mid-write ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_sid(browserless_module_session_id: str) -> str:
    """The session the tests below share, on the service with no Chromium: conftest's one for this module (its
    own `session_id` is another)."""
    return browserless_module_session_id


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "pty"])
@pytest.mark.parametrize("how", ["kill route", "SIGKILL from outside"])
async def test_a_process_killed_mid_write_gives_its_exit_event(browserless_service, shared_sid: str, tty: bool,
                                                             how: str) -> None:
    service = browserless_service
    client = BrowserClient(service.url, service.token)
    spawned = await client.processes.spawn(shared_sid, "yes", ["written-at-full-speed"], allocate_tty=tty)
    received = 0
    exit_code = None
    async with client.processes.stdout_stream(shared_sid, spawned.process_id) as events:
        async for event in events:
            if isinstance(event, ProcessExitEvent):
                exit_code = event.exit_code
                break
            received += len(event.data())
            if received > 1_000_000 and not exit_code:
                exit_code = -1  # sent the kill once
                if how == "kill route":
                    await client.processes.kill(shared_sid, spawned.process_id, "KILL")
                else:
                    os.kill(spawned.pid, signal.SIGKILL)
    assert exit_code == 137  # 128 + SIGKILL
    status = await client.processes.status(shared_sid, spawned.process_id)
    assert status.state == "exited" and status.exit_code == 137


async def test_a_file_unlinked_mid_download_still_arrives_whole(
    browserless_service: ServiceHandle, browserless_http: httpx.AsyncClient, shared_sid: str
) -> None:
    service, http = browserless_service, browserless_http
    data = os.urandom(8 << 20)
    doomed = session_area(service, shared_sid, f"t-{secrets.token_hex(4)}") / "doomed.bin"
    doomed.write_bytes(data)
    got = bytearray()
    async with http.stream("GET", f"/browsers/{shared_sid}/fs/read_file", params={"path": str(doomed)}) as r:
        assert r.status_code == 200
        async for chunk in r.aiter_bytes():
            got += chunk
            if doomed.exists():
                doomed.unlink()  # the open descriptor still reads the whole file
    assert bytes(got) == data
    gone = await http.get(f"/browsers/{shared_sid}/fs/read_file", params={"path": str(doomed)})
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"
    with contextlib.suppress(FileNotFoundError):
        doomed.unlink()


async def test_a_client_reattaching_right_after_closing_is_not_refused(browserless_service, shared_sid: str) -> None:
    """The old attach's handler learned of the close a moment after the client did: 1-2 % of quick
    reattaches were refused with 409 "already has an attached client"."""
    service = browserless_service
    client = BrowserClient(service.url, service.token)
    spawned = await client.processes.spawn(shared_sid, "cat", allocate_tty=True)
    url = service.url.replace("http://", "ws://", 1) + f"/browsers/{shared_sid}/process/{spawned.process_id}/attach"
    refused = 0
    for i in range(200):
        try:
            async with ws_connect(url, additional_headers=service.headers, open_timeout=10) as ws:
                await ws.send(b"%d\n" % i)
                await asyncio.wait_for(ws.recv(), 10)
        except InvalidStatus as exc:
            assert exc.response.status_code == 409
            refused += 1
    assert refused == 0
    await client.processes.kill(shared_sid, spawned.process_id, "KILL")
