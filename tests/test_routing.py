"""Direct routing to a session's VM, as the official SDK does it: the route cache, no API key on the VM,
401/403 -> route dropped and one resend on the control plane, spawn/exec/stdin never executed twice.

Every request the client sends is recorded by an httpx event hook on the http client handed to it, so
the tests see the real URL and headers that went over loopback to the real service.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

from bbrowse.client import (
    NO_RETRY,
    BrowserClient,
    ClientConfig,
    Conflict,
    ConnectionLost,
    NotFound,
    Route,
    RouteCache,
    Unauthorized,
)
from bbrowse.client.errors import error_from_response
from bbrowse.client.routing import DEFAULT_SUBRESOURCES, is_direct, route_from_browser, subresources_from_env
from bbrowse.client.transport import replayable

JWT = "header.payload.signature"


def stdout_of(result) -> str:
    return base64.b64decode(result.stdout_b64).decode()


# ---------------------------------------------------------------------------------------- the cache alone


def test_a_route_needs_a_base_url_and_a_jwt_in_cdp_ws_url() -> None:
    browser = {"session_id": "s1", "base_url": "http://h:1/vm/s1/", "cdp_ws_url": f"ws://h:1/vm/s1/cdp?jwt={JWT}"}
    assert route_from_browser(browser) == Route("s1", "http://h:1/vm/s1", JWT)
    assert route_from_browser({**browser, "base_url": None}) is None
    assert route_from_browser({**browser, "cdp_ws_url": "ws://127.0.0.1:9222/devtools/browser/x"}) is None
    assert route_from_browser({**browser, "session_id": ""}) is None


def test_only_the_vm_subresources_go_direct_matched_on_segments() -> None:
    direct = ["process/spawn", "process/abc/stdin", "process/abc/attach", "fs/read_file", "logs/stream",
              "computer/screenshot", "process"]
    control = ["logs/supervisors", "logs/streamx", "replays", "replays/r1/stop", "processes", "fsx/read"]
    assert all(is_direct(tail, DEFAULT_SUBRESOURCES) for tail in direct)
    assert not any(is_direct(tail, DEFAULT_SUBRESOURCES) for tail in control)


def test_the_sdk_environment_variable_chooses_the_subresources() -> None:
    assert subresources_from_env({}) == DEFAULT_SUBRESOURCES
    assert subresources_from_env({"KERNEL_BROWSER_ROUTING_SUBRESOURCES": ""}) == ()
    assert subresources_from_env({"KERNEL_BROWSER_ROUTING_SUBRESOURCES": "fs, /process/"}) == ("fs", "process")


def test_cache_by_id_only_deleted_sessions_forgotten_and_a_fresher_route_kept() -> None:
    cache = RouteCache()
    browser = {"session_id": "s1", "name": "daily", "base_url": "http://h/vm/s1",
               "cdp_ws_url": f"ws://h/vm/s1/cdp?jwt={JWT}"}
    cache.learn(browser)
    assert cache.for_path("/browsers/s1/process/spawn") == (Route("s1", "http://h/vm/s1", JWT), "process/spawn")
    assert cache.for_path("/browsers/daily/process/spawn") is None  # a name may be reused by another session
    assert cache.for_path("/browsers/s1/replays") is None
    cache.learn({**browser, "cdp_ws_url": "ws://h/vm/s1/cdp?jwt=fresh"})
    assert not cache.forget("s1", JWT)  # a 401 for the old token does not drop the new one
    assert cache.get("s1").jwt == "fresh"
    cache.learn({**browser, "deleted_at": "2026-01-01T00:00:00Z"})
    assert "s1" not in cache


def test_only_bodies_that_can_be_sent_again_are_resent() -> None:
    async def chunks():
        yield b"x"

    assert replayable(None) and replayable(b"x") and replayable("x")
    assert not replayable(chunks())


@pytest.mark.parametrize("status,cls", [(404, NotFound), (409, Conflict), (401, Unauthorized)])
def test_the_three_error_shapes_are_one_typed_error(status: int, cls: type) -> None:
    """The contract's Error, the VM's `{"message"}` and attach's `{"type":"error"}` say the same thing."""
    bodies = [b'{"code":"%s","message":"process p1 is unknown"}' % error_from_response(status, b"").code.encode(),
              b'{"message":"process p1 is unknown"}',
              b'{"type":"error","message":"process p1 is unknown"}']
    errors = [error_from_response(status, body, method="GET", url="http://h/vm/s1/process/p1/status")
              for body in bodies]
    assert all(type(error) is cls for error in errors)
    assert len({str(error) for error in errors}) == 1
    assert str(errors[0]).endswith("process p1 is unknown")


# ---------------------------------------------------------------------------------------- a real service
# The one with no Chromium, but for Kernel's error shapes (--kernel-compat): routing never uses the browser.


class Recorder:
    """Every request the client sent: (method, URL, headers)."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    async def __call__(self, request: httpx.Request) -> None:
        self.requests.append(request)

    def take(self) -> list[httpx.Request]:
        taken, self.requests = self.requests, []
        return taken


@contextlib.asynccontextmanager
async def recording_client(service) -> AsyncIterator[tuple[BrowserClient, Recorder]]:
    recorder = Recorder()
    async with httpx.AsyncClient(base_url=service.url, headers=service.headers, timeout=30,
                                 event_hooks={"request": [recorder]}) as http:
        yield BrowserClient(service.url, service.token, http=http), recorder


def went_direct(request: httpx.Request, sid: str, service) -> bool:
    """To the session's VM with its jwt, and no API key."""
    return (str(request.url).startswith(f"{service.url}/vm/{sid}/")
            and bool(request.url.params.get("jwt"))
            and "authorization" not in request.headers)


def went_to_control_plane(request: httpx.Request, sid: str, service) -> bool:
    return (str(request.url).startswith(f"{service.url}/browsers/{sid}")
            and "jwt" not in request.url.params
            and request.headers.get("authorization") == f"Bearer {service.token}")


@pytest.fixture(scope="module")
async def browser(browserless_service) -> AsyncIterator:
    client = BrowserClient(browserless_service.url, browserless_service.token)
    created = await client.sessions.create(timeout_seconds=900)
    yield created
    with contextlib.suppress(Exception):
        await client.sessions.delete(created.session_id)


async def test_process_fs_and_logs_calls_take_the_vm_route_without_the_api_key(browserless_service, browser) -> None:
    sid = browser.session_id
    async with recording_client(browserless_service) as (client, recorder):
        await client.sessions.get(sid)
        assert went_to_control_plane(recorder.take()[0], sid, browserless_service)
        assert client.routes.get(sid).base_url == browser.base_url

        result = await client.processes.exec(sid, "sh", ["-c", "printf routed > routed.txt; pwd"])
        work_dir = stdout_of(result).strip()
        proc = await client.processes.spawn(sid, "sh", ["-c", "read line; echo got-$line"])
        await client.processes.stdin(sid, proc.process_id, b"it\n")
        out, _, code = await client.processes.output(sid, proc.process_id)
        assert (out, code) == (b"got-it\n", 0)
        assert (await client.processes.status(sid, proc.process_id)).state == "exited"
        assert await client.fs.read_bytes(sid, f"{work_dir}/routed.txt") == b"routed"
        assert "routed.txt" in {info.name for info in await client.fs.list_files(sid, work_dir)}
        async with client.logs.stream(sid, path=f"{work_dir}/routed.txt", follow=False) as events:
            assert [event.message async for event in events] == ["routed"]

        sent = recorder.take()
        assert len(sent) == 8
        assert all(went_direct(request, sid, browserless_service) for request in sent), [str(r.url) for r in sent]
        tails = [request.url.path.removeprefix(f"/vm/{sid}/") for request in sent]
        assert tails[:2] == ["process/exec", "process/spawn"] and "fs/read_file" in tails and "logs/stream" in tails

        await client.replays.list(sid)  # not a VM subresource: the control plane, with the API key
        assert went_to_control_plane(recorder.take()[0], sid, browserless_service)


async def test_a_session_not_read_yet_is_called_on_the_control_plane_until_it_is(browserless_service, browser) -> None:
    sid = browser.session_id
    async with recording_client(browserless_service) as (client, recorder):
        await client.processes.exec(sid, "true")
        assert went_to_control_plane(recorder.take()[0], sid, browserless_service)
        async for listed in client.sessions.list():  # a listing teaches the routes too
            if listed.session_id == sid:
                break
        recorder.take()
        await client.processes.exec(sid, "true")
        assert went_direct(recorder.take()[0], sid, browserless_service)


async def spawn_counter(client: BrowserClient, sid: str) -> tuple[str, str]:
    """A file that counts how many times something ran in it; (its path, a unique marker)."""
    result = await client.processes.exec(sid, "mktemp")
    return stdout_of(result).strip(), uuid.uuid4().hex


async def lines_of(client: BrowserClient, sid: str, path: str) -> list[str]:
    return stdout_of(await client.processes.exec(sid, "cat", [path])).split()


@pytest.mark.parametrize("call", ["spawn", "exec", "stdin"])
async def test_a_refused_jwt_drops_the_route_and_the_call_runs_once_on_the_control_plane(
    browserless_service, browser, call: str
) -> None:
    """A VM that refuses the jwt ran nothing: the SDK resends once on the control plane, and so do we,
    for spawn, exec and stdin too. The call takes effect exactly once."""
    sid = browser.session_id
    async with recording_client(browserless_service) as (client, recorder):
        await client.sessions.get(sid)
        counter, marker = await spawn_counter(client, sid)
        reader = None
        if call == "stdin":
            reader = await client.processes.spawn(sid, "sh", ["-c", f"read line; echo $line >> {counter}"])
        stale = Route(sid, browser.base_url, "forged." + client.routes.get(sid).jwt.split(".", 1)[1])
        client.routes.remember(stale)
        recorder.take()

        if call == "spawn":
            proc = await client.processes.spawn(sid, "sh", ["-c", f"echo {marker} >> {counter}"])
            await client.processes.output(sid, proc.process_id)
        elif call == "exec":
            assert (await client.processes.exec(sid, "sh", ["-c", f"echo {marker} >> {counter}"])).exit_code == 0
        else:
            await client.processes.stdin(sid, reader.process_id, f"{marker}\n".encode())
            await client.processes.output(sid, reader.process_id)

        sent = recorder.take()
        assert went_direct(sent[0], sid, browserless_service) and sent[0].url.params["jwt"] == stale.jwt
        assert went_to_control_plane(sent[1], sid, browserless_service)
        assert sent[1].url.path == sent[0].url.path.replace(f"/vm/{sid}/", f"/browsers/{sid}/")
        assert sid not in client.routes  # dropped: later calls go to the control plane at once
        assert all(went_to_control_plane(request, sid, browserless_service) for request in sent[1:])
        assert (await lines_of(client, sid, counter)).count(marker) == 1


async def test_a_refused_jwt_on_the_control_plane_too_is_the_callers_401(browserless_service, browser) -> None:
    async with httpx.AsyncClient(base_url=browserless_service.url, headers={"Authorization": "Bearer wrong"},
                                 timeout=30) as http:
        client = BrowserClient(browserless_service.url, "wrong", http=http)
        client.routes.remember(Route(browser.session_id, browser.base_url, "forged.jwt.value"))
        with pytest.raises(Unauthorized):
            await client.processes.exec(browser.session_id, "true")
        assert browser.session_id not in client.routes


async def test_with_no_retries_a_refused_jwt_is_raised_and_the_next_call_takes_the_control_plane(
    browserless_service, browser
) -> None:
    """As the SDK with `max_retries=0`: no resend, but the route is gone for the next call."""
    sid = browser.session_id
    config = ClientConfig(browserless_service.url, browserless_service.token, retry=NO_RETRY)
    recorder = Recorder()
    async with httpx.AsyncClient(base_url=browserless_service.url, headers=browserless_service.headers, timeout=30,
                                 event_hooks={"request": [recorder]}) as http:
        client = BrowserClient(config=config, http=http)
        client.routes.remember(Route(sid, browser.base_url, "forged.jwt.value"))
        with pytest.raises(Unauthorized) as refused:
            await client.processes.exec(sid, "true")
        assert "jwt" in refused.value.message and "jwt=" not in str(refused.value.url)
        assert len(recorder.take()) == 1 and sid not in client.routes
        assert (await client.processes.exec(sid, "true")).exit_code == 0
        assert went_to_control_plane(recorder.take()[0], sid, browserless_service)


@contextlib.asynccontextmanager
async def dropping_server() -> AsyncIterator[tuple[str, list[int]]]:
    """A real TCP server that reads a request and closes without answering (a VM that went away)."""
    accepted: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        with contextlib.suppress(Exception):
            await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}", accepted


@pytest.mark.parametrize("call", ["spawn", "exec", "stdin"])
async def test_spawn_exec_and_stdin_are_never_resent_after_a_dropped_connection(
    browserless_service, browser, call
) -> None:
    sid = browser.session_id
    async with dropping_server() as (url, accepted), recording_client(browserless_service) as (client, recorder):
        client.routes.remember(Route(sid, f"{url}/vm/{sid}", JWT))
        with pytest.raises(ConnectionLost):
            if call == "spawn":
                await client.processes.spawn(sid, "true")
            elif call == "exec":
                await client.processes.exec(sid, "true")
            else:
                await client.processes.stdin(sid, "some-process", b"x")
        assert len(accepted) == 1 and len(recorder.take()) == 1
        assert sid in client.routes  # not an auth refusal: the route stays

        with pytest.raises(ConnectionLost):  # an idempotent call is retried, on the same route
            await client.processes.status(sid, "some-process")
        assert len(accepted) == 1 + client.config.retry.attempts


async def test_attach_goes_through_the_vm_and_falls_back_on_a_refused_jwt(browserless_service, browser) -> None:
    sid = browser.session_id
    client = BrowserClient(browserless_service.url, browserless_service.token)
    await client.sessions.get(sid)
    proc = await client.processes.spawn(sid, "sh", ["-c", "read line; echo got-$line"], allocate_tty=True)
    async with client.processes.attach(sid, proc.process_id) as term:
        assert term.direct and term.url.startswith(f"{browser.base_url.replace('http', 'ws', 1)}/process/")
        assert "jwt" not in term.url  # the token never appears in what is shown or raised
        await client.processes.stdin(sid, proc.process_id, b"one\n")
        output = b"".join([chunk async for chunk in term])
    assert b"got-one" in output and term.exit_code == 0

    proc = await client.processes.spawn(sid, "cat", allocate_tty=True)
    client.routes.remember(Route(sid, browser.base_url, "forged.jwt.value"))
    async with client.processes.attach(sid, proc.process_id) as term:
        control_plane = browserless_service.url.replace("http", "ws", 1)
        assert not term.direct and term.url.startswith(f"{control_plane}/browsers/{sid}/")
        await term.send(b"\x04")
        async for _ in term:
            pass
    assert sid not in client.routes and term.exit_code == 0


async def test_deleting_a_session_forgets_its_route(browserless_service) -> None:
    client = BrowserClient(browserless_service.url, browserless_service.token)
    created = await client.sessions.create(timeout_seconds=60)
    assert created.session_id in client.routes
    await client.sessions.delete(created.session_id)
    assert created.session_id not in client.routes


async def test_vm_errors_in_kernels_shapes_are_the_same_typed_errors(compat_service) -> None:
    """Against --kernel-compat: `{"message"}` from the VM's handlers and `{"type":"error"}` before an
    attach upgrade become NotFound / Conflict with the service's words, as the contract's Error would."""
    client = BrowserClient(compat_service.url, compat_service.token)
    browser = await client.sessions.create(timeout_seconds=120)
    sid = browser.session_id
    try:
        with pytest.raises(NotFound) as missing:
            await client.processes.status(sid, str(uuid.uuid4()))
        assert missing.value.url.startswith(f"{browser.base_url}/process/") and missing.value.message
        assert "jwt" not in str(missing.value.url)
        proc = await client.processes.spawn(sid, "cat", allocate_tty=True)
        async with client.processes.attach(sid, proc.process_id) as first:
            assert first.direct
            with pytest.raises(Conflict) as second:
                async with client.processes.attach(sid, proc.process_id):
                    pass
            assert second.value.status == 409 and second.value.message
            await first.send(b"\x04")
        # Kernel's VM sends no exit frame and does not close: the exit is the status's to tell.
        for _ in range(100):
            status = await client.processes.status(sid, proc.process_id)
            if status.state == "exited":
                break
            await asyncio.sleep(0.05)
        assert status.state == "exited" and status.exit_code == 0
    finally:
        await client.sessions.delete(sid)
