"""`bbrowse serve --kernel-compat` behaves as Kernel's VM does, point by point, each pinned by its own test.

Every call goes as a client's would against Kernel's cloud: through the session's `base_url` with the
`jwt` of its `cdp_ws_url`, no API key. Where the default mode is more generous, the same program is run
on the default service too and the difference asserted, so neither mode can drift into the other.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from conftest import ServiceHandle
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from bbrowse.wire import LOGS_SOURCE_NOT_AVAILABLE, Error, VmError

TIMEOUT = 15.0


class Vm:
    """One session's VM endpoint, reached as a Kernel client reaches it."""

    def __init__(self, browser: dict) -> None:
        self.sid = browser["session_id"]
        self.base_url = browser["base_url"]
        self.jwt = parse_qs(urlsplit(browser["cdp_ws_url"]).query)["jwt"][0]
        self.http = httpx.AsyncClient(base_url=self.base_url, params={"jwt": self.jwt}, timeout=30)

    def attach_url(self, process_id: str) -> str:
        return self.base_url.replace("http://", "ws://", 1) + f"/process/{process_id}/attach?jwt={self.jwt}"

    def attach(self, process_id: str):
        return connect(self.attach_url(process_id), open_timeout=TIMEOUT, max_size=None)

    async def spawn(self, command: str, *args: str, **fields) -> str:
        r = await self.http.post("/process/spawn", json={"command": command, "args": list(args), **fields})
        assert r.status_code == 200, r.text
        return r.json()["process_id"]

    async def stdout_events(self, process_id: str) -> list[dict]:
        """Every event of the process's stdout stream until it ends (it ends after the exit event)."""
        events = []
        async with asyncio.timeout(TIMEOUT):
            async with self.http.stream("GET", f"/process/{process_id}/stdout/stream") as r:
                assert r.status_code == 200
                async for line in r.aiter_lines():
                    if line.startswith("data: "):
                        events.append(json.loads(line[6:]))
        return events


async def vm_of(http: httpx.AsyncClient) -> AsyncIterator[Vm]:
    r = await http.post("/browsers", json={"timeout_seconds": 900})
    assert r.status_code == 200, r.text
    vm = Vm(r.json())
    yield vm
    await vm.http.aclose()
    await http.delete(f"/browsers/{vm.sid}")


@pytest.fixture(scope="module")
async def compat(browserless_compat_http: httpx.AsyncClient) -> AsyncIterator[Vm]:
    """A session of the --kernel-compat service, through its VM endpoint (no browser: none of this is its)."""
    async for vm in vm_of(browserless_compat_http):
        yield vm


@pytest.fixture(scope="module")
async def default(browserless_http: httpx.AsyncClient) -> AsyncIterator[Vm]:
    """A session of the default service, through its VM endpoint: the same calls, the generous behaviour."""
    async for vm in vm_of(browserless_http):
        yield vm


async def status(vm: Vm, process_id: str) -> httpx.Response:
    return await vm.http.get(f"/process/{process_id}/status")


async def wait_exited(vm: Vm, process_id: str) -> dict:
    """The process's status once it says exited (Kernel's streams may never say so: the status does)."""
    async with asyncio.timeout(TIMEOUT):
        while (body := (await status(vm, process_id)).json()).get("state") != "exited":
            await asyncio.sleep(0.05)
    return body


async def read_attach(ws: ClientConnection) -> tuple[bytes, dict | None]:
    """Output and exit frame of an attach, until the service closes it (the default service does)."""
    output, exit_frame = b"", None
    async with asyncio.timeout(TIMEOUT):
        try:
            while True:
                frame = await ws.recv()
                if isinstance(frame, bytes):
                    output += frame
                else:
                    exit_frame = json.loads(frame)
        except ConnectionClosed:
            pass
    return output, exit_frame


async def read_until(ws: ClientConnection, marker: bytes) -> bytes:
    seen = b""
    async with asyncio.timeout(TIMEOUT):
        while marker not in seen:
            frame = await ws.recv()
            assert isinstance(frame, bytes), frame
            seen += frame
    return seen


async def assert_left_open(ws: ClientConnection, seconds: float = 0.5) -> None:
    """No exit frame, no close: the socket stays open (Kernel's VM after an exit; output on its way may land)."""
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(seconds):
            while isinstance(frame := await ws.recv(), bytes):
                pass
            pytest.fail(f"the service sent {frame!r} after the exit")


async def end_by_client_frame(ws: ClientConnection) -> None:
    """Our frame wakes the VM's socket reader; only then does it close, with 1000."""
    await ws.send(b"\n")
    async with asyncio.timeout(TIMEOUT):
        with pytest.raises(ConnectionClosed):
            while True:
                frame = await ws.recv()
                assert isinstance(frame, bytes), f"an exit frame after all: {frame!r}"
    assert ws.close_code == 1000


# PTY output ----------------------------------------------------------------------------------------


async def test_pty_output_goes_only_to_attach_never_to_stdout_stream(compat: Vm, default: Vm) -> None:
    """While a client is attached and sees the output, `stdout/stream` sends nothing but the exit event.

    The stream is open (waiting) long before the exit: Kernel hands the exit event to a waiting reader.
    """
    script = "read word; echo marker-$word; sleep 1; exit 3"
    pid = await compat.spawn("sh", "-c", script, allocate_tty=True)
    stream = asyncio.create_task(compat.stdout_events(pid))
    async with compat.attach(pid) as ws:
        await ws.send(b"go\n")
        await read_until(ws, b"marker-go")
        assert (await wait_exited(compat, pid))["exit_code"] == 3
        await assert_left_open(ws, 0.2)
        await end_by_client_frame(ws)
    assert await stream == [{"event": "exit", "exit_code": 3}]

    # the default service also streams a PTY's output as stdout chunks
    pid = await default.spawn("sh", "-c", script, allocate_tty=True)
    stream = asyncio.create_task(default.stdout_events(pid))
    async with default.attach(pid) as ws:
        await ws.send(b"go\n")
        await read_attach(ws)
    events = await stream
    assert events[-1] == {"event": "exit", "exit_code": 3} and any(e.get("stream") == "stdout" for e in events)


async def test_the_pty_is_read_only_while_a_client_is_attached(compat: Vm) -> None:
    """A program writing more than the PTY holds waits until a client attaches; then every byte arrives."""
    size = 1_000_000
    pid = await compat.spawn("sh", "-c", f"head -c {size} /dev/zero | tr '\\0' x; echo; echo END; read q",
                             allocate_tty=True)
    watched_until = time.monotonic() + 1.5
    while time.monotonic() < watched_until:  # nobody reads its PTY: it cannot finish (the default reads it in ms)
        assert (await status(compat, pid)).json()["state"] == "running"
        await asyncio.sleep(0.1)
    async with compat.attach(pid) as ws:
        output = await read_until(ws, b"END")
        await ws.send(b"q\n")
        await wait_exited(compat, pid)
        await end_by_client_frame(ws)
    assert output.count(b"x") == size


async def test_output_left_when_a_process_exits_unattached_is_gone(compat: Vm, default: Vm) -> None:
    """No backlog: an attach after the exit gets nothing at all (the default sends the last output first)."""
    pid = await default.spawn("sh", "-c", "echo said-before-anyone-came", allocate_tty=True)
    await wait_exited(default, pid)
    async with default.attach(pid) as ws:
        output, exit_frame = await read_attach(ws)
    assert exit_frame == {"type": "exit", "exitCode": 0} and b"said-before-anyone-came" in output

    pid = await compat.spawn("sh", "-c", "echo said-before-anyone-came", allocate_tty=True)
    await wait_exited(compat, pid)
    async with compat.attach(pid) as ws:
        await assert_left_open(ws)
        await end_by_client_frame(ws)


# attach ---------------------------------------------------------------------------------------------


async def test_end_of_attach_no_exit_frame_no_close_until_the_client_acts(compat: Vm) -> None:
    """After the exit the VM sends no exit frame and never closes on its own (`process.go` 774-792, 881-888);
    a frame from the client, or its close, ends the attach. Output still in the PTY at the exit is lost."""
    pid = await compat.spawn("sh", "-c", "read line; exit 7", allocate_tty=True)
    async with compat.attach(pid) as ws:
        await ws.send(b"\n")
        assert (await wait_exited(compat, pid))["exit_code"] == 7
        await assert_left_open(ws, 1.0)
        await end_by_client_frame(ws)
    # the client closing ends it too: the close handshake completes with the client's code
    pid = await compat.spawn("sh", "-c", "exit 0", allocate_tty=True)
    await wait_exited(compat, pid)
    async with compat.attach(pid) as ws:
        await assert_left_open(ws, 0.2)
        async with asyncio.timeout(TIMEOUT):
            await ws.close(code=1000)
    assert ws.close_code == 1000


async def refused(url: str, headers: dict | None = None) -> tuple[int, dict]:
    with pytest.raises(InvalidStatus) as caught:
        async with connect(url, open_timeout=TIMEOUT, additional_headers=headers or {}):
            pass
    return caught.value.response.status_code, json.loads(caught.value.response.body)


async def test_one_attach_at_a_time_the_second_is_409_at_once(compat: Vm) -> None:
    """409 at once, even after the program has exited: the first handler holds the flag until its client acts."""
    pid = await compat.spawn("cat", allocate_tty=True)
    async with compat.attach(pid) as first:
        started = time.monotonic()
        code, body = await refused(compat.attach_url(pid))
        assert code == 409 and body == {"type": "error", "message": "process already has an active attach session"}
        assert time.monotonic() - started < 0.5  # no grace wait (the default waits up to 1 s)
        await first.send(b"still mine\n")
        await read_until(first, b"still mine")
        await compat.http.post(f"/process/{pid}/kill", json={"signal": "KILL"})
        await wait_exited(compat, pid)
        started = time.monotonic()
        code, _ = await refused(compat.attach_url(pid))  # exited, but the first attach is still open
        assert code == 409 and time.monotonic() - started < 0.5
        await end_by_client_frame(first)
    async with compat.attach(pid) as again:  # free once the first handler has ended
        await end_by_client_frame(again)


async def test_attach_refusals_before_the_upgrade_are_type_error_json(
    compat: Vm, browserless_compat_service: ServiceHandle
) -> None:
    """404 unknown process, 400 a process without a PTY (the default attaches to pipes too), on both planes."""
    pipe = await compat.spawn("sleep", "30")
    unknown = "3f0e4a5e-0000-4000-8000-000000000000"
    service = browserless_compat_service
    control = service.url.replace("http://", "ws://", 1) + f"/browsers/{compat.sid}/process"
    for url, headers in ((compat.attach_url(unknown), None), (f"{control}/{unknown}/attach", service.headers)):
        code, body = await refused(url, headers)
        assert (code, body) == (404, {"type": "error", "message": "process not found"}), body
    for url, headers in ((compat.attach_url(pipe), None), (f"{control}/{pipe}/attach", service.headers)):
        code, body = await refused(url, headers)
        assert (code, body) == (400, {"type": "error", "message": "process is not PTY-backed"})
    await compat.http.post(f"/process/{pipe}/kill", json={"signal": "KILL"})


# lifecycle ------------------------------------------------------------------------------------------


async def test_exited_processes_are_forgotten_after_10_seconds(compat: Vm, default: Vm) -> None:
    """10 s after the exit the process is a 404; the default keeps it queryable for a minute."""
    mine, theirs = await compat.spawn("true"), await default.spawn("true")
    await wait_exited(compat, mine)
    exited = time.monotonic()
    assert (await status(compat, mine)).json() == {"state": "exited", "exit_code": 0, "cpu_pct": 0.0}
    deadline = exited + 25
    while (r := await status(compat, mine)).status_code == 200 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    gone_after = time.monotonic() - exited
    assert r.status_code == 404, r.text
    assert 9.5 <= gone_after < 25, gone_after
    assert VmError.model_validate(r.json()) and set(r.json()) == {"message"}
    assert (await status(default, theirs)).status_code == 200


async def test_a_process_ended_by_a_signal_reports_minus_one(compat: Vm, default: Vm) -> None:
    """As Go's `WaitStatus.ExitStatus()` reports it: -1, in the stream, the status and the exit frame."""
    for vm, expected in ((compat, -1), (default, 143)):
        pid = await vm.spawn("sh", "-c", "echo up; exec sleep 30")
        async with asyncio.timeout(TIMEOUT), vm.http.stream("GET", f"/process/{pid}/stdout/stream") as r:
            lines = r.aiter_lines()
            while not (await anext(lines)).startswith("data: "):  # "up": this reader is in place
                pass
            assert (await vm.http.post(f"/process/{pid}/kill", json={"signal": "TERM"})).status_code == 200
            events = [json.loads(line[6:]) async for line in lines if line.startswith("data: ")]
        assert events == [{"event": "exit", "exit_code": expected}]
        assert (await status(vm, pid)).json()["exit_code"] == expected
    pid = await default.spawn("sleep", "30", allocate_tty=True)
    async with default.attach(pid) as ws:
        await default.http.post(f"/process/{pid}/kill", json={"signal": "KILL"})
        _, exit_frame = await read_attach(ws)
    assert exit_frame == {"type": "exit", "exitCode": 137}


# errors and logs ------------------------------------------------------------------------------------


async def test_in_vm_errors_are_message_only_and_the_control_plane_keeps_the_contract(
    compat: Vm, browserless_compat_http: httpx.AsyncClient
) -> None:
    compat_http = browserless_compat_http
    pipe = await compat.spawn("sleep", "30")
    unknown = "3f0e4a5e-0000-4000-8000-000000000000"
    asks = [
        ("GET", f"/process/{unknown}/status", None, {}, 404),
        ("POST", "/process/spawn", {"args": ["no command"]}, {}, 400),
        ("POST", f"/process/{pipe}/stdin", {"data_b64": "not base64!"}, {}, 400),
        ("POST", f"/process/{pipe}/resize", {"rows": 10, "cols": 10}, {}, 400),
        ("GET", "/fs/read_file", None, {"path": "/nonexistent/file"}, 404),
        ("GET", "/fs/read_file", None, {"path": "relative"}, 400),
    ]
    for method, path, body, query, expected in asks:
        r = await compat.http.request(method, path, json=body, params={"jwt": compat.jwt, **query})
        assert r.status_code == expected, (path, r.text)
        assert set(r.json()) == {"message"} and VmError.model_validate(r.json()).message, (path, r.json())
        plane = await compat_http.request(method, f"/browsers/{compat.sid}{path}", json=body, params=query)
        assert plane.status_code == expected, (path, plane.text)
        assert Error.model_validate(plane.json()).code, (path, plane.json())
    # chi's NotFound and the generated wrapper's binding errors are Go's `http.Error`: text/plain
    r = await compat.http.get("/no/such/route")
    assert (r.status_code, r.text) == (404, "404 page not found\n")
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    plane = await compat_http.get(f"/browsers/{compat.sid}/no/such/route")
    assert plane.status_code == 404 and Error.model_validate(plane.json()).code
    for bad in ({"command": "sh", "rows": "80", "allocate_tty": True}, "not json at all"):
        if isinstance(bad, dict):
            r = await compat.http.post("/process/spawn", json=bad)
        else:
            r = await compat.http.post("/process/spawn", content=bad, headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.headers["content-type"].startswith("text/plain"), r.text
        assert r.text.endswith("\n") and len(r.text.splitlines()) == 1
    # unknown fields are ignored (Go's decoder), on both planes; the default service refuses them
    r = await compat.http.post("/process/exec", json={"command": "true", "no_such_field": 1})
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    r = await compat_http.post(f"/browsers/{compat.sid}/process/exec", json={"command": "true", "extra": {"a": 1}})
    assert r.status_code == 200, r.text
    # the jwt check stands in front of the VM, as Kernel's proxy does: its 401 keeps the proxy's shape
    r = await compat.http.get(f"/process/{pipe}/status", params={"jwt": "x"})
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
    await compat.http.post(f"/process/{pipe}/kill", json={"signal": "KILL"})


async def log_events(client: httpx.AsyncClient, url: str, **params) -> list[dict]:
    events = []
    async with asyncio.timeout(TIMEOUT):
        async with client.stream("GET", url, params=params) as r:
            assert r.status_code == 200, await r.aread()
            async for line in r.aiter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
    return events


async def test_supervisor_logs_are_not_available_one_event_then_the_end(
    compat: Vm, browserless_compat_http: httpx.AsyncClient
) -> None:
    compat_http = browserless_compat_http
    for client, url in ((compat.http, "/logs/stream"), (compat_http, f"/browsers/{compat.sid}/logs/stream")):
        events = await log_events(client, url, source="supervisor", supervisor_process="chromium", follow="true")
        assert [e["message"] for e in events] == [LOGS_SOURCE_NOT_AVAILABLE] and events[0]["event"] == "log"
    # path logs work: that is where supervised programs' logs are read from (Kernel's VM follows the file
    # until the client leaves, follow=false too: tests/test_compat_vm_streams.py)
    r = await compat.http.post("/process/exec",
                               json={"command": "sh", "args": ["-c", "printf 'one\\ntwo\\n' > log; echo $PWD/log"]})
    assert r.status_code == 200
    log = base64.b64decode(r.json()["stdout_b64"]).decode().strip()
    events = []
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(1.5), compat.http.stream(
            "GET", "/logs/stream", params={"jwt": compat.jwt, "source": "path", "path": log, "follow": "false"}
        ) as r:
            async for line in r.aiter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
    assert [e["message"] for e in events] == ["one", "two"]
