"""The client against small fault servers on 127.0.0.1: garbage and truncated streams, non-JSON error
bodies, rate limiting, a dead port. Each server is a raw asyncio socket server started by the test,
so it can misbehave in ways a real service (and the `service` fixture) never would."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from bbrowse.client import (
    BadRequest,
    BrowserClient,
    BrowserUnavailable,
    ClientConfig,
    ClientError,
    Conflict,
    ConnectionLost,
    IncompleteStream,
    NotFound,
    ProtocolError,
    RateLimited,
    RetryPolicy,
    ServerError,
    ServiceError,
    SessionGone,
    Unauthorized,
    is_permanent,
)
from bbrowse.client.errors import error_from_response
from bbrowse.client.retry import RETRYABLE_STATUSES
from bbrowse.wire import ProcessExitEvent, ProcessOutputEvent, decode_b64

PID = "00000000-0000-4000-8000-000000000001"
FAST_RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05, total_seconds=5)
WAIT = 5.0


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Responder = Callable[[SeenRequest, asyncio.StreamWriter, int], Awaitable[bool]]


@dataclass
class FaultServer:
    """An HTTP/1.1 server whose every answer is written by hand by `respond(request, writer, n)`;
    `respond` returns True to keep the connection for another request."""

    respond: Responder
    requests: list[SeenRequest] = field(default_factory=list)
    url: str = ""

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                request = SeenRequest(method, path, headers, body)
                self.requests.append(request)
                if not await self.respond(request, writer, len(self.requests)):
                    return
        finally:
            with contextlib.suppress(Exception):
                writer.close()


@contextlib.asynccontextmanager
async def fault_server(respond: Responder) -> AsyncIterator[FaultServer]:
    fault = FaultServer(respond)
    server = await asyncio.start_server(fault._handle, "127.0.0.1", 0)
    fault.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield fault
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)


def client_for(fault: FaultServer, retry: RetryPolicy = FAST_RETRY) -> BrowserClient:
    return BrowserClient(config=ClientConfig(base_url=fault.url, token="t", retry=retry))


async def reply(writer: asyncio.StreamWriter, status: int, body: bytes = b"", headers: dict | None = None) -> bool:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    await writer.drain()
    return True


async def sse_head(writer: asyncio.StreamWriter) -> None:
    """Headers of an event stream whose body lasts until the connection closes."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    await writer.drain()


def event(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


OUTPUT = event({"stream": "stdout", "data_b64": "aGk="})  # "hi"
EXIT = event({"event": "exit", "exit_code": 0})


async def read_stream(client: BrowserClient) -> list:
    seen = []
    async with asyncio.timeout(WAIT):
        async for ev in client.processes.stdout_stream("s", PID):
            seen.append(ev)
    return seen


# --- SSE -----------------------------------------------------------------------------------------


async def test_pings_and_extra_fields_are_tolerated() -> None:
    async def respond(request, writer, n):
        await sse_head(writer)
        writer.write(b": ping\n\n" + b"event: message\nid: 1\n" + OUTPUT + b": ping\n\n" + EXIT)
        return False

    async with fault_server(respond) as fault:
        events = await read_stream(client_for(fault))
    assert [type(e) for e in events] == [ProcessOutputEvent, ProcessExitEvent]
    assert events[0].data() == b"hi" and events[1].exit_code == 0
    assert fault.requests[0].headers["accept"] == "text/event-stream"
    assert fault.requests[0].headers["authorization"] == "Bearer t"


@pytest.mark.parametrize("garbage", [
    b"data: {not json\n\n",
    b"data: \xff\xfe\x00\x01\n\n",
    b"\x00\xffgarbage line\n\n",
    b'data: {"unexpected": "shape"}\n\n',
    b"data: [1, 2]\n\n",
])
async def test_garbage_frame_raises_protocol_error_without_hanging(garbage: bytes) -> None:
    closed = asyncio.Event()

    async def respond(request, writer, n):
        await sse_head(writer)
        writer.write(OUTPUT + garbage)
        await writer.drain()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(closed.wait(), WAIT)  # keep the stream open: the client must not wait for more
        return False

    async with fault_server(respond) as fault:
        seen = []
        with pytest.raises(ProtocolError) as err:
            async with asyncio.timeout(WAIT):
                async for ev in client_for(fault).processes.stdout_stream("s", PID):
                    seen.append(ev)
        closed.set()
    assert len(seen) == 1 and seen[0].data() == b"hi"
    assert "stdout stream" in str(err.value) and not isinstance(err.value, IncompleteStream)


async def test_stream_ending_without_exit_event_raises_incomplete_stream() -> None:
    async def respond(request, writer, n):
        await sse_head(writer)
        writer.write(OUTPUT)
        return False

    async with fault_server(respond) as fault:
        with pytest.raises(IncompleteStream, match="without the process's exit event"):
            await read_stream(client_for(fault))


async def test_stream_cut_in_the_middle_of_an_event_raises_incomplete_stream() -> None:
    async def respond(request, writer, n):
        await sse_head(writer)
        writer.write(OUTPUT + b'data: {"stream": "stdout", "data_b')
        return False

    async with fault_server(respond) as fault:
        with pytest.raises(IncompleteStream, match="middle of an event"):
            await read_stream(client_for(fault))


async def test_chunked_stream_cut_mid_chunk_raises_connection_lost() -> None:
    async def respond(request, writer, n):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(f"{len(OUTPUT):x}\r\n".encode() + OUTPUT + b"\r\n" + b"400\r\ndata: {")
        return False

    async with fault_server(respond) as fault:
        with pytest.raises(ConnectionLost, match="mid-stream"):
            await read_stream(client_for(fault))


async def test_wrong_content_type_is_protocol_error() -> None:
    async def respond(request, writer, n):
        return await reply(writer, 200, b"[]", {"Content-Type": "application/json"})

    async with fault_server(respond) as fault:
        with pytest.raises(ProtocolError, match="event stream"):
            await read_stream(client_for(fault))


async def test_log_stream_garbage_is_protocol_error() -> None:
    async def respond(request, writer, n):
        await sse_head(writer)
        writer.write(event({"event": "log", "message": "ok", "timestamp": "2026-01-01T00:00:00Z"}))
        writer.write(event({"event": "log", "message": "no timestamp"}))
        return False

    async with fault_server(respond) as fault:
        seen = []
        with pytest.raises(ProtocolError, match="LogEvent"):
            async for ev in client_for(fault).logs.stream("s", path="/x.log"):
                seen.append(ev.message)
    assert seen == ["ok"]


# --- error bodies --------------------------------------------------------------------------------


async def test_non_json_500_body_is_a_clear_server_error_after_bounded_retries() -> None:
    async def respond(request, writer, n):
        return await reply(writer, 500, b"<html><body>Internal oops from a proxy</body></html>",
                           {"Content-Type": "text/html"})

    async with fault_server(respond) as fault:
        with pytest.raises(ServerError) as err:
            await client_for(fault).sessions.get("s")
    assert err.value.status == 500 and err.value.code == "internal_error"
    assert "500" in str(err.value) and "Internal oops from a proxy" in str(err.value)
    assert len(fault.requests) == FAST_RETRY.attempts  # a GET is retried, a bounded number of times


async def test_non_json_500_for_stdin_is_not_retried() -> None:
    async def respond(request, writer, n):
        return await reply(writer, 500, b"\x00\xff garbage")

    async with fault_server(respond) as fault:
        with pytest.raises(ServerError):
            await client_for(fault).processes.stdin("s", PID, b"k")
    assert len(fault.requests) == 1


@pytest.mark.parametrize(("status", "body", "cls", "code"), [
    (400, {"code": "bad_request", "message": "bad", "details": [{"code": "invalid_input", "message": "cwd: x"}]},
     BadRequest, "bad_request"),
    (401, {"code": "unauthorized", "message": "no"}, Unauthorized, "unauthorized"),
    (404, {"code": "not_found", "message": "nope", "inner_error": {"code": "enoent"}}, NotFound, "not_found"),
    (409, {"code": "conflict", "message": "taken"}, Conflict, "conflict"),
    (410, {"code": "session_gone", "message": "gone"}, SessionGone, "session_gone"),
    (503, {"code": "browser_unavailable", "message": "no chromium"}, BrowserUnavailable, "browser_unavailable"),
    (502, {"code": "internal_error", "message": "proxy"}, ServerError, "internal_error"),
    (418, {"code": "conflict", "message": "teapot"}, Conflict, "conflict"),
    (404, b"", NotFound, "not_found"),
    (409, [1, 2], Conflict, "conflict"),
    (503, b"Service Unavailable", ServerError, "internal_error"),
])
def test_both_error_shapes_and_garbage_bodies_map_to_typed_errors(status, body, cls, code) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    error = error_from_response(status, raw)
    assert type(error) is cls and error.status == status and error.code == code
    assert str(error).startswith(f"{code} ({status}): ")
    if isinstance(body, dict):
        assert error.message == body["message"]
    if status == 400:
        assert error.details[0].message == "cwd: x" and "cwd: x" in str(error)
    if status == 404 and isinstance(body, dict):
        assert error.inner_error.code == "enoent"
    if body == b"Service Unavailable":
        assert "Service Unavailable" in error.message


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 410, 423, 418])
def test_a_refusal_is_permanent(status) -> None:
    assert is_permanent(error_from_response(status, b'{"code":"x","message":"no"}'))


@pytest.mark.parametrize("status", [*sorted(RETRYABLE_STATUSES), 501])
def test_what_the_retry_rules_try_again_is_not_permanent(status) -> None:
    assert not is_permanent(error_from_response(status, b""))
    assert not is_permanent(error_from_response(status, b'{"code":"browser_unavailable","message":"down"}'))


@pytest.mark.parametrize("error", [ConnectionLost("down"), IncompleteStream("cut"), ProtocolError("garbage"),
                                   ValueError("not the service's")])
def test_anything_but_a_service_answer_is_not_permanent(error) -> None:
    assert not is_permanent(error)


# --- rate limiting and retries -------------------------------------------------------------------


def limited_then_ok(ok_body: bytes) -> Responder:
    async def respond(request, writer, n):
        if n == 1:
            return await reply(writer, 429, b'{"code":"rate_limit_exceeded","message":"slow down"}',
                               {"Retry-After": "1"})
        return await reply(writer, 200, ok_body, {"Content-Type": "application/json"})
    return respond


async def test_429_with_retry_after_is_waited_out_for_a_get() -> None:
    status = b'{"state":"running","cpu_pct":0.0}'
    async with fault_server(limited_then_ok(status)) as fault:
        started = time.monotonic()
        result = await client_for(fault).processes.status("s", PID)
        elapsed = time.monotonic() - started
    assert result.state == "running"
    assert len(fault.requests) == 2 and elapsed >= 0.9  # Retry-After: 1 honoured


@pytest.mark.parametrize("call", ["stdin", "spawn", "exec", "create", "replay_start"])
async def test_429_is_never_retried_for_calls_that_are_not_idempotent(call: str) -> None:
    async with fault_server(limited_then_ok(b"{}")) as fault:
        client = client_for(fault)
        sending = {
            "stdin": lambda: client.processes.stdin("s", PID, b"x"),
            "spawn": lambda: client.processes.spawn("s", "true"),
            "exec": lambda: client.processes.exec("s", "true"),
            "create": lambda: client.sessions.create(name="x"),
            "replay_start": lambda: client.replays.start("s"),
        }[call]
        with pytest.raises(RateLimited) as err:
            await sending()
    assert len(fault.requests) == 1
    assert err.value.retry_after == 1 and err.value.code == "rate_limit_exceeded"


async def test_retry_after_longer_than_the_policy_allows_fails_at_once() -> None:
    async def respond(request, writer, n):
        return await reply(writer, 429, b'{"code":"rate_limit_exceeded","message":"later"}', {"Retry-After": "3600"})

    async with fault_server(respond) as fault:
        started = time.monotonic()
        with pytest.raises(RateLimited) as err:
            await client_for(fault).sessions.get("s")
    # "At once" against the hour it was told to wait: generous, because the machine may be busy.
    assert time.monotonic() - started < 30 and len(fault.requests) == 1 and err.value.retry_after == 3600


async def test_retries_stop_at_the_total_time_budget() -> None:
    async def respond(request, writer, n):
        return await reply(writer, 503, b'{"code":"browser_unavailable","message":"busy"}', {"Retry-After": "1"})

    policy = RetryPolicy(attempts=50, total_seconds=2.5)
    async with fault_server(respond) as fault:
        started = time.monotonic()
        with pytest.raises(BrowserUnavailable):
            await client_for(fault, policy).replays.list("s")
    # Without the budget, 50 attempts a second apart would take 49 s; the slack is for a busy machine.
    assert time.monotonic() - started < 2.5 + 10 and 2 <= len(fault.requests) <= 3


async def test_replay_download_waits_while_the_service_answers_202() -> None:
    async def respond(request, writer, n):
        if n == 1:
            return await reply(writer, 202, b"", {"Retry-After": "0"})
        return await reply(writer, 200, b"\x00\x00\x00\x18ftypmp42video", {"Content-Type": "video/mp4"})

    async with fault_server(respond) as fault:
        async with asyncio.timeout(WAIT):
            video = b"".join([c async for c in client_for(fault).replays.download("s", PID)])
    assert video == b"\x00\x00\x00\x18ftypmp42video" and len(fault.requests) == 2


# --- stdin writer --------------------------------------------------------------------------------


async def test_stdin_writer_sends_in_order_and_coalesces_while_a_write_is_in_flight() -> None:
    first_seen, release = asyncio.Event(), asyncio.Event()

    async def respond(request, writer, n):
        if n == 1:
            first_seen.set()
            await asyncio.wait_for(release.wait(), WAIT)  # the first keystroke is still in flight...
        return await reply(writer, 200, b'{"written_bytes":1}', {"Content-Type": "application/json"})

    async with fault_server(respond) as fault:
        stdin = client_for(fault).processes.stdin_writer("s", PID)
        stdin.write(b"t")
        await asyncio.wait_for(first_seen.wait(), WAIT)
        for byte in b"he quick brown fox":  # ...while these are typed
            stdin.write(bytes([byte]))
        release.set()
        await asyncio.wait_for(stdin.aclose(), WAIT)
    sent = [decode_b64(json.loads(r.body)["data_b64"]) for r in fault.requests]
    assert sent == [b"t", b"he quick brown fox"]


async def test_stdin_writer_reports_a_failed_send() -> None:
    async def respond(request, writer, n):
        return await reply(writer, 404, b'{"code":"not_found","message":"no such process"}')

    async with fault_server(respond) as fault:
        stdin = client_for(fault).processes.stdin_writer("s", PID)
        stdin.write(b"x")
        with pytest.raises(NotFound, match="no such process"):
            await asyncio.wait_for(stdin.drain(), WAIT)
        with pytest.raises(NotFound):
            stdin.write(b"y")
    assert len(fault.requests) == 1


# --- transport -----------------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_connection_refused_is_connection_lost_after_bounded_retries() -> None:
    client = BrowserClient(f"http://127.0.0.1:{closed_port()}", "t")  # the default policy
    started = time.monotonic()
    with pytest.raises(ConnectionLost) as err:
        await client.sessions.get("s")
    # Bounded by the policy's backoff (3 tries, at most ~0.3 s of waits), not by its 15 s budget; slack for load.
    assert time.monotonic() - started < 10
    assert "127.0.0.1" in str(err.value)
    with pytest.raises(ConnectionLost):
        async with client.logs.stream("s", path="/x"):
            pass
    with pytest.raises(ConnectionLost):
        await client.processes.stdin("s", PID, b"x")


async def test_connection_closed_before_any_response_is_connection_lost() -> None:
    async def respond(request, writer, n):
        return False  # close without answering

    async with fault_server(respond) as fault:
        with pytest.raises(ConnectionLost):
            await client_for(fault).sessions.get("s")
        assert len(fault.requests) == FAST_RETRY.attempts
        with pytest.raises(ConnectionLost):
            await client_for(fault).processes.stdin("s", PID, b"x")
        assert len(fault.requests) == FAST_RETRY.attempts + 1


async def test_non_json_success_body_is_protocol_error() -> None:
    async def respond(request, writer, n):
        return await reply(writer, 200, b"<html>captive portal</html>", {"Content-Type": "text/html"})

    async with fault_server(respond) as fault:
        with pytest.raises(ProtocolError, match="captive portal"):
            await client_for(fault).sessions.get("s")


def test_every_client_error_is_one_base_class() -> None:
    for cls in (ConnectionLost, ProtocolError, IncompleteStream, ServiceError, RateLimited, BrowserUnavailable):
        assert issubclass(cls, ClientError)
