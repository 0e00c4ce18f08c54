"""The client against `bbrowse serve --kernel-compat`, which behaves as Kernel's VM does where a client
must cope: an attach that ends with no exit frame and no close, `stdin` answering 500 after the exit,
`list_files` answering `null` for an empty directory with lstat'd symlinks and Go's mode strings, a
`follow=false` log stream that never ends. And the official SDK's calls that work against Kernel.
"""

from __future__ import annotations

import asyncio
import base64
import time

import pytest

from bbrowse.client import BrowserClient, PtyOutput, ServerError, is_symlink, parse_mode

#: What the issue asks: the exit code shown within this long of the exit (the client aims at 1 s).
EXIT_SHOWN_SECONDS = 2.0


@pytest.fixture(scope="module")
async def compat(browserless_compat_service):
    """A session of the compat service with no Chromium: only the typing test needs a browser."""
    client = BrowserClient(browserless_compat_service.url, browserless_compat_service.token)
    browser = await client.sessions.create(timeout_seconds=600)
    yield client, browser.session_id
    await client.sessions.delete(browser.session_id)


async def test_an_attach_ending_without_exit_frame_or_close_shows_the_code_and_input_after_it_is_no_error(
        compat) -> None:
    client, sid = compat
    proc = await client.processes.spawn(sid, "sh", ["-c", "echo ready; read line; exit 3"], allocate_tty=True)
    seen = bytearray()
    ready = asyncio.Event()

    def on_output(data: bytes) -> None:
        seen.extend(data)
        if b"ready" in seen:
            ready.set()

    output = PtyOutput(client, sid, proc.process_id, on_output=on_output)
    running = asyncio.ensure_future(output.run())
    await asyncio.wait_for(ready.wait(), 15)
    term = output.connection
    assert term is not None and output.path == "attach"
    await client.processes.stdin(sid, proc.process_id, b"go\n")
    typed = time.monotonic()
    assert await asyncio.wait_for(running, 15) == 3
    assert time.monotonic() - typed < EXIT_SHOWN_SECONDS
    assert term.exit_code is None  # compat sent no exit frame: the code came from the status

    # Kernel answers stdin after the exit with 500; the client tells that apart from a real failure
    with pytest.raises(ServerError):
        await client.processes.stdin(sid, proc.process_id, b"late\n")
    assert await output.exited()


async def test_listing_an_empty_directory_symlinks_and_go_modes(compat) -> None:
    client, sid = compat
    base = f"/tmp/bbrowse-compat-{time.monotonic_ns()}"
    await client.fs.create_directory(sid, f"{base}/empty")
    await client.fs.write_file(sid, f"{base}/file.txt", b"x")
    result = await client.processes.exec(sid, "ln", ["-s", f"{base}/empty", f"{base}/link"])
    assert result.exit_code == 0, base64.b64decode(result.stderr_b64 or "")

    assert await client.fs.list_files(sid, f"{base}/empty") == []  # compat answers null
    entries = {e.name: e for e in await client.fs.list_files(sid, base)}
    assert is_symlink(entries["link"]) and not entries["link"].is_dir
    assert not is_symlink(entries["empty"]) and not is_symlink(entries["file.txt"])
    tmp = parse_mode((await client.fs.file_info(sid, "/tmp")).mode)
    assert tmp is not None and tmp.is_dir and tmp.bits == 0o1777 and tmp.ls() == "drwxrwxrwt"


async def test_a_one_shot_log_read_ends_where_follow_false_never_does(compat) -> None:
    client, sid = compat
    path = f"/tmp/bbrowse-compat-{time.monotonic_ns()}.log"
    await client.fs.write_file(sid, path, b"one\n\nthree\npartial")
    lines = [e.message async for e in client.logs.existing(sid, path=path)]
    assert lines == ["one", "", "three", "partial"]  # the file as it is: compat's stream skips and keeps back
    assert [e.message async for e in client.logs.existing(sid, path=path, tail=1)] == ["partial"]


def test_the_official_sdk_against_compat(browserless_compat_service, compat) -> None:
    """Calls that work against Kernel work against compat: read, exec, spawn + status + kill, files."""
    from kernel import Kernel

    sdk = Kernel(api_key=browserless_compat_service.token, base_url=browserless_compat_service.url, max_retries=0)
    try:
        sid = compat[1]
        assert sdk.browsers.retrieve(sid).session_id == sid
        result = sdk.browsers.process.exec(sid, command="sh", args=["-c", "echo sdk-ok; exit 4"])
        assert result.exit_code == 4 and base64.b64decode(result.stdout_b64) == b"sdk-ok\n"
        spawned = sdk.browsers.process.spawn(sid, command="sleep", args=["30"], allocate_tty=True, rows=24,
                                             cols=80)
        assert sdk.browsers.process.status(spawned.process_id, id_or_name=sid).state == "running"
        sdk.browsers.process.kill(spawned.process_id, id_or_name=sid, signal="KILL")
        path = f"/tmp/sdk-compat-{time.monotonic_ns()}"
        sdk.browsers.fs.create_directory(sid, path=path)
        sdk.browsers.fs.write_file(sid, b"hello", path=f"{path}/a.txt")
        assert sdk.browsers.fs.read_file(sid, path=f"{path}/a.txt").read() == b"hello"
        names = [f.name for f in sdk.browsers.fs.list_files(sid, path=path)]
        assert names == ["a.txt"]
    finally:
        sdk.close()


async def test_a_pty_is_spawned_with_its_size(compat) -> None:
    """Compat, as Kernel, makes a PTY spawned without rows/cols 0x0: the client always sends both."""
    client, sid = compat
    proc = await client.processes.spawn(sid, "/bin/sh", ["-c", "stty size; read line"], allocate_tty=True)
    seen = bytearray()
    sized = asyncio.Event()

    def on_output(data: bytes) -> None:
        seen.extend(data)
        if b"\n" in seen:
            sized.set()

    output = PtyOutput(client, sid, proc.process_id, on_output=on_output)
    running = asyncio.ensure_future(output.run())
    await asyncio.wait_for(sized.wait(), 15)
    assert seen.split(b"\r\n")[0] == b"24 80"
    await client.processes.stdin(sid, proc.process_id, b"\n")
    assert await asyncio.wait_for(running, 15) == 0


async def test_typing_is_not_smooth(compat_service) -> None:
    """Compat, as Kernel, types smoothly (50-120 ms a key) when `smooth` is left out: the client always sends it.
    Typing is the browser's: a session of the compat service with Chromium."""
    client = BrowserClient(compat_service.url, compat_service.token)
    sid = (await client.sessions.create(timeout_seconds=600)).session_id
    try:
        text = "typed-at-once " * 4  # 56 keys: smoothly at least 2.8 s
        started = time.monotonic()
        await client.computer.type_text(sid, text)
        assert time.monotonic() - started < len(text) * 0.05
    finally:
        await client.sessions.delete(sid)
