"""Processes over real HTTP against a real `bbrowse serve`: real subprocesses, real PTYs, real SSE.

Raw httpx checks the exact wire behaviour; the official Kernel SDK checks that a real client of the
cloud service drives the local one the same way.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import secrets
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import psutil
import pytest

STREAM_TIMEOUT = 15.0
#: Python as a session's programs find it: the system's, on PATH (a session's sandbox sees the system's
#: directories, not the suite's virtualenv).
PYTHON = "python3"


@pytest.fixture(scope="module")
def http(browserless_http: httpx.AsyncClient) -> httpx.AsyncClient:
    """This module's raw HTTP: the service without Chromium (processes need no browser, its sessions start
    at once). Every test here talks to that service only."""
    return browserless_http


@pytest.fixture
def sdk(browserless_sdk):
    """The official SDK on the service without Chromium (overrides conftest's)."""
    return browserless_sdk


@pytest.fixture(scope="module")
async def sid(http: httpx.AsyncClient) -> AsyncIterator[str]:
    """One session shared by this module's tests (the deletion test makes its own)."""
    r = await http.post("/browsers", json={"timeout_seconds": 900})
    assert r.status_code == 200, r.text
    yield r.json()["session_id"]
    await http.delete(f"/browsers/{r.json()['session_id']}")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def spawn(http: httpx.AsyncClient, sid: str, command: str, *args: str, **fields) -> dict:
    r = await http.post(f"/browsers/{sid}/process/spawn", json={"command": command, "args": list(args), **fields})
    assert r.status_code == 200, r.text
    body = r.json()
    assert {"process_id", "pid", "started_at"} <= body.keys()
    return body


async def write(http: httpx.AsyncClient, sid: str, pid: str, data: bytes) -> None:
    r = await http.post(f"/browsers/{sid}/process/{pid}/stdin", json={"data_b64": b64(data)})
    assert r.status_code == 200, r.text
    assert r.json() == {"written_bytes": len(data)}


class Output:
    """What one subscriber of `stdout/stream` has received so far."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines
        self.stdout = bytearray()  # bytearray: appending is linear, not quadratic, for big outputs
        self.stderr = bytearray()
        self.events: list[dict] = []
        self.exit_code: int | None = None

    async def _next_event(self) -> dict:
        async for line in self._lines:
            if line.startswith("data:"):
                event = json.loads(line[5:])
                self.events.append(event)
                if event.get("event") == "exit":
                    self.exit_code = event["exit_code"]
                else:
                    chunk = base64.b64decode(event["data_b64"])
                    if event["stream"] == "stdout":
                        self.stdout += chunk
                    else:
                        assert event["stream"] == "stderr", event
                        self.stderr += chunk
                return event
        raise AssertionError("the stream ended without an exit event")

    async def until(self, predicate, timeout: float = STREAM_TIMEOUT) -> None:
        async with asyncio.timeout(timeout):
            while not predicate(self):
                assert self.exit_code is None, f"exited ({self.exit_code}) first; stdout={self.stdout!r}"
                await self._next_event()

    async def until_stdout(self, needle: bytes, count: int = 1) -> None:
        await self.until(lambda o: o.stdout.count(needle) >= count)

    async def until_exit(self) -> int:
        async with asyncio.timeout(STREAM_TIMEOUT):
            while self.exit_code is None:
                await self._next_event()
        # nothing follows the exit event: the stream ends
        assert [line async for line in self._lines if line.startswith("data:")] == []
        return self.exit_code


@asynccontextmanager
async def stream(http: httpx.AsyncClient, sid: str, pid: str) -> AsyncIterator[Output]:
    async with http.stream("GET", f"/browsers/{sid}/process/{pid}/stdout/stream") as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["x-sse-content-type"] == "application/json"
        yield Output(r.aiter_lines())


def assert_bad_request(r: httpx.Response, field: str) -> None:
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["code"] == "bad_request"
    assert any(d["message"].startswith(f"{field}:") for d in body["details"]), body


# round trips -------------------------------------------------------------------------------------


async def test_pty_round_trip_echo_and_program_output(http: httpx.AsyncClient, sid: str) -> None:
    proc = await spawn(http, sid, "cat", allocate_tty=True)
    async with stream(http, sid, proc["process_id"]) as out:
        await write(http, sid, proc["process_id"], b"hello tty\n")
        # once echoed by the terminal, once written back by cat; a terminal turns \n into \r\n
        await out.until_stdout(b"hello tty\r\n", count=2)
        assert out.stderr == b""
        await write(http, sid, proc["process_id"], b"\x04")  # Ctrl-D: end of input for cat
        assert await out.until_exit() == 0


async def test_pipe_round_trip_keeps_stdout_and_stderr_apart(http: httpx.AsyncClient, sid: str) -> None:
    script = 'while read line; do echo "out:$line"; echo "err:$line" >&2; done; exit 4'
    proc = await spawn(http, sid, "sh", "-c", script)
    pid = proc["process_id"]
    async with stream(http, sid, pid) as out:
        await write(http, sid, pid, b"one\n")
        await write(http, sid, pid, b"two\n")
        await out.until(lambda o: b"out:two\n" in o.stdout and b"err:two\n" in o.stderr)
        assert out.stdout == b"out:one\nout:two\n" and out.stderr == b"err:one\nerr:two\n"
        for i in range(20):  # back-to-back writes arrive in order
            await write(http, sid, pid, b"%d\n" % i)
        await out.until_stdout(b"out:19\n")
        assert out.stdout == b"out:one\nout:two\n" + b"".join(b"out:%d\n" % i for i in range(20))
        await http.post(f"/browsers/{sid}/process/{pid}/kill", json={"signal": "TERM"})
        assert await out.until_exit() == 128 + signal.SIGTERM


async def test_large_stdin_waits_for_the_program_and_arrives_whole(http: httpx.AsyncClient, sid: str) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: far more than a pipe holds, so the service waits to write
    proc = await spawn(http, sid, "sh", "-c", f"head -c {len(data)} | sha256sum")
    await write(http, sid, proc["process_id"], data[: len(data) // 2])
    await write(http, sid, proc["process_id"], data[len(data) // 2 :])
    async with stream(http, sid, proc["process_id"]) as out:
        assert await out.until_exit() == 0
    assert out.stdout.split()[0].decode() == hashlib.sha256(data).hexdigest()


async def test_late_subscriber_gets_backlog_and_all_subscribers_get_every_chunk(
    http: httpx.AsyncClient, sid: str
) -> None:
    proc = await spawn(http, sid, "sh", "-c", 'echo early; read x; seq 1 30000; echo "late $x"')
    pid = proc["process_id"]
    async with stream(http, sid, pid) as first:
        await first.until_stdout(b"early\n")
        async with stream(http, sid, pid) as second:  # connects after "early" was written
            await second.until_stdout(b"early\n")
            await write(http, sid, pid, b"bird\n")
            assert await first.until_exit() == 0
            assert await second.until_exit() == 0
    expected = b"early\n" + b"".join(b"%d\n" % i for i in range(1, 30001)) + b"late bird\n"
    assert first.stdout == second.stdout == expected
    assert len(first.events) > 2  # really several chunks, each broadcast to both
    # after the exit the process is still there: its output and exit event, then the end
    async with stream(http, sid, pid) as after:
        assert await after.until_exit() == 0
        assert after.stdout.endswith(b"29999\n30000\nlate bird\n")
    status = (await http.get(f"/browsers/{sid}/process/{pid}/status")).json()
    assert status["state"] == "exited" and status["exit_code"] == 0


async def test_first_subscriber_gets_everything_later_ones_a_bounded_backlog(
    http: httpx.AsyncClient, sid: str
) -> None:
    proc = await spawn(http, sid, "seq", "1", "500000")  # 3.4 MB, written before anyone listens
    expected = b"".join(b"%d\n" % i for i in range(1, 500001))
    async with stream(http, sid, proc["process_id"]) as first:
        assert await first.until_exit() == 0
    assert first.stdout == expected
    async with stream(http, sid, proc["process_id"]) as late:
        assert await late.until_exit() == 0
    assert 1 << 20 <= len(late.stdout) <= (1 << 20) + (64 << 10)  # the last MiB or so, in whole chunks
    assert expected.endswith(late.stdout)


async def test_a_stalled_subscriber_blocks_neither_the_process_nor_others(
    http: httpx.AsyncClient, sid: str
) -> None:
    size = 24_000_000  # far more than the socket buffers of the stalled connection hold
    proc = await spawn(http, sid, "sh", "-c", f"read go; head -c {size} /dev/zero")
    pid = proc["process_id"]
    async with http.stream("GET", f"/browsers/{sid}/process/{pid}/stdout/stream") as stalled:
        assert stalled.status_code == 200  # ...and then never read
        async with stream(http, sid, pid) as reader:
            await write(http, sid, pid, b"go\n")
            assert await reader.until_exit() == 0
        assert len(reader.stdout) == size
    status = (await http.get(f"/browsers/{sid}/process/{pid}/status")).json()
    assert status["state"] == "exited"


def test_a_reader_too_far_behind_loses_its_oldest_output_not_the_newest() -> None:
    from bbrowse.service.process_output import Chunk, OutputLog

    async def scenario() -> None:
        output = OutputLog(backlog_bytes=1024, max_lag_bytes=64 * 1024)
        reader = output.follow(Chunk.raw, max_batch=1 << 30)
        output.append(0, b"first")
        assert await anext(reader) == b"first"
        for i in range(100):  # 400 KiB while the reader is away: more than it may lag
            output.append(0, bytes([i]) * 4096)
        output.finish(0)
        rest = b"".join([chunk async for chunk in reader])
        assert len(rest) <= 64 * 1024 and rest.endswith(bytes([99]) * 4096)
        assert output._retained <= 64 * 1024  # memory stayed bounded

    asyncio.run(scenario())


async def test_sdk_spawn_stdin_stream_status_and_kill(sdk, sid: str) -> None:
    spawned = await asyncio.to_thread(
        sdk.browsers.process.spawn, sid, command="cat", allocate_tty=True, cols=90, rows=20
    )
    pid = spawned.process_id

    def drive() -> tuple[bytes, int | None]:
        out, code = b"", None
        with sdk.browsers.process.stdout_stream(pid, id_or_name=sid) as events:  # closed when left (see conftest.sdk)
            written = sdk.browsers.process.stdin(pid, id_or_name=sid, data_b64=b64(b"via sdk\n"))
            assert written.written_bytes == 8
            for event in events:
                if event.event == "exit":
                    code = event.exit_code
                    break
                assert event.stream == "stdout"
                out += base64.b64decode(event.data_b64)
                if out.count(b"via sdk\r\n") == 2:
                    status = sdk.browsers.process.status(pid, id_or_name=sid)
                    assert status.state == "running" and status.mem_bytes and status.mem_bytes > 0
                    assert sdk.browsers.process.resize(pid, id_or_name=sid, cols=100, rows=30).ok
                    assert sdk.browsers.process.kill(pid, id_or_name=sid, signal="HUP").ok
        return out, code

    out, code = await asyncio.to_thread(drive)
    assert out.count(b"via sdk\r\n") == 2 and code == 128 + signal.SIGHUP
    status = await asyncio.to_thread(sdk.browsers.process.status, pid, id_or_name=sid)
    assert status.state == "exited" and status.exit_code == 128 + signal.SIGHUP


# exec ----------------------------------------------------------------------------------------------


async def test_exec_returns_exit_code_and_separate_outputs(http: httpx.AsyncClient, sid: str) -> None:
    r = await http.post(
        f"/browsers/{sid}/process/exec",
        json={"command": "sh", "args": ["-c", "echo to-out; echo to-err >&2; pwd; exit 3"]},
    )
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["exit_code"] == 3 and result["duration_ms"] >= 0
    assert base64.b64decode(result["stderr_b64"]) == b"to-err\n"
    out = base64.b64decode(result["stdout_b64"]).decode().splitlines()
    assert out[0] == "to-out" and out[1].endswith("/workspace")  # default cwd: the session's working directory


async def test_sdk_exec_with_env_cwd_and_binary_output(sdk, sid: str) -> None:
    # A directory of the session (its sandbox sees none of this machine's temp directories).
    cwd = f"/tmp/exec-cwd-{os.getpid()}"
    sdk.browsers.fs.create_directory(sid, path=cwd)
    result = await asyncio.to_thread(
        sdk.browsers.process.exec,
        sid,
        command="sh",
        args=["-c", 'printf "$GREETING\\377\\000"; pwd; cat'],  # stdin is at end of input: cat ends
        env={"GREETING": "hi"},
        cwd=cwd,
    )
    assert result.exit_code == 0
    assert base64.b64decode(result.stdout_b64) == b"hi\xff\x00" + cwd.encode() + b"\n"
    assert base64.b64decode(result.stderr_b64) == b""


async def test_exec_timeout_ends_the_command(http: httpx.AsyncClient, sid: str) -> None:
    r = await http.post(
        f"/browsers/{sid}/process/exec", json={"command": "sleep", "args": ["30"], "timeout_sec": 1}
    )
    assert r.status_code == 200
    assert r.json()["exit_code"] == 128 + signal.SIGTERM and r.json()["duration_ms"] < 10_000


# signals, timeout, status --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["TERM", "KILL", "INT", "HUP"])
async def test_kill_with_each_signal(http: httpx.AsyncClient, sid: str, name: str) -> None:
    proc = await spawn(http, sid, "sleep", "100")
    pid = proc["process_id"]
    async with stream(http, sid, pid) as out:
        r = await http.post(f"/browsers/{sid}/process/{pid}/kill", json={"signal": name})
        assert r.status_code == 200 and r.json() == {"ok": True}
        assert await out.until_exit() == 128 + signal.Signals[f"SIG{name}"]
    # signalling an exited process is harmless
    again = await http.post(f"/browsers/{sid}/process/{pid}/kill", json={"signal": name})
    assert again.status_code == 200


async def test_a_signal_right_after_the_spawn_answers_is_never_lost(http: httpx.AsyncClient, sid: str) -> None:
    """In the session's sandbox the program starts its own session (`setsid`, `--ctty` with a PTY) after the
    spawn's fork: a kill or a ctrl-c sent in between would reach nobody. The spawn answers once the program
    leads its session and holds its terminal."""
    for tty in (False, True):
        for _ in range(8):
            pid = (await spawn(http, sid, "sleep", "100", allocate_tty=tty))["process_id"]
            if tty:
                await write(http, sid, pid, b"\x03")
            else:
                await http.post(f"/browsers/{sid}/process/{pid}/kill", json={"signal": "KILL"})
            deadline = time.monotonic() + STREAM_TIMEOUT
            while (status := (await http.get(f"/browsers/{sid}/process/{pid}/status")).json())["state"] != "exited":
                assert time.monotonic() < deadline, f"{'ctrl-c' if tty else 'KILL'} right after the spawn was lost"
                await asyncio.sleep(0.02)
            assert status["exit_code"] == 128 + (signal.SIGINT if tty else signal.SIGKILL)


async def test_kill_reaches_the_whole_process_group(http: httpx.AsyncClient, sid: str) -> None:
    marker = f"100.{secrets.randbelow(10**6)}"
    proc = await spawn(http, sid, "sh", "-c", f"sleep {marker} & echo $!; wait")
    async with stream(http, sid, proc["process_id"]) as out:
        await out.until_stdout(b"\n")
        assert int(out.stdout) > 0
        # `$!` is a pid of the sandbox's own PID namespace: on this machine the job is found by its command line
        grandchild = await host_pid(["sleep", marker])
        assert _alive(grandchild)
        await http.post(f"/browsers/{sid}/process/{proc['process_id']}/kill", json={"signal": "TERM"})
        await out.until_exit()
    await wait_gone(grandchild)
    assert not _alive(grandchild)


async def test_exit_arrives_while_a_background_job_holds_the_output(http: httpx.AsyncClient, sid: str) -> None:
    for tty in (False, True):
        proc = await spawn(http, sid, "sh", "-c", "sleep 100 & echo $!; echo parent-done", allocate_tty=tty)
        async with stream(http, sid, proc["process_id"]) as out:
            assert await out.until_exit() == 0  # the still-open output does not hold the exit back
        assert b"parent-done" in out.stdout
        status = (await http.get(f"/browsers/{sid}/process/{proc['process_id']}/status")).json()
        assert status["state"] == "exited"


async def test_timeout_sec_kills_a_spawned_process(http: httpx.AsyncClient, sid: str) -> None:
    proc = await spawn(http, sid, "sleep", "100", timeout_sec=1)
    async with stream(http, sid, proc["process_id"]) as out:
        assert await out.until_exit() == 128 + signal.SIGTERM


async def test_status_running_with_real_rss_then_exited(http: httpx.AsyncClient, sid: str) -> None:
    program = "b = b'x' * (48 << 20); print('allocated', flush=True); input()"
    proc = await spawn(http, sid, PYTHON, "-c", program)
    pid = proc["process_id"]
    async with stream(http, sid, pid) as out:
        await out.until_stdout(b"allocated\n")
        status = (await http.get(f"/browsers/{sid}/process/{pid}/status")).json()
        assert status["state"] == "running" and "exit_code" not in status
        assert status["mem_bytes"] > 48 << 20  # real resident memory, not a placeholder
        assert isinstance(status["cpu_pct"], float) and status["cpu_pct"] >= 0
        await write(http, sid, pid, b"\n")
        assert await out.until_exit() == 0
    status = (await http.get(f"/browsers/{sid}/process/{pid}/status")).json()
    assert status == {"state": "exited", "exit_code": 0, "cpu_pct": 0.0}


# terminals -----------------------------------------------------------------------------------------


async def test_pty_size_term_and_resize_seen_by_the_program(http: httpx.AsyncClient, sid: str) -> None:
    proc = await spawn(http, sid, "sh", allocate_tty=True, rows=33, cols=101, env={"PS1": "$ "})
    pid = proc["process_id"]
    async with stream(http, sid, pid) as out:
        await write(http, sid, pid, b'stty size; echo "term=$TERM"\n')
        await out.until_stdout(b"term=xterm-256color\r\n")
        assert b"33 101\r\n" in out.stdout
        r = await http.post(f"/browsers/{sid}/process/{pid}/resize", json={"rows": 40, "cols": 120})
        assert r.status_code == 200 and r.json() == {"ok": True}
        await write(http, sid, pid, b"stty size\n")
        await out.until_stdout(b"40 120\r\n")
        await write(http, sid, pid, b"exit 5\n")
        assert await out.until_exit() == 5


async def test_resize_delivers_sigwinch(http: httpx.AsyncClient, sid: str) -> None:
    program = (
        "import os, signal, sys\n"
        "def winch(*_):\n"
        "    size = os.get_terminal_size(0)\n"
        "    os.write(1, f'WINCH {size.lines}x{size.columns}\\n'.encode())\n"
        "    os._exit(0)\n"
        "signal.signal(signal.SIGWINCH, winch)\n"
        "print('ready', flush=True)\n"
        "while True: signal.pause()\n"
    )
    proc = await spawn(http, sid, PYTHON, "-c", program, allocate_tty=True)
    async with stream(http, sid, proc["process_id"]) as out:
        await out.until_stdout(b"ready")
        r = await http.post(
            f"/browsers/{sid}/process/{proc['process_id']}/resize", json={"rows": 50, "cols": 132}
        )
        assert r.status_code == 200
        await out.until_stdout(b"WINCH 50x132")
        assert await out.until_exit() == 0


async def test_env_term_wins_over_the_default(http: httpx.AsyncClient, sid: str) -> None:
    proc = await spawn(http, sid, "sh", "-c", 'echo "term=$TERM"', allocate_tty=True, env={"TERM": "vt100"})
    async with stream(http, sid, proc["process_id"]) as out:
        assert await out.until_exit() == 0
    assert out.stdout == b"term=vt100\r\n"


# bad input ------------------------------------------------------------------------------------------


async def test_bad_input_is_400_naming_the_field(http: httpx.AsyncClient, sid: str) -> None:
    base = f"/browsers/{sid}/process"
    proc = await spawn(http, sid, "cat")
    pid = proc["process_id"]
    assert_bad_request(await http.post(f"{base}/{pid}/stdin", json={"data_b64": "not base64!"}), "data_b64")
    assert_bad_request(await http.post(f"{base}/{pid}/stdin", json={"data_b64": "aGk=", "extra": 1}), "extra")
    assert_bad_request(await http.post(f"{base}/spawn", json={"command": "ls", "cwd": "relative/dir"}), "cwd")
    assert_bad_request(await http.post(f"{base}/spawn", json={"command": "ls", "cwd": "/no/such/dir"}), "cwd")
    assert_bad_request(await http.post(f"{base}/exec", json={"command": "ls", "cwd": "/etc/hostname"}), "cwd")
    r = await http.post(f"{base}/spawn", json={"command": "sh", "allocate_tty": True, "cols": 0})
    assert_bad_request(r, "cols")
    assert_bad_request(await http.post(f"{base}/{pid}/resize", json={"rows": 10, "cols": 0}), "cols")
    assert_bad_request(await http.post(f"{base}/{pid}/kill", json={"signal": "STOP"}), "signal")
    r = await http.post(f"{base}/spawn", json={"command": "no-such-program-here"})
    assert_bad_request(r, "command")
    assert "no-such-program-here" in r.json()["message"] and "not found" in r.json()["message"]
    assert_bad_request(await http.post(f"{base}/exec", json={"command": "/etc/hostname"}), "command")
    # resizing a process without a terminal
    r = await http.post(f"{base}/{pid}/resize", json={"rows": 10, "cols": 10})
    assert r.status_code == 400 and "allocate_tty" in r.json()["message"]
    # nothing running was hurt by any of that
    async with stream(http, sid, pid) as out:
        await write(http, sid, pid, b"still here\n")
        await out.until_stdout(b"still here\n")


async def test_unknown_process_and_session_are_404(http: httpx.AsyncClient, sid: str) -> None:
    unknown = "6f1c1f5e-0000-4000-8000-000000000000"
    base = f"/browsers/{sid}/process/{unknown}"
    for r in [
        await http.post(f"{base}/stdin", json={"data_b64": "aGk="}),
        await http.get(f"{base}/status"),
        await http.post(f"{base}/kill", json={"signal": "TERM"}),
        await http.post(f"{base}/resize", json={"rows": 5, "cols": 5}),
        await http.get(f"{base}/stdout/stream"),
    ]:
        assert r.status_code == 404, r.text
        assert r.json()["code"] == "not_found" and unknown in r.json()["message"]
    r = await http.post("/browsers/no-such-session/process/spawn", json={"command": "true"})
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = await http.get(f"/browsers/no-such-session/process/{unknown}/status")
    assert r.status_code == 404


async def test_stdin_after_exit_is_a_clear_400(http: httpx.AsyncClient, sid: str) -> None:
    proc = await spawn(http, sid, "true")
    async with stream(http, sid, proc["process_id"]) as out:
        await out.until_exit()
    r = await http.post(f"/browsers/{sid}/process/{proc['process_id']}/stdin", json={"data_b64": "aGk="})
    assert r.status_code == 400 and "exited" in r.json()["message"]


# users ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() == 0, reason="the service runs as root here, so it may switch users")
async def test_as_root_and_other_users_are_403_when_not_root(http: httpx.AsyncClient, sid: str) -> None:
    base = f"/browsers/{sid}/process"
    r = await http.post(f"{base}/spawn", json={"command": "id", "as_root": True})
    assert r.status_code == 403 and r.json()["code"] == "forbidden" and "root" in r.json()["message"]
    r = await http.post(f"{base}/exec", json={"command": "id", "as_user": "root"})
    assert r.status_code == 403 and r.json()["code"] == "forbidden"


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs the service to run as root")
async def test_as_user_is_honoured_when_root(http: httpx.AsyncClient, sid: str) -> None:
    base = f"/browsers/{sid}/process"
    r = await http.post(f"{base}/exec", json={"command": "sh", "args": ["-c", "id -un; id -u; echo $HOME"],
                                               "as_user": "nobody"})
    assert r.status_code == 200, r.text
    name, uid, _home = base64.b64decode(r.json()["stdout_b64"]).decode().split("\n")[:3]
    assert name == "nobody" and int(uid) != 0
    r = await http.post(f"{base}/exec", json={"command": "id", "args": ["-u"], "as_root": True})
    assert base64.b64decode(r.json()["stdout_b64"]) == b"0\n"
    r = await http.post(f"{base}/spawn", json={"command": "id", "as_user": "no-such-user-xyz"})
    assert_bad_request(r, "as_user")


# lifecycle ----------------------------------------------------------------------------------------


async def wait_gone(pid: int, timeout: float = 5.0) -> None:
    """Wait for a process that is not our child to end, through a pidfd (readable once it has exited)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    loop.add_reader(fd, lambda: ended.done() or ended.set_result(None))
    try:
        async with asyncio.timeout(timeout):
            await ended
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def host_pid(cmdline: list[str]) -> int:
    """The pid on this machine of the process running `cmdline`, looked for until it shows (a job may still be
    its shell's fork, not yet the program, when the shell has said its pid)."""
    for _ in range(100):
        found = next((p.pid for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == cmdline), None)
        if found is not None:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"no process {cmdline} found")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_deleting_the_session_ends_its_processes(http: httpx.AsyncClient) -> None:
    sid = (await http.post("/browsers", json={})).json()["session_id"]
    plain = await spawn(http, sid, "sleep", "100")
    shell = await spawn(http, sid, "sh", allocate_tty=True)  # an interactive shell ignores TERM
    trapping = await spawn(http, sid, "sh", "-c", "trap '' TERM HUP; sleep 100 & wait")
    assert all(_alive(p["pid"]) for p in (plain, shell, trapping))
    # a script that exited but left a background job behind
    marker = f"100.{secrets.randbelow(10**6)}"
    script = await spawn(http, sid, "sh", "-c", f"sleep {marker} > /dev/null & echo $!")
    async with stream(http, sid, script["process_id"]) as out:
        assert await out.until_exit() == 0
    # `$!` is a pid of the sandbox's own PID namespace: on this machine the job is found by its command line
    # (not by the session of the pid the spawn answered: a script that ends before the service sees the program
    # nsenter forked is answered with nsenter's pid; docs/decisions.md).
    assert int(out.stdout) > 0
    leftover = await host_pid(["sleep", marker])
    assert _alive(leftover)
    assert (await http.delete(f"/browsers/{sid}")).status_code == 204
    await wait_gone(leftover)
    # DELETE returns once they are gone (and reaped: no zombies left behind)
    assert not any(psutil.pid_exists(p["pid"]) for p in (plain, shell, trapping))
    r = await http.get(f"/browsers/{sid}/process/{plain['process_id']}/status")
    assert r.status_code == 410


def _fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def test_no_zombies_and_no_fd_leak_after_50_spawns(browserless_service, sid: str) -> None:
    service = browserless_service  # the service of `sid`
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(base_url=service.url, headers=service.headers, limits=limits, timeout=30) as http:
        await spawn(http, sid, "true")  # warm up the one connection
        before = _fd_count(service.pid)
        pids = []
        for i in range(50):
            proc = await spawn(http, sid, "sh", "-c", "echo $0; exit 3", f"run{i}", allocate_tty=i % 2 == 0)
            pids.append(proc["pid"])
            async with stream(http, sid, proc["process_id"]) as out:
                assert await out.until_exit() == 3
            assert out.stdout.strip() == f"run{i}".encode()
        after = _fd_count(service.pid)
    assert after <= before, f"{after - before} descriptors leaked in 50 spawns"
    # every child was reaped: not even a zombie is left of any of them
    assert [pid for pid in pids if psutil.pid_exists(pid)] == []


def test_stopping_the_service_ends_every_process(tmp_path) -> None:
    from conftest import start_service, stop_service

    # a service of its own, without Chromium: sessions then start at once
    handle = start_service(tmp_path / "state", extra_env={"BBROWSE_CHROMIUM": str(tmp_path / "no-chromium")})
    try:
        with httpx.Client(base_url=handle.url, headers=handle.headers, timeout=60) as client:
            sid = client.post("/browsers", json={}).json()["session_id"]
            pids = []
            for body in ({"command": "sleep", "args": ["100"]}, {"command": "sh", "allocate_tty": True}):
                r = client.post(f"/browsers/{sid}/process/spawn", json=body)
                assert r.status_code == 200, r.text
                pids.append(r.json()["pid"])
            assert all(_alive(pid) for pid in pids)
    finally:
        stop_service(handle)
    assert handle.process.returncode is not None
    assert not any(_alive(pid) for pid in pids)
