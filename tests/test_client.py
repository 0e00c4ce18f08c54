"""bbrowse's async client against the real `bbrowse serve`: every method's success path and the error
statuses a user meets, each surfacing as a typed exception with the service's code and message."""

from __future__ import annotations

import asyncio
import os
import secrets
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from conftest import session_area

from bbrowse.client import (
    BadRequest,
    BrowserClient,
    BrowserUnavailable,
    ClientConfig,
    ConfigError,
    Conflict,
    NotFound,
    SessionGone,
    Unauthorized,
)
from bbrowse.wire import (
    Browser,
    FileInfo,
    LogEvent,
    ProcessExitEvent,
    ProcessOutputEvent,
    Replay,
    decode_b64,
)

WAIT = 15.0  # seconds any single wait on the service may take before the test fails


@pytest.fixture(scope="module")
def client(service) -> BrowserClient:
    return BrowserClient(service.url, service.token)


@pytest.fixture(scope="module")
def browserless_client(browserless_service) -> BrowserClient:
    """The client of the service without Chromium, for tests of session bookkeeping (no browser launch each)."""
    return BrowserClient(browserless_service.url, browserless_service.token)


async def _session(client: BrowserClient) -> AsyncIterator[str]:
    browser = await client.sessions.create(timeout_seconds=900)
    yield browser.session_id
    try:
        await client.sessions.delete(browser.session_id)
    except SessionGone:
        pass


@pytest.fixture(scope="module")
async def sid(client: BrowserClient) -> AsyncIterator[str]:
    """One session for the module, made through the client (a browser each cost a Chromium start); each test
    has its own processes and its own directory (`tmp_path`)."""
    async for session_id in _session(client):
        yield session_id


@pytest.fixture
async def own_sid(browserless_client: BrowserClient) -> AsyncIterator[str]:
    """A fresh session, for a test about what a new one holds (its records, not its browser: no Chromium)."""
    async for session_id in _session(browserless_client):
        yield session_id


@pytest.fixture
def tmp_path(service, sid: str) -> Path:
    """A fresh directory of the test's session, in place of pytest's (a session's sandbox sees no directory of
    this machine): its str() is the path inside, its file operations act on the host side (conftest.session_area)."""
    return session_area(service, sid, f"t-{secrets.token_hex(4)}")


async def collect_output(client: BrowserClient, sid: str, pid: str) -> tuple[bytes, int]:
    """All stdout/stderr bytes of a process and its exit code, read through the SSE stream."""
    out = bytearray()
    async with asyncio.timeout(WAIT), client.processes.stdout_stream(sid, pid) as events:
        async for event in events:
            if isinstance(event, ProcessOutputEvent):
                out += event.data()
            else:
                assert isinstance(event, ProcessExitEvent)
                return bytes(out), event.exit_code
    raise AssertionError("stream ended without an exit event")


# --- configuration -------------------------------------------------------------------------------


def test_config_explicit_arguments_win_over_environment() -> None:
    env = {"KERNEL_API_KEY": "env-token", "KERNEL_BASE_URL": "http://env.example:1/"}
    from_env = ClientConfig.resolve(env=env)
    assert (from_env.base_url, from_env.token) == ("http://env.example:1", "env-token")
    explicit = ClientConfig.resolve("https://arg.example", "arg-token", env=env)
    assert (explicit.base_url, explicit.token) == ("https://arg.example", "arg-token")
    assert explicit.websocket_base_url == "wss://arg.example"
    assert ClientConfig.resolve(token="t", env={}).base_url == "https://api.onkernel.com"
    with pytest.raises(ConfigError, match="KERNEL_API_KEY"):
        ClientConfig.resolve("http://127.0.0.1:1", env={})
    with pytest.raises(ConfigError, match="base URL"):
        ClientConfig.resolve("ftp://x", "t", env={})
    assert "arg-token" not in repr(explicit)


async def test_clients_of_one_service_share_one_connection_pool(service) -> None:
    first, second = BrowserClient(service.url, service.token), BrowserClient(service.url, service.token)
    assert first.transport.http is second.transport.http
    other_token = BrowserClient(service.url, "another-token")
    assert other_token.transport.http is not first.transport.http


# --- sessions ------------------------------------------------------------------------------------


async def test_list_follows_pages_over_45_sessions(browserless_service) -> None:
    client = BrowserClient(browserless_service.url, browserless_service.token)
    tag = f"cpage-{uuid.uuid4().hex[:8]}"
    gate = asyncio.Semaphore(4)

    async def create(i: int) -> Browser:
        async with gate:
            # a long inactivity timeout so the first sessions outlive the creation of the last ones
            return await client.sessions.create(name=f"{tag}-{i:02d}", timeout_seconds=900)

    browsers = await asyncio.gather(*(create(i) for i in range(45)))
    created = [b.session_id for b in sorted(browsers, key=lambda b: b.created_at)]
    try:
        listed = [b.session_id async for b in client.sessions.list(query=tag, page_size=20)]
        assert sorted(listed) == sorted(created) and len(set(listed)) == 45
        first = await client.sessions.page(limit=20, query=tag)
        second = await client.sessions.page(limit=20, offset=first.next_offset, query=tag)
        third = await client.sessions.page(limit=20, offset=second.next_offset, query=tag)
        assert [len(p.items) for p in (first, second, third)] == [20, 20, 5]
        assert (first.next_offset, second.next_offset, third.has_more) == (20, 40, False)
    finally:
        for session_id in created:
            await client.sessions.delete(session_id)
    assert [b async for b in client.sessions.list(query=tag)] == []
    deleted = [b async for b in client.sessions.list(query=tag, status="deleted", page_size=100)]
    assert len(deleted) == 45 and all(b.deleted_at for b in deleted)


def without_jwt(browser: Browser) -> Browser:
    return browser.model_copy(update={"cdp_ws_url": browser.cdp_ws_url.partition("?jwt=")[0]})


async def test_create_get_by_id_and_name_delete_then_gone(browserless_client: BrowserClient) -> None:
    client = browserless_client  # the client's side of session bookkeeping; test_sessions checks a real one
    name = f"c-{uuid.uuid4().hex[:8]}"
    browser = await client.sessions.create(name=name, timeout_seconds=120, tags={"team": "qa"},
                                           viewport={"width": 1024, "height": 768})
    assert isinstance(browser, Browser)
    assert (browser.name, browser.timeout_seconds, browser.tags) == (name, 120, {"team": "qa"})
    # the same session; its cdp_ws_url's jwt is minted at each read (issued-at in seconds), so not compared
    assert without_jwt(await client.sessions.get(browser.session_id)) == without_jwt(browser)
    assert without_jwt(await client.sessions.get(name)) == without_jwt(browser)
    await client.sessions.delete(name)
    with pytest.raises(SessionGone) as gone:
        await client.sessions.get(browser.session_id)
    assert gone.value.status == 410 and gone.value.code == "session_gone"
    with pytest.raises(SessionGone):
        await client.sessions.delete(browser.session_id)
    with pytest.raises(SessionGone):
        await client.processes.spawn(browser.session_id, "true")


async def test_duplicate_name_is_conflict_with_readable_message(browserless_client: BrowserClient) -> None:
    client = browserless_client  # names are session bookkeeping: no Chromium needed
    name = f"dup-{uuid.uuid4().hex[:8]}"
    first = await client.sessions.create(name=name)
    try:
        with pytest.raises(Conflict) as err:
            await client.sessions.create(name=name)
        assert err.value.status == 409 and err.value.code == "conflict"
        assert str(err.value).startswith("conflict (409): ") and name in str(err.value)
    finally:
        await client.sessions.delete(first.session_id)


async def test_unknown_session_is_not_found(client: BrowserClient) -> None:
    with pytest.raises(NotFound) as err:
        await client.sessions.get("no-such-session-here")
    assert err.value.code == "not_found" and "no-such-session-here" in err.value.message


async def test_wrong_token_is_unauthorized(service) -> None:
    intruder = BrowserClient(service.url, "wrong-token")
    with pytest.raises(Unauthorized) as err:
        await intruder.sessions.get("anything")
    assert err.value.status == 401 and err.value.code == "unauthorized"
    with pytest.raises(Unauthorized):
        [b async for b in intruder.sessions.list()]


async def test_bad_create_input_is_bad_request_naming_the_field(client: BrowserClient) -> None:
    with pytest.raises(BadRequest) as err:
        await client.sessions.create(timeout_seconds=5)
    assert err.value.code == "bad_request"
    assert any((d.message or "").startswith("timeout_seconds") for d in err.value.details)
    assert "timeout_seconds" in str(err.value)


# --- processes -----------------------------------------------------------------------------------


async def test_spawn_stdin_stdout_round_trip_without_tty(client: BrowserClient, sid: str) -> None:
    proc = await client.processes.spawn(sid, "sh", ["-c", "head -c 9; echo oops >&2; exit 7"])
    assert proc.pid > 0 and uuid.UUID(proc.process_id)
    written = await client.processes.stdin(sid, proc.process_id, b"hello \x00\xff\n")
    assert written.written_bytes == 9
    stdout, stderr, exit_code = await asyncio.wait_for(client.processes.output(sid, proc.process_id), WAIT)
    assert stdout == b"hello \x00\xff\n"  # binary bytes intact both ways
    assert stderr == b"oops\n"
    assert exit_code == 7


async def test_stdin_writer_keeps_typing_order(client: BrowserClient, sid: str) -> None:
    typed = bytes(range(32, 127)) * 3
    proc = await client.processes.spawn(sid, "head", ["-c", str(len(typed))])
    writer = client.processes.stdin_writer(sid, proc.process_id)
    for byte in typed:
        writer.write(bytes([byte]))  # fire-and-forget, as a terminal pane types
    await asyncio.wait_for(writer.drain(), WAIT)
    await writer.aclose()
    stdout, _, exit_code = await asyncio.wait_for(client.processes.output(sid, proc.process_id), WAIT)
    assert stdout == typed and exit_code == 0


async def test_stdout_stream_events_are_wire_models(client: BrowserClient, sid: str) -> None:
    proc = await client.processes.spawn(sid, "sh", ["-c", "echo to-out; echo to-err >&2"])
    async with asyncio.timeout(WAIT), client.processes.stdout_stream(sid, proc.process_id) as stream:
        events = [event async for event in stream]
    assert isinstance(events[-1], ProcessExitEvent) and events[-1].exit_code == 0
    chunks = {(e.stream, e.data()) for e in events[:-1]}
    assert chunks == {("stdout", b"to-out\n"), ("stderr", b"to-err\n")}


async def test_spawn_stdin_stdout_round_trip_with_tty(client: BrowserClient, sid: str) -> None:
    script = 'read line; echo "got:$line"; [ -t 0 ] && echo "tty:$TERM"'
    proc = await client.processes.spawn(sid, "sh", ["-c", script], allocate_tty=True, rows=30, cols=100)
    await client.processes.stdin(sid, proc.process_id, b"abc\n")
    out, exit_code = await collect_output(client, sid, proc.process_id)
    assert b"got:abc" in out and b"tty:xterm-256color" in out
    assert b"\r\n" in out  # a real PTY translates newlines
    assert exit_code == 0


async def test_attach_round_trip_and_second_attach_conflicts(client: BrowserClient, sid: str) -> None:
    proc = await client.processes.spawn(sid, "sh", ["-c", 'read line; echo "got:$line"; exit 3'], allocate_tty=True)
    received = bytearray()
    async with asyncio.timeout(WAIT), client.processes.attach(sid, proc.process_id) as term:
        with pytest.raises(Conflict):
            async with client.processes.attach(sid, proc.process_id):
                pass
        await term.resize(40, 120)
        await term.send(b"xyz\n")
        async for chunk in term:
            received += chunk
    assert b"got:xyz" in received
    assert term.exit_code == 3


async def test_attach_errors_are_typed_before_the_upgrade(service, client: BrowserClient, sid: str) -> None:
    with pytest.raises(NotFound):
        async with client.processes.attach(sid, str(uuid.uuid4())):
            pass
    proc = await client.processes.spawn(sid, "sleep", ["30"], allocate_tty=True)
    try:
        with pytest.raises(Unauthorized) as err:
            async with BrowserClient(service.url, "wrong-token").processes.attach(sid, proc.process_id):
                pass
        assert err.value.code == "unauthorized"
    finally:
        await client.processes.kill(sid, proc.process_id, "KILL")


async def test_exec_runs_to_completion(client: BrowserClient, sid: str, tmp_path: Path) -> None:
    result = await client.processes.exec(
        sid, "sh", ["-c", 'echo "out:$(pwd):$GREETING"; echo err >&2; exit 3'],
        cwd=str(tmp_path), env={"GREETING": "hi"},
    )
    assert result.exit_code == 3
    assert decode_b64(result.stdout_b64) == f"out:{tmp_path}:hi\n".encode()
    assert decode_b64(result.stderr_b64) == b"err\n"
    assert result.duration_ms >= 0


async def test_status_then_kill(client: BrowserClient, sid: str) -> None:
    proc = await client.processes.spawn(sid, "sleep", ["60"])
    status = await client.processes.status(sid, proc.process_id)
    assert status.state == "running" and status.exit_code is None
    assert status.mem_bytes is None or status.mem_bytes > 0
    assert (await client.processes.kill(sid, proc.process_id, "TERM")).ok is True
    _, exit_code = await collect_output(client, sid, proc.process_id)
    assert exit_code != 0
    status = await client.processes.status(sid, proc.process_id)
    assert status.state == "exited" and status.exit_code == exit_code


async def test_resize_is_seen_by_stty_size(client: BrowserClient, sid: str) -> None:
    proc = await client.processes.spawn(sid, "sh", ["-c", "stty size; read x; stty size"],
                                        allocate_tty=True, rows=24, cols=80)
    seen = b""
    async with client.processes.stdout_stream(sid, proc.process_id) as events:
        async for event in events:
            if isinstance(event, ProcessOutputEvent):
                seen += event.data()
            if b"24 80" in seen:
                break  # the first `stty size` ran at the spawn size: resize only now
    await client.processes.resize(sid, proc.process_id, rows=33, cols=101)
    await client.processes.stdin(sid, proc.process_id, b"\n")
    out, _ = await collect_output(client, sid, proc.process_id)
    assert out.index(b"24 80") < out.index(b"33 101")


async def test_resize_without_tty_is_bad_request(client: BrowserClient, sid: str) -> None:
    proc = await client.processes.spawn(sid, "sleep", ["30"])
    try:
        with pytest.raises(BadRequest):
            await client.processes.resize(sid, proc.process_id, rows=10, cols=10)
    finally:
        await client.processes.kill(sid, proc.process_id, "KILL")


async def test_unknown_process_is_not_found(client: BrowserClient, sid: str) -> None:
    unknown = str(uuid.uuid4())
    with pytest.raises(NotFound) as err:
        await client.processes.status(sid, unknown)
    assert err.value.code == "not_found"
    with pytest.raises(NotFound):
        await client.processes.stdin(sid, unknown, b"x")
    with pytest.raises(NotFound):
        async with client.processes.stdout_stream(sid, unknown):
            pass


async def test_relative_cwd_is_bad_request_with_details(client: BrowserClient, sid: str) -> None:
    with pytest.raises(BadRequest) as err:
        await client.processes.spawn(sid, "ls", cwd="relative/dir")
    assert err.value.status == 400 and err.value.code == "bad_request"
    assert any("cwd" in (d.message or "") for d in err.value.details)


# --- files ---------------------------------------------------------------------------------------


async def test_read_file_random_binary_is_byte_exact_and_streamed(
    client: BrowserClient, sid: str, tmp_path: Path,
) -> None:
    payload = os.urandom(3 * 1024 * 1024 + 17)
    target = tmp_path / "blob.bin"
    target.write_bytes(payload)
    chunks = [chunk async for chunk in client.fs.read_file(sid, str(target))]
    assert b"".join(chunks) == payload
    assert len(chunks) > 1 and max(map(len, chunks)) <= 64 * 1024


async def test_list_files_and_file_info(client: BrowserClient, sid: str, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_bytes(b"12345")
    os.chmod(tmp_path / "a.txt", 0o640)
    entries = await client.fs.list_files(sid, str(tmp_path))
    assert all(isinstance(e, FileInfo) for e in entries)
    by_name = {e.name: e for e in entries}
    assert set(by_name) == {"sub", "a.txt"}
    assert by_name["sub"].is_dir and not by_name["a.txt"].is_dir
    info = await client.fs.file_info(sid, str(tmp_path / "a.txt"))
    assert (info.size_bytes, info.mode, info.path) == (5, "-rw-r-----", str(tmp_path / "a.txt"))


async def test_file_errors_are_typed(client: BrowserClient, sid: str, tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        async with client.fs.read_file(sid, str(tmp_path / "missing")):
            pass
    with pytest.raises(NotFound):
        await client.fs.file_info(sid, str(tmp_path / "missing"))
    with pytest.raises(BadRequest) as err:
        await client.fs.list_files(sid, "relative/path")
    assert err.value.details


# --- logs ----------------------------------------------------------------------------------------


async def test_logs_no_follow_sends_existing_lines_then_ends(client: BrowserClient, sid: str, tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("first\nsecond\nthird\n")
    async with asyncio.timeout(WAIT):
        events = [e async for e in client.logs.stream(sid, source="path", path=str(log), follow=False)]
    assert [e.message for e in events] == ["first", "second", "third"]
    assert all(isinstance(e, LogEvent) and e.timestamp.tzinfo for e in events)


async def test_logs_follow_streams_appended_lines(client: BrowserClient, sid: str, tmp_path: Path) -> None:
    log = tmp_path / "follow.log"
    log.write_text("old line\n")
    async with asyncio.timeout(WAIT), client.logs.stream(sid, source="path", path=str(log)) as events:
        with log.open("a") as f:
            f.write("new one\nnew two\n")
        seen = []
        async for event in events:
            seen.append(event.message)
            if len(seen) == 2:
                break
    assert seen == ["new one", "new two"]


async def test_logs_of_the_service_itself_and_unknown_sources(client: BrowserClient, sid: str) -> None:
    async with asyncio.timeout(WAIT):
        events = [e async for e in client.logs.stream(sid, source="supervisor", supervisor_process="bbrowse",
                                                        follow=False)]
    assert all(isinstance(e, LogEvent) for e in events)
    assert (await client.logs.supervisors(sid))[0] == "bbrowse"
    with pytest.raises(NotFound):
        async with client.logs.stream(sid, source="supervisor", supervisor_process="no-such-program"):
            pass
    with pytest.raises(BadRequest) as err:
        async with client.logs.stream(sid, source="path"):
            pass
    assert any("path" in (d.message or "") for d in err.value.details)


# --- replays and screenshots (Chromium-backed) ---------------------------------------------------


async def test_replays_list_of_a_new_session_is_empty(browserless_client: BrowserClient, own_sid: str) -> None:
    assert await browserless_client.replays.list(own_sid) == []


async def test_screenshot_is_png_or_browser_unavailable(client: BrowserClient, sid: str) -> None:
    try:
        image = await client.computer.screenshot(sid)
    except BrowserUnavailable as err:
        assert err.code == "browser_unavailable" and err.status in (502, 503) and err.message
    else:
        assert image.startswith(b"\x89PNG\r\n\x1a\n")


async def test_replay_start_stop_or_browser_unavailable(client: BrowserClient, sid: str) -> None:
    try:
        replay = await client.replays.start(sid, framerate=5)
    except BrowserUnavailable as err:
        assert err.code == "browser_unavailable" and err.status in (502, 503) and err.message
        return
    assert isinstance(replay, Replay) and replay.replay_id
    with pytest.raises(Conflict):
        await client.replays.start(sid)
    await client.replays.stop(sid, replay.replay_id)
    assert replay.replay_id in [r.replay_id for r in await client.replays.list(sid)]
    async with asyncio.timeout(90):
        video = b"".join([chunk async for chunk in client.replays.download(sid, replay.replay_id)])
    assert video[4:8] == b"ftyp"
