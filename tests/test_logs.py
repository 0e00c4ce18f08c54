"""The logs area over real HTTP and real SSE: path and supervisor sources, follow and no-follow,
truncation, rotation, partial lines, the exact framing, errors before the stream, and cleanup."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from conftest import session_area

from bbrowse.wire import Error, LogEvent

if TYPE_CHECKING:
    from conftest import ServiceHandle


@pytest.fixture(scope="module")
def service(browserless_service: ServiceHandle) -> ServiceHandle:
    """The service with no Chromium, for every test here (overrides conftest's, and so the `sdk` made from it): they
    follow files and the service's own log, never a browser."""
    return browserless_service


@pytest.fixture(scope="module")
def http(browserless_http: httpx.AsyncClient) -> httpx.AsyncClient:
    """Raw HTTP to that same service (overrides conftest's)."""
    return browserless_http


@pytest.fixture(scope="module")
def session_id(browserless_module_session_id: str) -> str:
    """One session for the whole module (overrides the per-test one)."""
    return browserless_module_session_id


@pytest.fixture
def tmp_path(service: ServiceHandle, session_id: str) -> Path:
    """A fresh directory of the module's session, in place of pytest's (a session's sandbox sees no directory of
    this machine): its str() is the path inside, its file operations act on the host side (conftest.session_area)."""
    return session_area(service, session_id, f"t-{secrets.token_hex(4)}")


def _stream_url(session_id: str) -> str:
    return f"/browsers/{session_id}/logs/stream"


class EventReader:
    """Reads an SSE body frame by frame, asserting the contract's exact framing on every frame."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._chunks = response.aiter_raw()
        self._buffer = b""

    async def event(self) -> LogEvent | None:
        """The next log event; None when the stream has ended."""
        while True:
            while b"\n\n" not in self._buffer:
                try:
                    self._buffer += await anext(self._chunks)
                except StopAsyncIteration:
                    assert self._buffer == b"", f"stream ended inside a frame: {self._buffer!r}"
                    return None
            frame, self._buffer = self._buffer.split(b"\n\n", 1)
            if frame.startswith(b":"):
                continue  # heartbeat comment
            assert frame.startswith(b"data: {") and b"\n" not in frame, frame
            payload = json.loads(frame.removeprefix(b"data: "))
            assert set(payload) == {"event", "message", "timestamp"} and payload["event"] == "log"
            return LogEvent.model_validate(payload)

    async def messages(self, count: int, timeout: float = 10.0) -> list[str]:
        async def read() -> list[str]:
            out = []
            while len(out) < count:
                event = await self.event()
                assert event is not None, f"stream ended after {out}"
                out.append(event.message)
            return out

        return await asyncio.wait_for(read(), timeout)

    async def rest(self, timeout: float = 10.0) -> list[str]:
        """Every remaining message, asserting that the stream ends by itself."""

        async def read() -> list[str]:
            out = []
            while (event := await self.event()) is not None:
                out.append(event.message)
            return out

        return await asyncio.wait_for(read(), timeout)


@contextlib.asynccontextmanager
async def log_stream(http: httpx.AsyncClient, session_id: str, **params) -> AsyncIterator[EventReader]:
    params = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in params.items()}
    async with http.stream("GET", _stream_url(session_id), params=params) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-sse-content-type"] == "application/json"
        yield EventReader(response)


def _append(path: Path, text: str | bytes) -> None:
    with open(path, "ab") as f:
        f.write(text.encode() if isinstance(text, str) else text)


# no-follow ---------------------------------------------------------------------------------------


async def test_no_follow_sends_every_existing_line_then_ends(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b"first\r\nsecond \"quoted\" \\ tab\t\n\xffbad utf8\n\nno newline at the end")
    before = datetime.now(UTC)
    async with http.stream("GET", _stream_url(session_id),
                           params={"source": "path", "path": str(log), "follow": "false"}) as response:
        body = await asyncio.wait_for(response.aread(), 10)
    assert response.headers["x-sse-content-type"] == "application/json"
    frames = body.split(b"\n\n")
    assert frames[-1] == b"" and all(f.startswith(b"data: {\"event\":\"log\",\"message\":") for f in frames[:-1])
    events = [LogEvent.model_validate_json(f.removeprefix(b"data: ")) for f in frames[:-1]]
    assert [e.message for e in events] == [
        "first", 'second "quoted" \\ tab\t', "\ufffdbad utf8", "", "no newline at the end",
    ]
    assert all(before - timedelta(seconds=1) <= e.timestamp <= datetime.now(UTC) for e in events)
    assert all(e.timestamp.utcoffset() == timedelta(0) for e in events)


def test_no_follow_through_the_official_sdk(sdk, session_id: str, tmp_path: Path) -> None:
    log = tmp_path / "sdk.log"
    log.write_text("".join(f"line {i}\n" for i in range(500)))
    with sdk.browsers.logs.stream(session_id, source="path", path=str(log), follow=False) as stream:
        events = list(stream)
    assert [e.message for e in events] == [f"line {i}" for i in range(500)]
    assert all(e.event == "log" and e.timestamp for e in events)


async def test_tail_sends_only_the_last_lines(http: httpx.AsyncClient, session_id: str, tmp_path: Path) -> None:
    log = tmp_path / "tail.log"
    log.write_text("".join(f"l{i}\n" for i in range(100_000)))
    async with log_stream(http, session_id, source="path", path=str(log), follow=False, tail=3) as reader:
        assert await reader.rest() == ["l99997", "l99998", "l99999"]
    async with log_stream(http, session_id, source="path", path=str(log), follow=True, tail=2) as reader:
        assert await reader.messages(2) == ["l99998", "l99999"]
        _append(log, "new\n")
        assert await reader.messages(1) == ["new"]


# follow ------------------------------------------------------------------------------------------


async def test_follow_sends_only_lines_appended_after_connecting(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    log = tmp_path / "follow.log"
    log.write_text("old 1\nold 2\n")
    async with log_stream(http, session_id, source="path", path=str(log)) as reader:  # follow defaults to true
        _append(log, "new 1\n")
        assert await reader.messages(1) == ["new 1"]
        _append(log, "".join(f"burst {i}\n" for i in range(20_000)))
        assert await reader.messages(20_000) == [f"burst {i}" for i in range(20_000)]


async def test_follow_holds_a_partial_line_until_its_newline(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path
) -> None:
    log = tmp_path / "partial.log"
    log.touch()
    async with log_stream(http, session_id, source="path", path=str(log), follow=True) as reader:
        _append(log, "abc")
        await asyncio.sleep(0.2)  # the follower polls every 50 ms: it has seen "abc" alone by now
        _append(log, "def\nnext\n")
        assert await reader.messages(2) == ["abcdef", "next"]
        # a partial line nobody completes (a prompt) is sent after a quiet second
        _append(log, "prompt> ")
        assert await reader.messages(1) == ["prompt> "]


async def test_follow_survives_truncation(http: httpx.AsyncClient, session_id: str, tmp_path: Path) -> None:
    log = tmp_path / "truncated.log"
    log.touch()
    async with log_stream(http, session_id, source="path", path=str(log), follow=True) as reader:
        _append(log, "".join(f"before {i}\n" for i in range(100)))
        assert (await reader.messages(100))[-1] == "before 99"
        log.write_bytes(b"after truncate\n")  # truncated in place, as copytruncate does, and written on
        _append(log, "and more\n")
        assert await reader.messages(2) == ["after truncate", "and more"]


async def test_follow_survives_rotation(http: httpx.AsyncClient, session_id: str, tmp_path: Path) -> None:
    log = tmp_path / "rotated.log"
    log.touch()
    async with log_stream(http, session_id, source="path", path=str(log), follow=True) as reader:
        _append(log, "before rotation\n")
        assert await reader.messages(1) == ["before rotation"]
        os.rename(log, tmp_path / "rotated.log.1")
        _append(tmp_path / "rotated.log.1", "late line in the old file\n")  # its writer has not reopened yet
        await asyncio.sleep(0.2)  # the path is missing for a while: the old file is still followed
        log.write_text("new file 1\n")
        _append(log, "new file 2\n")
        assert await reader.messages(3) == ["late line in the old file", "new file 1", "new file 2"]


async def test_follow_ends_when_the_session_is_deleted(http: httpx.AsyncClient, service: ServiceHandle) -> None:
    sid = (await http.post("/browsers", json={})).json()["session_id"]
    log = session_area(service, sid, "logs") / "ends.log"  # a file of that session
    log.touch()
    async with log_stream(http, sid, source="path", path=str(log), follow=True) as reader:
        _append(log, "x\n")
        assert await reader.messages(1) == ["x"]
        assert (await http.delete(f"/browsers/{sid}")).status_code == 204
        assert await reader.rest(timeout=5) == []


async def test_follow_ends_cleanly_when_the_session_goes_while_it_waits(browserless_http: httpx.AsyncClient,
                                                                         browserless_service) -> None:
    """A session deleted while its log is followed ends the stream with a proper end, never a cut connection
    (the sandbox's threads went first, and the read in flight failed out of the stream)."""
    for pause in (0.0, 0.05, 0.1, 0.2, 0.3):
        sid = (await browserless_http.post("/browsers", json={})).json()["session_id"]
        log = session_area(browserless_service, sid, "logs") / "ends.log"
        log.touch()
        async with log_stream(browserless_http, sid, source="path", path=str(log), follow=True) as reader:
            _append(log, "x\n")
            assert await reader.messages(1) == ["x"]
            await asyncio.sleep(pause)
            assert (await browserless_http.delete(f"/browsers/{sid}")).status_code == 204
            assert await reader.rest(timeout=5) == []


async def test_disconnecting_closes_the_followed_file(
    http: httpx.AsyncClient, session_id: str, tmp_path: Path, service: ServiceHandle
) -> None:
    log = tmp_path / "closed.log"
    log.touch()

    def open_fds() -> int:
        count = 0
        for fd in os.listdir(f"/proc/{service.pid}/fd"):
            with contextlib.suppress(OSError):
                count += os.readlink(f"/proc/{service.pid}/fd/{fd}") == str(log)
        return count

    async with httpx.AsyncClient(base_url=service.url, headers=service.headers, timeout=10) as own:
        async with log_stream(own, session_id, source="path", path=str(log), follow=True) as reader:
            _append(log, "hello\n")
            assert await reader.messages(1) == ["hello"]
            assert open_fds() == 1
    deadline = time.monotonic() + 5
    while open_fds():
        assert time.monotonic() < deadline, "the service still holds the log open after the client left"
        await asyncio.sleep(0.02)


# supervisor logs ---------------------------------------------------------------------------------


async def test_supervisor_bbrowse_streams_the_services_own_log(http: httpx.AsyncClient, session_id: str) -> None:
    marker = f"/no-such-route-{uuid.uuid4().hex}"
    async with log_stream(http, session_id, source="supervisor", supervisor_process="bbrowse", follow=True) as reader:
        assert (await http.get(marker)).status_code == 404

        async def find() -> str:
            while True:
                event = await reader.event()
                assert event is not None
                if marker in event.message:
                    return event.message

        assert f"GET {marker} 404" in await asyncio.wait_for(find(), 10)
    async with log_stream(http, session_id, source="supervisor", supervisor_process="bbrowse", follow=False) as reader:
        assert any(f"GET {marker} 404" in line for line in await reader.rest())


def test_supervisor_log_through_the_official_sdk(sdk, session_id: str) -> None:
    with sdk.browsers.logs.stream(session_id, source="supervisor", supervisor_process="bbrowse",
                                  follow=False) as stream:
        events = list(stream)
    assert any("bbrowse.access" in e.message for e in events)


async def test_supervisor_names_include_programs_with_a_log(
    http: httpx.AsyncClient, session_id: str, service: ServiceHandle
) -> None:
    url = f"/browsers/{session_id}/logs/supervisors"
    names = (await http.get(url)).json()
    assert names[0] == "bbrowse"
    # a supervised program of this session writes its log: it is offered and streams
    program_log = service.state_dir / "service" / "sessions" / session_id / "logs" / "myprogram.log"
    program_log.write_text("started\nready\n")
    assert "myprogram" in (await http.get(url)).json()
    async with log_stream(http, session_id, source="supervisor", supervisor_process="myprogram", follow=False) as r:
        assert await r.rest() == ["started", "ready"]
    async with log_stream(http, session_id, source="supervisor", supervisor_process="myprogram", tail=1) as r:
        assert await r.messages(1) == ["ready"]
        _append(program_log, "serving\n")
        assert await r.messages(1) == ["serving"]


# errors before the stream ------------------------------------------------------------------------


async def test_errors_come_before_the_stream(http: httpx.AsyncClient, session_id: str, tmp_path: Path) -> None:
    url = _stream_url(session_id)

    async def error(params: dict, status: int) -> Error:
        response = await asyncio.wait_for(http.get(url, params=params), 10)
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/json"
        return Error.model_validate(response.json())

    missing_path = await error({"source": "path"}, 400)
    assert missing_path.details and missing_path.details[0].message.startswith("path:")
    missing_name = await error({"source": "supervisor"}, 400)
    assert missing_name.details and missing_name.details[0].message.startswith("supervisor_process:")
    missing_source = await error({"path": "/etc/hostname"}, 400)
    assert missing_source.details and missing_source.details[0].message.startswith("source:")
    bad_source = await error({"source": "journal", "path": "/etc/hostname"}, 400)
    assert bad_source.details and bad_source.details[0].message.startswith("source:")

    relative = await error({"source": "path", "path": "var/log/x.log"}, 400)
    assert relative.details and relative.details[0].message.startswith("path:")
    assert "directory" in (await error({"source": "path", "path": str(tmp_path)}, 400)).message
    os.mkfifo(tmp_path / "fifo")
    assert "FIFO" in (await error({"source": "path", "path": str(tmp_path / "fifo")}, 400)).message

    unknown_file = await error({"source": "path", "path": str(tmp_path / "missing.log")}, 404)
    assert unknown_file.code == "not_found" and "missing.log" in unknown_file.message
    unknown_name = await error({"source": "supervisor", "supervisor_process": "no-such-program"}, 404)
    assert "no-such-program" in unknown_name.message and "bbrowse" in unknown_name.message
    traversal = await error({"source": "supervisor", "supervisor_process": "../../logs/bbrowse"}, 404)
    assert traversal.code == "not_found"
    await error({"source": "path", "path": "/etc/hostname", "tail": "-1"}, 400)
