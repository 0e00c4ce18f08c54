"""Keystroke round trip: one byte POSTed to a PTY's stdin until it comes back, as the shell sends keys.

Runs a real `bbrowse serve` on loopback (as the tests do; default mode, then `--kernel-compat`), spawns
`stty raw -echo; exec cat` in a PTY so one byte in is exactly one byte out, and times N round trips through
bbrowse's client, every call through the session's VM endpoint (base_url + jwt): `stdin` in (written to the
client's `StdinWriter`, as the shell pane and `bbrowse shell` do), output over `attach` (the shell's path;
also with the `stdin` call awaited directly), the byte as an attach frame both ways, and (default mode) the
older `stdin` -> `stdout/stream`. Also a resize until the program's SIGWINCH handler answers, sent as an
attach text frame and as the `resize` call: the shell sends resizes the faster way. The same echo through a
local PTY read directly (no HTTP) is the baseline, measured in the same run.

    .venv/bin/python bench/bench_keystroke.py [--count 2000] [--mode default|compat|both]

Target (issue 2): p50 <= 3 ms, p99 <= 15 ms on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pty
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import start_service, stop_service  # noqa: E402

from bbrowse.client import BrowserClient, close_shared_clients  # noqa: E402
from bbrowse.wire import ProcessOutputEvent  # noqa: E402

RAW_CAT = "stty raw -echo; echo READY; exec cat"


def percentiles(samples_s: list[float]) -> tuple[float, float, float]:
    ms = sorted(s * 1000 for s in samples_s)
    p50 = statistics.median(ms)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return p50, p99, statistics.fmean(ms)


def local_pty_round_trips(count: int) -> list[float]:
    """The same echo through a local PTY: write one byte to the master, read it back."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(["sh", "-c", RAW_CAT], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    try:
        seen = b""
        while b"READY" not in seen:
            seen += os.read(master, 1024)
        samples = []
        for _ in range(count):
            started = time.perf_counter()
            os.write(master, b"x")
            got = os.read(master, 16)
            samples.append(time.perf_counter() - started)
            assert got == b"x", got
        return samples
    finally:
        proc.kill()
        proc.wait()
        os.close(master)


async def http_round_trips(
    client: BrowserClient, sid: str, count: int, posts: list[float] | None = None,
) -> list[float]:
    proc = await client.processes.spawn(sid, "sh", ["-c", RAW_CAT], allocate_tty=True)
    arrived = asyncio.Queue()
    async with client.processes.stdout_stream(sid, proc.process_id) as events:

        async def reader() -> None:
            async for event in events:
                if isinstance(event, ProcessOutputEvent):
                    arrived.put_nowait(event.data())

        reading = asyncio.create_task(reader())
        seen = b""
        while b"READY" not in seen:
            seen += await asyncio.wait_for(arrived.get(), 10)
        samples = []
        for _ in range(count):
            started = time.perf_counter()
            await client.processes.stdin(sid, proc.process_id, b"x")
            if posts is not None:
                posts.append(time.perf_counter() - started)
            got = await asyncio.wait_for(arrived.get(), 10)
            samples.append(time.perf_counter() - started)
            assert got == b"x", got
        await client.processes.kill(sid, proc.process_id, "KILL")
        await asyncio.wait_for(reading, 10)
    return samples


async def attach_round_trips(client: BrowserClient, sid: str, count: int, *, key_path: str) -> list[float]:
    """Output over attach; the byte goes in by `key_path`: "writer", as the shell pane and `bbrowse shell`
    send keys (written to the client's `StdinWriter`, which sends it with the `stdin` call); "call", the
    `stdin` call awaited directly; "frame", a binary attach frame."""
    proc = await client.processes.spawn(sid, "sh", ["-c", RAW_CAT], allocate_tty=True)
    samples = []
    writer = client.processes.stdin_writer(sid, proc.process_id)
    async with client.processes.attach(sid, proc.process_id) as term:
        assert term.direct, "attach did not go through the session's VM endpoint"
        output = aiter(term)
        seen = b""
        while b"READY" not in seen:
            seen += await asyncio.wait_for(anext(output), 10)
        for _ in range(count):
            started = time.perf_counter()
            if key_path == "writer":
                writer.write(b"x")
            elif key_path == "call":
                await client.processes.stdin(sid, proc.process_id, b"x")
            else:
                await term.send(b"x")
            got = await asyncio.wait_for(anext(output), 10)
            samples.append(time.perf_counter() - started)
            assert got == b"x", got
    await writer.aclose()
    await client.processes.kill(sid, proc.process_id, "KILL")
    return samples


#: Prints its size on every SIGWINCH (the bench's own Python, run on the instance).
WINCH = """
import os, signal
signal.signal(signal.SIGWINCH, lambda *_: os.write(1, b"W%d\\n" % os.get_terminal_size(0).columns))
os.write(1, b"READY\\n")
while True:
    signal.pause()
"""


async def resize_round_trips(client: BrowserClient, sid: str, count: int) -> tuple[list[float], list[float]]:
    """Resize until the program's SIGWINCH handler has answered: as an attach text frame, and as the
    `resize` call (output over attach in both cases)."""
    proc = await client.processes.spawn(sid, sys.executable, ["-u", "-c", WINCH], allocate_tty=True, cols=80)
    frames: list[float] = []
    calls: list[float] = []
    async with client.processes.attach(sid, proc.process_id) as term:
        output = aiter(term)
        seen = b""
        while b"READY" not in seen:
            seen += await asyncio.wait_for(anext(output), 10)
        for i in range(count):
            cols = 81 + i % 2
            started = time.perf_counter()
            if i % 4 < 2:
                await term.resize(24, cols)
            else:
                await client.processes.resize(sid, proc.process_id, rows=24, cols=cols)
            seen = b""
            while f"W{cols}".encode() not in seen:
                seen += await asyncio.wait_for(anext(output), 10)
            (frames if i % 4 < 2 else calls).append(time.perf_counter() - started)
    await client.processes.kill(sid, proc.process_id, "KILL")
    return frames, calls


def report(label: str, samples: list[float]) -> tuple[float, float]:
    p50, p99, mean = percentiles(samples)
    print(f"{label:<40} n={len(samples):<5} p50 {p50:7.3f} ms   p99 {p99:7.3f} ms   mean {mean:7.3f} ms")
    return p50, p99


async def run(url: str, token: str, count: int, mode: str) -> None:
    client = BrowserClient(url, token)
    sid = (await client.sessions.create(timeout_seconds=600)).session_id
    try:
        await attach_round_trips(client, sid, 50, key_path="writer")  # warm-up: connections, caches
        posts: list[float] = []
        shell_path = await attach_round_trips(client, sid, count, key_path="writer")
        call = await attach_round_trips(client, sid, count, key_path="call")
        ws = await attach_round_trips(client, sid, count, key_path="frame")
        http = await http_round_trips(client, sid, count, posts) if mode == "default" else None
        frames, calls = await resize_round_trips(client, sid, max(40, count // 10))
    finally:
        await client.sessions.delete(sid)
        await close_shared_clients()
    local = local_pty_round_trips(count)
    print(f"\n[{mode}] keystroke round trip, {count} bytes, one at a time (load average {os.getloadavg()[0]:.2f})")
    local_p50, local_p99 = report("local PTY (no HTTP) baseline", local)
    path_p50, path_p99 = report("shell path: StdinWriter -> attach (VM)", shell_path)
    report("  the stdin call awaited, no writer", call)
    report("attach frame echo (via VM)", ws)
    if http is not None:
        report("stdin -> stdout/stream (pre-attach path)", http)
        report("  of which the stdin POST", posts)
    report("resize as an attach frame -> SIGWINCH", frames)
    report("resize as the HTTP call -> SIGWINCH", calls)
    print(f"[{mode}] ratio shell path vs local PTY: p50 x{path_p50 / local_p50:.1f}, p99 x{path_p99 / local_p99:.1f}")
    verdict = "meets" if path_p50 <= 3 and path_p99 <= 15 else "MISSES"
    print(f"[{mode}] target p50 <= 3 ms, p99 <= 15 ms: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--mode", choices=("default", "compat", "both"), default="both")
    args = parser.parse_args()
    for mode in (["default", "compat"] if args.mode == "both" else [args.mode]):
        env = {"BBROWSE_KERNEL_COMPAT": "1"} if mode == "compat" else {}
        handle = start_service(Path(tempfile.mkdtemp(prefix="bbrowse-bench-")), extra_env=env)
        try:
            asyncio.run(run(handle.url, handle.token, args.count, mode))
        finally:
            stop_service(handle)


if __name__ == "__main__":
    main()
