"""The `attach` WebSocket against a real `bbrowse serve`: a real shell in a real PTY, driven like a terminal."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator

import httpx
import pytest
from browser_support import browser_session
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

TIMEOUT = 15.0


@pytest.fixture(scope="module")
async def sid(browserless_http: httpx.AsyncClient) -> AsyncIterator[str]:
    """One session for the module, on the service without Chromium: attach and PTYs need no browser."""
    async with browser_session(browserless_http, timeout_seconds=900) as browser:
        yield browser["session_id"]


def attach_url(service, sid: str, process_id: str) -> str:
    return service.url.replace("http://", "ws://", 1) + f"/browsers/{sid}/process/{process_id}/attach"


def attach(service, sid: str, process_id: str, token: str | None = None):
    headers = {"Authorization": f"Bearer {token or service.token}"}
    return connect(attach_url(service, sid, process_id), additional_headers=headers, open_timeout=TIMEOUT)


async def spawn(http: httpx.AsyncClient, sid: str, command: str, *args: str, **fields) -> str:
    r = await http.post(f"/browsers/{sid}/process/spawn", json={"command": command, "args": list(args), **fields})
    assert r.status_code == 200, r.text
    return r.json()["process_id"]


class Screen:
    """Everything one attached client has received."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.output = b""
        self.exit: dict | None = None

    async def until(self, needle: bytes) -> None:
        async with asyncio.timeout(TIMEOUT):
            while needle not in self.output:
                frame = await self.ws.recv()
                assert isinstance(frame, bytes), f"unexpected text frame before {needle!r}: {frame}"
                self.output += frame

    async def until_exit(self) -> dict:
        async with asyncio.timeout(TIMEOUT):
            while True:
                frame = await self.ws.recv()
                if isinstance(frame, bytes):
                    self.output += frame
                    continue
                self.exit = json.loads(frame)
                break
            with pytest.raises(ConnectionClosed):
                await self.ws.recv()
        assert self.ws.close_code == 1000
        return self.exit


async def test_attach_round_trip_with_resize_and_exit(
    browserless_service, browserless_http: httpx.AsyncClient, sid: str
) -> None:
    pid = await spawn(browserless_http, sid, "sh", allocate_tty=True, rows=24, cols=80, env={"PS1": "$ "})
    async with attach(browserless_service, sid, pid) as ws:
        screen = Screen(ws)
        await ws.send(b"stty size\n")
        await screen.until(b"24 80\r\n")
        await ws.send(json.dumps({"type": "resize", "rows": 33, "cols": 101}))
        await ws.send(b"stty size\n")
        await screen.until(b"33 101\r\n")
        await ws.send(b"exit 7\n")
        assert await screen.until_exit() == {"type": "exit", "exitCode": 7}


async def test_attach_first_sends_what_was_written_before(
    browserless_service, browserless_http: httpx.AsyncClient, sid: str
) -> None:
    pid = await spawn(browserless_http, sid, "sh", "-c", "echo written-before-attach; exec cat", allocate_tty=True)
    # wait until it is out
    async with browserless_http.stream("GET", f"/browsers/{sid}/process/{pid}/stdout/stream") as r:
        async for line in r.aiter_lines():
            if line.startswith("data:"):
                break
    async with attach(browserless_service, sid, pid) as ws:
        screen = Screen(ws)
        await screen.until(b"written-before-attach\r\n")
        await ws.send(b"\x03")  # Ctrl-C: the terminal sends INT to cat
        assert await screen.until_exit() == {"type": "exit", "exitCode": 130}


async def test_second_attach_is_refused_with_409(
    browserless_service, browserless_http: httpx.AsyncClient, sid: str
) -> None:
    pid = await spawn(browserless_http, sid, "cat", allocate_tty=True)
    async with attach(browserless_service, sid, pid) as first:
        with pytest.raises(InvalidStatus) as refused:
            async with attach(browserless_service, sid, pid):
                pass
        assert refused.value.response.status_code == 409
        body = json.loads(refused.value.response.body)
        assert body["code"] == "conflict" and pid in body["message"]
        # the first one still works
        screen = Screen(first)
        await first.send(b"still mine\n")
        await screen.until(b"still mine\r\n")
    # once the first has gone, attaching works again
    async with attach(browserless_service, sid, pid) as again:
        screen = Screen(again)
        await again.send(b"\x04")
        assert (await screen.until_exit())["exitCode"] == 0


async def test_attach_to_a_pipe_process_carries_stdin_and_both_outputs(
    browserless_service, browserless_http: httpx.AsyncClient, sid: str
) -> None:
    script = 'read line; echo "out $line"; echo "err $line" >&2; exit 2'
    pid = await spawn(browserless_http, sid, "sh", "-c", script)
    async with attach(browserless_service, sid, pid) as ws:
        screen = Screen(ws)
        await ws.send(b"pipe\n")
        exit_frame = await screen.until_exit()
    assert b"out pipe\n" in screen.output and b"err pipe\n" in screen.output
    assert exit_frame == {"type": "exit", "exitCode": 2}


async def test_attach_errors_before_the_upgrade(
    browserless_service, browserless_http: httpx.AsyncClient, sid: str
) -> None:
    unknown = "6f1c1f5e-0000-4000-8000-000000000000"
    with pytest.raises(InvalidStatus) as missing:
        async with attach(browserless_service, sid, unknown):
            pass
    assert missing.value.response.status_code == 404
    assert json.loads(missing.value.response.body)["code"] == "not_found"
    with pytest.raises(InvalidStatus) as no_session:
        async with attach(browserless_service, "no-such-session", unknown):
            pass
    assert no_session.value.response.status_code == 404
    pid = await spawn(browserless_http, sid, "true")
    with pytest.raises(InvalidStatus) as bad_token:
        async with attach(browserless_service, sid, pid, token="wrong"):
            pass
    assert bad_token.value.response.status_code == 401


async def test_attach_after_exit_gets_output_and_exit(
    browserless_service, browserless_http: httpx.AsyncClient, sid: str
) -> None:
    pid = await spawn(browserless_http, sid, "sh", "-c", "echo done-already; exit 9")
    async with browserless_http.stream("GET", f"/browsers/{sid}/process/{pid}/stdout/stream") as r:
        assert [line async for line in r.aiter_lines() if line.startswith("data:")][-1].endswith('"exit_code":9}')
    async with attach(browserless_service, sid, pid) as ws:
        screen = Screen(ws)
        assert await screen.until_exit() == {"type": "exit", "exitCode": 9}
    assert screen.output == b"done-already\n"


async def test_bad_control_frames_are_ignored(
    browserless_service, browserless_http: httpx.AsyncClient, sid: str
) -> None:
    pid = await spawn(browserless_http, sid, "cat", allocate_tty=True)
    async with attach(browserless_service, sid, pid) as ws:
        screen = Screen(ws)
        for text in ["not json", '{"type":"resize","rows":0,"cols":5}', '{"type":"dance"}', "[1]"]:
            await ws.send(text)
        await ws.send(b"alive\n")
        await screen.until(b"alive\r\nalive\r\n")
        await ws.send(b"\x04")
        assert (await screen.until_exit())["exitCode"] == 0


# ---------------------------------------------------------------------------------------- PtyOutput
# What the shell pane and `bbrowse shell` read a PTY with, against the real service in both modes.

PROMPT_SHELL = ["bash", "--norc", "--noprofile", "-i"]
PROMPT_ENV = {"PS1": "PROMPT> "}


class Collected:
    """PtyOutput's callbacks, recorded."""

    def __init__(self) -> None:
        self.output = bytearray()
        self.paths: list[str] = []
        self.errors: list[BaseException] = []
        self.changed = asyncio.Event()

    def on_output(self, data: bytes) -> None:
        self.output += data
        self.changed.set()

    async def until(self, needle: bytes, start: int = 0) -> int:
        """Wait for `needle` in the output from `start`; where it ends."""
        async with asyncio.timeout(TIMEOUT):
            while (found := self.output.find(needle, start)) < 0:
                self.changed.clear()
                await self.changed.wait()
        return found + len(needle)


def pty_output(client, sid: str, process_id: str, seen: Collected, size=(24, 80)):
    from bbrowse.client import PtyOutput

    return PtyOutput(client, sid, process_id, on_output=seen.on_output, size=size, on_path=seen.paths.append,
                     on_error=seen.errors.append)


async def path_chosen(output) -> None:
    """Wait (bounded) until `output` has chosen how it reads the PTY: over attach or the stdout stream."""
    async with asyncio.timeout(TIMEOUT):
        while output.path is None:
            await asyncio.sleep(0.01)


#: A process of the compat session that exited when the session was made: Kernel forgets it 10 s later,
#: so the test about a forgotten process, last in this module, mostly finds it forgotten already.
_EXITED_EARLY: dict[str, str] = {}


@pytest.fixture(scope="module")
async def compat_client(browserless_compat_service):
    """A session on --kernel-compat without Chromium: PTYs and attach need no browser."""
    from bbrowse.client import BrowserClient

    client = BrowserClient(browserless_compat_service.url, browserless_compat_service.token)
    browser = await client.sessions.create(timeout_seconds=900)
    _EXITED_EARLY[browser.session_id] = (await client.processes.spawn(browser.session_id, "true",
                                                                      allocate_tty=True)).process_id
    yield client, browser.session_id
    await client.sessions.delete(browser.session_id)


@pytest.fixture(scope="module")
async def default_client(browserless_service, sid: str):
    from bbrowse.client import BrowserClient

    client = BrowserClient(browserless_service.url, browserless_service.token)
    await client.sessions.get(sid)  # learns the VM route
    return client, sid


@pytest.fixture(params=["default", "compat"])
def either(request, default_client, compat_client):
    """(client, session id, mode) on the default service, then on --kernel-compat."""
    return (*(default_client if request.param == "default" else compat_client), request.param)


async def test_pty_output_over_attach_via_the_vm_until_the_exit_code(either) -> None:
    client, sid, _ = either
    proc = await client.processes.spawn(sid, PROMPT_SHELL[0], PROMPT_SHELL[1:], allocate_tty=True, rows=24,
                                        cols=80, env=PROMPT_ENV)
    seen = Collected()
    output = pty_output(client, sid, proc.process_id, seen)
    running = asyncio.ensure_future(output.run())
    await seen.until(b"PROMPT> ")
    assert seen.paths == ["attach"] and output.path == "attach"
    await client.processes.stdin(sid, proc.process_id, b"stty size\r")
    await seen.until(b"24 80\r\n")
    await output.resize(33, 101)  # over the attach connection
    await client.processes.stdin(sid, proc.process_id, b"stty size\r")
    await seen.until(b"33 101\r\n")
    await client.processes.stdin(sid, proc.process_id, b"exit 7\r")
    assert await asyncio.wait_for(running, TIMEOUT) == 7
    assert not seen.errors and output.reconnects == 0


async def test_a_signal_ends_with_its_code_and_kernel_says_minus_one(either) -> None:
    client, sid, mode = either
    proc = await client.processes.spawn(sid, "sleep", ["300"], allocate_tty=True)
    seen = Collected()
    output = pty_output(client, sid, proc.process_id, seen)
    running = asyncio.ensure_future(output.run())
    await path_chosen(output)
    await client.processes.kill(sid, proc.process_id, "KILL")
    assert await asyncio.wait_for(running, TIMEOUT) == (-1 if mode == "compat" else 128 + 9)


async def test_attach_refused_falls_back_to_stdout_stream(either) -> None:
    client, sid, mode = either
    proc = await client.processes.spawn(sid, "sh", ["-c", "read line; echo got-$line; exit 3"], allocate_tty=True)
    async with client.processes.attach(sid, proc.process_id):  # someone else holds the one attach
        seen = Collected()
        output = pty_output(client, sid, proc.process_id, seen)
        running = asyncio.ensure_future(output.run())
        await path_chosen(output)
        assert output.path == "stream" and type(output.refusal).__name__ == "Conflict" and not seen.errors
        await client.processes.stdin(sid, proc.process_id, b"it\n")
        assert await asyncio.wait_for(running, TIMEOUT) == 3
    # bbrowse serve also streams a PTY's output; Kernel's VM sends only the exit event there
    assert (b"got-it" in seen.output) is (mode == "default")


#: Prints its window size on every SIGWINCH, echoes lines, exits 5 on "quit" (the test's own Python).
WINCH_PROGRAM = """
import os, signal, sys
def winch(*_):
    cols, rows = os.get_terminal_size(0)
    os.write(1, b"winch-%dx%d\\n" % (rows, cols))
signal.signal(signal.SIGWINCH, winch)
os.write(1, b"ready\\n")
for line in sys.stdin:
    os.write(1, b"got-" + line.strip().encode() + b"\\n")
    if line.strip() == "quit":
        sys.exit(5)
"""


def drop_attach(service, output) -> None:
    """The service drops the attach connection (its end shut down, no close frame)."""
    from socket_drop import DropUnsupportedError, client_connections, drop_connections

    port = output.connection.local_address[1]
    try:
        assert drop_connections(service.pid, client_connections(os.getpid(), port)) == 1
    except DropUnsupportedError as exc:
        pytest.skip(f"cannot drop the service's socket here: {exc}")


async def test_a_dropped_attach_reattaches_nudges_the_size_and_shows_output_once(
    either, browserless_service, browserless_compat_service
) -> None:
    client, sid, mode = either
    proc = await client.processes.spawn(sid, "python3", ["-u", "-c", WINCH_PROGRAM], allocate_tty=True,
                                        rows=24, cols=80)
    seen = Collected()
    output = pty_output(client, sid, proc.process_id, seen)
    running = asyncio.ensure_future(output.run())
    await seen.until(b"ready\r\n")
    await client.processes.stdin(sid, proc.process_id, b"one\n")
    end = await seen.until(b"got-one\r\n")

    drop_attach(browserless_compat_service if mode == "compat" else browserless_service, output)
    # reattached, and the size nudged (one column less, then back): the program repaints on SIGWINCH
    end = await seen.until(b"winch-24x80\r\n", end)
    assert output.reconnects == 1 and output.path == "attach"
    assert type(seen.errors[0]).__name__ == "ConnectionLost"
    await client.processes.stdin(sid, proc.process_id, b"two\nquit\n")
    assert await asyncio.wait_for(running, TIMEOUT) == 5
    assert b"got-two\r\n" in seen.output[end:]
    # bbrowse serve replays its backlog to the new attach: the part already shown is not shown again
    assert seen.output.count(b"got-one") == 1 and seen.output.count(b"ready") == 1, bytes(seen.output)


async def test_an_exit_while_the_attach_was_down_ends_with_its_code(
    either, browserless_service, browserless_compat_service
) -> None:
    client, sid, mode = either
    proc = await client.processes.spawn(sid, "sh", ["-c", "echo ready; read line; exit 9"], allocate_tty=True)
    seen = Collected()
    output = pty_output(client, sid, proc.process_id, seen)
    running = asyncio.ensure_future(output.run())
    await seen.until(b"ready\r\n")
    drop_attach(browserless_compat_service if mode == "compat" else browserless_service, output)
    await client.processes.stdin(sid, proc.process_id, b"x\n")  # exits while no one is attached
    assert await asyncio.wait_for(running, TIMEOUT) == 9


async def test_exit_code_after_kernel_forgot_the_process_is_unknown_not_a_hang(compat_client) -> None:
    from bbrowse.client import NotFound

    client, sid = compat_client
    process_id = _EXITED_EARLY[sid]
    async with asyncio.timeout(30):  # Kernel keeps an exited process for 10 s, then forgets it
        while True:
            try:
                await client.processes.status(sid, process_id)
            except NotFound:
                break
            await asyncio.sleep(0.1)
    seen = Collected()
    assert await asyncio.wait_for(pty_output(client, sid, process_id, seen).run(), TIMEOUT) is None
