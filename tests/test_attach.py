"""The `attach` WebSocket against a real `bbrowse serve`: a real shell in a real PTY, driven like a terminal."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

TIMEOUT = 15.0


@pytest.fixture(scope="module")
async def sid(http: httpx.AsyncClient) -> AsyncIterator[str]:
    """One session for the module (each session starts a Chromium; attach does not need its own)."""
    r = await http.post("/browsers", json={"timeout_seconds": 900})
    assert r.status_code == 200, r.text
    yield r.json()["session_id"]
    await http.delete(f"/browsers/{r.json()['session_id']}")


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


async def test_attach_round_trip_with_resize_and_exit(service, http: httpx.AsyncClient, sid: str) -> None:
    pid = await spawn(http, sid, "sh", allocate_tty=True, rows=24, cols=80, env={"PS1": "$ "})
    async with attach(service, sid, pid) as ws:
        screen = Screen(ws)
        await ws.send(b"stty size\n")
        await screen.until(b"24 80\r\n")
        await ws.send(json.dumps({"type": "resize", "rows": 33, "cols": 101}))
        await ws.send(b"stty size\n")
        await screen.until(b"33 101\r\n")
        await ws.send(b"exit 7\n")
        assert await screen.until_exit() == {"type": "exit", "exitCode": 7}


async def test_attach_first_sends_what_was_written_before(service, http: httpx.AsyncClient, sid: str) -> None:
    pid = await spawn(http, sid, "sh", "-c", "echo written-before-attach; exec cat", allocate_tty=True)
    async with http.stream("GET", f"/browsers/{sid}/process/{pid}/stdout/stream") as r:  # wait until it is out
        async for line in r.aiter_lines():
            if line.startswith("data:"):
                break
    async with attach(service, sid, pid) as ws:
        screen = Screen(ws)
        await screen.until(b"written-before-attach\r\n")
        await ws.send(b"\x03")  # Ctrl-C: the terminal sends INT to cat
        assert await screen.until_exit() == {"type": "exit", "exitCode": 130}


async def test_second_attach_is_refused_with_409(service, http: httpx.AsyncClient, sid: str) -> None:
    pid = await spawn(http, sid, "cat", allocate_tty=True)
    async with attach(service, sid, pid) as first:
        with pytest.raises(InvalidStatus) as refused:
            async with attach(service, sid, pid):
                pass
        assert refused.value.response.status_code == 409
        body = json.loads(refused.value.response.body)
        assert body["code"] == "conflict" and pid in body["message"]
        # the first one still works
        screen = Screen(first)
        await first.send(b"still mine\n")
        await screen.until(b"still mine\r\n")
    # once the first has gone, attaching works again
    async with attach(service, sid, pid) as again:
        screen = Screen(again)
        await again.send(b"\x04")
        assert (await screen.until_exit())["exitCode"] == 0


async def test_attach_to_a_pipe_process_carries_stdin_and_both_outputs(
    service, http: httpx.AsyncClient, sid: str
) -> None:
    pid = await spawn(http, sid, "sh", "-c", 'read line; echo "out $line"; echo "err $line" >&2; exit 2')
    async with attach(service, sid, pid) as ws:
        screen = Screen(ws)
        await ws.send(b"pipe\n")
        exit_frame = await screen.until_exit()
    assert b"out pipe\n" in screen.output and b"err pipe\n" in screen.output
    assert exit_frame == {"type": "exit", "exitCode": 2}


async def test_attach_errors_before_the_upgrade(service, http: httpx.AsyncClient, sid: str) -> None:
    unknown = "6f1c1f5e-0000-4000-8000-000000000000"
    with pytest.raises(InvalidStatus) as missing:
        async with attach(service, sid, unknown):
            pass
    assert missing.value.response.status_code == 404
    assert json.loads(missing.value.response.body)["code"] == "not_found"
    with pytest.raises(InvalidStatus) as no_session:
        async with attach(service, "no-such-session", unknown):
            pass
    assert no_session.value.response.status_code == 404
    pid = await spawn(http, sid, "true")
    with pytest.raises(InvalidStatus) as bad_token:
        async with attach(service, sid, pid, token="wrong"):
            pass
    assert bad_token.value.response.status_code == 401


async def test_attach_after_exit_gets_output_and_exit(service, http: httpx.AsyncClient, sid: str) -> None:
    pid = await spawn(http, sid, "sh", "-c", "echo done-already; exit 9")
    async with http.stream("GET", f"/browsers/{sid}/process/{pid}/stdout/stream") as r:
        assert [line async for line in r.aiter_lines() if line.startswith("data:")][-1].endswith('"exit_code":9}')
    async with attach(service, sid, pid) as ws:
        screen = Screen(ws)
        assert await screen.until_exit() == {"type": "exit", "exitCode": 9}
    assert screen.output == b"done-already\n"


async def test_bad_control_frames_are_ignored(service, http: httpx.AsyncClient, sid: str) -> None:
    pid = await spawn(http, sid, "cat", allocate_tty=True)
    async with attach(service, sid, pid) as ws:
        screen = Screen(ws)
        for text in ["not json", '{"type":"resize","rows":0,"cols":5}', '{"type":"dance"}', "[1]"]:
            await ws.send(text)
        await ws.send(b"alive\n")
        await screen.until(b"alive\r\nalive\r\n")
        await ws.send(b"\x04")
        assert (await screen.until_exit())["exitCode"] == 0
