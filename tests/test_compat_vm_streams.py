"""`bbrowse serve --kernel-compat`: streams, files and process controls as Kernel's VM has them, a row a test.

Raw httpx and websockets through the session's `base_url` and `jwt`, as a Kernel client goes, so each
test sees the server's behaviour and not a client's coping. Rows are those of the README's
"Default vs --kernel-compat" table; the Go they come from is named in each docstring (kernel-images
`server/`, commit e10719e).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from test_compat_kernel_vm import TIMEOUT, Vm, status, vm_of, wait_exited

from bbrowse.wire import LOGS_SOURCE_NOT_AVAILABLE


# Services with no Chromium: no test here is about the browser.
@pytest.fixture(scope="module")
async def compat(browserless_compat_http: httpx.AsyncClient) -> AsyncIterator[Vm]:
    async for vm in vm_of(browserless_compat_http):
        yield vm


@pytest.fixture(scope="module")
async def default(browserless_http: httpx.AsyncClient) -> AsyncIterator[Vm]:
    async for vm in vm_of(browserless_http):
        yield vm


async def sh(vm: Vm, script: str) -> str:
    """Run `script` in the session (its own files: a session is a sandbox) and return its stdout."""
    r = await vm.http.post("/process/exec", json={"command": "sh", "args": ["-c", script]})
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    return base64.b64decode(r.json()["stdout_b64"]).decode()


class Seen:
    """What a client saw of one SSE stream within its time."""

    def __init__(self) -> None:
        self.headers_after: float | None = None  # seconds after the request; None: no response at all
        self.events: list[dict] = []
        self.ended = False  # the service ended the stream


async def sse(vm: Vm, url: str, seconds: float, **params) -> Seen:
    """Read an SSE stream for at most `seconds`."""
    seen = Seen()
    started = time.monotonic()
    try:
        async with asyncio.timeout(seconds), vm.http.stream("GET", url, params={"jwt": vm.jwt, **params}) as r:
            seen.headers_after = time.monotonic() - started
            assert r.status_code == 200, await r.aread()
            async for line in r.aiter_lines():
                assert not line.startswith(("event:", "id:", ":")), line  # no names, ids or heartbeats
                if line.startswith("data: "):
                    seen.events.append(json.loads(line[6:]))
            seen.ended = True
    except TimeoutError:
        pass
    return seen


# SSE framing -----------------------------------------------------------------------------------------


async def test_sse_headers_come_only_with_the_first_event(compat: Vm, default: Vm) -> None:
    """`oapi.go` 16477-16513: `WriteHeader(200)` without a flush, then a blocking read. A PTY's stream has
    no event before the exit, so the client has no response (not even headers) until then."""
    pid = await compat.spawn("sh", "-c", "read x; exit 5", allocate_tty=True)
    stream = asyncio.create_task(sse(compat, f"/process/{pid}/stdout/stream", TIMEOUT))
    await asyncio.sleep(0.8)  # the request is well in: still no headers
    assert not stream.done()
    r = await compat.http.post(f"/process/{pid}/stdin", json={"data_b64": base64.b64encode(b"\n").decode()})
    assert r.status_code == 200
    seen = await stream
    assert seen.headers_after is not None and seen.headers_after >= 0.8, seen.headers_after
    assert seen.events == [{"event": "exit", "exit_code": 5}] and seen.ended

    # the default service sends its headers at once
    pid = await default.spawn("sh", "-c", "read x; exit 5", allocate_tty=True)
    async with asyncio.timeout(TIMEOUT), default.http.stream("GET", f"/process/{pid}/stdout/stream") as r:
        assert r.status_code == 200
    await default.http.post(f"/process/{pid}/kill", json={"signal": "KILL"})


async def test_pty_stream_opened_after_the_exit_gets_nothing(compat: Vm) -> None:
    """`process.go` 584-606: after the exit, `doneCh` wins the select (the harsh branch): 200, no event."""
    pid = await compat.spawn("sh", "-c", "echo gone; exit 4", allocate_tty=True)
    await wait_exited(compat, pid)
    seen = await sse(compat, f"/process/{pid}/stdout/stream", TIMEOUT)
    assert seen.headers_after is not None and seen.events == [] and seen.ended


# pipe stdout/stream: one 256-event channel -------------------------------------------------------------


async def test_pipe_output_is_split_between_readers_and_blocks_the_program_with_none(compat: Vm) -> None:
    """`process.go` 342, 358-387: one `chan` of 256 events shared by every stream. Two readers split the
    output (each chunk reaches one of them); with no reader the program blocks once it (and the pipe) is full."""
    total = 8_000_000  # ~1950 reads of 4 KiB: far more than 256 events plus a 64 KiB pipe
    pid = await compat.spawn("sh", "-c", f"head -c {total} /dev/zero; read x")
    watched_until = time.monotonic() + 1.0
    while time.monotonic() < watched_until:  # nobody reads: head cannot write it all, the shell cannot go on
        assert (await status(compat, pid)).json()["state"] == "running"
        await asyncio.sleep(0.1)

    async def reader(got: list[bytes]) -> None:
        async with compat.http.stream("GET", f"/process/{pid}/stdout/stream") as r:
            async for line in r.aiter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    if "data_b64" in event:
                        got.append(base64.b64decode(event["data_b64"]))

    first: list[bytes] = []
    second: list[bytes] = []
    readers = [asyncio.create_task(reader(first)), asyncio.create_task(reader(second))]
    async with asyncio.timeout(TIMEOUT):
        while sum(map(len, first + second)) < total:
            await asyncio.sleep(0.05)
    await compat.http.post(f"/process/{pid}/kill", json={"signal": "KILL"})
    async with asyncio.timeout(TIMEOUT):  # the exit ends both streams
        await asyncio.gather(*readers)
    assert sum(map(len, first + second)) == total  # every byte once: split, not broadcast
    assert first and second, (len(first), len(second))
    assert max(map(len, first + second)) <= 4096


async def test_pipe_exit_event_only_to_a_waiting_reader(compat: Vm) -> None:
    """A reader waiting on the empty channel gets the exit event; a stream opened after the exit gets nothing,
    not even the output still queued for it (Go's select picks `doneCh`: the harsh branch)."""
    pid = await compat.spawn("sh", "-c", "echo up; read x; exit 6")
    async with asyncio.timeout(TIMEOUT), compat.http.stream("GET", f"/process/{pid}/stdout/stream") as r:
        lines = r.aiter_lines()
        while not (await anext(lines)).startswith("data: "):  # "up": this reader is in place and waiting
            pass
        await compat.http.post(f"/process/{pid}/stdin", json={"data_b64": base64.b64encode(b"\n").decode()})
        events = [json.loads(line[6:]) async for line in lines if line.startswith("data: ")]
    assert events == [{"event": "exit", "exit_code": 6}]

    pid = await compat.spawn("sh", "-c", "echo never-read; exit 2")
    await wait_exited(compat, pid)
    seen = await sse(compat, f"/process/{pid}/stdout/stream", TIMEOUT)
    assert seen.headers_after is not None and seen.events == [] and seen.ended


# process controls ------------------------------------------------------------------------------------


async def test_kill_signals_the_leader_only_and_controls_after_the_exit_are_500(compat: Vm) -> None:
    """`process.go` 488-494 (`cmd.Process.Signal`), 547-567, 617-645: while it runs, kill reaches the leader
    and not the children it started; after the exit kill, stdin and resize answer 500."""
    pid = await compat.spawn("sh", "-c", "sleep 30 & echo $!; wait")
    async with asyncio.timeout(TIMEOUT), compat.http.stream("GET", f"/process/{pid}/stdout/stream") as r:
        lines = r.aiter_lines()
        while not (line := await anext(lines)).startswith("data: "):
            pass
    child = int(base64.b64decode(json.loads(line[6:])["data_b64"]))
    assert (await compat.http.post(f"/process/{pid}/kill", json={"signal": "KILL"})).status_code == 200
    await wait_exited(compat, pid)
    await sh(compat, f"kill -0 {child} && kill -9 {child}")  # the background sleep was not signalled

    tty = await compat.spawn("sh", "-c", "exit 0", allocate_tty=True, rows=24, cols=80)
    await wait_exited(compat, tty)
    asks = [
        (pid, "/kill", {"signal": "TERM"}, "failed to signal process"),
        (pid, "/stdin", {"data_b64": base64.b64encode(b"late\n").decode()}, "failed to write to stdin"),
        (tty, "/stdin", {"data_b64": base64.b64encode(b"late\n").decode()}, "failed to write to stdin"),
        (tty, "/resize", {"rows": 30, "cols": 100}, "failed to resize PTY"),
    ]
    for process_id, path, body, message in asks:
        r = await compat.http.post(f"/process/{process_id}{path}", json=body)
        assert (r.status_code, r.json()) == (500, {"message": message}), (path, r.text)


async def test_spawn_ignores_timeout_and_a_pty_without_a_size_is_0x0(compat: Vm) -> None:
    """`process.go` 286-296: the size is set only when both rows and cols are given; spawn's `timeout_sec`
    is passed along but never used (78-243)."""
    pid = await compat.spawn("sh", "-c", "stty size; sleep 2; echo still-here; read x", allocate_tty=True,
                             timeout_sec=1)
    async with compat.attach(pid) as ws:
        seen = b""
        async with asyncio.timeout(TIMEOUT):
            while b"still-here" not in seen:
                seen += await ws.recv()
        await ws.send(b"\n")
    assert b"0 0" in seen, seen
    assert (await wait_exited(compat, pid))["exit_code"] == 0


async def test_exec_timeout_zero_is_none_and_past_it_a_500_with_no_output(compat: Vm) -> None:
    """`process.go` 183-204: `timeout_sec` 0 means none; past it the leader gets SIGKILL and the answer is
    500 `process timed out` (what it wrote is discarded)."""
    r = await compat.http.post("/process/exec", json={"command": "sh", "args": ["-c", "sleep 1.2; echo ok"],
                                                      "timeout_sec": 0})
    assert r.status_code == 200 and base64.b64decode(r.json()["stdout_b64"]) == b"ok\n"
    started = time.monotonic()
    r = await compat.http.post("/process/exec", json={"command": "sh", "args": ["-c", "echo early; exec sleep 30"],
                                                      "timeout_sec": 1})
    assert (r.status_code, r.json()) == (500, {"message": "process timed out"})
    assert time.monotonic() - started < 10


# logs/stream ------------------------------------------------------------------------------------------


async def test_logs_follow_false_never_ends_skips_empty_lines_and_never_sends_a_partial_one(compat: Vm) -> None:
    """`logs.go` 49-106: the file is polled until the client leaves, from the start when follow=false;
    only complete lines, empty ones skipped."""
    log = (await sh(compat, "d=$(mktemp -d); printf 'one\\n\\ntwo\\npartial' > $d/app.log; echo $d/app.log")).strip()
    seen = await sse(compat, "/logs/stream", 1.5, source="path", path=log, follow="false")
    assert seen.headers_after is not None and not seen.ended  # it answered, and was still open when we left
    assert [e["message"] for e in seen.events] == ["one", "two"]


async def test_logs_path_problems_are_one_event_then_the_end(
    compat: Vm, browserless_compat_http: httpx.AsyncClient
) -> None:
    """`logs.go` 18-46: an absent or relative path is `logs source not available`, a file it cannot open
    `failed to open log path`; one event, then the stream ends (no 400 or 404), on both planes."""
    cases = [
        ({"source": "path"}, LOGS_SOURCE_NOT_AVAILABLE),
        ({"source": "path", "path": "relative.log"}, LOGS_SOURCE_NOT_AVAILABLE),
        ({"source": "path", "path": "/nonexistent/app.log"}, "failed to open log path"),
    ]
    for params, message in cases:
        seen = await sse(compat, "/logs/stream", TIMEOUT, **params)
        assert [e["message"] for e in seen.events] == [message] and seen.ended, params
        async with asyncio.timeout(TIMEOUT):
            r = await browserless_compat_http.get(f"/browsers/{compat.sid}/logs/stream", params=params)
        assert r.status_code == 200 and message in r.text, (params, r.text)


# list_files ----------------------------------------------------------------------------------------------


async def test_list_files_null_when_empty_lstat_and_go_modes(compat: Vm, default: Vm) -> None:
    """`fs.go` 211-271: `var list` stays nil for an empty directory (JSON null); `entry.Info()` is an lstat;
    modes are Go's `FileMode.String()`."""
    make = ("d=$(mktemp -d); mkdir $d/empty $d/tree $d/tree/sub $d/tree/sticky; chmod 1777 $d/tree/sticky; "
            "printf '#!/bin/sh\\n' > $d/tree/setuid; chmod 4755 $d/tree/setuid; ln -s $d/tree/sub $d/tree/link; "
            "echo $d")
    base = (await sh(compat, make)).strip()
    r = await compat.http.get("/fs/list_files", params={"path": f"{base}/empty"})
    assert r.status_code == 200 and r.text == "null"
    theirs = (await sh(default, make)).strip()
    assert (await default.http.get("/fs/list_files", params={"path": f"{theirs}/empty"})).json() == []

    listing = (await compat.http.get("/fs/list_files", params={"path": f"{base}/tree"})).json()
    by_name = {e["name"]: e for e in listing}
    assert [e["name"] for e in listing] == ["link", "setuid", "sticky", "sub"]  # by name, as os.ReadDir
    assert (by_name["link"]["is_dir"], by_name["link"]["mode"]) == (False, "Lrwxrwxrwx")
    assert by_name["setuid"]["mode"] == "urwxr-xr-x"
    assert by_name["sticky"]["mode"] == "dtrwxrwxrwx"  # /tmp's own mode
    assert (by_name["sub"]["is_dir"], by_name["sub"]["mode"][0]) == (True, "d")
    info = (await compat.http.get("/fs/file_info", params={"path": f"{base}/tree/sticky"})).json()
    assert info["mode"] == "dtrwxrwxrwx"
    info = (await default.http.get("/fs/file_info", params={"path": f"{theirs}/tree/sticky"})).json()
    assert info["mode"] == "drwxrwxrwt"
